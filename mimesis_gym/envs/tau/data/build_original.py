"""The seeded generator of TauGym's shipped original pack (docs/envs/tau.md, "Task data").

``python -m mimesis_gym.envs.tau.data.build_original [--seed 20260601] [--out DIR]`` writes
``retail/{users,orders,products}.json`` and ``tasks_{train,test,demo}.json`` under
``mimesis_gym/envs/tau/data/original/`` (or ``--out``); the output is byte-identical for the same
seed (a slow test regenerates and compares). ``retail/policy.md`` is a hand-written data file the
script does not touch. Every value is invented for the project; the script reads no tau-bench data.

The store: 25 products with 5–9 variants each, 40 users, 80 orders (28 pending, 12 processed, 32
delivered, 8 cancelled). The tasks: 60 (40 train / 20 test; every third task of each kind is a
test task) plus 3 demo fixtures, each built from a template and the database and checked by
replaying its gold actions: writes succeed and change the database, look-up-only tasks leave it
untouched, and information outputs are recomputed from the tables.
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from mimesis_gym.envs.tau.db import Database, EpisodeDB
from mimesis_gym.envs.tau.facts import WRITE_TOOLS, address_line, describe_item, describe_payment
from mimesis_gym.envs.tau.tasks import GoldAction, replay
from mimesis_gym.envs.tau.tools_retail import CANCEL_REASONS, RETAIL_TOOLS

__all__ = ["DEFAULT_SEED", "OUT_DIR", "build", "write_pack"]

DEFAULT_SEED = 20260601
OUT_DIR = Path(__file__).parent / "original"

# name, base price, option dimensions with the values the script chooses from
PRODUCTS: tuple[tuple[str, float, tuple[tuple[str, tuple[str, ...]], ...]], ...] = (
    (
        "Canvas Tote",
        34,
        (("color", ("natural", "black", "navy", "olive", "rust")), ("size", ("small", "medium", "large"))),
    ),
    (
        "Rain Shell Jacket",
        129,
        (("size", ("XS", "S", "M", "L", "XL")), ("color", ("yellow", "navy", "forest green", "black"))),
    ),
    (
        "Trail Running Shoe",
        118,
        (("size", ("7", "8", "9", "10", "11", "12")), ("color", ("grey", "blue", "orange", "black"))),
    ),
    ("Merino Beanie", 28, (("color", ("charcoal", "cream", "mustard", "burgundy", "navy", "moss")),)),
    (
        "Stoneware Mug",
        22,
        (("capacity", ("8 oz", "12 oz", "16 oz")), ("glaze", ("speckled", "matte black", "sea blue", "white"))),
    ),
    (
        "Pour-Over Kettle",
        64,
        (("capacity", ("0.6L", "0.9L", "1.2L")), ("finish", ("brushed steel", "copper", "matte black"))),
    ),
    ("Desk Lamp", 56, (("color", ("white", "black", "brass", "green")), ("bulb", ("LED", "halogen", "smart LED")))),
    ("Yoga Mat", 45, (("thickness", ("3mm", "5mm", "8mm")), ("color", ("purple", "grey", "teal", "pink")))),
    (
        "Insulated Bottle",
        32,
        (
            ("capacity", ("500ml", "750ml", "1L")),
            ("color", ("white", "black", "red", "sage")),
            ("lid", ("straw", "screw cap")),
        ),
    ),
    (
        "Linen Shirt",
        68,
        (("size", ("S", "M", "L", "XL")), ("color", ("white", "sky blue", "sand")), ("fit", ("regular", "slim"))),
    ),
    ("Denim Jacket", 98, (("size", ("S", "M", "L", "XL")), ("wash", ("light", "medium", "dark", "black")))),
    ("Wool Socks", 19, (("size", ("S", "M", "L")), ("pack", ("2-pack", "3-pack", "5-pack")))),
    (
        "Bluetooth Speaker",
        79,
        (("color", ("black", "blue", "red", "white")), ("battery", ("10 hours", "20 hours", "30 hours"))),
    ),
    (
        "Over-Ear Headphones",
        189,
        (
            ("color", ("black", "silver", "navy")),
            ("connectivity", ("wired", "wireless")),
            ("noise cancelling", ("yes", "no")),
        ),
    ),
    (
        "Fitness Tracker",
        99,
        (
            ("band", ("silicone", "woven", "leather")),
            ("color", ("black", "rose", "blue")),
            ("display", ("LCD", "AMOLED")),
        ),
    ),
    ("Cast Iron Skillet", 42, (("diameter", ("6 inch", "8 inch", "10 inch", "12 inch", "14 inch")),)),
    (
        "Chef Knife",
        85,
        (("blade", ("6 inch", "8 inch", "10 inch")), ("handle", ("walnut", "olive wood", "black resin"))),
    ),
    (
        "Throw Blanket",
        54,
        (("material", ("wool", "cotton", "fleece")), ("color", ("grey", "mustard", "teal", "cream"))),
    ),
    (
        "Scented Candle",
        24,
        (("scent", ("cedar", "lavender", "citrus", "vanilla", "sea salt")), ("size", ("small", "large"))),
    ),
    (
        "Plant Pot",
        26,
        (("diameter", ("4 inch", "6 inch", "8 inch", "10 inch")), ("material", ("terracotta", "ceramic", "concrete"))),
    ),
    ("Picture Frame", 21, (("size", ("4x6", "5x7", "8x10", "11x14")), ("finish", ("oak", "black", "white", "gold")))),
    ("Notebook", 14, (("ruling", ("lined", "dotted", "blank", "grid")), ("cover", ("hard", "soft")))),
    (
        "Fountain Pen",
        48,
        (("nib", ("extra fine", "fine", "medium", "broad")), ("color", ("black", "blue", "red", "green"))),
    ),
    (
        "Phone Case",
        29,
        (
            ("model", ("Pixel 8", "iPhone 15", "Galaxy S24")),
            ("color", ("clear", "black", "blue")),
            ("material", ("silicone", "leather")),
        ),
    ),
    (
        "Sunglasses",
        76,
        (("frame", ("black", "tortoise", "gold", "silver")), ("lens", ("polarized", "gradient", "mirrored"))),
    ),
)

FIRST_NAMES = (
    "Dana", "Elias", "Marisol", "Theo", "Priya", "Gideon", "Wren", "Tobias", "Anouk", "Callum",
    "Ines", "Rafferty", "Selma", "Julian", "Keiko", "Osman", "Lydia", "Mateo", "Noor", "Bastian",
    "Freya", "Idris", "Camille", "Rowan", "Yara", "Linus", "Esme", "Dmitri", "Talia", "Arlo",
    "Beatriz", "Cyrus", "Hana", "Emeric", "Sunniva", "Kofi", "Odile", "Ravi", "Greta", "Lorcan",
    "Mireille", "Anselm", "Zofia", "Tariq", "Philippa", "Nils",
)  # fmt: skip
LAST_NAMES = (
    "Whitfield", "Okonkwo", "Lindqvist", "Barrowman", "Castellanos", "Fairbairn", "Ishikawa", "Moreau",
    "Pemberton", "Quintero", "Ravensworth", "Szabo", "Thackeray", "Underhill", "Valdivia", "Winslow",
    "Yilmaz", "Zeller", "Achterberg", "Brightwater", "Calloway", "Delacroix", "Eskildsen", "Fenwick",
    "Galloway", "Halvorsen", "Iwasaki", "Jovanovic", "Kilbride", "Larkspur", "Marchetti", "Northcott",
)  # fmt: skip
STREETS = (
    "Maple Avenue", "Cedar Lane", "Juniper Street", "Harbor Road", "Willow Court", "Granite Way",
    "Orchard Drive", "Sparrow Lane", "Beacon Street", "Linden Boulevard", "Foxglove Road", "Quarry Street",
)  # fmt: skip
CITIES = (
    ("Portland", "OR", "972"),
    ("Madison", "WI", "537"),
    ("Asheville", "NC", "288"),
    ("Boise", "ID", "837"),
    ("Savannah", "GA", "314"),
    ("Albuquerque", "NM", "871"),
    ("Burlington", "VT", "054"),
    ("Tucson", "AZ", "857"),
    ("Des Moines", "IA", "503"),
    ("Providence", "RI", "029"),
    ("Spokane", "WA", "992"),
    ("Lexington", "KY", "405"),
)
BRANDS = ("visa", "mastercard", "amex", "discover")
PERSONAS = (
    "You are brief and polite.",
    "You are patient and a little chatty.",
    "You are in a hurry and get straight to the point.",
    "You are friendly but firm.",
    "You are careful and like to double-check details.",
    "You are cheerful and informal.",
    "You are reserved and answer only what you are asked.",
    "You are slightly annoyed but stay courteous.",
    "You are curious and ask follow-up questions.",
    "You are calm and methodical.",
    "You are warm and thankful.",
    "You are direct and businesslike.",
)
STATUS_COUNTS = (("pending", 28), ("processed", 12), ("delivered", 32), ("cancelled", 8))
KIND_COUNTS = (
    ("cancel", 9),
    ("modify_address", 6),
    ("modify_payment", 6),
    ("modify_items", 9),
    ("return", 9),
    ("exchange", 9),
    ("user_address", 3),
    ("info", 6),
    ("infeasible", 3),
)
DOUBLE_WRITES = {"cancel": 3, "modify_address": 2, "modify_payment": 1, "modify_items": 2, "return": 2, "exchange": 2}
"""How many tasks of each kind (the first ones) make two writes on different orders."""
DEMO_KINDS = ("cancel", "exchange", "info")
INFO_QUESTIONS = ("total", "tracking", "pending_count", "gift_balance", "price", "total")
INFEASIBLE_REQUESTS = ("cancel_delivered", "return_pending", "exchange_other_product")
OPENINGS = {
    "cancel": "Hi, I need to cancel an order I placed.",
    "modify_address": "Hello, I'd like to change the shipping address on an order.",
    "modify_payment": "Hi, can I change how I pay for an order I placed?",
    "modify_items": "Hi, I want to change some items in an order that hasn't shipped yet.",
    "return": "Hello, I'd like to return some items I received.",
    "exchange": "Hi, I'd like to exchange something I received.",
    "user_address": "Hi, I moved and need to update the address on my account.",
    "total": "Hi, I have a question about what I paid for an order.",
    "tracking": "Hello, I'm trying to track a package.",
    "pending_count": "Hi, I'd like to check on my open orders.",
    "gift_balance": "Hi, I'd like to know the balance of my gift card.",
    "price": "Hello, I have a question about a product's price.",
    "cancel_delivered": "Hi, I need to cancel an order I placed.",
    "return_pending": "Hello, I'd like to return some items from an order.",
    "exchange_other_product": "Hi, I'd like to exchange something I received.",
}


def _and(values: Sequence[str], article: str = "") -> str:
    """``a``, ``a and the b``, ``a, the b and the c`` (``article`` before all but the first)."""
    values = [values[0], *(article + value for value in values[1:])]
    return values[0] if len(values) == 1 else ", ".join(values[:-1]) + " and " + values[-1]


class GenerationError(RuntimeError):
    """The database cannot supply a task the pack needs (change the seed or the counts)."""


# ---------------------------------------------------------------------------------------------
# Database


class _Ids:
    """Distinct random digit strings."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.used: set[str] = set()

    def digits(self, count: int, prefix: str = "") -> str:
        while True:
            value = prefix + str(self.rng.randint(10 ** (count - 1), 10**count - 1))
            if value not in self.used:
                self.used.add(value)
                return value


