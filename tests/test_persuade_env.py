"""PersuadeGym acceptance tests (docs/envs/persuade.md)."""

import gymnasium as gym
import pytest

from mimesis_gym.envs.persuade.roles import FALLBACK_REPLY
from mimesis_gym.envs.persuade.tasks import load_original_pack, load_upstream_pack
from tests.support.chat_models import ScriptedChatModel, refusal

DEMO = "persuade-demo-01"


def probes():
    return [point.probe for point in load_original_pack().get(DEMO).counterpoints]


def start(**kwargs):
    kwargs.setdefault("split", "demo")
    kwargs.setdefault("privileged", True)
    env = gym.make("mimesis/PersuadeGym-v0", **kwargs)
    env.reset(seed=0, options={"task_id": DEMO})
    return env


def test_scripted_demo_walkthrough():
    env = start()
    cp = probes()
    defenses = env.unwrapped.task.defenses
    obs, reward, terminated, _, info = env.step(f"[answer] {cp[0]}")
    assert (reward, terminated, info["privileged"]["hidden"]["stance"]) == (0.166667, False, "Agree")
    obs, reward, *_ = env.step(f"[answer] {cp[0]}")
    assert reward == 0.0 and obs.startswith(defenses[0])
    _, reward, _, _, info = env.step(f"[answer] {cp[1]} Also, {cp[2]}")
    assert (reward, info["privileged"]["hidden"]["stance"]) == (0.333333, "Neutral")
    _, reward, _, _, info = env.step(f"[answer] {cp[3]} {cp[4]} {cp[5]}")
    assert (reward, info["privileged"]["hidden"]["stance"]) == (0.333333, "Disagree")
    _, reward, terminated, _, info = env.step(f"[answer] {cp[5]}")
    assert (reward, terminated, info["privileged"]["hidden"]["stance"]) == (0.166667, True, "Strongly Disagree")
    assert info["episode_score"] == pytest.approx(1.0, abs=1e-5)


def test_oracle_reaches_strongly_disagree_in_six_turns():
    env = start()
    rewards = []
    terminated = False
    while not terminated:
        _, reward, terminated, _, _ = env.step(env.unwrapped.oracle_action())
        rewards.append(reward)
    assert rewards == [0.166667] * 6


def test_action_tag_is_tolerated_and_untagged_input_is_malformed():
    env = start()
    assert env.step(f"[action] {probes()[0]}")[1] == 0.166667
    env = start()
    assert env.step("hello")[4]["valid_action"] is False and env.unwrapped._history == []


def test_train_profile_reward_line():
    assert start(reward_profile="train").step(f"[answer] {probes()[0]}")[0].endswith("\nReward: 0.166667")


def test_finish_ends_without_a_role_call():
    obs, reward, terminated, _, _ = start().step("[finish]")
    assert (obs, reward, terminated) == ("Conversation ended.", 0.0, True)


def test_oracle_agent_on_every_test_claim():
    env = gym.make("mimesis/PersuadeGym-v0")
    for task in env.unwrapped.task_pack.pool("test"):
        env.reset(options={"task_id": task.id})
        terminated, turns = False, 0
        while not terminated:
            _, _, terminated, _, info = env.step(env.unwrapped.oracle_action())
            turns += 1
        assert turns <= 6 and info["episode_score"] >= 0.99, task.id


# ---------------------------------------------------------------- LLM persuadee with test doubles


def persuadee(*stances):
    return ScriptedChatModel([f'{{"response": "Hmm.", "stance": "{stance}"}}' for stance in stances])


