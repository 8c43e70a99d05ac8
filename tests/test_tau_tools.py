"""TauGym's database model and tools (docs/envs/tau.md, "Tools")."""

import json
from pathlib import Path

import pytest

from mimesis_gym.envs.tau.calc import calculate
from mimesis_gym.envs.tau.db import Database, EpisodeDB, canon, canonical_text, copy_json, digest_of
from mimesis_gym.envs.tau.tasks import domain_tools, load_upstream_pack
from mimesis_gym.envs.tau.toolkit import call_tool, tool_list_text

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
RETAIL_PRISTINE = "5a4b2cb59f4d12dea7e4adff24a7f8fada510ead49372ea4a729a82bbb5f49b5"
AIRLINE_PRISTINE = "4587e6b48ad2b2c4f3e1fecb40aabec7bb2286513273b8f8cec3f5865222f290"
GOLD_DIGESTS = {
    "retail-000": "5ed21c65cf9e8d0c20ad0210721146bb6abad19bedce7c2e08472311dabbeec8",
    "retail-train-000": "130d73aa0c9fa0f19a84eff4ecfaabbd978ab125b15cbc93388d2ba491ebbf92",
    "retail-002": "047522a8ae2c144d87970f3579fc39a81e72056269b5f0d647b9e3918b53f448",
    "retail-train-024": "5fa860c590f3bd4dbb68504f9253b3b64ed2290df48e5703a6459394b4590976",
    "retail-train-007": "d1c4fdb95ba438ebd6e25a339d490fe16fd7d65218b46cd1bd54113b16f930f3",
    "retail-064": "2a282ccca256816fa07d4c214e29622e4a57e17899ba12810c053b091937098d",
    "airline-000": "a825bc534ee4abad2f0f36d5d162989dcbae16dd509bd675feb7e9ffc86a1001",
    "airline-026": "989dedfa6228fcddc7cc44bf3e67325463035a530d3446d8dc0c65284bec6b6f",
}


@pytest.fixture(scope="module")
def pack():
    if not (SHARED_DATA / "tau-bench").is_dir():
        pytest.skip(f"tau-bench reference data not found at {SHARED_DATA / 'tau-bench'} (expected ../shared/data)")
    return load_upstream_pack(str(SHARED_DATA))


def fresh(pack, domain):
    return EpisodeDB(pack.databases[domain])


def call(db, name, **arguments):
    return call_tool(domain_tools(db.base.domain), db, name, arguments)


def record(db, table, key):
    return db.get(table, key)


# ---------------------------------------------------------------- canonical form and digests


def test_canon_sorts_dict_keys_and_keeps_list_order():
    assert canon({"b": [2, {"d": 1, "c": 0}], "a": 1}) == (("a", 1), ("b", (2, (("c", 0), ("d", 1)))))


def test_canonical_text_distinguishes_int_float_and_bool():
    assert canonical_text({"x": 91}) != canonical_text({"x": 91.0})
    assert canonical_text([True]) != canonical_text([1])


def test_composed_digest_equals_the_direct_digest_after_writes_and_inserts():
    tables = {
        "orders": {"b": {"v": 1}, "a": {"v": [1, 2]}},
        "products": {"p": {"name": "x"}},
        "users": {},
    }
    base = Database("retail", tables)
    db = EpisodeDB(base)
    assert db.digest() == digest_of(tables) == base.digest
    db.write("orders", "b")["v"] = 1.0
    db.insert("orders", "0new", {"v": "first"})
    db.insert("products", "zz", {"name": "last"})
    expected = copy_json(tables)
    expected["orders"]["b"]["v"] = 1.0
    expected["orders"]["0new"] = {"v": "first"}
    expected["products"]["zz"] = {"name": "last"}
    assert db.digest() == digest_of(expected)
    assert tables["orders"]["b"]["v"] == 1  # the pristine tables are never mutated
    assert [key for key, _ in db.items("orders")] == ["b", "a", "0new"]


@pytest.mark.parametrize("seed", range(6))
def test_composed_digest_matches_on_random_edits(seed):
    import random

    rng = random.Random(seed)
    tables = {
        "orders": {f"k{n:02d}": {"v": n, "l": [n, float(n)]} for n in range(0, 20, 2)},
        "products": {"only": {"name": "x"}},
        "users": {},
    }
    base = Database("retail", tables)
    expected = copy_json(tables)
    db = EpisodeDB(base)
    for _ in range(8):
        table = rng.choice(["orders", "orders", "products", "users"])
        key = rng.choice([*expected[table], f"k{rng.randint(0, 21):02d}", "a", "zz"])
        if key in expected[table] and rng.random() < 0.7:
            db.write(table, key)["v"] = rng.choice([1, 1.0, True, "1"])
            expected[table][key] = copy_json(db.get(table, key))
        else:
            db.insert(table, key, {"v": key})
            expected[table][key] = {"v": key}
        assert db.digest() == digest_of(expected)


