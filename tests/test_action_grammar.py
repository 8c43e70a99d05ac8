"""``action_grammar="native"|"userrl"`` (TelepathyGym, PersuadeGym; docs/env-contract.md, "The action grammar").

The side-by-side comparison plays each upstream task twice on the same actions: through the env, and
through a transcription of UserRL's own ``step`` (``telepathy_env.py`` / ``persuade_env.py`` and their
``prompts.py``: read, never imported). Both ask one stand-in model whose reply is a fixed function of
the prompt it is sent (the env's ``prompt_set="userrl"`` prompts are byte-identical to UserRL's,
``tests/test_userrl_parity.py``), so two steps agree exactly when both sides send the same text and
score the reply the same way. Skipped without ``../shared/data``.
"""

from __future__ import annotations

import hashlib
import json

import gymnasium as gym
import pytest

from mimesis_gym.cli import build_parser, eval_config
from mimesis_gym.core.actions import ACTION_KINDS, UserRLReading, parse_action
from mimesis_gym.core.chat import ChatReply
from mimesis_gym.evaluation import contract
from mimesis_gym.evaluation.presets import paper_kwargs_by_env
from tests.test_userrl_parity import constants, make

TELEPATHY = "mimesis/TelepathyGym-v0"
PERSUADE = "mimesis/PersuadeGym-v0"
STANCES = ["Strongly Agree", "Agree", "Partly Agree", "Neutral", "Partly Disagree", "Disagree", "Strongly Disagree"]

ACTIONS = [
    "[action] Is it alive?",
    "[answer]",  # empty content: UserRL sends it on
    {"choice": "answer", "content": ""},  # the same from a tool call
    "Is it bigger than a car?",  # untagged
    "[answer] a teapot",
    "[Answer] a dog",  # a tag in the wrong case reads as untagged text
    "",
    "[search] where is it found?",
    "[action]",
    "{not json, just braces",
    "[answer] the moon",
    "[finish]",
]


def pick(messages: list[dict[str, str]], options: list[str]) -> str:
    """One of ``options``, fixed by the prompt's text (a stand-in for what an LLM would say to it)."""
    digest = hashlib.sha256(json.dumps(messages, ensure_ascii=False).encode("utf-8")).digest()
    return options[digest[0] % len(options)]


def stand_in_reply(messages: list[dict[str, str]], answer_system: str | None) -> str:
    """The stand-in's reply: a Telepathy verdict or answer, or a Persuade response and stance."""
    if answer_system is None:  # PersuadeGym
        return json.dumps(
            {
                "thought": "t",
                "response": pick(messages, ["Hm.", "Go on.", "Fair."]),
                "stance": pick(messages[::-1], STANCES),
            }
        )
    if messages[0]["content"] == answer_system:
        judgment = pick(messages, ["Yes", "No", "No"])
        return json.dumps({"thought": "t", "judgment": judgment, "feedback": f"Feedback {judgment}."})
    return json.dumps({"thought": "t", "response": pick(messages, ["Yes", "No", "Maybe"])})


class StandInModel:
    """A chat model answering with :func:`stand_in_reply`."""

    name = "stand-in"

    def __init__(self, answer_system: str | None) -> None:
        self.answer_system = answer_system

    async def chat(self, messages, *, max_tokens, temperature, seed, json_keys=None) -> ChatReply:
        return ChatReply(text=stand_in_reply([dict(m) for m in messages], self.answer_system))

    async def aclose(self) -> None:
        return None


def userrl_action_string(action) -> str:
    """UserRL's tool wrapper: ``[choice] content`` (content already starting with the tag kept)."""
    if isinstance(action, dict):
        content = action["content"]
        return content if content.startswith(f"[{action['choice']}]") else f"[{action['choice']}] {content}"
    return action


def userrl_telepathy(templates, target: str, actions) -> list[tuple[float, bool, str]]:
    """UserRL's ``TelepathyEnv.step`` with ``evaluate_action`` (reward_scale 1, no step penalty, clipped)."""
    steps, best = [], 0.0
    for action in actions:
        action_str = userrl_action_string(action)
        if action_str.startswith("[finish]"):
            steps.append((0.0, True, "Game finished."))
            break
        is_answer = action_str.startswith("[answer]")
        kind, slot = ("ANSWER", "<user_guess>") if is_answer else ("ACTION", "<user_question>")
        user = templates[f"{kind}_USER"].replace("<target_entity>", target).replace(slot, action_str[8:].strip())
        messages = [{"role": "system", "content": templates[f"{kind}_SYS"]}, {"role": "user", "content": user}]
        reply = json.loads(stand_in_reply(messages, templates["ANSWER_SYS"]))
        reward = 0.0
        if is_answer:
            score = 1.0 if reply["judgment"] == "Yes" else 0.0
            reward = max(0.0, score - best)
            best = max(best, score)
            steps.append((min(1.0, reward), score == 1.0, reply["feedback"]))
            if score == 1.0:
                break
        else:
            steps.append((0.0, False, reply["response"]))
    return steps


