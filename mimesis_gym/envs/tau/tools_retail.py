"""The retail domain's tools (docs/envs/tau.md, "Tools"): tau-bench's retail tools, re-implemented.

Each write checks its preconditions in tau-bench's order, returns ``Error: ...`` with
the database untouched when one fails, and otherwise returns the changed record as JSON (Python's
default ``json.dumps``). Amount arithmetic is exactly tau-bench's: ``round(x, 2)`` where tau-bench
rounds, unrounded item-modification differences, refunds of every history entry on cancellation.
"""

from __future__ import annotations

import json
from typing import Any

from mimesis_gym.envs.tau.db import EpisodeDB, copy_json
from mimesis_gym.envs.tau.toolkit import COMMON_TOOLS, Param, Tool

__all__ = ["CANCEL_REASONS", "RETAIL_TOOLS"]

CANCEL_REASONS = ("no longer needed", "ordered by mistake")
WRITE_REMINDER = "Only after the customer has explicitly confirmed the details (yes)."


def _dump(record: Any) -> str:
    return json.dumps(record)


# ---------------------------------------------------------------------------------------------
# Read-only tools


def find_user_id_by_email(db: EpisodeDB, email: str) -> str:
    wanted = email.lower()
    for user_id, user in db.items("users"):
        if user["email"].lower() == wanted:
            return user_id
    return "Error: user not found"


def find_user_id_by_name_zip(db: EpisodeDB, first_name: str, last_name: str, zip: str) -> str:
    first, last = first_name.lower(), last_name.lower()
    for user_id, user in db.items("users"):
        name = user["name"]
        if name["first_name"].lower() == first and name["last_name"].lower() == last and user["address"]["zip"] == zip:
            return user_id
    return "Error: user not found"


def get_user_details(db: EpisodeDB, user_id: str) -> str:
    user = db.get("users", user_id)
    return "Error: user not found" if user is None else _dump(user)


def get_order_details(db: EpisodeDB, order_id: str) -> str:
    order = db.get("orders", order_id)
    return "Error: order not found" if order is None else _dump(order)


def _order_in_status(db: EpisodeDB, order_id: str, status: str, verb: str) -> tuple[Any, str | None]:
    """The order if it exists and has ``status``; else ``(None, <tau-bench's error string>)``."""
    order = db.get("orders", order_id)
    if order is None:
        return None, "Error: order not found"
    if order["status"] != status:
        return None, f"Error: only {status} orders can be {verb}"
    return order, None


def get_product_details(db: EpisodeDB, product_id: str) -> str:
    product = db.get("products", product_id)
    return "Error: product not found" if product is None else _dump(product)


def list_all_product_types(db: EpisodeDB) -> str:
    names = {product["name"]: product["product_id"] for _, product in db.items("products")}
    return _dump(dict(sorted(names.items())))


# ---------------------------------------------------------------------------------------------
# Shared checks


def _owner_methods(db: EpisodeDB, order: dict[str, Any]) -> dict[str, Any] | None:
    user = db.get("users", order["user_id"])
    return None if user is None else user["payment_methods"]


def _multiplicity_problem(order: dict[str, Any], item_ids: list[str]) -> str | None:
    """The first id asked for more often than the order holds it, else ``None``."""
    held = [item["item_id"] for item in order["items"]]
    for item_id in item_ids:
        if item_ids.count(item_id) > held.count(item_id):
            return item_id
    return None


def _price_difference(
    db: EpisodeDB, order: dict[str, Any], item_ids: list[str], new_item_ids: list[str]
) -> tuple[int | float, str | None]:
    """Σ (new variant price − item price), left to right from the integer 0, unrounded; or an error."""
    diff: int | float = 0
    for item_id, new_item_id in zip(item_ids, new_item_ids, strict=True):
        item = next(item for item in order["items"] if item["item_id"] == item_id)
        product = db.get("products", item["product_id"])
        variant = None if product is None else product["variants"].get(new_item_id)
        if variant is None or not variant["available"]:
            return diff, f"Error: new item {new_item_id} not found or available"
        diff = diff + (variant["price"] - item["price"])
    return diff, None


def _new_address(address1: str, address2: str, city: str, state: str, country: str, zip: str) -> dict[str, str]:
    return {"address1": address1, "address2": address2, "city": city, "state": state, "country": country, "zip": zip}