def _build_products(rng: random.Random, ids: _Ids) -> dict[str, Any]:
    products: dict[str, Any] = {}
    for name, base, dimensions in PRODUCTS:
        while True:
            chosen = []
            for dimension, pool in dimensions:
                low, high = (5, 6) if len(dimensions) == 1 else (2, 4)
                count = min(rng.randint(low, high), len(pool))
                picked = set(rng.sample(range(len(pool)), count))
                chosen.append((dimension, [value for index, value in enumerate(pool) if index in picked]))
            combinations = list(itertools.product(*(values for _, values in chosen)))
            if len(combinations) >= 5:
                break
        count = rng.randint(5, min(9, len(combinations)))
        picked = rng.sample(combinations, count)
        while True:
            available = [rng.random() < 0.8 for _ in picked]
            if sum(available) >= 2:
                break
        product_id = ids.digits(10)
        variants = {}
        for combination, is_available in zip(picked, available, strict=True):
            item_id = ids.digits(10)
            variants[item_id] = {
                "item_id": item_id,
                "options": {dimension: value for (dimension, _), value in zip(chosen, combination, strict=True)},
                "available": is_available,
                "price": round(base * rng.uniform(0.9, 1.1), 2),
            }
        products[product_id] = {"name": name, "product_id": product_id, "variants": variants}
    return products


