"""TravelGym acceptance tests (docs/envs/travel.md): the demo sequences, answer rules, profiles, options."""

import pickle

import gymnasium as gym
import pytest

from mimesis_gym.core.scoring import PerAspectBestScore, episode_score
from mimesis_gym.envs.travel.prompts import FEEDBACK, NATURAL_REPLIES
from mimesis_gym.envs.travel.tasks import canonical_query

ENV_ID = "mimesis/TravelGym-v0"
DEMO = "travel-demo-01"
P1_STATEMENT = "Honestly, I'd love to skip petrol stations this time; plugging in overnight sounds much nicer."

SEQUENCE_A = [
    ("[search] Rental car in Lisbon from May 3 to May 7", 0.2),
    ("[search] Rental car in Lisbon from May 3 to May 7", 0.0),
    ("[search] restaurant in Lisbon", 0.0),
    ("[search] Restaurant in Lisbon on May 5", 0.2),
    ("[search] flights to Lisbon", 0.0),
    ("[action] Would you like an electric car or a petrol one?", 0.6),
    ("[action] Do you have any preferences for the car?", 0.0),
    ("[action] Would you prefer an electric model?", 0.0),
    ("[answer] C2", 1.0),
    ("[answer] R1", 0.8),
    ("[answer] R2", 0.0),
]


def start(seed=0, **kwargs):
    kwargs.setdefault("split", "demo")
    env = gym.make(ENV_ID, **kwargs)
    obs, info = env.reset(seed=seed, options={"task_id": DEMO})
    return env, obs, info


def test_opening_observation_is_the_request_and_the_budget_sentence():
    env, obs, info = start()
    first, second = obs.split("\n")
    assert first.startswith("I'm travelling to Lisbon with my family of four.") and "May 3 to May 7" in first
    assert "cheapest" in second and "budget" in second
    assert info["episode_score"] == 0.0 and info["privileged"] == {}
    assert env.unwrapped.score_context() == {"n_aspects": 2, "travel_set": "travel22"}


def test_sequence_a_scripted_eval():
    env, _, _ = start()
    observations, rewards = [], []
    for action, expected in SEQUENCE_A:
        obs, reward, terminated, truncated, info = env.step(action)
        observations.append(obs)
        rewards.append(reward)
        assert reward == pytest.approx(expected), action
        assert not terminated and not truncated, action
    search = observations[0].splitlines()
    assert search[0] == FEEDBACK["search_ok"]
    options = [line for line in search if line.startswith("{")]
    assert len(options) == 6 and any('"id": "C2"' in line for line in options)
    assert all('"type"' not in line and '"reason"' not in line for line in options)
    assert observations[1] == FEEDBACK["search_repeat"].format(aspect="rental_car")
    assert observations[2] == FEEDBACK["search_false"]
    assert observations[4] == FEEDBACK["search_outage"]
    assert observations[5] == P1_STATEMENT
    assert observations[6] == FEEDBACK["type4"] and observations[7] == FEEDBACK["type3"]
    assert "P2" not in [p.id for p in env.unwrapped.remaining]  # dropped by answering the car
    assert observations[10].startswith("You have already recommended an option with the initial 'R'")
    assert info["episode_score"] == pytest.approx(0.9)


def test_sequence_a_train_profile():
    env, _, _ = start(reward_profile="train")
    rewards = []
    for action, _ in SEQUENCE_A:
        obs, reward, *_ = env.step(action)
        rewards.append(reward)
        assert obs.endswith(f"\nReward: {reward}")
        if action.startswith("[action] Would you like an electric"):
            assert obs == P1_STATEMENT + "\nReward: 0.8"
    assert rewards == pytest.approx([0.0, 0.0, 0.0, 0.0, 0.0, 0.8, 0.0, 0.0, 1.0, 0.8, 0.0])


def test_sequence_b_oracle():
    env, _, _ = start()
    expected = [
        ("[search] rental car in Lisbon from May 3 to May 7", 0.2),
        ("[search] restaurant in Lisbon on May 5", 0.2),
        ("[answer] C2", 1.0),
        ("[answer] R2", 1.0),
    ]
    for number, (action, reward) in enumerate(expected, start=1):
        assert env.unwrapped.oracle_action() == action
        _, got, terminated, _, info = env.step(action)
        assert got == pytest.approx(reward) and terminated == (number == 4)
    assert info["episode_score"] == 1.0