# ---------------------------------------------------------------------------------------------
# Writes


def cancel_pending_order(db: EpisodeDB, order_id: str, reason: str) -> str:
    order, problem = _order_in_status(db, order_id, "pending", "cancelled")
    if problem:
        return problem
    if reason not in CANCEL_REASONS:
        return "Error: the reason must be 'no longer needed' or 'ordered by mistake'"
    methods = _owner_methods(db, order)
    gift_ids = [p["payment_method_id"] for p in order["payment_history"] if "gift_card" in p["payment_method_id"]]
    if gift_ids and (methods is None or any(gift_id not in methods for gift_id in gift_ids)):
        return "Error: a gift card of the payment history no longer belongs to the order's owner"
    order = db.write("orders", order_id)
    refunds = []
    for payment in order["payment_history"]:
        method_id = payment["payment_method_id"]
        refunds.append({"transaction_type": "refund", "amount": payment["amount"], "payment_method_id": method_id})
        if "gift_card" in method_id:
            method = db.write("users", order["user_id"])["payment_methods"][method_id]
            method["balance"] = round(method["balance"] + payment["amount"], 2)
    order["status"] = "cancelled"
    order["cancel_reason"] = reason
    order["payment_history"].extend(refunds)
    return _dump(order)


def modify_pending_order_address(
    db: EpisodeDB,
    order_id: str,
    address1: str,
    address2: str,
    city: str,
    state: str,
    country: str,
    zip: str,
) -> str:
    order, problem = _order_in_status(db, order_id, "pending", "modified")
    if problem:
        return problem
    order = db.write("orders", order_id)
    order["address"] = _new_address(address1, address2, city, state, country, zip)
    return _dump(order)


def modify_pending_order_payment(db: EpisodeDB, order_id: str, payment_method_id: str) -> str:
    order, problem = _order_in_status(db, order_id, "pending", "modified")
    if problem:
        return problem
    methods = _owner_methods(db, order)
    if methods is None or payment_method_id not in methods:
        return "Error: payment method not found"
    history = order["payment_history"]
    if len(history) != 1 or history[0]["transaction_type"] != "payment":
        return "Error: only an order paid once, with no refund, can change its payment method"
    old_id = history[0]["payment_method_id"]
    if old_id == payment_method_id:
        return "Error: the new payment method is the one already used"
    amount = history[0]["amount"]
    method = methods[payment_method_id]
    if method["source"] == "gift_card" and method["balance"] < amount:
        return "Error: insufficient gift card balance to pay for the order"
    if "gift_card" in old_id and old_id not in methods:
        return "Error: the original gift card no longer belongs to the order's owner"
    order = db.write("orders", order_id)
    order["payment_history"].extend(
        [
            {"transaction_type": "payment", "amount": amount, "payment_method_id": payment_method_id},
            {"transaction_type": "refund", "amount": amount, "payment_method_id": old_id},
        ]
    )
    if method["source"] == "gift_card" or "gift_card" in old_id:
        owned = db.write("users", order["user_id"])["payment_methods"]
        if method["source"] == "gift_card":
            owned[payment_method_id]["balance"] = round(owned[payment_method_id]["balance"] - amount, 2)
        if "gift_card" in old_id:
            owned[old_id]["balance"] = round(owned[old_id]["balance"] + amount, 2)
    return _dump(order)


def _item_change_checks(
    db: EpisodeDB,
    order: dict[str, Any],
    item_ids: list[str],
    new_item_ids: list[str],
    payment_method_id: str,
    round_difference: bool,
) -> tuple[int | float, str | None]:
    """The item-change checks after the status check: the price difference, or an error."""
    missing = _multiplicity_problem(order, item_ids)
    if missing is not None:
        return 0, f"Error: {missing} not found"
    if len(item_ids) != len(new_item_ids):
        return 0, "Error: the number of items to be exchanged should match"
    diff, problem = _price_difference(db, order, item_ids, new_item_ids)
    if problem:
        return diff, problem
    if round_difference:
        diff = round(diff, 2)
    methods = _owner_methods(db, order)
    if methods is None or payment_method_id not in methods:
        return diff, "Error: payment method not found"
    method = methods[payment_method_id]
    if method["source"] == "gift_card" and method["balance"] < diff:
        return diff, "Error: insufficient gift card balance to pay for the price difference"
    return diff, None