def userrl_persuade(templates, claim: str, argument: str, actions) -> list[tuple[float, bool, str]]:
    """UserRL's ``PersuadeEnv.step`` with ``evaluate_action`` (no step penalty, clipped)."""
    steps, history, stance = [], [], "Strongly Agree"
    for action in actions:
        action_str = userrl_action_string(action)
        if action_str.startswith("[finish]"):
            steps.append((0.0, True, "Conversation ended."))
            break
        latest = action_str[8:].strip() if action_str.startswith(("[action]", "[answer]")) else action_str.strip()
        history_text = "".join(f"Turn {i}:\nPersuader: {a}\nYou: {r}\n\n" for i, (a, r) in enumerate(history, 1))
        user = templates["PERSUADEE_RESPONSE_USER"].format(
            statement=claim,
            initial_argument=argument,
            current_stance=stance,
            conversation_history=history_text or "This is the first argument.",
            latest_argument=latest,
        )
        messages = [
            {"role": "system", "content": templates["PERSUADEE_RESPONSE_SYS"]},
            {"role": "user", "content": user},
        ]
        reply = json.loads(stand_in_reply(messages, None))
        delta = STANCES.index(reply["stance"]) - STANCES.index(stance)
        reward = 0.0 if delta <= 0 else 1.0 if delta >= 6 else round(delta / 6, 6)
        history.append((latest, reply["response"]))
        stance = reply["stance"]
        steps.append((reward, stance == "Strongly Disagree", reply["response"]))
        if stance == "Strongly Disagree":
            break
    return steps


def ours(env_id, userrl_dir, task_id, model, actions, grammar) -> list[tuple[float, bool, str]]:
    env = make(env_id, userrl_dir, model, action_grammar=grammar)
    env.reset(seed=0, options={"task_id": task_id})
    steps = []
    for action in actions:
        obs, reward, terminated, _, _ = env.step(action)
        steps.append((reward, terminated, obs))
        if terminated:
            break
    env.close()
    return steps


def agreement(env_id, userrl_dir, grammar) -> float:
    """The share of UserRL's steps the env reproduces exactly (reward, termination, observation)."""
    gym_dir = "TelepathyGym/telepathygym" if env_id == TELEPATHY else "PersuadeGym/persuadegym"
    templates = constants(userrl_dir / f"gyms/{gym_dir}/env/prompts.py")
    pack = gym.make(env_id, pack="upstream", data_dir=str(userrl_dir), user=StandInModel(None)).unwrapped.task_pack
    agree = total = 0
    for task in pack.pool("test")[:6]:
        if env_id == TELEPATHY:
            model = StandInModel(templates["ANSWER_SYS"])
            expected = userrl_telepathy(templates, task.target_entity, ACTIONS)
        else:
            model = StandInModel(None)
            expected = userrl_persuade(templates, task.claim, task.argument, ACTIONS)
        got = ours(env_id, userrl_dir, task.id, model, ACTIONS, grammar)
        total += len(expected)
        agree += sum(a == b for a, b in zip(got, expected, strict=False))  # parted ways after a difference
    return agree / total


@pytest.mark.parametrize("env_id", [TELEPATHY, PERSUADE])
def test_userrl_grammar_agrees_with_userrl_on_every_step(userrl_dir, env_id):
    """The side-by-side comparison: every step agrees under ``userrl``; ``native`` differs on the inputs above."""
    assert agreement(env_id, userrl_dir, "userrl") == 1.0
    assert agreement(env_id, userrl_dir, "native") < 1.0


# ---------------------------------------------------------------- the two cases, both settings


