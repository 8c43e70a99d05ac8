"""TravelGym on UserRL data: the loader on a schema fixture and the real parquets; prompt_set="userrl".

UserRL's ``travelgym_data_{W}.json`` files are not in ``../shared/data``; ``tests/data/travel_upstream``
holds two invented records in their schema, a fixture ``utils.py`` and the rows of three parquet
files (written to a temporary UserRL root by the ``fixture_root`` fixture).
"""

import json
import shutil
from pathlib import Path

import gymnasium as gym
import pytest

from mimesis_gym.envs.travel.tasks import load_upstream_pack, load_userrl_tasks
from tests.support.chat_models import ScriptedChatModel

ENV_ID = "mimesis/TravelGym-v0"
FIXTURE = Path(__file__).resolve().parent / "data" / "travel_upstream"
HOTEL_TASK = "hotel:2-1|restaurant:2-7"
FLIGHT_TASK = "flight:2-3|rental_car:2-9"
STUB_TASK = "hotel:3-4|rental_car:3-2|restaurant:3-8"
USERRL_COUNTS = {
    "22": (570, 101),
    "33": (489, 87),
    "44": (379, 67),
    "233": (341, 61),
    "333": (300, 53),
    "334": (266, 47),
    "444": (210, 38),
    "2222": (96, 17),
}


@pytest.fixture
def fixture_root(tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    import pyarrow as pa

    root = tmp_path / "userrl"
    shutil.copytree(FIXTURE / "gyms", root / "gyms")
    for relative, rows in json.loads((FIXTURE / "parquet_rows.json").read_text()).items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.Table.from_pylist(rows), path)
    return root


def llm(*replies):
    return ScriptedChatModel([json.dumps(r) for r in replies])


# ---------------------------------------------------------------- the schema fixture


def test_loader_joins_rows_and_records(fixture_root):
    tasks = {t.id: t for t in load_userrl_tasks(fixture_root)}
    assert list(tasks) == [FLIGHT_TASK, HOTEL_TASK, STUB_TASK]  # set order (22, 33), train before test
    hotel = tasks[HOTEL_TASK]
    assert (hotel.split, hotel.wanted_num, hotel.dimensions, hotel.playable) == (
        "test",
        "22",
        ("hotel", "restaurant"),
        True,
    )
    assert hotel.best_ids == ("R2", "H5") and hotel.best_per_dimension == ("H5", "R2")
    assert [p.id for p in hotel.numbered] == ["P1", "P2", "P3", "P4"]  # the short entry is skipped
    assert hotel.numbered[0].pref.implicit_elicitation == "I swim every morning." and not hotel.scripted_ready
    assert hotel.system_prompt.startswith("FIXTURE SYSTEM PROMPT") and hotel.opening.endswith(
        "Fixture budget sentence.\n"
    )
    assert hotel.aspects["hotel"].group_sizes == (2, 12, 6) and hotel.aspects["hotel"].arguments["city"] == "Oslo"
    stub = tasks[STUB_TASK]
    assert (stub.playable, stub.wanted_num, stub.dimensions) == (False, "33", ("hotel", "rental_car", "restaurant"))
    assert stub.initial_description == "I need a hotel, a car and a restaurant in Rome." and stub.best_ids == (
        "H1",
        "C2",
        "R3",
    )


def test_upstream_episode_with_llm_roles(fixture_root):
    judge = llm(
        {"alignment_judgement": "True", "alignment_aspect": "hotel"},
        {"type": "2", "preference_id": "P1"},
    )
    user = llm({"thought": "hint", "response": "Laps keep me sane."})
    env = gym.make(ENV_ID, pack="upstream", data_dir=str(fixture_root), user=user, judge=judge)
    obs, info = env.reset(seed=0, options={"task_id": HOTEL_TASK})
    assert obs.startswith("I am visiting Oslo") and obs.endswith("Fixture budget sentence.\n")
    assert env.unwrapped.system_prompt.startswith("FIXTURE SYSTEM PROMPT")
    assert env.unwrapped.score_context() == {"n_aspects": 2, "travel_set": "travel22"}
    obs, reward, *_ = env.step("[search] hotel in Oslo from June 2 to June 4")
    assert reward == 0.2 and sum(line.startswith("{") for line in obs.splitlines()) == 20
    assert "Aspect Name: hotel" in judge.calls[0]["messages"][1]["content"]
    obs, reward, *_ = env.step("[action] Do you swim?")
    assert (obs, reward) == ("Laps keep me sane.", 0.6)
    assert env.step("[answer] H5, R2")[1:3] == (2.0, True)


def test_cap_options_shows_at_most_ten_wrong_and_five_noise(fixture_root):
    judge = llm({"alignment_judgement": "True", "alignment_aspect": "hotel"})
    shown = []
    for seed in (0, 1):
        env = gym.make(ENV_ID, pack="upstream", data_dir=str(fixture_root), user=judge, cap_options=True)
        env.reset(seed=seed, options={"task_id": HOTEL_TASK})
        obs = env.step("[search] hotel in Oslo from June 2 to June 4")[0]
        ids = [json.loads(line)["id"] for line in obs.splitlines() if line.startswith("{")]
        assert len(ids) == 17 and {"H5", "H9"} <= set(ids)
        assert sum(int(i[1:]) >= 15 for i in ids) == 5  # the noise options are H15..H20
        shown.append(ids)
    assert shown[0] != shown[1]


