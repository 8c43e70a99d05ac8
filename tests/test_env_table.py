"""The env table: registration, lookups and reporting all derive from ``ENV_TABLE``."""

from __future__ import annotations

import asyncio
import csv
import json

import gymnasium as gym
import pytest

import mimesis_gym.algorithms.testing  # noqa: F401  (registers KeywordEcho, a ConversationEnv outside the table)
from mimesis_gym.cli import main
from mimesis_gym.envs import ENV_IDS, ENV_TABLE, EnvEntry, EnvTable, register_env
from mimesis_gym.evaluation.runner import EvalConfig, build_plan, run_eval

PAPER = ("travel", "turtle", "function", "tau", "persuade", "intention", "telepathy", "search")
ECHO = EnvEntry(id="mimesis_test/Echo-v0", entry_point="tests.support.echo_env:EchoEnv", short="echo", title="Echo")


def test_the_paper_columns_weights_and_marks_come_from_the_table():
    assert ENV_TABLE.column_names() == PAPER
    assert ENV_TABLE.avg_weights() == {
        "travel": 471, "turtle": 48, "function": 78, "tau": 165, "persuade": 42, "intention": 40, "telepathy": 41,
        "search": 125,
    }  # fmt: skip
    assert sum(ENV_TABLE.avg_weights().values()) == 1010
    assert [e.short for e in ENV_TABLE if e.held_out] == ["intention", "telepathy", "search"]
    assert [ENV_TABLE.title(c) for c in PAPER][:2] == ["Travel", "Turtle"]
    assert ENV_TABLE.main_job() == list(PAPER) == EvalConfig().envs


def test_every_entry_is_registered_as_the_table_says():
    assert ENV_TABLE.ids("conversation") == ENV_IDS and "mimesis/TelepathyDiscrete-v0" not in ENV_IDS
    for entry in ENV_TABLE:
        spec = gym.spec(entry.id)
        assert (spec.entry_point, spec.max_episode_steps) == (entry.entry_point, entry.max_episode_steps)
        if entry.kind == "conversation":
            assert entry.env_class().env_name == entry.short  # records and scoring key by the short name


def test_summary_tables_route_by_entry():
    assert [ENV_TABLE.summary_table(s) for s in ("travel", "abcd", "keyword_echo")] == ["paper", "abcd", "extra"]


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"column": 9}, "needs an Avg weight"),
        ({"avg_weight": 10}, "needs an Avg weight"),
        ({"held_out": True}, "held_out marks a paper column"),
        ({"kind": "view", "main_job": True}, "a view is not evaluated"),
        ({"column": 9, "avg_weight": 10, "summary": "abcd"}, "reported in the score table"),
        ({"short": "Bad Name"}, "must be lower case"),
        ({"entry_point": "tests.support.echo_env.EchoEnv"}, "package.module:Class"),
    ],
)
def test_inconsistent_entries_are_refused(fields, message):
    with pytest.raises(ValueError, match=message):
        EnvEntry(**{**ECHO.model_dump(), **fields})


def test_ids_short_names_and_columns_are_unique():
    table = EnvTable([ECHO])
    for clash, message in (
        ({"short": "other"}, "env id 'mimesis_test/Echo-v0' is already"),
        ({"id": "mimesis_test/Other-v0"}, "short name 'echo'"),
        ({"id": "mimesis_test/Other-v0", "short": "other", "column": 1, "avg_weight": 5}, None),
        ({"id": "mimesis_test/Third-v0", "short": "third", "column": 1, "avg_weight": 5}, "column 1"),
    ):
        entry = EnvEntry(**{**ECHO.model_dump(), **clash})
        if message is None:
            table.add(entry)
            continue
        with pytest.raises(ValueError, match=message):
            table.add(entry)
    assert len(table) == 2


def test_find_takes_ids_short_names_and_registered_conversation_envs():
    assert ENV_TABLE.find("Turtle").id == "mimesis/TurtleGym-v0"
    assert ENV_TABLE.find("TauGym").short == ENV_TABLE.find("taugym").short == "tau"  # UserRL's name, declared
    assert ENV_TABLE.find("mimesis/TelepathyDiscrete-v0").kind == "view"
    outside = ENV_TABLE.find("mimesis_testing/KeywordEcho-v0")
    assert (outside.short, outside.column, outside.max_episode_steps) == ("keyword_echo", None, 3)
    for name in ("nope", "CartPole-v1"):  # unknown, and registered but not a conversation env
        with pytest.raises(ValueError, match=rf"unknown env '{name}'; known: travel \(mimesis/TravelGym-v0\)"):
            ENV_TABLE.find(name)