def test_empty_answer_reaches_the_telepathy_judge_only_under_userrl():
    """The scripted judge says what UserRL's would about an empty guess: no, keep going."""
    for grammar, kind, valid in (("native", "invalid", False), ("userrl", "answer", True)):
        env = gym.make(TELEPATHY, user="scripted", split="demo", action_grammar=grammar, privileged=True)
        env.reset(seed=0)
        for action in ("[answer]", {"choice": "answer", "content": " "}):
            obs, reward, terminated, _, info = env.step(action)
            assert (info["action_kind"], info["valid_action"], reward, terminated) == (kind, valid, 0.0, False)
            judged = info["privileged"]["judgements"].get("guess_judge")
            assert (judged or {}).get("judgment") == (None if grammar == "native" else "No")
            assert obs.startswith("Invalid action") == (grammar == "native")


def test_untagged_text_is_a_persuade_argument_only_under_userrl():
    from mimesis_gym.envs.persuade.tasks import load_original_pack

    probe = load_original_pack().get("persuade-demo-01").counterpoints[0].probe
    for grammar, reward in (("native", 0.0), ("userrl", 0.166667)):
        env = gym.make(PERSUADE, user="scripted", split="demo", action_grammar=grammar, privileged=True)
        env.reset(seed=0, options={"task_id": "persuade-demo-01"})
        obs, got, _, _, info = env.step(probe)
        assert got == reward and info["valid_action"] is (grammar == "userrl")
        assert env.unwrapped._history == ([] if grammar == "native" else [(probe, obs)])


def test_untagged_text_is_a_telepathy_question_as_userrl_sliced_it():
    """UserRL asked the answerer ``action_str[8:]`` of text it did not read as a guess."""
    reading = UserRLReading(untagged_kind="action", untagged_skip=8)
    parsed = parse_action("Is it an animal?", {"action", "answer", "finish"}, None, reading)
    assert (parsed.kind, parsed.tag, parsed.content, parsed.canonical) == ("action", "", "animal?", "Is it an animal?")


def test_tagged_actions_read_the_same_under_both_grammars():
    reading = UserRLReading(untagged_kind="answer")
    for action in ("[answer] x", "[action] y", "[search] z", "[finish]", {"choice": "answer", "content": "w"}, 5):
        assert parse_action(action, set(ACTION_KINDS), None, reading) == parse_action(action, set(ACTION_KINDS))


@pytest.mark.parametrize("env_id", [TELEPATHY, PERSUADE])
def test_an_unknown_grammar_is_refused_naming_the_choices(env_id):
    with pytest.raises(ValueError, match=r"action_grammar must be one of 'native', 'userrl'; got 'UserRL'"):
        gym.make(env_id, user="scripted", action_grammar="UserRL")


@pytest.mark.parametrize("check", ["determinism", "fuzz", "oracle", "no_hidden_data"])
@pytest.mark.parametrize("env_id", [TELEPATHY, PERSUADE])
def test_contract_holds_under_the_userrl_grammar(monkeypatch, env_id, check):
    make = contract._make
    monkeypatch.setattr(contract, "_make", lambda env_id, **kwargs: make(env_id, action_grammar="userrl", **kwargs))
    contract.CHECKS[check](env_id)


# ---------------------------------------------------------------- eval --paper


def paper_config(tmp_path, *extra):
    args = build_parser().parse_args(
        ["eval", "--paper", "--data-dir", str(tmp_path), "--out", str(tmp_path / "o"), *extra]
    )
    return eval_config(args, tmp_path / "o")


def test_paper_preset_sets_the_userrl_grammar(tmp_path):
    config = paper_config(tmp_path)
    paper = paper_kwargs_by_env()
    assert paper == {env: {"action_grammar": "userrl"} for env in ("telepathy", "persuade")}
    assert {env: config.env_args[env] for env in paper} == paper
    assert config.env_args["telepathy"] == {"action_grammar": "userrl"} == config.env_args["persuade"]
    assert config.model_dump()["env_args"]["persuade"] == {"action_grammar": "userrl"}  # what run.json records


def test_paper_preset_yields_to_env_arg_and_skips_envs_outside_the_run(tmp_path):
    config = paper_config(
        tmp_path, "--env-arg", "telepathy.action_grammar=native", "--env-arg", "telepathy.step_penalty=0.1"
    )
    assert config.env_args["telepathy"] == {"action_grammar": "native", "step_penalty": 0.1}
    assert config.env_args["persuade"] == {"action_grammar": "userrl"}
    assert paper_config(tmp_path, "--envs", "travel,function").env_args == {}
    assert paper_config(tmp_path, "--envs", "mimesis/PersuadeGym-v0").env_args == {
        "persuade": {"action_grammar": "userrl"}
    }