def test_sequence_c_proactive_elicitation():
    env, _, _ = start(privileged=True)
    for action in ("[action] Hello!", "[action] Lisbon looks lovely.", "[action] I hope it is sunny."):
        obs, reward, _, _, info = env.step(action)
        assert reward == 0.0 and obs in NATURAL_REPLIES
        assert info["privileged"]["judgements"]["classifier"] == {"type": "1", "preference_id": None}
    obs, reward, _, _, info = env.step("[action] Thanks for your patience.")
    hidden = info["privileged"]["hidden"]
    assert reward == 0.0 and len(hidden["elicited"]) == 1 and len(hidden["remaining"]) == 3
    task = env.unwrapped.task
    volunteered = next(p for p in task.numbered if p.id == hidden["elicited"][0])
    assert volunteered.pref.implicit_elicitation in obs and obs.startswith("By the way, about the ")
    assert hidden["nonpreference_times"] == 0


def test_sequence_c_without_the_fix_gives_the_apology():
    env, _, _ = start(privileged=True, elicitation_fix=False)
    for action in ("[action] Hello!", "[action] Lisbon looks lovely.", "[action] I hope it is sunny."):
        env.step(action)
    obs, reward, _, _, info = env.step("[action] Thanks for your patience.")
    assert obs == FEEDBACK["apology"] and reward == 0.0
    assert len(info["privileged"]["hidden"]["remaining"]) == 4 and info["privileged"]["hidden"]["elicited"] == []
    agent_entries = [e for e in env.unwrapped.history if e["role"] == "agent"]
    assert agent_entries[-2]["content"] == agent_entries[-1]["content"] == "Thanks for your patience."


def test_proactive_pick_is_seeded():
    picks = set()
    for seed in range(8):
        env, _, _ = start(seed=seed, privileged=True)
        for action in ("[action] Hello!", "[action] Nice.", "[action] Great.", "[action] Thanks."):
            info = env.step(action)[4]
        picks.add(info["privileged"]["hidden"]["elicited"][0])
        again, _, _ = start(seed=seed, privileged=True)
        for action in ("[action] Hello!", "[action] Nice.", "[action] Great.", "[action] Thanks."):
            info_again = again.step(action)[4]
        assert info_again["privileged"]["hidden"]["elicited"] == info["privileged"]["hidden"]["elicited"]
    assert len(picks) > 1


# ---------------------------------------------------------------- answer rules


def test_two_ids_in_one_answer_score_both_and_terminate():
    env, _, _ = start()
    _, reward, terminated, _, info = env.step("[answer] C2, R2")
    assert (reward, terminated) == (2.0, True)
    assert info["episode_score"] == 1.0  # 2.0 under key C, divided by two aspects


def test_a_locked_second_id_discards_the_reward_but_keeps_the_grading():
    env, _, _ = start(privileged=True)
    obs, reward, _, _, info = env.step("[answer] C1, C2")
    assert reward == 0.0 and obs.startswith("You have already recommended an option with the initial 'C'")
    hidden = info["privileged"]["hidden"]
    assert "C1" not in hidden["correct_left"] and hidden["best_left"] == ["C2", "R2"]
    assert hidden["choice_initials"] == ["C"]


def test_invalid_ids_and_untagged_input():
    env, _, _ = start(privileged=True)
    obs, reward, _, _, info = env.step("[answer] X9")
    assert obs == FEEDBACK["answer_format"].format(option_id="X9")
    assert (reward, info["valid_action"], info["action_kind"]) == (0.0, True, "answer")
    before = info["privileged"]["hidden"]
    obs, reward, _, _, info = env.step("hello")
    assert (reward, info["valid_action"], info["action_kind"]) == (0.0, False, "invalid")
    assert obs.startswith("Invalid action:") and info["privileged"]["hidden"] == before


def test_a_letter_outside_the_trip_is_wrong_and_locks():
    env, _, _ = start(privileged=True)
    obs, reward, _, _, info = env.step("[answer] F3")
    assert reward == 0.0 and obs.startswith(FEEDBACK["graded_none"])
    assert info["privileged"]["hidden"]["choice_initials"] == ["F"]
    assert env.step("[answer] F1")[0].startswith("You have already recommended")


def test_feedback_names_best_correct_and_wrong():
    env, _, _ = start(one_choice_per_aspect=False)
    assert env.step("[answer] C1, C3")[0] == FEEDBACK["graded_correct_wrong"] + FEEDBACK["recorded_options"]
    assert env.step("[answer] C2, C4")[0] == FEEDBACK["graded_best_wrong"] + FEEDBACK["recorded_options"]
    _, reward, terminated, _, _ = env.step("[answer] R2")
    assert (reward, terminated) == (1.0, True)


def test_single_id_answers():
    env, _, _ = start(single_id_answers=True)
    obs, reward, *_ = env.step("[answer] C2, R2")
    assert (obs, reward) == (FEEDBACK["answer_single"], 0.0)
    assert env.step("[answer] C2")[1] == 1.0


def test_terminate_when_all_answered():
    env, _, _ = start(terminate_when_all_answered=True)
    assert env.step("[answer] C1")[2] is False
    _, reward, terminated, *_ = env.step("[answer] R1")
    assert (reward, terminated) == (0.8, True)