def test_canonical_names_write_each_env_one_way_and_once():
    names = ["TURTLE", "mimesis/TurtleGym-v0", "turtle", "mimesis_testing/KeywordEcho-v0", " nope ", "nope"]
    # a table env by its short name, another registered env by its id (its short name does not
    # resolve), an unknown name as given for find() to refuse later
    assert ENV_TABLE.canonical_names(names) == ["turtle", "mimesis_testing/KeywordEcho-v0", "nope"]


def test_module_names_import_the_module_and_keep_it_in_the_canonical_name():
    by_module = "mimesis_gym.algorithms.testing:mimesis_testing/KeywordEcho-v0"
    entry = ENV_TABLE.find(by_module)
    assert (entry.id, entry.short) == (by_module, "keyword_echo")  # gym.make(entry.id) imports the module
    # the package itself registers the shipped envs in every process: no prefix to keep
    assert ENV_TABLE.canonical_names([by_module, "mimesis_gym:mimesis/TurtleGym-v0", "turtle"]) == [
        by_module,
        "turtle",
    ]
    assert EvalConfig(envs=[by_module], agents=["oracle"]).envs == [by_module]
    with pytest.raises(ValueError, match="env no_such_module:turtle: cannot import module 'no_such_module'"):
        ENV_TABLE.find("no_such_module:turtle")


def test_a_plugin_loader_runs_before_every_lookup_and_its_failure_is_not_swallowed():
    table, calls = EnvTable([ECHO]), []

    def broken() -> None:
        calls.append(1)
        raise RuntimeError("plug-in broken")

    table.plug_in(broken)
    assert table.loaded() == (ECHO,)  # reading without loading
    for lookup in (lambda: table.find("echo"), lambda: list(table), lambda: table.main_job()):
        with pytest.raises(RuntimeError, match="plug-in broken"):
            lookup()
    assert len(calls) == 3


def test_register_env_adds_an_entry_and_a_gymnasium_id(clean_env_table):
    register_env(ECHO)
    assert ENV_TABLE.find("echo") == ECHO and ENV_TABLE.summary_table("echo") == "extra"
    env = gym.make("mimesis_test/Echo-v0")
    assert env.spec.max_episode_steps == 16 and env.unwrapped.env_name == "echo"
    env.close()
    with pytest.raises(ValueError, match="already registered with Gymnasium"):
        register_env(ECHO)


def test_eval_refuses_a_view():
    with pytest.raises(ValueError, match="TelepathyDiscrete-v0 is a view env, not a conversation env"):
        build_plan(EvalConfig(envs=["telepathy-discrete"], agents=["oracle"]))


def test_an_env_outside_the_paper_columns_gets_its_own_table(tmp_path):
    config = EvalConfig(envs=["mimesis_testing/KeywordEcho-v0", "function"], agents=["oracle"], limit=2)
    units, planned = build_plan(config)
    assert [u.env for u in units] == ["function", "function", "keyword_echo", "keyword_echo"]  # paper columns first
    sections, counts = asyncio.run(run_eval(config, tmp_path, progress=False))
    assert counts == {"ok": 4}
    (row,) = sections[0].rows
    assert row.scores == {"function": 100.0} and row.avg == 100.0
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["weights"] == {"function": 2}
    (extra_row,) = summary["extra"][0]["rows"]
    assert extra_row["scores"] == {"keyword_echo": 100.0} and extra_row["avg"] is None
    assert extra_row["cells"]["keyword_echo"]["n_episodes"] == 2
    rows = list(csv.DictReader((tmp_path / "summary.csv").open()))
    assert [(r["column"], r["value"]) for r in rows if r["column"] == "keyword_echo"] == [("keyword_echo", "100.0")]
    markdown = (tmp_path / "summary.md").read_text()
    assert "## Other envs (not in Avg or MR)" in markdown
    assert "| Agent | keyword_echo |" in markdown and "| oracle | **100.00** |" in markdown


def test_list_shows_every_id_of_the_table(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    for entry in ENV_TABLE:
        assert f"{entry.id} " in out and entry.short in out
    assert "telepathy-discrete view: actions Discrete(" in out


def test_scoped_registrations_forget_the_envs_registered_inside():
    import gymnasium as gym

    from mimesis_gym.envs import ENV_TABLE, EnvEntry, register_env, scoped_env_registrations

    with scoped_env_registrations():
        register_env(EnvEntry(id="scoped/Echo-v0", entry_point="tests.support.echo_env:EchoEnv", short="scoped-echo",
                              title="Scoped"))  # fmt: skip
        assert ENV_TABLE.get("scoped-echo") is not None and "scoped/Echo-v0" in gym.registry
    assert ENV_TABLE.get("scoped-echo") is None and "scoped/Echo-v0" not in gym.registry