def test_stubs_in_the_pool_stop_construction(fixture_root):
    with pytest.raises(FileNotFoundError, match=r"travelgym_data_33\.json"):
        gym.make(ENV_ID, pack="upstream", data_dir=str(fixture_root), split="train", user=llm({"type": "1"}))
    env = gym.make(ENV_ID, pack="upstream", data_dir=str(fixture_root), user=llm({"type": "1"}))
    env.reset(seed=0, options={"task_id": HOTEL_TASK})
    with pytest.raises(FileNotFoundError, match=r"travelgym_data_33\.json"):
        env.reset(seed=1, options={"task_id": STUB_TASK})
    assert env.reset(options={"task_id": HOTEL_TASK})[1]["task_id"] == HOTEL_TASK


def test_a_folder_without_the_upstream_files_is_named_with_the_fix(tmp_path):
    from mimesis_gym.core.errors import ConfigurationError

    with pytest.raises(FileNotFoundError) as raised:  # also a ConfigurationError (a ValueError)
        gym.make(ENV_ID, pack="upstream", data_dir=str(tmp_path), user=llm({}))
    message = str(raised.value)
    assert isinstance(raised.value, ConfigurationError)
    assert f"TravelGym (pack='upstream') reads its files under {tmp_path.resolve()}, which holds none" in message
    assert "data/travel22_multiturn_onechoice/train.parquet" in message  # what was expected
    assert "pass the root of a UserRL checkout" in message and "mimesis-gym data check" in message  # the fix


def test_scripted_roles_are_refused_on_upstream_tasks(fixture_root):
    with pytest.raises(ValueError, match="scripted roles"):
        gym.make(ENV_ID, pack="upstream", data_dir=str(fixture_root))
    with pytest.raises(ValueError, match="scripted roles"):
        gym.make(ENV_ID, pack="upstream", data_dir=str(fixture_root), user=llm({}), judge="scripted")


def test_userrl_prompt_set_reads_the_upstream_strings(fixture_root):
    judge = llm({"alignment_judgement": "True", "alignment_aspect": "hotel"}, {"type": "1"})
    user = llm({"response": "Sure."})
    env = gym.make(ENV_ID, pack="upstream", data_dir=str(fixture_root), user=user, judge=judge, prompt_set="userrl")
    env.reset(seed=0, options={"task_id": HOTEL_TASK})
    obs = env.step("[search] hotel in Oslo from June 2 to June 4")[0]
    assert obs.splitlines()[2] == "FIXTURE hotel schema line"
    env.step("[action] Hello there.")
    search, classify = judge.calls
    assert search["messages"][0]["content"].startswith("FIXTURE search judge")
    assert search["messages"][1]["content"].startswith(
        "Request: hotel in Oslo from June 2 to June 4\nTruth:\nAspect Name: hotel"
    )
    assert classify["messages"][1]["content"].startswith("Scenario: A fixture traveller visits Oslo")
    assert "Preference ID: P1\tAspect: hotel\nPreference: Wants a pool." in classify["messages"][1]["content"]
    assert "Database: " in classify["messages"][1]["content"]
    assert user.calls[0]["messages"][0]["content"] == "FIXTURE natural responder."


def test_userrl_prompt_set_needs_the_file(tmp_path, monkeypatch):
    monkeypatch.setenv("MIMESIS_GYM_USERRL_DIR", str(tmp_path))
    with pytest.raises(FileNotFoundError, match=r"utils\.py"):
        gym.make(ENV_ID, split="demo", user=llm({}), prompt_set="userrl")


# ---------------------------------------------------------------- the real UserRL parquets


def test_upstream_loader_on_the_userrl_parquets(userrl_dir):
    if not any(userrl_dir.glob("data/travel*_multiturn_onechoice/test.parquet")):
        pytest.skip(f"no travel parquets under {userrl_dir}")
    tasks = load_userrl_tasks(userrl_dir)
    assert len(tasks) == 3122 and len({t.id for t in tasks}) == 3122 and not any(t.playable for t in tasks)
    pack = load_upstream_pack(str(userrl_dir))
    assert pack.counts() == {"train": 2651, "test": 471}
    for wanted, (train, test) in USERRL_COUNTS.items():
        assert sum(t.wanted_num == wanted for t in pack.pool("train")) == train, wanted
        assert sum(t.wanted_num == wanted for t in pack.pool("test")) == test, wanted
    first = next(t for t in pack.pool("test") if t.wanted_num == "22")
    assert first.id == "apartment:2-86|rental_car:2-60"
    assert first.best_ids == ("C16", "A17") and first.dimensions == ("apartment", "rental_car")
    assert (
        first.initial_description.startswith("I am planning a family trip to Austin")
        and "\n" not in first.initial_description
    )
    with pytest.raises(FileNotFoundError, match=r"travelgym_data_22\.json"):
        gym.make(ENV_ID, pack="upstream", data_dir=str(userrl_dir))