def _address(rng: random.Random) -> dict[str, str]:
    city, state, prefix = rng.choice(CITIES)
    second = rng.choice(("apt", "suite", "none"))
    return {
        "address1": f"{rng.randint(10, 9999)} {rng.choice(STREETS)}",
        "address2": {"apt": f"Apt {rng.randint(1, 40)}", "suite": f"Suite {rng.randint(100, 900)}", "none": ""}[second],
        "city": city,
        "country": "USA",
        "state": state,
        "zip": prefix + f"{rng.randint(0, 99):02d}",
    }


def _payment_methods(rng: random.Random, ids: _Ids) -> dict[str, Any]:
    sources = rng.sample(["credit_card", "paypal", "gift_card"], rng.randint(1, 3))
    methods: dict[str, Any] = {}
    for source in sources:
        method_id = ids.digits(7, f"{source}_")
        if source == "credit_card":
            methods[method_id] = {
                "source": source,
                "brand": rng.choice(BRANDS),
                "last_four": f"{rng.randint(0, 9999):04d}",
                "id": method_id,
            }
        elif source == "gift_card":
            balance: int | float = rng.randint(0, 400) if rng.random() < 0.5 else round(rng.uniform(0, 400), 2)
            methods[method_id] = {"source": source, "balance": balance, "id": method_id}
        else:
            methods[method_id] = {"source": source, "id": method_id}
    return methods


def _build_users(rng: random.Random, ids: _Ids) -> dict[str, Any]:
    users: dict[str, Any] = {}
    names = list(itertools.product(FIRST_NAMES, LAST_NAMES))
    rng.shuffle(names)
    firsts_used: set[str] = set()
    for first, last in names:
        if len(users) == 40:
            break
        if first in firsts_used:  # one of each first name keeps conversations easy to tell apart
            continue
        firsts_used.add(first)
        user_id = f"{first}_{last}_{ids.digits(4)}".lower()
        users[user_id] = {
            "name": {"first_name": first, "last_name": last},
            "address": _address(rng),
            "email": f"{first}.{last}{rng.randint(10, 99)}@example.net".lower(),
            "payment_methods": _payment_methods(rng, ids),
            "orders": [],
        }
    return users


