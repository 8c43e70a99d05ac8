"""TauGym's data: the shipped original pack and the upstream loader (docs/envs/tau.md, "Task data")."""

import collections
import json
import pickle
import re
from pathlib import Path

import pytest

from mimesis_gym.envs.tau.data.build_original import DEFAULT_SEED, PERSONAS, PRODUCTS, write_pack
from mimesis_gym.envs.tau.facts import WRITE_TOOLS
from mimesis_gym.envs.tau.tasks import load_original_pack, load_upstream_pack

DATA = Path(__file__).resolve().parents[1] / "mimesis_gym/envs/tau/data/original"
SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
KIND_COUNTS = {
    "cancel": 9,
    "modify_address": 6,
    "modify_payment": 6,
    "modify_items": 9,
    "return": 9,
    "exchange": 9,
    "user_address": 3,
    "info": 6,
    "infeasible": 3,
}


@pytest.fixture(scope="module")
def pack():
    return load_original_pack()


@pytest.fixture(scope="module")
def tables(pack):
    return pack.databases["retail"].tables


def tasks(pack, *splits):
    return [task for split in splits for task in pack.pool(split)]


# ---------------------------------------------------------------- the store


def test_counts(pack, tables):
    assert {name: len(table) for name, table in tables.items()} == {"users": 40, "orders": 80, "products": 25}
    assert pack.counts() == {"train": 40, "test": 20, "demo": 3}
    assert [t.id for t in pack.pool("train")] == [f"orig-retail-train-{i:03d}" for i in range(40)]
    assert [t.id for t in pack.pool("test")] == [f"orig-retail-{i:03d}" for i in range(20)]


def test_products_follow_the_spec(tables):
    spec = {name: (base, [dimension for dimension, _ in dimensions]) for name, base, dimensions in PRODUCTS}
    ids = []
    assert sorted(p["name"] for p in tables["products"].values()) == sorted(spec)
    for product_id, product in tables["products"].items():
        assert list(product) == ["name", "product_id", "variants"] and product["product_id"] == product_id
        base, dimensions = spec[product["name"]]
        variants = product["variants"]
        assert 5 <= len(variants) <= 9
        combinations = [tuple(v["options"].values()) for v in variants.values()]
        assert len(set(combinations)) == len(combinations)
        for dimension in dimensions:
            values = {v["options"][dimension] for v in variants.values()}
            assert 2 <= len(values) <= (6 if len(dimensions) == 1 else 4), (product["name"], dimension)
        assert sum(v["available"] for v in variants.values()) >= 2
        for item_id, variant in variants.items():
            assert list(variant) == ["item_id", "options", "available", "price"] and variant["item_id"] == item_id
            assert list(variant["options"]) == dimensions
            assert base * 0.9 - 0.005 <= variant["price"] <= base * 1.1 + 0.005
            assert round(variant["price"], 2) == variant["price"]
        ids += [product_id, *variants]
    assert all(re.fullmatch(r"\d{10}", i) for i in ids) and len(set(ids)) == len(ids)


def test_users_follow_the_spec(tables):
    for user_id, user in tables["users"].items():
        first, last = user["name"]["first_name"], user["name"]["last_name"]
        assert re.fullmatch(rf"{first.lower()}_{last.lower()}_\d{{4}}", user_id)
        assert list(user) == ["name", "address", "email", "payment_methods", "orders"]
        assert re.fullmatch(rf"{first.lower()}\.{last.lower()}\d\d@example\.net", user["email"])
        address = user["address"]
        assert list(address) == ["address1", "address2", "city", "country", "state", "zip"]
        assert address["country"] == "USA" and re.fullmatch(r"\d{5}", address["zip"])
        assert re.fullmatch(r"(Apt \d+|Suite \d+|)", address["address2"])
        assert 1 <= len(user["payment_methods"]) <= 3
        for method_id, method in user["payment_methods"].items():
            assert method["id"] == method_id and re.fullmatch(rf"{method['source']}_\d{{7}}", method_id)
            if method["source"] == "credit_card":
                assert method["brand"] in ("visa", "mastercard", "amex", "discover")
                assert re.fullmatch(r"\d{4}", method["last_four"])
            if method["source"] == "gift_card":
                assert 0 <= method["balance"] <= 400
        assert 1 <= len(user["orders"]) <= 4