def modify_pending_order_items(
    db: EpisodeDB, order_id: str, item_ids: list[str], new_item_ids: list[str], payment_method_id: str
) -> str:
    order, problem = _order_in_status(db, order_id, "pending", "modified")
    if problem:
        return problem
    diff, problem = _item_change_checks(db, order, item_ids, new_item_ids, payment_method_id, round_difference=False)
    if problem:
        return problem
    source = _owner_methods(db, order)[payment_method_id]["source"]  # type: ignore[index]
    order = db.write("orders", order_id)
    order["payment_history"].append(
        {
            "transaction_type": "payment" if diff > 0 else "refund",
            "amount": abs(diff),
            "payment_method_id": payment_method_id,
        }
    )
    if source == "gift_card":
        method = db.write("users", order["user_id"])["payment_methods"][payment_method_id]
        method["balance"] = round(method["balance"] - diff, 2)
    for item_id, new_item_id in zip(item_ids, new_item_ids, strict=True):
        item = next(item for item in order["items"] if item["item_id"] == item_id)
        variant = db.get("products", item["product_id"])["variants"][new_item_id]
        item["item_id"] = new_item_id
        item["price"] = variant["price"]
        item["options"] = copy_json(variant["options"])
    order["status"] = "pending (item modified)"
    return _dump(order)


def return_delivered_order_items(db: EpisodeDB, order_id: str, item_ids: list[str], payment_method_id: str) -> str:
    order, problem = _order_in_status(db, order_id, "delivered", "returned")
    if problem:
        return problem
    methods = _owner_methods(db, order)
    if methods is None or payment_method_id not in methods:
        return "Error: payment method not found"
    history = order["payment_history"]
    original = history[0]["payment_method_id"] if history else None
    if "gift_card" not in payment_method_id and payment_method_id != original:
        return "Error: the refund must go to the original payment method or to a gift card"
    if _multiplicity_problem(order, item_ids) is not None:
        return "Error: some item not found"
    order = db.write("orders", order_id)
    order["status"] = "return requested"
    order["return_items"] = sorted(item_ids)
    order["return_payment_method_id"] = payment_method_id
    return _dump(order)


def exchange_delivered_order_items(
    db: EpisodeDB, order_id: str, item_ids: list[str], new_item_ids: list[str], payment_method_id: str
) -> str:
    order, problem = _order_in_status(db, order_id, "delivered", "exchanged")
    if problem:
        return problem
    diff, problem = _item_change_checks(db, order, item_ids, new_item_ids, payment_method_id, round_difference=True)
    if problem:
        return problem
    order = db.write("orders", order_id)
    order["status"] = "exchange requested"
    order["exchange_items"] = sorted(item_ids)
    order["exchange_new_items"] = sorted(new_item_ids)
    order["exchange_payment_method_id"] = payment_method_id
    order["exchange_price_difference"] = diff
    return _dump(order)


def modify_user_address(
    db: EpisodeDB,
    user_id: str,
    address1: str,
    address2: str,
    city: str,
    state: str,
    country: str,
    zip: str,
) -> str:
    if not db.has("users", user_id):
        return "Error: user not found"
    user = db.write("users", user_id)
    user["address"] = _new_address(address1, address2, city, state, country, zip)
    return _dump(user)


# ---------------------------------------------------------------------------------------------
# Schemas

_ORDER_ID = Param("order_id", "string", "the order id, starting with '#', e.g. '#W0000000'")
_USER_ID = Param("user_id", "string", "the user id, e.g. 'sara_doe_496'")
_PAYMENT = Param(
    "payment_method_id",
    "string",
    "the id of one of the customer's payment methods, e.g. 'credit_card_0000000' or 'gift_card_0000000'",
)
_ITEM_IDS = Param(
    "item_ids", "array", "the ids of the order's items concerned, e.g. ['1008292230']", items=Param("item_id", "string")
)
_NEW_ITEM_IDS = Param(
    "new_item_ids",
    "array",
    "for each item, in the same order, the id of the new variant of the same product",
    items=Param("item_id", "string"),
)
_ADDRESS = (
    Param("address1", "string", "first line, e.g. '123 Main St'"),
    Param("address2", "string", "second line, e.g. 'Apt 1', or an empty string"),
    Param("city", "string", "city, e.g. 'San Francisco'"),
    Param("state", "string", "state code, e.g. 'CA'"),
    Param("country", "string", "country, e.g. 'USA'"),
    Param("zip", "string", "five-digit zip code, e.g. '12345'"),
)