@pytest.mark.parametrize(
    ("stances", "lenient", "rewards"),
    [
        (["Agree", "Neutral"], False, [0.166667, 0.333333]),
        (["Somewhat Disagree", "Disagree"], False, [0.0, 0.0]),
        (["Somewhat Disagree", "Disagree"], True, [0.0, 0.833333]),
        (["Neutral", "Strongly Agree", "Disagree"], False, [0.5, 0.0, 0.833333]),
    ],
)
def test_fake_persuadee_stance_sequences(stances, lenient, rewards):
    env = start(user=persuadee(*stances), lenient_parsing=lenient)
    assert [env.step("[answer] argument")[1] for _ in stances] == rewards


def test_lowercase_final_stance_terminates_only_when_lenient():
    assert start(user=persuadee("strongly disagree")).step("[answer] x")[2] is False
    assert start(user=persuadee("strongly disagree"), lenient_parsing=True).step("[answer] x")[2] is True


def test_single_quoted_reply_is_salvaged():
    env = start(user=ScriptedChatModel(["{'response': 'I'm not convinced', 'stance': 'Agree'}"]))
    obs, reward, *_ = env.step("[answer] x")
    assert (obs, reward) == ("I'm not convinced", 0.166667)


def test_garbage_reply_falls_back_and_keeps_the_stance():
    env = start(user=ScriptedChatModel(["garbage"]))
    obs, reward, _, _, info = env.step("[answer] x")
    assert (obs, reward, info["user_failure"]) == (FALLBACK_REPLY, 0.0, "persuadee:bad_json")
    assert info["privileged"]["hidden"]["stance"] == "Strongly Agree"


def test_numeric_stance_is_kept_like_userrl_and_mapped_back_when_lenient():
    """UserRL kept ``"stance": 3``: the reply is shown, no gain, and the next turn starts from "3"."""
    replies = ['{"response": "Hm.", "stance": 3}', '{"response": "Fine.", "stance": "Disagree"}']
    env = start(user=ScriptedChatModel(replies))
    obs, reward, _, _, info = env.step("[answer] x")
    assert (obs, reward, info["user_failure"], info["privileged"]["hidden"]["stance"]) == ("Hm.", 0.0, None, "3")
    assert env.step("[answer] y")[1] == 0.0  # no label to measure progress from, as in UserRL
    env = start(user=ScriptedChatModel(replies), lenient_parsing=True)
    assert env.step("[answer] x")[4]["privileged"]["hidden"]["stance"] == "Strongly Agree"
    assert env.step("[answer] y")[1] == 0.833333


def test_refusing_persuadee_falls_back_every_turn():
    env = start(user=ScriptedChatModel([refusal()]))
    for _ in range(3):
        obs, reward, _, _, info = env.step("[answer] Cars pollute.")
        assert (obs, reward, info["user_failure"]) == (FALLBACK_REPLY, 0.0, "persuadee:refusal")


def test_stance_judge_overrides_the_persuadee():
    judge = ScriptedChatModel(['{"stance": "Disagree"}'])
    env = start(user=persuadee("Agree"), judge=judge, stance_source="judge")
    assert env.step("[answer] x")[1] == 0.833333


# ---------------------------------------------------------------- UserRL data


def test_upstream_loader(userrl_dir):
    import pyarrow.parquet as pq

    pack = load_upstream_pack(str(userrl_dir))
    assert pack.counts() == {"train": 378, "test": 42}
    assert len({t.claim for t in pack}) == 61 and len(pack) == 420
    first = pack.pool("test")[0]
    assert (first.id, first.claim) == (
        "YV3MRNMKH6MV",
        "Anti-aging therapies should be made available even if expensive",
    )
    row = pq.read_table(userrl_dir / "data/persuasion_multiturn/test.parquet").to_pylist()[0]
    env = gym.make("mimesis/PersuadeGym-v0", pack="upstream", data_dir=str(userrl_dir), user=persuadee("Agree"))
    obs, _ = env.reset(options={"task_id": "YV3MRNMKH6MV"})
    assert obs == row["prompt"][1]["content"] and first.argument not in obs
    assert env.unwrapped.oracle_action() is None
    assert first.argument not in env.step("[answer] x")[0]