def test_finish_reports_the_elicitation_ratio():
    env, _, _ = start()
    env.step("[action] Would you like an electric car or a petrol one?")
    obs, reward, terminated, _, _ = env.step("[finish]")
    assert (reward, terminated) == (0.0, True)
    assert obs == FEEDBACK["finish"].format(elicited=1, total=4, ratio=0.25) and "25.00%" in obs


def test_episode_score_unit_and_replay():
    scorer = PerAspectBestScore(2)
    assert scorer.add("answer", "F3, H11", 2.0) == 1.0
    env, _, _ = start()
    steps = [
        {"action_kind": "search", "content": "x", "reward": 0.2},
        {"action_kind": "answer", "content": "A2", "reward": 0.6},
        {"action_kind": "answer", "content": "A1", "reward": 1.0},
        {"action_kind": "answer", "content": "B4", "reward": 0.2},
        {"action_kind": "answer", "content": "", "reward": 0.0},
        {"action_kind": "action", "content": "y", "reward": 0.0},
    ]
    context = {**env.unwrapped.score_context(), "n_aspects": 3}
    assert episode_score(env.unwrapped.scoring, steps, context) == pytest.approx(0.4)


def test_info_episode_score_matches_the_rescoring_of_the_steps():
    env, _, _ = start()
    steps = []
    for action in ("[search] rental car in Lisbon from May 3 to May 7", "[answer] R1", "[answer] C3", "[answer] C1"):
        _, reward, _, _, info = env.step(action)
        kind, content = action[1:].split("] ", 1)
        steps.append({"action_kind": kind, "content": content, "reward": reward})
    assert info["episode_score"] == episode_score(env.unwrapped.scoring, steps, env.unwrapped.score_context()) == 0.4


# ---------------------------------------------------------------- rewards and options


def test_reward_scale_step_penalty_and_normalisation():
    env, _, _ = start(reward_scale=2.0, step_penalty=0.1)
    _, reward, _, _, info = env.step("[search] rental car in Lisbon from May 3 to May 7")
    assert reward == pytest.approx(0.3)
    assert info["reward_parts"] == pytest.approx(
        {"search": 0.4, "preference": 0.0, "choice": 0.0, "step_penalty": -0.1, "clip": 0.0}
    )
    env, _, _ = start(normalize_rewards=True, step_penalty=0.1)
    _, reward, _, _, info = env.step("[answer] C2, R2")
    assert reward == 1.0 and info["reward_parts"]["clip"] == pytest.approx(-0.9)
    assert start(normalize_rewards=True, step_penalty=0.1)[0].step("[action] Hi.")[1] == 0.0


def test_reward_constants_can_be_overridden():
    env, _, _ = start(choice_correct_reward=0.5, wrong_choice_penalty=0.3, one_choice_per_aspect=False)
    assert env.step("[answer] C1")[1] == 0.5
    assert env.step("[answer] C3")[1] == 0.0  # −0.3, floored at zero
    assert env.step("[answer] C4, R2")[1] == pytest.approx(0.7)


def test_search_failure_interval_and_elicitation_interval_options():
    env, _, _ = start(search_failure_interval=2)
    assert env.step("[search] rental car in Lisbon from May 3 to May 7")[1] == 0.2
    assert env.step("[search] restaurant in Lisbon on May 5")[0] == FEEDBACK["search_outage"]
    env, _, _ = start(elicitation_interval=1, privileged=True)
    env.step("[action] Hello!")
    obs, _, _, _, info = env.step("[action] Hello again!")
    assert obs.startswith("By the way") and len(info["privileged"]["hidden"]["elicited"]) == 1


def test_display_order_is_seeded_and_differs_between_seeds():
    def option_ids(seed):
        env, _, _ = start(seed=seed)
        obs = env.step("[search] rental car in Lisbon from May 3 to May 7")[0]
        return [line.split('"id": "')[1][:2] for line in obs.splitlines() if line.startswith("{")]

    assert option_ids(3) == option_ids(3)
    assert sorted(option_ids(3)) == ["C1", "C2", "C3", "C4", "C5", "C6"]
    assert len({tuple(option_ids(seed)) for seed in range(6)}) > 1


def test_unseeded_reset_leaves_the_stream_as_eager_draws_would():
    """The display orders are drawn on first use; an episode without steps still advances the stream."""
    stepped = gym.make(ENV_ID, split="demo")
    idle = gym.make(ENV_ID, split="demo")
    stepped.reset(seed=5)
    stepped.step("[finish]")
    idle.reset(seed=5)
    idle.step("nonsense")  # malformed: no draw happens on this step
    first = stepped.reset()
    second = idle.reset()
    assert first[0] == second[0]
    assert (
        stepped.step("[search] rental car in Lisbon from May 3 to May 7")[0]
        == idle.step("[search] rental car in Lisbon from May 3 to May 7")[0]
    )
    assert stepped.unwrapped._session.llm_seed_base == idle.unwrapped._session.llm_seed_base