def _build_orders(rng: random.Random, ids: _Ids, users: dict[str, Any], products: dict[str, Any]) -> dict[str, Any]:
    user_ids = list(users)
    counts = dict.fromkeys(user_ids, 1)
    while sum(counts.values()) < 80:
        user_id = rng.choice(user_ids)
        if counts[user_id] < 4:
            counts[user_id] += 1
    statuses = [status for status, count in STATUS_COUNTS for _ in range(count)]
    rng.shuffle(statuses)
    orders: dict[str, Any] = {}
    product_list = list(products.values())
    for user_id in user_ids:
        user = users[user_id]
        for _ in range(counts[user_id]):
            status = statuses[len(orders)]
            order_id = ids.digits(7, "#R")
            items = []
            for product in rng.sample(product_list, rng.randint(1, 4)):
                variant = product["variants"][rng.choice(list(product["variants"]))]
                items.append(
                    {
                        "name": product["name"],
                        "product_id": product["product_id"],
                        "item_id": variant["item_id"],
                        "price": variant["price"],
                        "options": dict(variant["options"]),
                    }
                )
            method_id = rng.choice(list(user["payment_methods"]))
            amount = round(sum(item["price"] for item in items), 2)
            history = [{"transaction_type": "payment", "amount": amount, "payment_method_id": method_id}]
            if status == "cancelled":
                history.append({"transaction_type": "refund", "amount": amount, "payment_method_id": method_id})
            fulfillments = []
            if status in ("processed", "delivered"):
                fulfillments = [{"tracking_id": [ids.digits(12)], "item_ids": [item["item_id"] for item in items]}]
            orders[order_id] = {
                "order_id": order_id,
                "user_id": user_id,
                "address": dict(user["address"]),
                "items": items,
                "fulfillments": fulfillments,
                "status": status,
                "payment_history": history,
            }
            user["orders"].append(order_id)
    return orders


# ---------------------------------------------------------------------------------------------
# Tasks