def test_orders_are_consistent(tables):
    users, orders, products = tables["users"], tables["orders"], tables["products"]
    statuses = collections.Counter(order["status"] for order in orders.values())
    assert statuses == {"pending": 28, "processed": 12, "delivered": 32, "cancelled": 8}
    assert sorted(o for user in users.values() for o in user["orders"]) == sorted(orders)
    for order_id, order in orders.items():
        assert re.fullmatch(r"#R\d{7}", order_id) and order["order_id"] == order_id
        assert order_id in users[order["user_id"]]["orders"]
        assert 1 <= len(order["items"]) <= 4
        for item in order["items"]:
            variant = products[item["product_id"]]["variants"][item["item_id"]]
            assert item == {
                "name": products[item["product_id"]]["name"],
                "product_id": item["product_id"],
                "item_id": item["item_id"],
                "price": variant["price"],
                "options": variant["options"],
            }
        if order["status"] in ("pending", "cancelled"):
            assert order["fulfillments"] == []
        else:
            (fulfillment,) = order["fulfillments"]
            assert re.fullmatch(r"\d{12}", fulfillment["tracking_id"][0])
            assert fulfillment["item_ids"] == [item["item_id"] for item in order["items"]]
        history = order["payment_history"]
        total = round(sum(item["price"] for item in order["items"]), 2)
        method = history[0]["payment_method_id"]
        assert method in users[order["user_id"]]["payment_methods"]
        expected = [{"transaction_type": "payment", "amount": total, "payment_method_id": method}]
        if order["status"] == "cancelled":
            expected.append({"transaction_type": "refund", "amount": total, "payment_method_id": method})
        assert history == expected


# ---------------------------------------------------------------- the tasks


def test_kinds_and_splits(pack):
    kinds = collections.Counter(t.kind for t in tasks(pack, "train", "test"))
    assert kinds == KIND_COUNTS
    for kind, count in KIND_COUNTS.items():
        assert sum(t.kind == kind for t in pack.pool("test")) == count // 3


def test_gold_actions_authenticate_and_writes_change_the_store(pack):
    pristine = pack.databases["retail"]
    for task in tasks(pack, "train", "test", "demo"):
        first = task.actions[0]
        facts = task.user_facts
        assert first.name == ("find_user_id_by_email" if facts.knows_email else "find_user_id_by_name_zip"), task.id
        assert task.actions[1].name == "get_user_details"
        gold = pack.gold(task)
        writes = [
            r
            for a, r in zip(
                [a for a in task.actions if a.name != "transfer_to_human_agents"], gold.results, strict=True
            )
            if a.name in WRITE_TOOLS
        ]
        if task.kind in ("info", "infeasible"):
            assert writes == [] and gold.digest == pristine.digest, task.id
        else:
            assert writes and all(r.startswith("{") for r in writes), task.id
            assert gold.digest != pristine.digest, task.id
        assert not any(r.startswith("Error") for r in gold.results), task.id


def test_two_writes_on_different_orders(pack):
    double = 0
    for task in tasks(pack, "train", "test"):
        orders = {a.kwargs["order_id"] for a in task.actions if a.name in WRITE_TOOLS and "order_id" in a.kwargs}
        double += len(orders) >= 2
    assert double >= 10


def test_instructions_and_facts(pack, tables):
    openings = collections.Counter(t.obs for t in tasks(pack, "train", "test"))
    assert len(openings) >= 9
    for task in tasks(pack, "train", "test", "demo"):
        facts = task.user_facts
        user = tables["users"][task.user_id]
        assert task.instruction.startswith(f"You are {user['name']['first_name']} {user['name']['last_name']}")
        assert task.instruction.endswith(tuple(PERSONAS))
        assert facts.knows_email == (user["email"] in task.instruction)
        assert (facts.user_id, facts.zip, facts.email, facts.request) == (
            task.user_id,
            user["address"]["zip"],
            user["email"],
            task.obs,
        )
        assert all(order_id in task.instruction for order_id in facts.orders)
        if task.kind in ("modify_items", "exchange"):
            assert "but with" in task.instruction and facts.targets and facts.payment


