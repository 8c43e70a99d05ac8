"""The fair scripted baseline (``scripted:baseline``): beats the random floor, stays under the oracle,
never touches the env object, and is one of the four agents of the main job."""

from __future__ import annotations

import asyncio
from collections import defaultdict
from pathlib import Path

import gymnasium as gym
import pytest

from mimesis_gym.agents.base import Conversation, is_privileged
from mimesis_gym.agents.baseline import BaselineAgent, env_name_of, strategy_for
from mimesis_gym.agents.registry import make_agent
from mimesis_gym.cli import MAIN_JOB_AGENTS, build_parser, eval_config
from mimesis_gym.envs import ENV_TABLE, register_envs, scoped_env_registrations
from mimesis_gym.envs.function.baseline import interpolate_at_zero
from mimesis_gym.evaluation.runner import EvalConfig, run_eval
from mimesis_gym.evaluation.store import ResultsStore

ENVS = ("travel", "turtle", "function", "tau", "persuade", "intention", "telepathy", "search", "abcd")
NO_BETTER_THAN_RANDOM = {"tau"}
"""Envs where the read-only support routine solves none of the first tasks (like random): only ≥."""


LIMITS = {"turtle": 12}
"""Tasks per env (default 4): Turtle's generic probes rarely hit a story's keywords, so it gets more."""


@pytest.fixture(scope="module")
def mean_scores(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], float]:
    """Mean episode score per (env, agent): one scripted eval, about 7 s on 2 quiet cores."""
    scores: dict[tuple[str, str], list[float]] = defaultdict(list)
    groups: dict[int, list[str]] = defaultdict(list)
    for env in ENVS:
        groups[LIMITS.get(env, 4)].append(env)
    for limit, envs in groups.items():
        out = tmp_path_factory.mktemp(f"baseline-run-{limit}")
        agents = ["scripted:baseline", "scripted:random", "oracle"]
        config = EvalConfig(envs=envs, agents=agents, limit=limit, max_turns=6)
        asyncio.run(run_eval(config, out, progress=False, preflight=False))
        for record in ResultsStore(Path(out) / "episodes.jsonl").latest().values():
            assert record.status == "ok", (record.key, record.error)
            scores[(record.env, record.agent)].append(record.episode_score)
    return {key: sum(values) / len(values) for key, values in scores.items()}


@pytest.mark.parametrize("env", ENVS)
def test_the_baseline_beats_random_and_stays_under_the_oracle(mean_scores, env):
    baseline = mean_scores[(env, "scripted:baseline")]
    random_floor = mean_scores[(env, "scripted:random")]
    assert baseline <= mean_scores[(env, "oracle")] + 1e-9
    if env in NO_BETTER_THAN_RANDOM:
        assert baseline >= random_floor
    else:
        assert baseline > random_floor, (env, baseline, random_floor)


def test_every_shipped_conversation_env_declares_its_strategy():
    for entry in ENV_TABLE.loaded():
        if entry.kind != "conversation" or not entry.entry_point.startswith("mimesis_gym."):
            continue
        env_class = entry.env_class()
        assert env_class.env_name == entry.short, f"{entry.id}: env_name {env_class.env_name!r} ≠ {entry.short!r}"
        assert env_name_of(entry.id) == entry.short
        assert strategy_for(entry.id) is env_class.baseline_strategy is not None, (
            f"{entry.id}: declare baseline_strategy = staticmethod(baseline.next_action) on its class "
            f"(envs/{entry.short}/baseline.py)"
        )
    assert strategy_for("someone/OwnGym-v0") is None


def test_a_plugin_env_ships_its_own_strategy(monkeypatch):
    """examples/plugin's GuessNumber declares a bisecting strategy: the baseline finds it through the
    ``module:`` id the runner announces, and solves the game."""
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "examples" / "plugin"))
    with scoped_env_registrations():
        import mimesis_guess
        from mimesis_guess.agent import next_guess

        mimesis_guess.register()  # idempotent: importing the package did it unless an earlier test had
        by_module = "mimesis_guess:mimesis_guess/GuessNumber-v0"
        assert strategy_for(by_module) is next_guess
        assert play(by_module, Untouchable(), "number-16") == 1.0


class Untouchable:
    """An env stand-in that fails the test on any attribute access."""

    def __getattr__(self, name: str) -> object:
        raise AssertionError(f"the baseline read conv.env.{name}")