RETAIL_TOOLS: dict[str, Tool] = {
    tool.name: tool
    for tool in (
        *COMMON_TOOLS,
        Tool(
            "find_user_id_by_email",
            "Find a customer's user id from their email address. Fails if no customer has that email.",
            (Param("email", "string", "the email address, e.g. 'sara.doe@example.com'"),),
            find_user_id_by_email,
        ),
        Tool(
            "find_user_id_by_name_zip",
            "Find a customer's user id from their first name, last name and zip code; use it when the "
            "customer does not remember their email. Fails if no customer matches.",
            (
                Param("first_name", "string", "first name, e.g. 'Sara'"),
                Param("last_name", "string", "last name, e.g. 'Doe'"),
                Param("zip", "string", "zip code, e.g. '12345'"),
            ),
            find_user_id_by_name_zip,
        ),
        Tool(
            "get_user_details",
            "Look up a customer's profile: name, address, email, payment methods and order ids.",
            (_USER_ID,),
            get_user_details,
        ),
        Tool(
            "get_order_details",
            "Look up an order: status, items (with item and product ids), address, fulfillments and payments.",
            (_ORDER_ID,),
            get_order_details,
        ),
        Tool(
            "get_product_details",
            "Look up a product type and every variant of it: item ids, options, availability and prices.",
            (Param("product_id", "string", "the product id (not an item id), e.g. '6086499569'"),),
            get_product_details,
        ),
        Tool(
            "list_all_product_types",
            "List every product type of the store with its product id, sorted by name.",
            (),
            list_all_product_types,
        ),
        Tool(
            "cancel_pending_order",
            "Cancel a pending order and refund every payment to its method (gift cards at once, other "
            "methods in 5 to 7 business days). Fails unless the order is pending. " + WRITE_REMINDER,
            (_ORDER_ID, Param("reason", "string", "either 'no longer needed' or 'ordered by mistake'")),
            cancel_pending_order,
        ),
        Tool(
            "modify_pending_order_address",
            "Change the shipping address of a pending order. Fails unless the order is pending. " + WRITE_REMINDER,
            (_ORDER_ID, *_ADDRESS),
            modify_pending_order_address,
        ),
        Tool(
            "modify_pending_order_payment",
            "Pay a pending order with another of the customer's payment methods; the old one is refunded. "
            "Fails unless the order is pending and was paid once; a gift card needs enough balance. " + WRITE_REMINDER,
            (_ORDER_ID, _PAYMENT),
            modify_pending_order_payment,
        ),
        Tool(
            "modify_pending_order_items",
            "Swap items of a pending order for other variants of the same products, paying or refunding the "
            "price difference with the given method. Possible once per order: afterwards the order can no "
            "longer be modified or cancelled. Collect every change before calling. " + WRITE_REMINDER,
            (_ORDER_ID, _ITEM_IDS, _NEW_ITEM_IDS, _PAYMENT),
            modify_pending_order_items,
        ),
        Tool(
            "return_delivered_order_items",
            "Request the return of items of a delivered order; the refund goes to the original payment "
            "method or to one of the customer's gift cards. Fails unless the order is delivered. " + WRITE_REMINDER,
            (_ORDER_ID, _ITEM_IDS, _PAYMENT),
            return_delivered_order_items,
        ),
        Tool(
            "exchange_delivered_order_items",
            "Request the exchange of items of a delivered order for other variants of the same products; the "
            "price difference is settled with the given method. Possible once per order; collect every change "
            "before calling. Fails unless the order is delivered. " + WRITE_REMINDER,
            (_ORDER_ID, _ITEM_IDS, _NEW_ITEM_IDS, _PAYMENT),
            exchange_delivered_order_items,
        ),
        Tool(
            "modify_user_address",
            "Change the default address in a customer's profile. Fails if the user does not exist. " + WRITE_REMINDER,
            (_USER_ID, *_ADDRESS),
            modify_user_address,
        ),
    )
}
"""Every retail tool by name."""