def test_information_outputs_match_the_store(pack, tables):
    users, orders, products = tables["users"], tables["orders"], tables["products"]
    for task in tasks(pack, "train", "test", "demo"):
        if task.kind != "info":
            continue
        user = users[task.user_id]
        text = task.instruction
        if "how much you paid" in text:
            expected = str(orders[task.user_facts.orders[0]]["payment_history"][0]["amount"])
        elif "tracking number" in text:
            expected = orders[task.user_facts.orders[0]]["fulfillments"][0]["tracking_id"][0]
        elif "still pending" in text:
            expected = str(sum(orders[o]["status"] == "pending" for o in user["orders"]))
        elif "gift card" in text:
            card = next(m for m in user["payment_methods"].values() if m["source"] == "gift_card")
            expected = str(card["balance"])
        else:
            (item_id,) = task.user_facts.items
            expected = str(next(p["variants"][item_id]["price"] for p in products.values() if item_id in p["variants"]))
        assert task.outputs == (expected,), task.id
        assert "," not in expected


def test_demo_tasks_fit_the_step_budget_and_cover_three_kinds(pack):
    demo = pack.pool("demo")
    assert [t.kind for t in demo] == ["cancel", "exchange", "info"]
    assert all(len(task.actions) + 1 < 16 for task in demo)  # gold calls and the closing message


@pytest.mark.slow
def test_regeneration_reproduces_the_committed_files_byte_for_byte(tmp_path):
    written = write_pack(tmp_path, DEFAULT_SEED)
    assert len(written) == 6
    for path in written:
        relative = path.relative_to(tmp_path)
        assert path.read_bytes() == (DATA / relative).read_bytes(), relative


# ---------------------------------------------------------------- the upstream loader


@pytest.fixture(scope="module")
def upstream():
    if not (SHARED_DATA / "tau-bench").is_dir() or not (SHARED_DATA / "userrl").is_dir():
        pytest.skip(f"tau-bench / UserRL reference data not found under {SHARED_DATA} (expected ../shared/data)")
    return load_upstream_pack(str(SHARED_DATA))


def test_upstream_counts_ids_and_prompts(upstream):
    assert upstream.counts() == {"train": 500, "test": 165}
    train, test = upstream.pool("train"), upstream.pool("test")
    assert [t.id for t in train[:2]] == ["retail-train-000", "retail-train-001"] and train[-1].id == "retail-train-499"
    assert collections.Counter(t.domain for t in test) == {"retail": 115, "airline": 50}
    assert all(t.domain == "retail" for t in train)
    assert all(t.system_prompt and t.opening_prompt for t in upstream)
    assert upstream.get("retail-000").opening_prompt.startswith("Here is my request: Hello! I recently received")
    assert upstream.get("airline-000").actions[0].kwargs["payment_methods"][0]["amount"] == 250
    assert upstream.policies["retail"] and upstream.policies["airline"]


def test_the_env_variable_names_the_root(upstream, monkeypatch):
    monkeypatch.setenv("MIMESIS_GYM_TAU_DIR", str(SHARED_DATA))
    assert load_upstream_pack(None) is upstream


def write_fake_root(root: Path, ids=("retail-000", "airline-000")) -> None:
    """A tiny invented upstream tree in the second layout (``<root>/<domain>/``, task files at the root)."""
    tables = {
        "retail": {"users": {"u_1": {"email": "u@x.net"}}, "orders": {}, "products": {}},
        "airline": {"users": {}, "reservations": {}, "flights": {}},
    }
    for domain, domain_tables in tables.items():
        (root / domain / "data").mkdir(parents=True)
        (root / domain / "wiki.md").write_text(f"{domain} policy")
        for name, table in domain_tables.items():
            (root / domain / "data" / f"{name}.json").write_text(json.dumps(table))
    record = {"user_id": "u_1", "actions": [], "instruction": "You are U.", "outputs": []}
    (root / "tau_test.json").write_text(json.dumps([{"id": i, "obs": "Hi", "info": {"task": record}} for i in ids]))
    (root / "tau_train.json").write_text(
        json.dumps([{"id": "retail-train-000", "obs": "Hi", "info": {"task": record}}])
    )