class _TaskBuilder:
    """Draws the tasks of each kind from the database with ``rng``; tracks orders already used."""

    def __init__(self, rng: random.Random, tables: dict[str, dict[str, Any]], database: Database) -> None:
        self.rng = rng
        self.users = tables["users"]
        self.orders = tables["orders"]
        self.products = tables["products"]
        self.database = database
        self.used_orders: set[str] = set()
        self.seen_goals: set[str] = set()

    # -- helpers ------------------------------------------------------------------------------

    def _orders_of(
        self, user_id: str, status: str, predicate: Callable[[dict[str, Any]], bool] | None = None
    ) -> list[str]:
        return [
            order_id
            for order_id in self.users[user_id]["orders"]
            if self.orders[order_id]["status"] == status and (predicate is None or predicate(self.orders[order_id]))
        ]

    def _pick_user(
        self, status: str, need: int, predicate: Callable[[dict[str, Any]], bool] | None = None
    ) -> tuple[str, list[str]]:
        """A user with ``need`` unused orders of ``status`` (fresh orders preferred)."""
        for allow_used in (False, True):
            candidates = []
            for user_id in self.users:
                fitting = [
                    o for o in self._orders_of(user_id, status, predicate) if allow_used or o not in self.used_orders
                ]
                if len(fitting) >= need:
                    candidates.append((user_id, fitting))
            if candidates:
                user_id, fitting = self.rng.choice(candidates)
                chosen = sorted(self.rng.sample(fitting, need), key=fitting.index)
                self.used_orders.update(chosen)
                return user_id, chosen
        raise GenerationError(f"no user has {need} {status} orders fitting the task")

    def _identity(self, user_id: str) -> tuple[bool, str, list[dict[str, Any]]]:
        user = self.users[user_id]
        first, last = user["name"]["first_name"], user["name"]["last_name"]
        knows_email = self.rng.random() < 0.5
        if knows_email:
            sentence = f"You are {first} {last}, and your email is {user['email']}."
            auth = {"name": "find_user_id_by_email", "kwargs": {"email": user["email"]}}
        else:
            sentence = f"You are {first} {last}, zip code {user['address']['zip']}, and you do not remember your email."
            auth = {
                "name": "find_user_id_by_name_zip",
                "kwargs": {"first_name": first, "last_name": last, "zip": user["address"]["zip"]},
            }
        actions = [auth, {"name": "get_user_details", "kwargs": {"user_id": user_id}}]
        return knows_email, sentence, actions

    def _variant_options(self, item: dict[str, Any]) -> list[str]:
        """Available variants of the item's product other than the item itself."""
        variants = self.products[item["product_id"]]["variants"]
        return [vid for vid, v in variants.items() if v["available"] and vid != item["item_id"]]

    def _changed(self, item: dict[str, Any], new_id: str) -> str:
        new_options = self.products[item["product_id"]]["variants"][new_id]["options"]
        changed = [f"{key} {value}" for key, value in new_options.items() if item["options"].get(key) != value]
        return f"the same {item['name']} but with {' and '.join(changed)}"

    def _method_line(self, user_id: str, method_id: str) -> str:
        return describe_payment(self.users[user_id]["payment_methods"][method_id], method_id)

    def _new_address(self) -> dict[str, str]:
        address = _address(self.rng)
        return {key: address[key] for key in ("address1", "address2", "city", "state", "country", "zip")}

    # -- kinds --------------------------------------------------------------------------------

    def cancel(self, index: int, double: bool) -> dict[str, Any]:
        user_id, order_ids = self._pick_user("pending", 2 if double else 1)
        knows_email, identity, actions = self._identity(user_id)
        reason = self.rng.choice(CANCEL_REASONS)
        for order_id in order_ids:
            actions.append({"name": "get_order_details", "kwargs": {"order_id": order_id}})
        for order_id in order_ids:
            actions.append({"name": "cancel_pending_order", "kwargs": {"order_id": order_id, "reason": reason}})
        listed = " and ".join(order_ids)
        subject = "they are" if double else "it is"
        want = f"You want to cancel order{'s' if double else ''} {listed} because {subject} {reason}."
        return self._task("cancel", user_id, knows_email, identity, want, actions, orders=order_ids, reason=reason)

    def modify_address(self, index: int, double: bool) -> dict[str, Any]:
        user_id, order_ids = self._pick_user("pending", 2 if double else 1)
        knows_email, identity, actions = self._identity(user_id)
        address = self._new_address()
        for order_id in order_ids:
            actions.append({"name": "get_order_details", "kwargs": {"order_id": order_id}})
        for order_id in order_ids:
            actions.append({"name": "modify_pending_order_address", "kwargs": {"order_id": order_id, **address}})
        line = address_line(address)
        want = f"You want order{'s' if double else ''} {' and '.join(order_ids)} shipped to {line} instead."
        return self._task(
            "modify_address", user_id, knows_email, identity, want, actions, orders=order_ids, address=line
        )

    def modify_payment(self, index: int, double: bool) -> dict[str, Any]:
        def payable(order: dict[str, Any]) -> bool:
            return self._payment_target(order) is not None

        user_id, order_ids = self._pick_user("pending", 2 if double else 1, payable)
        targets = [self._payment_target(self.orders[order_id]) for order_id in order_ids]
        knows_email, identity, actions = self._identity(user_id)
        for order_id in order_ids:
            actions.append({"name": "get_order_details", "kwargs": {"order_id": order_id}})
        for order_id, target in zip(order_ids, targets, strict=True):
            actions.append(
                {"name": "modify_pending_order_payment", "kwargs": {"order_id": order_id, "payment_method_id": target}}
            )
        methods = [self._method_line(user_id, target) for target in targets]  # type: ignore[arg-type]
        wishes = [f"order {order_id} with your {method}" for order_id, method in zip(order_ids, methods, strict=True)]
        want = f"You want to pay for {' and '.join(wishes)} instead."
        payment = " and ".join(dict.fromkeys(methods))
        return self._task(
            "modify_payment", user_id, knows_email, identity, want, actions, orders=order_ids, payment=payment
        )

    def _payment_target(self, order: dict[str, Any]) -> str | None:
        """Another method of the owner that can pay the whole order (first in profile order)."""
        history = order["payment_history"]
        if len(history) != 1:
            return None
        amount, current = history[0]["amount"], history[0]["payment_method_id"]
        for method_id, method in self.users[order["user_id"]]["payment_methods"].items():
            if method_id != current and (method["source"] != "gift_card" or method["balance"] >= amount):
                return method_id
        return None

    def _item_change(self, order_id: str, gift_rounding: bool) -> tuple[list[str], list[str], str] | None:
        """Items to change, their new variants and a payment method that can settle the difference."""
        order = self.orders[order_id]
        changeable = [item for item in order["items"] if self._variant_options(item)]
        if not changeable:
            return None
        picked = self.rng.sample(changeable, min(len(changeable), self.rng.randint(1, 2)))
        picked.sort(key=order["items"].index)
        item_ids = [item["item_id"] for item in picked]
        new_ids = [self.rng.choice(self._variant_options(item)) for item in picked]
        diff: int | float = 0
        for item, new_id in zip(picked, new_ids, strict=True):
            diff = diff + (self.products[item["product_id"]]["variants"][new_id]["price"] - item["price"])
        if gift_rounding:
            diff = round(diff, 2)
        methods = self.users[order["user_id"]]["payment_methods"]
        original = order["payment_history"][0]["payment_method_id"]
        ordered = [original, *[m for m in methods if m != original]]
        for method_id in ordered:
            method = methods.get(method_id)
            if method is not None and (method["source"] != "gift_card" or method["balance"] >= diff):
                return item_ids, new_ids, method_id
        return None

    def _items_task(self, kind: str, status: str, tool: str, double: bool) -> dict[str, Any]:
        def changeable(order: dict[str, Any]) -> bool:
            return any(self._variant_options(item) for item in order["items"])

        user_id, order_ids = self._pick_user(status, 2 if double else 1, changeable)
        knows_email, identity, actions = self._identity(user_id)
        changes = []
        for order_id in order_ids:
            change = self._item_change(order_id, gift_rounding=kind == "exchange")
            if change is None:
                raise GenerationError(f"order {order_id} has no affordable item change")
            changes.append((order_id, *change))
        for order_id in order_ids:
            actions.append({"name": "get_order_details", "kwargs": {"order_id": order_id}})
        product_ids = []
        items: dict[str, str] = {}
        targets: dict[str, str] = {}
        wishes = []
        for order_id, item_ids, new_ids, _ in changes:
            for item_id, new_id in zip(item_ids, new_ids, strict=True):
                item = next(i for i in self.orders[order_id]["items"] if i["item_id"] == item_id)
                if item["product_id"] not in product_ids:
                    product_ids.append(item["product_id"])
                items[item_id] = describe_item(item["name"], item["options"])
                targets[new_id] = describe_item(
                    item["name"], self.products[item["product_id"]]["variants"][new_id]["options"]
                )
                wishes.append(f"the {items[item_id]} in {order_id} for {self._changed(item, new_id)}")
        actions += [{"name": "get_product_details", "kwargs": {"product_id": pid}} for pid in product_ids]
        methods = []
        for order_id, item_ids, new_ids, method_id in changes:
            actions.append(
                {
                    "name": tool,
                    "kwargs": {
                        "order_id": order_id,
                        "item_ids": item_ids,
                        "new_item_ids": new_ids,
                        "payment_method_id": method_id,
                    },
                }
            )
            methods.append(self._method_line(user_id, method_id))
        verb = "exchange" if kind == "exchange" else "swap"
        payment = " and ".join(dict.fromkeys(methods))
        want = f"You want to {verb} {'; and '.join(wishes)}. Any price difference goes through your {payment}."
        return self._task(
            kind,
            user_id,
            knows_email,
            identity,
            want,
            actions,
            orders=order_ids,
            items=items,
            targets=targets,
            payment=payment,
        )

    def modify_items(self, index: int, double: bool) -> dict[str, Any]:
        return self._items_task("modify_items", "pending", "modify_pending_order_items", double)

    def exchange(self, index: int, double: bool) -> dict[str, Any]:
        return self._items_task("exchange", "delivered", "exchange_delivered_order_items", double)

    def return_items(self, index: int, double: bool) -> dict[str, Any]:
        user_id, order_ids = self._pick_user("delivered", 2 if double else 1)
        knows_email, identity, actions = self._identity(user_id)
        methods = self.users[user_id]["payment_methods"]
        gift_cards = [m for m, method in methods.items() if method["source"] == "gift_card"]
        originals = [self.orders[o]["payment_history"][0]["payment_method_id"] for o in order_ids]
        same_original = all(original == originals[0] for original in originals)
        if gift_cards and (self.rng.random() < 0.3 or not same_original):
            refund_to = self.rng.choice(gift_cards)
        elif same_original:
            refund_to = originals[0]
        else:
            raise GenerationError("the orders were paid differently and the user has no gift card")
        for order_id in order_ids:
            actions.append({"name": "get_order_details", "kwargs": {"order_id": order_id}})
        items: dict[str, str] = {}
        wishes = []
        for order_id in order_ids:
            order_items = self.orders[order_id]["items"]
            picked = self.rng.sample(order_items, self.rng.randint(1, min(3, len(order_items))))
            picked.sort(key=order_items.index)
            ids = [item["item_id"] for item in picked]
            actions.append(
                {
                    "name": "return_delivered_order_items",
                    "kwargs": {"order_id": order_id, "item_ids": ids, "payment_method_id": refund_to},
                }
            )
            for item in picked:
                items[item["item_id"]] = describe_item(item["name"], item["options"])
            wishes.append(f"the {_and([item['name'] for item in picked], 'the ')} from order {order_id}")
        method = self._method_line(user_id, refund_to)
        want = f"You want to return {'; and '.join(wishes)}, with the refund to your {method}."
        return self._task(
            "return", user_id, knows_email, identity, want, actions, orders=order_ids, items=items, payment=method
        )

    def user_address(self, index: int, double: bool) -> dict[str, Any]:
        user_id = self.rng.choice(list(self.users))
        knows_email, identity, actions = self._identity(user_id)
        address = self._new_address()
        actions.append({"name": "modify_user_address", "kwargs": {"user_id": user_id, **address}})
        line = address_line(address)
        want = f"You moved and want the default address on your account changed to {line}."
        return self._task("user_address", user_id, knows_email, identity, want, actions, address=line)

    def info(self, index: int, double: bool) -> dict[str, Any]:
        question = INFO_QUESTIONS[index % len(INFO_QUESTIONS)]
        if question in ("total", "tracking"):
            status = "delivered" if question == "tracking" else self.rng.choice(("pending", "processed", "delivered"))
            user_id, (order_id,) = self._pick_user(status, 1)
            knows_email, identity, actions = self._identity(user_id)
            actions.append({"name": "get_order_details", "kwargs": {"order_id": order_id}})
            order = self.orders[order_id]
            if question == "total":
                output = str(order["payment_history"][0]["amount"])
                want = f"You want to know how much you paid for order {order_id}."
            else:
                output = order["fulfillments"][0]["tracking_id"][0]
                want = f"You want the tracking number of order {order_id}."
            return self._task(
                "info",
                user_id,
                knows_email,
                identity,
                want,
                actions,
                orders=[order_id],
                outputs=[output],
                opening=question,
            )
        if question == "pending_count":
            candidates = [u for u in self.users if self._orders_of(u, "pending")]
            user_id = self.rng.choice(candidates)
            knows_email, identity, actions = self._identity(user_id)
            actions += [{"name": "get_order_details", "kwargs": {"order_id": o}} for o in self.users[user_id]["orders"]]
            output = str(len(self._orders_of(user_id, "pending")))
            want = "You want to know how many of your orders are still pending."
            return self._task("info", user_id, knows_email, identity, want, actions, outputs=[output], opening=question)
        if question == "gift_balance":
            candidates = [
                u
                for u in self.users
                if any(m["source"] == "gift_card" for m in self.users[u]["payment_methods"].values())
            ]
            user_id = self.rng.choice(candidates)
            knows_email, identity, actions = self._identity(user_id)
            card = next(m for m in self.users[user_id]["payment_methods"].values() if m["source"] == "gift_card")
            want = "You want to know the balance left on your gift card."
            return self._task(
                "info", user_id, knows_email, identity, want, actions, outputs=[str(card["balance"])], opening=question
            )
        # an item's price in the catalogue
        user_id = self.rng.choice(list(self.users))
        knows_email, identity, actions = self._identity(user_id)
        product = self.rng.choice(list(self.products.values()))
        variant = self.products[product["product_id"]]["variants"][self.rng.choice(list(product["variants"]))]
        actions += [
            {"name": "list_all_product_types", "kwargs": {}},
            {"name": "get_product_details", "kwargs": {"product_id": product["product_id"]}},
        ]
        description = describe_item(product["name"], variant["options"])
        want = f"You want to know the price of the {description}."
        return self._task(
            "info",
            user_id,
            knows_email,
            identity,
            want,
            actions,
            items={variant["item_id"]: description},
            outputs=[str(variant["price"])],
            opening=question,
        )

    def infeasible(self, index: int, double: bool) -> dict[str, Any]:
        request = INFEASIBLE_REQUESTS[index % len(INFEASIBLE_REQUESTS)]
        if request == "cancel_delivered":
            user_id, (order_id,) = self._pick_user("delivered", 1)
            knows_email, identity, actions = self._identity(user_id)
            actions.append({"name": "get_order_details", "kwargs": {"order_id": order_id}})
            reason = self.rng.choice(CANCEL_REASONS)
            want = (
                f"You want to cancel order {order_id} because it is {reason}. If the agent says it cannot be "
                "cancelled, you accept that and end the conversation."
            )
            return self._task(
                "infeasible",
                user_id,
                knows_email,
                identity,
                want,
                actions,
                orders=[order_id],
                reason=reason,
                opening=request,
            )
        if request == "return_pending":
            user_id, (order_id,) = self._pick_user("pending", 1)
            knows_email, identity, actions = self._identity(user_id)
            actions.append({"name": "get_order_details", "kwargs": {"order_id": order_id}})
            item = self.rng.choice(self.orders[order_id]["items"])
            want = (
                f"You want to return the {item['name']} from order {order_id}. If the agent says it cannot be "
                "returned yet, you accept that and end the conversation."
            )
            return self._task(
                "infeasible",
                user_id,
                knows_email,
                identity,
                want,
                actions,
                orders=[order_id],
                items={item["item_id"]: describe_item(item["name"], item["options"])},
                opening=request,
            )
        user_id, (order_id,) = self._pick_user("delivered", 1)
        knows_email, identity, actions = self._identity(user_id)
        item = self.rng.choice(self.orders[order_id]["items"])
        other = self.rng.choice([p for p in self.products.values() if p["product_id"] != item["product_id"]])
        actions += [
            {"name": "get_order_details", "kwargs": {"order_id": order_id}},
            {"name": "get_product_details", "kwargs": {"product_id": item["product_id"]}},
        ]
        want = (
            f"You want to exchange the {item['name']} from order {order_id} for a {other['name']}. If the agent "
            "says an exchange must stay within the same product, you accept that and end the conversation."
        )
        return self._task(
            "infeasible",
            user_id,
            knows_email,
            identity,
            want,
            actions,
            orders=[order_id],
            items={item["item_id"]: describe_item(item["name"], item["options"])},
            opening=request,
        )

    # -- assembly -----------------------------------------------------------------------------

    def _task(
        self,
        kind: str,
        user_id: str,
        knows_email: bool,
        identity: str,
        want: str,
        actions: list[dict[str, Any]],
        *,
        orders: Sequence[str] = (),
        items: dict[str, str] | None = None,
        targets: dict[str, str] | None = None,
        payment: str | None = None,
        reason: str | None = None,
        address: str | None = None,
        outputs: Sequence[str] = (),
        opening: str | None = None,
    ) -> dict[str, Any]:
        user = self.users[user_id]
        obs = OPENINGS[opening or kind]
        persona = self.rng.choice(PERSONAS)
        instruction = f"{identity} {want} {persona}"
        self._verify(kind, actions, outputs)
        return {
            "id": "",
            "obs": obs,
            "info": {
                "task": {"user_id": user_id, "actions": actions, "instruction": instruction, "outputs": list(outputs)}
            },
            "kind": kind,
            "user_facts": {
                "user_id": user_id,
                "first_name": user["name"]["first_name"],
                "last_name": user["name"]["last_name"],
                "zip": user["address"]["zip"],
                "email": user["email"],
                "knows_email": knows_email,
                "knows_user_id": False,
                "request": obs,
                "orders": list(orders),
                "items": dict(items or {}),
                "targets": dict(targets or {}),
                "payment": payment,
                "reason": reason,
                "address": address,
                "reservations": [],
                "flights": [],
                "passengers": [],
                "bags": None,
            },
        }

    def _verify(self, kind: str, actions: list[dict[str, Any]], outputs: Sequence[str]) -> None:
        """Gold writes succeed and change the database; look-up-only tasks leave it pristine."""
        db = EpisodeDB(self.database)
        gold = [GoldAction(name=a["name"], kwargs=a["kwargs"]) for a in actions]
        results = replay(db, gold, RETAIL_TOOLS)
        for action, result in zip(gold, results, strict=True):
            if action.name in WRITE_TOOLS and not result.startswith("{"):
                raise GenerationError(f"{kind}: gold write {action.name} failed: {result}")
            if result.startswith("Error"):
                raise GenerationError(f"{kind}: gold look-up {action.name} failed: {result}")
        writes = any(action.name in WRITE_TOOLS for action in gold)
        if writes != (kind not in ("info", "infeasible")):
            raise GenerationError(f"{kind}: gold writes do not match the kind")
        if writes == db.same_state(EpisodeDB(self.database)):
            raise GenerationError(f"{kind}: gold state does not match the kind")
        if any("," in output for output in outputs):
            raise GenerationError(f"{kind}: an output contains a comma")
        goal = json.dumps([actions, list(outputs)], sort_keys=True)
        if goal in self.seen_goals:
            raise GenerationError(f"{kind}: the same goal was drawn twice")
        self.seen_goals.add(goal)