def test_same_state_compares_touched_records_by_canonical_string():
    base = Database("retail", {"orders": {"a": {"v": 91}}, "products": {}, "users": {}})
    one, two = EpisodeDB(base), EpisodeDB(base)
    one.write("orders", "a")
    assert one.same_state(two)  # a copy with equal content
    one.write("orders", "a")["v"] = 91.0
    assert not one.same_state(two) and not two.same_state(one)
    two.write("orders", "a")["v"] = 91.0
    assert one.same_state(two)


def test_pristine_digests(pack):
    assert pack.databases["retail"].digest == RETAIL_PRISTINE
    assert pack.databases["airline"].digest == AIRLINE_PRISTINE


@pytest.mark.parametrize("task_id", list(GOLD_DIGESTS))
def test_gold_digests(pack, task_id):
    assert pack.gold(pack.get(task_id)).digest == GOLD_DIGESTS[task_id]


def test_retail_002_second_gold_call_fails_and_retail_012_stays_pristine(pack):
    assert pack.gold(pack.get("retail-002")).results[1].startswith("Error")
    assert pack.gold(pack.get("retail-train-024")).results[0].startswith("Error")
    gold = pack.gold(pack.get("retail-012"))
    assert gold.digest == RETAIL_PRISTINE
    assert [r for r in gold.results if r.startswith("Error")] == [gold.results[-1]]


def test_every_upstream_task_replays(pack):
    errors = {"retail": 0, "airline": 0}
    pristine = 0
    for task in pack:
        gold = pack.gold(task)  # no exception
        errors[task.domain] += sum(result.startswith("Error") for result in gold.results)
        pristine += gold.db.same_state(fresh(pack, task.domain))
    assert len(pack) == 665
    assert errors == {"retail": 44, "airline": 0}
    assert pristine == 36


def test_gold_state_comparison_equals_the_full_digest_comparison(pack):
    for task_id in ("retail-000", "retail-012", "airline-000", "retail-train-007"):
        task = pack.get(task_id)
        gold = pack.gold(task)
        for other_id in ("retail-000", "retail-012", "airline-000", "retail-train-007"):
            other = pack.gold(pack.get(other_id))
            if other.db.base is gold.db.base:
                assert gold.reached_by(other.db) == (gold.digest == other.digest), (task_id, other_id)


# ---------------------------------------------------------------- fixed tool effects


def test_cancel_refunds_to_the_gift_card_and_cannot_repeat(pack):
    db = fresh(pack, "retail")
    result = call(db, "cancel_pending_order", order_id="#W6779827", reason="no longer needed")
    order = json.loads(result)
    assert order["status"] == "cancelled" and order["cancel_reason"] == "no longer needed"
    assert order["payment_history"] == [
        {"transaction_type": "payment", "amount": 4079.45, "payment_method_id": "gift_card_7219486"},
        {"transaction_type": "refund", "amount": 4079.45, "payment_method_id": "gift_card_7219486"},
    ]
    owner = record(db, "users", order["user_id"])
    assert (
        pack.databases["retail"].tables["users"][order["user_id"]]["payment_methods"]["gift_card_7219486"]["balance"]
        == 49
    )
    assert owner["payment_methods"]["gift_card_7219486"]["balance"] == 4128.45
    digest = db.digest()
    assert call(db, "cancel_pending_order", order_id="#W6779827", reason="no longer needed").startswith("Error")
    assert db.digest() == digest


def test_payment_change_then_cancel_refunds_three_entries_and_leaves_91_0(pack):
    db = fresh(pack, "retail")
    order = json.loads(
        call(db, "modify_pending_order_payment", order_id="#W1080318", payment_method_id="gift_card_3749819")
    )
    assert order["payment_history"][-2:] == [
        {"transaction_type": "payment", "amount": 53.43, "payment_method_id": "gift_card_3749819"},
        {"transaction_type": "refund", "amount": 53.43, "payment_method_id": "credit_card_3577130"},
    ]
    user_id = order["user_id"]
    assert pack.databases["retail"].tables["users"][user_id]["payment_methods"]["gift_card_3749819"]["balance"] == 91
    assert record(db, "users", user_id)["payment_methods"]["gift_card_3749819"]["balance"] == 37.57
    order = json.loads(call(db, "cancel_pending_order", order_id="#W1080318", reason="ordered by mistake"))
    assert [(p["transaction_type"], p["amount"], p["payment_method_id"]) for p in order["payment_history"][-3:]] == [
        ("refund", 53.43, "credit_card_3577130"),
        ("refund", 53.43, "gift_card_3749819"),
        ("refund", 53.43, "credit_card_3577130"),
    ]
    balance = record(db, "users", user_id)["payment_methods"]["gift_card_3749819"]["balance"]
    assert balance == 91.0 and isinstance(balance, float)
    assert db.record_text("users", user_id) != pack.databases["retail"].record_text("users", user_id)