def test_scripted_search_judge_accepts_json_calls_and_checks_every_argument():
    env, _, _ = start()
    arguments = '{"city": "lisbon", "pick_up_date": "3 May", "drop_off_date": "2025-05-07"}'
    call = f'{{"aspect": "rental car", "arguments": {arguments}}}'
    assert env.step(f"[search] {call}")[1] == 0.2
    env, _, _ = start()
    wrong = '{"name": "search_restaurants", "arguments": {"city": "Lisbon", "date": "May 6"}}'
    assert env.step(f"[search] {wrong}")[0] == FEEDBACK["search_false"]
    right = '{"function_name": "search_restaurants", "arguments": {"city": "Lisbon", "date": "5/5"}}'
    assert env.step(f"[search] {right}")[1] == 0.2
    assert env.step("[search] hotel in Lisbon from May 3 to May 7")[0] == FEEDBACK["search_na"]


def test_reset_options_and_errors():
    env = gym.make(ENV_ID)
    _, info = env.reset(seed=1, options={"split": "train"})
    assert info["task_id"].startswith("travel-") and env.unwrapped.task.split == "train"
    with pytest.raises(ValueError, match="unknown task_id"):
        env.reset(options={"task_id": "travel-99-0001"})
    with pytest.raises(ValueError, match="no split"):
        env.reset(options={"split": "dev"})


def test_render_and_transcript():
    env, obs, _ = start(render_mode="ansi")
    env.step("[answer] C2")
    text = env.render()
    assert text.startswith(f"user: {obs}") and "assistant: [answer] C2" in text and text.endswith("[turn 1, score 0.5]")
    assert [m["role"] for m in env.unwrapped.transcript] == ["user", "assistant", "user"]


def test_privileged_information():
    env, _, info = start(privileged=True)
    assert set(info["privileged"]) == {"thoughts", "user_thought", "user_utterance", "judgements", "hidden"}
    hidden = info["privileged"]["hidden"]
    assert hidden["scenario"].startswith("Marta") and hidden["search_pending"] == ["rental_car", "restaurant"]
    assert [p["id"] for p in hidden["remaining"]] == ["P1", "P2", "P3", "P4"]
    assert hidden["best_left"] == ["C2", "R2"] and hidden["correct_left"] == ["C1", "C2", "R1", "R2"]
    info = env.step("[action] Would you like an electric car or a petrol one?")[4]
    assert info["privileged"]["judgements"]["classifier"] == {"type": "2", "preference_id": "P1"}
    assert info["privileged"]["user_utterance"] == P1_STATEMENT and info["privileged"]["user_thought"] is None
    info = env.step("[action] Any other preferences for the restaurant?")[4]
    assert info["privileged"]["user_utterance"] is None  # a canned reply


def test_privileged_is_empty_by_default_and_secrets_stay_hidden():
    env, obs, info = start()
    observations = [obs]
    for action in ["[action] What kind of cuisine would you like for dinner?", *[a for a, _ in SEQUENCE_A]]:
        obs, *_, info = env.step(action)
        observations.append(obs)
        assert info["privileged"] == {}
    for secret in env.unwrapped.secret_texts():
        assert all(secret not in text for text in observations)


def test_determinism_and_pickling_mid_episode():
    def trace(env):
        return [
            env.step(a) for a in ("[search] rental car in Lisbon from May 3 to May 7", "[action] Hi!", "[answer] C1")
        ]

    assert trace(start(seed=4)[0]) == trace(start(seed=4)[0])
    env, _, _ = start(seed=4)
    env.step("[action] Hello!")
    copy = pickle.loads(pickle.dumps(env))
    for action in ("[action] Nice.", "[action] Great.", "[action] Thanks.", "[search] restaurant in Lisbon on May 5"):
        assert copy.step(action) == env.step(action)


def test_oracle_on_every_test_task():
    env = gym.make(ENV_ID)
    for task in env.unwrapped.task_pack.pool("test"):
        env.reset(seed=0, options={"task_id": task.id})
        rewards, terminated = [], False
        while not terminated:
            _, reward, terminated, truncated, info = env.step(env.unwrapped.oracle_action())
            rewards.append(reward)
            assert not truncated, task.id
        assert len(rewards) == 2 * len(task.dimensions), task.id
        assert info["episode_score"] == 1.0, task.id
        assert sum(rewards) == pytest.approx(1.2 * len(task.dimensions)), task.id
        first = task.dimensions[0]
        assert canonical_query(first, task.aspects[first].arguments) in env.unwrapped.transcript[1]["content"]