KIND_BUILDERS: dict[str, str] = {
    "cancel": "cancel",
    "modify_address": "modify_address",
    "modify_payment": "modify_payment",
    "modify_items": "modify_items",
    "return": "return_items",
    "exchange": "exchange",
    "user_address": "user_address",
    "info": "info",
    "infeasible": "infeasible",
}


def _attempt(builder: _TaskBuilder, kind: str, index: int, double: bool, attempts: int = 40) -> dict[str, Any]:
    """Draw a task of ``kind`` until one passes the checks (the draws stay seeded)."""
    make = getattr(builder, KIND_BUILDERS[kind])
    for _ in range(attempts):
        used = set(builder.used_orders)
        try:
            return make(index, double)
        except GenerationError:
            builder.used_orders = used
    raise GenerationError(f"could not draw a {kind} task (index {index}) in {attempts} attempts")


def build(seed: int = DEFAULT_SEED) -> dict[str, Any]:
    """The whole pack as JSON-ready values: ``{"retail": {table: ...}, "train", "test", "demo"}``."""
    rng = random.Random(seed)
    ids = _Ids(rng)
    products = _build_products(rng, ids)
    users = _build_users(rng, ids)
    orders = _build_orders(rng, ids, users, products)
    tables = {"users": users, "orders": orders, "products": products}
    builder = _TaskBuilder(rng, tables, Database("retail", tables))
    train: list[dict[str, Any]] = []
    test: list[dict[str, Any]] = []
    for kind, count in KIND_COUNTS:
        for index in range(count):
            task = _attempt(builder, kind, index, index < DOUBLE_WRITES.get(kind, 0))
            (test if index % 3 == 2 else train).append(task)
    demo = [_attempt(builder, kind, 0 if kind != "info" else 1, False) for kind in DEMO_KINDS]
    for prefix, tasks in (("orig-retail-train", train), ("orig-retail", test), ("orig-retail-demo", demo)):
        for number, task in enumerate(tasks):
            task["id"] = f"{prefix}-{number:03d}"
    return {"retail": tables, "train": train, "test": test, "demo": demo}


def _dump(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False) + "\n"


def write_pack(out: Path = OUT_DIR, seed: int = DEFAULT_SEED) -> list[Path]:
    """Write the pack's files under ``out``; returns the paths written."""
    pack = build(seed)
    written = []
    (out / "retail").mkdir(parents=True, exist_ok=True)
    for table in ("users", "orders", "products"):
        path = out / "retail" / f"{table}.json"
        path.write_text(_dump(pack["retail"][table]), encoding="utf-8")
        written.append(path)
    for split in ("train", "test", "demo"):
        path = out / f"tasks_{split}.json"
        path.write_text(_dump(pack[split]), encoding="utf-8")
        written.append(path)
    return written


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--out", type=Path, default=OUT_DIR)
    args = parser.parse_args(argv)
    for path in write_pack(args.out, args.seed):
        print(path)


if __name__ == "__main__":
    main()