def test_item_modification_keeps_the_unrounded_difference(pack):
    gold = pack.gold(pack.get("retail-train-007"))
    order_id = next(a.kwargs["order_id"] for a in pack.get("retail-train-007").actions if "order_id" in a.kwargs)
    order = gold.db.get("orders", order_id)
    assert order["status"] == "pending (item modified)"
    assert order["payment_history"][-1]["transaction_type"] == "refund"
    assert order["payment_history"][-1]["amount"] == 173.82999999999993


def test_exchange_records_the_rounded_difference_and_sorted_ids(pack):
    order = pack.gold(pack.get("retail-000")).db.get("orders", "#W2378156")
    assert order["status"] == "exchange requested"
    assert order["exchange_price_difference"] == -16.63
    assert order["exchange_items"] == ["1151293680", "4983901480"]


def test_return_sorts_the_item_ids(pack):
    db = fresh(pack, "retail")
    order = json.loads(
        call(
            db,
            "return_delivered_order_items",
            order_id="#W6067464",
            item_ids=["9624127908", "8917609800"],
            payment_method_id="credit_card_4190576",
        )
    )
    assert order["return_items"] == ["8917609800", "9624127908"]
    assert order["status"] == "return requested" and order["return_payment_method_id"] == "credit_card_4190576"


def test_airline_booking_uses_fixed_ids_and_removes_the_certificate(pack):
    gold = pack.gold(pack.get("airline-000"))
    reservation = gold.db.get("reservations", "HATHAT")
    assert [flight["price"] for flight in reservation["flights"]] == [152, 103]
    assert reservation["created_at"] == "2024-05-15T15:00:00"
    assert "certificate_7504069" not in gold.db.get("users", "mia_li_3668")["payment_methods"]
    assert "HATHAT" in gold.db.get("users", "mia_li_3668")["reservations"]


def test_airline_flight_change_does_not_update_the_cabin(pack):
    assert pack.gold(pack.get("airline-026")).db.get("reservations", "M20IZO")["cabin"] == "economy"


def test_airline_cancel_appends_negative_payments(pack):
    db = fresh(pack, "airline")
    reservation = json.loads(call(db, "cancel_reservation", reservation_id="NQNU5R"))
    assert reservation["status"] == "cancelled"
    assert reservation["payment_history"][-1] == {"payment_id": "credit_card_4959530", "amount": -6178}


def test_airline_baggage_update_charges_the_gift_card(pack):
    db = fresh(pack, "airline")
    user_id = db.get("reservations", "4WQ150")["user_id"]
    assert db.get("users", user_id)["payment_methods"]["gift_card_3576581"]["amount"] == 245
    reservation = json.loads(
        call(
            db,
            "update_reservation_baggages",
            reservation_id="4WQ150",
            total_baggages=6,
            nonfree_baggages=2,
            payment_id="gift_card_3576581",
        )
    )
    assert reservation["payment_history"][-1] == {"payment_id": "gift_card_3576581", "amount": 100}
    assert db.get("users", user_id)["payment_methods"]["gift_card_3576581"]["amount"] == 145


def test_send_certificate_takes_the_first_free_fixed_id(pack):
    db = fresh(pack, "airline")
    assert call(db, "send_certificate", user_id="mia_li_3668", amount=150) == (
        "Certificate certificate_3221322 added to user mia_li_3668 with amount 150."
    )
    assert db.get("users", "mia_li_3668")["payment_methods"]["certificate_3221322"] == {
        "source": "certificate",
        "amount": 150,
        "id": "certificate_3221322",
    }
    call(db, "send_certificate", user_id="mia_li_3668", amount=1)
    call(db, "send_certificate", user_id="mia_li_3668", amount=2)
    digest = db.digest()
    assert call(db, "send_certificate", user_id="mia_li_3668", amount=3).startswith("Error")
    assert db.digest() == digest


def test_list_all_product_types_is_sorted(pack):
    listed = json.loads(call(fresh(pack, "retail"), "list_all_product_types"))
    assert len(listed) == 50 and list(listed) == sorted(listed)


def test_list_all_airports(pack):
    airports = json.loads(call(fresh(pack, "airline"), "list_all_airports"))
    assert list(airports)[:3] == ["SFO", "JFK", "LAX"] and len(airports) == 20 and airports["LGA"] == "LaGuardia"