def test_the_second_layout_loads_with_native_prompts(tmp_path):
    write_fake_root(tmp_path)
    pack = load_upstream_pack(str(tmp_path))
    assert pack.counts() == {"train": 1, "test": 2}
    assert pack.get("airline-000").domain == "airline" and pack.get("retail-000").system_prompt is None
    assert pack.policies == {"retail": "retail policy", "airline": "airline policy"}


def test_missing_files_list_the_paths_tried(tmp_path):
    with pytest.raises(
        FileNotFoundError, match=r"retail folder not found; tried .*tau-bench/retail.*MIMESIS_GYM_TAU_DIR"
    ):
        load_upstream_pack(str(tmp_path))


def test_separate_checkouts_from_the_two_variables(upstream, monkeypatch):
    """$MIMESIS_GYM_TAU_DIR at tau-bench's files, $MIMESIS_GYM_USERRL_DIR at UserRL's: the same pack."""
    monkeypatch.setenv("MIMESIS_GYM_TAU_DIR", str(SHARED_DATA / "tau-bench"))
    monkeypatch.setenv("MIMESIS_GYM_USERRL_DIR", str(SHARED_DATA / "userrl"))
    pack = load_upstream_pack(None)
    assert pack.counts() == upstream.counts() and all(t.system_prompt and t.opening_prompt for t in pack)
    assert [t.id for t in pack] == [t.id for t in upstream]
    assert pickle.loads(pickle.dumps(pack)) is pack


def split_checkouts(tmp_path: Path) -> tuple[Path, Path]:
    """The fake tree split into a tau-bench checkout layout and a UserRL checkout layout."""
    write_fake_root(tmp_path / "both")
    tau, userrl = tmp_path / "tau-bench", tmp_path / "UserRL"
    (tau / "tau_bench" / "envs").mkdir(parents=True)
    for domain in ("retail", "airline"):
        (tmp_path / "both" / domain).rename(tau / "tau_bench" / "envs" / domain)
    (userrl / "gyms/TauGym/taugym/data").mkdir(parents=True)
    for name in ("tau_test.json", "tau_train.json"):
        (tmp_path / "both" / name).rename(userrl / "gyms/TauGym/taugym/data" / name)
    return tau, userrl


def test_checkout_layouts_and_what_each_error_names(tmp_path, monkeypatch):
    tau, userrl = split_checkouts(tmp_path)
    monkeypatch.delenv("MIMESIS_GYM_USERRL_DIR", raising=False)
    monkeypatch.delenv("MIMESIS_GYM_TAU_DIR", raising=False)
    with pytest.raises(ValueError, match=r"data_dir=.*\$MIMESIS_GYM_TAU_DIR.*\$MIMESIS_GYM_USERRL_DIR"):
        load_upstream_pack(None)
    monkeypatch.setenv("MIMESIS_GYM_TAU_DIR", str(tau))
    with pytest.raises(FileNotFoundError, match=r"tau_test.json not found.*set \$MIMESIS_GYM_USERRL_DIR"):
        load_upstream_pack(None)
    monkeypatch.setenv("MIMESIS_GYM_USERRL_DIR", str(userrl))
    assert load_upstream_pack(None).counts() == {"train": 1, "test": 2}
    assert load_upstream_pack(str(tau)).counts() == {"train": 1, "test": 2}  # data_dir, tasks from the variable
    monkeypatch.setenv("MIMESIS_GYM_USERRL_DIR", str(tmp_path / "nowhere"))
    with pytest.raises(ValueError, match=r"\$MIMESIS_GYM_USERRL_DIR points to .*nowhere"):
        load_upstream_pack(None)


def test_ids_must_match_their_position(tmp_path):
    write_fake_root(tmp_path, ids=("retail-000", "retail-002"))
    with pytest.raises(ValueError, match="should end with 1"):
        load_upstream_pack(str(tmp_path))