def play(env_id: str, conv_env: object, task_id: str, max_turns: int = 8) -> float:
    """Play one episode through the gym loop with the baseline; ``conv.env`` is ``conv_env``."""
    register_envs()
    agent = BaselineAgent()
    env = gym.make(env_id, user="scripted")
    try:
        _, info = env.reset(seed=0, options={"task_id": task_id})
        base = env.unwrapped
        conv = agent.start(base.system_prompt, base.tools, base.opening_messages)
        conv.env_id, conv.env = env_id, conv_env
        for turn in range(max_turns):
            decision = asyncio.run(agent.act(conv, seed=turn))
            obs, _, terminated, truncated, info = env.step(decision.action)
            agent.observe(conv, decision, obs)
            if terminated or truncated:
                break
        return float(info["episode_score"])
    finally:
        env.close()


def test_the_baseline_never_reads_the_env_object():
    # it solves a Telepathy task and a Function task whether the env slot is empty or booby-trapped
    for conv_env in (None, Untouchable()):
        assert play("mimesis/TelepathyGym-v0", conv_env, "telepathy-0161") == 1.0
        assert play("mimesis/FunctionGym-v0", conv_env, "fn-0401") == 1.0


def test_the_runner_hands_the_env_object_only_to_privileged_agents(tmp_path, monkeypatch):
    seen: list[tuple[object, str]] = []

    class Spy(BaselineAgent):
        async def act(self, conv: Conversation, *, seed: int):  # type: ignore[override]
            seen.append((conv.env, conv.env_id))
            return await super().act(conv, seed=seed)

    assert not is_privileged(Spy()) and is_privileged(make_agent("oracle"))
    import mimesis_gym.evaluation.episode as episode  # RunParties.build makes the run's agents there

    original = episode.make_agent
    monkeypatch.setattr(
        episode, "make_agent", lambda alias, **kw: Spy() if alias == "scripted:baseline" else original(alias, **kw)
    )
    config = EvalConfig(envs=["telepathy"], agents=["scripted:baseline"], limit=1, max_turns=2)
    asyncio.run(run_eval(config, tmp_path / "run", progress=False, preflight=False))
    assert seen and all(env is None for env, _ in seen)
    assert {env_id for _, env_id in seen} == {"mimesis/TelepathyGym-v0"}


def test_the_baseline_is_deterministic(tmp_path):
    assert play("mimesis/TurtleGym-v0", None, "turtle-0065") == play("mimesis/TurtleGym-v0", None, "turtle-0065")


def test_an_unknown_env_gets_the_generic_move():
    agent = BaselineAgent()
    conv = agent.start("system", [], [{"role": "user", "content": "hi"}])
    conv.env_id = "someone/OwnGym-v0"
    turn = asyncio.run(agent.act(conv, seed=0))
    assert turn.action == "Hello, I need some help with my account."


def test_interpolation_is_exact_for_polynomials_along_the_line():
    def cubic(s: float) -> float:
        return 2 * s**3 - s + 7

    assert interpolate_at_zero([(s, cubic(s)) for s in (1, -1, 2, -2)]) == pytest.approx(7)
    assert interpolate_at_zero([(1, 5.0), (-1, 1.0)]) == pytest.approx(3)


def test_the_main_job_compares_the_four_agents(tmp_path):
    parser = build_parser()
    config = eval_config(parser.parse_args(["eval", "--out", str(tmp_path / "a")]), tmp_path / "a")
    assert config.agents == list(MAIN_JOB_AGENTS) == ["tiny", "scripted:baseline", "scripted:random", "oracle"]
    assert (config.limit, config.max_turns, config.agent_max_tokens) == (2, 6, 64)
    # its robustness line: the two scripted agents also meet users that refuse to clarify and press
    assert (config.user_behaviors, config.behavior_agents) == (["control", "B3", "B9"], ["scripted:baseline", "oracle"])
    chosen = eval_config(parser.parse_args(["eval", "--agent", "scripted:baseline"]), tmp_path / "b")
    assert chosen.agents == ["scripted:baseline"] and chosen.limit is None
    assert (chosen.user_behaviors, chosen.behavior_agents) == (["control"], None)
    alone = eval_config(parser.parse_args(["eval", "--envs", "function,search"]), tmp_path / "d")
    assert (alone.user_behaviors, alone.behavior_agents) == (["control"], None)  # no env there plays them
    asked = eval_config(parser.parse_args(["eval", "--user-behaviors", "B13"]), tmp_path / "c")
    assert (asked.user_behaviors, asked.behavior_agents) == (["control", "B13"], None)  # the user's choice stands
    assert make_agent("scripted:baseline").name == "scripted:baseline"