def test_direct_and_one_stop_search_return_available_flights(pack):
    db = fresh(pack, "airline")
    direct = json.loads(call(db, "search_direct_flight", origin="JFK", destination="SEA", date="2024-05-20"))
    assert direct and all(f["status"] == "available" and "dates" not in f for f in direct)
    onestop = json.loads(call(db, "search_onestop_flight", origin="JFK", destination="SEA", date="2024-05-20"))
    assert onestop and all(len(pair) == 2 and pair[0]["date"] == "2024-05-20" for pair in onestop)
    assert all(pair[0]["destination"] == pair[1]["origin"] for pair in onestop)


# ---------------------------------------------------------------- argument checks


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({}, "Error: missing argument 'order_id' of get_order_details"),
        ({"order_id": "#W1", "extra": 1}, "Error: unexpected argument 'extra' of get_order_details"),
        ({"order_id": 5}, "Error: argument 'order_id' must be a string, got an integer"),
    ],
)
def test_schema_errors_leave_the_database_untouched(pack, arguments, message):
    db = fresh(pack, "retail")
    assert call_tool(domain_tools("retail"), db, "get_order_details", arguments) == message
    assert db.overlay == {}


def test_types_inside_arrays_and_objects_are_checked(pack):
    db = fresh(pack, "airline")
    tools = domain_tools("airline")
    base = {"reservation_id": "4WQ150", "passengers": [{"first_name": "A", "last_name": "B"}]}
    assert call_tool(tools, db, "update_reservation_passengers", base) == (
        "Error: argument 'passengers'[0] is missing the key 'dob'"
    )
    bools = {"reservation_id": "4WQ150", "total_baggages": True, "nonfree_baggages": 0, "payment_id": "x"}
    assert "must be an integer, got a boolean" in call_tool(tools, db, "update_reservation_baggages", bools)
    assert "must be one of" in call_tool(
        tools,
        db,
        "update_reservation_flights",
        {"reservation_id": "4WQ150", "cabin": "first", "flights": [], "payment_id": "x"},
    )
    assert db.overlay == {}


def test_a_failed_precondition_changes_nothing(pack):
    db = fresh(pack, "retail")
    assert call(db, "cancel_pending_order", order_id="#W6779827", reason="too expensive").startswith("Error")
    assert call(db, "cancel_pending_order", order_id="#W0000000", reason="no longer needed") == "Error: order not found"
    assert db.overlay == {}


def test_gold_kwargs_are_never_aliased_by_the_stored_records(pack):
    task = pack.get("airline-000")
    before = json.dumps([a.kwargs for a in task.actions])
    gold = pack.gold(task)
    reservation = gold.db.get("reservations", "HATHAT")
    assert reservation["payment_history"] is not task.actions[-1].kwargs["payment_methods"]
    assert json.dumps([a.kwargs for a in task.actions]) == before


# ---------------------------------------------------------------- calculate


@pytest.mark.parametrize(
    ("expression", "result"),
    [
        ("2 + 2", "4.0"),
        ("1/3", "0.33"),
        ("7//2", "3.0"),
        ("2**10", "1024.0"),
        ("-2**2", "-4.0"),
        ("2**3**2", "512.0"),
        ("2**-1", "0.5"),
        ("(1 + 2) * 3 - 4 / 8", "8.5"),
        (".5 + 5.", "5.5"),
        ("-7//2", "-4.0"),
        ("100 - 33.33", "66.67"),
    ],
)
def test_calculate_follows_python_arithmetic(expression, result):
    assert calculate(expression) == result


@pytest.mark.parametrize(
    "expression", ["1/0", "(1", "1 2", "", "()", "01", "2 * * 3", "(-8)**(1/3)", "10**400", "9**9**9"]
)
def test_calculate_errors(expression):
    assert calculate(expression).startswith("Error: ")


def test_calculate_rejects_other_characters():
    assert calculate("abs(1)") == "Error: invalid characters in expression"
    assert calculate("1e5") == "Error: invalid characters in expression"


def test_calculate_survives_deep_nesting():
    assert calculate("(" * 5000 + "1" + ")" * 5000).startswith("Error")


# ---------------------------------------------------------------- tool list


def test_tool_list_text_lists_tools_sorted_with_parameters():
    text = tool_list_text(list(domain_tools("retail").values()))
    lines = text.splitlines()
    assert lines[0] == "Available Tools:"
    names = [line[2:].split(":")[0] for line in lines if line.startswith("- ")]
    assert names == sorted(domain_tools("retail")) and len(names) == 16
    assert "  Parameters:\n    - order_id: " in text
    assert "- list_all_product_types: " in text and "list_all_product_types: List every" in text
    airline = tool_list_text(list(domain_tools("airline").values()))
    assert airline.count("\n- ") == 14
