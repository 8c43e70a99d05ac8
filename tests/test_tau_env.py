"""TauGym episodes, protocol and roles (docs/envs/tau.md)."""

import json
import pickle
from pathlib import Path

import gymnasium as gym
import pytest

from mimesis_gym.core.chat import ChatReply
from mimesis_gym.envs.tau.env import TauEnv
from mimesis_gym.envs.tau.roles import GREETING, STOP, ScriptedUser, keyword_found
from mimesis_gym.envs.tau.tasks import UserFacts, load_original_pack
from tests.support.chat_models import ScriptedChatModel, refusal

ENV_ID = "mimesis/TauGym-v0"
SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
DEMO = "orig-retail-demo-000"
INFO_DEMO = "orig-retail-demo-002"
EMAIL_REPLY = "My email is" if load_original_pack().get(DEMO).user_facts.knows_email else "I don't remember my email"


@pytest.fixture(scope="module")
def tau_dir():
    if not (SHARED_DATA / "tau-bench").is_dir() or not (SHARED_DATA / "userrl").is_dir():
        pytest.skip(f"tau-bench / UserRL reference data not found under {SHARED_DATA} (expected ../shared/data)")
    return str(SHARED_DATA)


def make(**kwargs):
    return gym.make(ENV_ID, **kwargs)


def start(task_id=DEMO, **kwargs):
    env = make(**kwargs)
    obs, info = env.reset(seed=0, options={"task_id": task_id})
    return env, obs, info


def play_oracle(env, task_id, seed=0):
    env.reset(seed=seed, options={"task_id": task_id})
    total = 0.0
    terminated = truncated = False
    info = {}
    while not (terminated or truncated):
        _, reward, terminated, truncated, info = env.step(env.unwrapped.oracle_action())
        total += reward
    return total, terminated, info


# ---------------------------------------------------------------- construction and reset


def test_reset_draws_from_the_split_and_honours_task_id():
    env = make(split="train")
    _, info = env.reset(seed=3)
    assert info["task_id"].startswith("orig-retail-train-")
    _, info = env.reset(options={"task_id": "orig-retail-004"})
    assert info["task_id"] == "orig-retail-004"
    assert (info["turn"], info["action_kind"], info["reward_parts"], info["episode_score"]) == (0, None, {}, 0.0)
    with pytest.raises(ValueError, match="unknown task_id"):
        env.reset(options={"task_id": "orig-retail-999"})


def test_same_seed_same_task_and_seed_base():
    first, second = make(), make()
    assert first.reset(seed=5)[1]["task_id"] == second.reset(seed=5)[1]["task_id"]
    assert first.unwrapped._session.llm_seed_base == second.unwrapped._session.llm_seed_base


def test_the_original_pack_has_no_airline_domain():
    with pytest.raises(ValueError, match="domain 'airline' is not in pack 'original'"):
        TauEnv(domain="airline")
    with pytest.raises(ValueError, match="opening must be one of"):
        TauEnv(opening="sometimes")


def test_domain_and_split_errors(tau_dir):
    with pytest.raises(ValueError, match="airline domain has no train tasks"):
        TauEnv(pack="upstream", data_dir=tau_dir, split="train", domain="airline")
    env = TauEnv(pack="upstream", data_dir=tau_dir, domain="airline")
    for seed in range(5):
        assert env.reset(seed=seed)[1]["task_id"].startswith("airline-")
    with pytest.raises(ValueError, match="airline domain has no train tasks"):
        env.reset(options={"split": "train"})


def test_upstream_needs_a_directory(monkeypatch):
    monkeypatch.delenv("MIMESIS_GYM_TAU_DIR", raising=False)
    with pytest.raises(ValueError, match=r"data_dir=.*MIMESIS_GYM_TAU_DIR"):
        TauEnv(pack="upstream")


def test_judge_is_accepted_and_ignored():
    env = TauEnv(judge=ScriptedChatModel(["never called"]))
    assert env.role_models.chat_models == ()


def test_system_prompt_tools_and_opening():
    env, obs, _ = start()
    task = load_original_pack().get(DEMO)
    assert obs == f"Customer's request: {task.obs}\n" + (
        "Work through it step by step, using the internal tools and talking with the customer."
    )
    prompt = env.unwrapped.system_prompt
    assert "online retail store" in prompt and "interact_with_env" in prompt and "<think>" in prompt
    assert "Policy:" not in prompt
    assert env.unwrapped.tools[0]["function"]["parameters"]["properties"]["choice"]["enum"] == [
        "action",
        "search",
        "answer",
    ]
    policy = (Path(__file__).resolve().parents[1] / "mimesis_gym/envs/tau/data/original/retail/policy.md").read_text()
    shown = start(show_policy=True)[0].unwrapped.system_prompt
    assert shown == f"{prompt}\n\nPolicy:\n{policy}"


def test_upstream_prompts_come_from_the_parquets(tau_dir):
    env, obs, _ = start("retail-train-000", pack="upstream", data_dir=tau_dir)
    assert obs.startswith("Here is my request: Hi there! I'm looking to return a few items from an order.")
    assert env.unwrapped.system_prompt.startswith(
        "You are an agent that actively interact with a specific environment."
    )
    _, live_obs, _ = start("retail-train-000", pack="upstream", data_dir=tau_dir, opening="live", user="scripted")
    assert live_obs.startswith("Customer's request: Hi there!")


# ---------------------------------------------------------------- episodes with the oracle


def test_oracle_scores_1_on_every_original_task():
    env = make(max_episode_steps=32)
    for task in load_original_pack():
        total, terminated, info = play_oracle(env, task.id)
        assert (total, terminated) == (1.0, True), (task.id, info["reward_parts"])
        assert info["reward_parts"]["db_hash"] == info["reward_parts"]["gold_hash"]


@pytest.mark.parametrize(
    "task_ids",
    [
        [f"retail-{i:03d}" for i in range(20)],
        [f"retail-train-{i:03d}" for i in range(20)],
        [f"airline-{i:03d}" for i in range(10)],
    ],
    ids=["retail-test", "retail-train", "airline"],
)
def test_oracle_scores_1_on_upstream_tasks(tau_dir, task_ids):
    env = make(pack="upstream", data_dir=tau_dir, max_episode_steps=32)
    for task_id in task_ids:
        total, terminated, info = play_oracle(env, task_id)
        assert (total, terminated) == (1.0, True), (task_id, info["reward_parts"])


def test_changing_one_argument_of_the_last_write_scores_0(tau_dir):
    env = make(pack="upstream", data_dir=tau_dir, max_episode_steps=32)
    env.reset(seed=0, options={"task_id": "retail-train-000"})
    call = {
        "name": "return_delivered_order_items",
        "arguments": {"order_id": "#W6067464", "item_ids": ["9624127908"], "payment_method_id": "credit_card_4190576"},
    }
    assert env.step("[answer] " + json.dumps(call))[0].startswith("{")
    obs, reward, terminated, *_ = env.step("[action] Your request is complete.")
    assert (reward, terminated) == (0.0, False) and obs != STOP
    _, reward, terminated, _, info = env.step('[answer] transfer_to_human_agents: {"summary": "x"}')
    assert (reward, terminated) == (0.0, True)
    assert info["reward_parts"]["db_hash"] == "485cbc576b891edcad85b74702048996e50c0a9d772abd1947d55baae38855aa"
    assert info["reward_parts"]["r_actions"] == 0


def test_omitting_the_outputs_scores_0(tau_dir):
    env = make(pack="upstream", data_dir=tau_dir, max_episode_steps=32)
    env.reset(seed=0, options={"task_id": "retail-002"})
    while (action := env.unwrapped.oracle_action()).startswith("[answer]"):
        env.step(action)
    obs, reward, terminated, *_ = env.step("[action] Your request is complete.")
    assert (reward, terminated) == (0.0, False)
    _, reward, terminated, _, info = env.step('[answer] transfer_to_human_agents: {"summary": "x"}')
    assert (reward, terminated) == (0.0, True)
    parts = info["reward_parts"]
    assert (parts["r_actions"], parts["r_outputs"], parts["outputs"]) == (1, 0, {"10": False})


def test_an_immediate_transfer_on_retail_012_scores_1(tau_dir):
    env, *_ = start("retail-012", pack="upstream", data_dir=tau_dir)
    obs, reward, terminated, _, info = env.step('[answer] transfer_to_human_agents: {"summary": "x"}')
    assert (obs, reward, terminated) == ("Transfer successful", 1.0, True)
    assert info["episode_score"] == 1.0 and info["reward_parts"]["r_outputs"] is None


def test_an_output_is_found_without_commas_and_case():
    env, *_ = start(INFO_DEMO)
    while (action := env.unwrapped.oracle_action()).startswith("[answer]"):
        env.step(action)
    output = load_original_pack().get(INFO_DEMO).outputs[0]
    spaced = f"{output[:3]},{output[3:]}"
    assert env.unwrapped.evaluate_now()["r_outputs"] == 0
    obs, reward, terminated, _, info = env.step(f"[action] The tracking number is {spaced.upper()}.")
    assert (obs, reward, terminated) == (STOP, 1.0, True)
    assert info["reward_parts"]["outputs"] == {output: True}


def test_scripted_patience_gives_up():
    env, *_ = start(scripted_patience=2)
    env.step("[action] Hello there.")
    obs, reward, terminated, *_ = env.step("[action] Anything else?")
    assert (obs, reward, terminated) == (STOP, 0.0, True)


def test_truncation_scores_nothing():
    env, *_ = start(max_episode_steps=2)
    env.step("[search] help")
    _, reward, terminated, truncated, info = env.step("[search] help")
    assert (reward, terminated, truncated, info["reward_parts"]) == (0.0, False, True, {})


# ---------------------------------------------------------------- protocol


@pytest.mark.parametrize(
    ("action", "prefix", "kind", "valid"),
    [
        ("[search] tools", "Available Tools:\n- calculate: ", "search", True),
        ("[search]  HELP ", "You have three choices.", "search", True),
        ("[search] weather", "Only `[search] tools` and `[search] help` are supported.", "search", False),
        ("[action] Could you give me your email?", EMAIL_REPLY, "action", True),
        (
            '[answer] {"name": "get_order_details", "arguments": {"order_id": "#R0000000"}}',
            "Error: order not found",
            "answer",
            True,
        ),
        ('[answer] {"name": "list_all_product_types"}', '{"Bluetooth Speaker": ', "answer", True),
        ('[answer] get_order_details: {"order_id": "#R0000000"}', "Error: order not found", "answer", True),
        ("[answer] get_order_details #R0000000", "Invalid tool call format. ", "answer", False),
        (
            '[answer] {"name": "get_order_details", "arguments": ["#R0000000"]}',
            "Invalid tool call format. ",
            "answer",
            False,
        ),
        ('[answer] {"name": "get_order_details", ', "Invalid tool call format. ", "answer", False),
        ('[answer] {"name": "fly_to_the_moon", "arguments": {}}', "Unknown action fly_to_the_moon", "answer", False),
        ('[answer] {"name": "respond", "arguments": {"content": "What is your email?"}}', EMAIL_REPLY, "action", True),
        ('[answer] respond: {"content": 5}', 'Error: respond needs a string "content"', "answer", False),
        ("[finish]", "Episode finished.", "finish", True),
        ("hello", "Invalid action format: hello. Use one of: [search] tools", "invalid", False),
        ("[Action] hi", "Invalid action format: [Action] hi.", "invalid", False),
        ({"choice": "answer", "content": {"name": "think", "arguments": {"thought": "x"}}}, "", "answer", True),
    ],
)
def test_protocol_rows(action, prefix, kind, valid):
    env, *_ = start(DEMO)
    obs, reward, _, _, info = env.step(action)
    assert obs.startswith(prefix) and reward == 0.0
    assert (info["action_kind"], info["valid_action"]) == (kind, valid)


def test_tool_list_only_once():
    env, *_ = start()
    first = env.step("[search] tools")[0]
    second = env.step("[search] tools")[0]
    assert first.startswith("Available Tools:")
    assert second == "The tool list was already given earlier in this conversation; look back at it."


def test_finish_scores_0_unless_finish_scores():
    for finish_scores, expected in ((False, 0.0), (True, 1.0)):
        env, *_ = start(finish_scores=finish_scores)
        while (action := env.unwrapped.oracle_action()).startswith("[answer]"):
            env.step(action)
        obs, reward, terminated, _, info = env.step("[finish]")
        assert (obs, reward, terminated) == ("Episode finished.", expected, True)
        assert info["reward_parts"]["r_actions"] == 1


def test_a_transfer_ends_the_episode_even_with_bad_arguments():
    env, *_ = start()
    obs, reward, terminated, *_ = env.step('[answer] {"name": "transfer_to_human_agents", "arguments": {}}')
    assert obs.startswith("Error: missing argument 'summary'") and terminated and reward == 0.0


def test_train_profile_appends_the_reward_line():
    env, *_ = start(reward_profile="train")
    assert env.step("[search] help")[0].endswith("\nReward: 0.0")
    while (action := env.unwrapped.oracle_action()).startswith("[answer]"):
        env.step(action)
    assert env.step(env.unwrapped.oracle_action())[0] == f"{STOP}\nReward: 1.0"


def test_transcript_render_and_pickle():
    env, obs, _ = start(render_mode="ansi")
    env.step("[search] help")
    unwrapped = env.unwrapped
    assert [m["role"] for m in unwrapped.transcript] == ["user", "assistant", "user"]
    assert unwrapped.render().endswith("[turn 1, score 0.0]")
    copy = pickle.loads(pickle.dumps(unwrapped))
    assert copy.task_pack is unwrapped.task_pack and copy.db.base is unwrapped.db.base
    assert copy.step("[search] tools")[0].startswith("Available Tools:")
    assert len(pickle.dumps(unwrapped)) < 20_000


def test_privileged_hidden_data():
    env, _, info = start(privileged=True)
    hidden = info["privileged"]["hidden"]
    task = load_original_pack().get(DEMO)
    assert hidden["instruction"] == task.instruction and hidden["goal_reached"] is False
    assert hidden["gold_actions"][0]["name"] == task.actions[0].name and hidden["outputs"] == []
    obs, _, _, _, info = env.step("[action] Hi!")
    assert info["privileged"]["user_utterance"] == obs and info["privileged"]["thoughts"] == {}
    assert start()[2]["privileged"] == {}


def test_evaluate_now_changes_nothing():
    env, *_ = start()
    unwrapped = env.unwrapped
    before = unwrapped.evaluate_now()
    assert before["r_actions"] == 0 and before["reward"] == 0.0 and before["db_hash"] != before["gold_hash"]
    assert unwrapped.evaluate_now() == before and unwrapped.db.overlay == {}


# ---------------------------------------------------------------- scripted user


FACTS = UserFacts(
    user_id="dana_whitfield_1234",
    first_name="Dana",
    last_name="Whitfield",
    zip="30412",
    email="dana.whitfield12@example.net",
    knows_email=False,
    request="Hi, I need to cancel an order I placed.",
    orders=("#R1111111", "#R2222222"),
    reason="no longer needed",
    payment="visa credit card ending in 1234",
)


def scripted(message, goal=False, count=1, facts=FACTS):
    return ScriptedUser().decide(message=message, facts=facts, goal_reached=goal, message_count=count, patience=8).value


def test_scripted_user_answers_slots_in_order():
    assert scripted("What is your email and the order id?") == (
        "I don't remember my email, but my name is Dana Whitfield and my zip code is 30412. "
        "The order ids are #R1111111 and #R2222222."
    )
    known = FACTS.model_copy(update={"knows_email": True})
    assert scripted("Your email please?", facts=known) == "My email is dana.whitfield12@example.net."
    assert scripted("Which payment method, and why?") == (
        "Please use my visa credit card ending in 1234. The reason is: no longer needed."
    )


def test_scripted_user_confirms_and_restates():
    assert scripted("Shall I proceed?") == "Yes, please go ahead."
    assert scripted("Cancel #R1111111 for the reason no longer needed; confirm (yes/no)?") == (
        "The reason is: no longer needed. Yes."
    )
    assert scripted("Lovely weather today.") == FACTS.request


def test_scripted_user_stops_at_the_goal_or_when_patience_runs_out():
    assert scripted("anything", goal=True) == STOP
    assert scripted("anything", count=8) == STOP


def test_keywords_match_whole_words_only():
    assert keyword_found("pay", "How will you pay?")
    assert not keyword_found("pay", "Which payment method?")
    assert not keyword_found("name", "What is your username?")
    assert keyword_found("(yes/no)", "Proceed (yes/no)?")


def test_upstream_user_facts_are_derived(tau_dir):
    env = TauEnv(pack="upstream", data_dir=tau_dir)
    pack = env.task_pack
    facts = pack.user_facts(pack.get("retail-000"))
    assert (facts.first_name, facts.last_name, facts.zip, facts.knows_email) == ("Yusuf", "Rossi", "19122", False)
    assert facts.orders == ("#W2378156",) and len(facts.items) == 2 and len(facts.targets) == 2
    assert facts.payment.endswith("credit card ending in " + facts.payment[-4:])
    airline = pack.user_facts(pack.get("airline-000"))
    assert airline.knows_user_id and airline.flights == ("HAT136 on 2024-05-20", "HAT039 on 2024-05-20")
    assert airline.bags == "3 checked bags, 0 of them not free"
    assert airline.payment == "travel certificate and visa credit card ending in 7447"


# ---------------------------------------------------------------- the LLM user


def llm_env(replies, **kwargs):
    model = ScriptedChatModel(replies)
    kwargs.setdefault("split", "demo")
    env = make(user=model, **kwargs)
    obs, info = env.reset(seed=0, options={"task_id": DEMO})
    return env, model, obs, info


def test_userrl_opening_makes_one_call_the_agent_never_sees():
    env, model, obs, info = llm_env(["I want to cancel something.", STOP])
    assert len(model.calls) == 1
    messages = model.calls[0]["messages"]
    assert messages[0]["role"] == "system" and load_original_pack().get(DEMO).instruction in messages[0]["content"]
    assert messages[1:] == [{"role": "user", "content": GREETING}]
    assert "I want to cancel something." not in obs and info["user_failure"] is None
    env.step("[action] Hello, how can I help?")
    second = model.calls[1]["messages"]
    assert second[2:] == [
        {"role": "assistant", "content": "I want to cancel something."},
        {"role": "user", "content": "Hello, how can I help?"},
    ]
    assert model.calls[1]["seed"] == model.calls[0]["seed"] + 1
    assert model.calls[0]["max_tokens"] == 2048 and model.calls[0]["temperature"] == 1.0


def test_recorded_opening_makes_no_call_and_live_shows_the_reply():
    env, model, obs, _ = llm_env(["x"], opening="recorded")
    assert model.calls == []
    env.step("[action] Hi")
    assert model.calls[0]["messages"][2]["content"] == load_original_pack().get(DEMO).obs
    _, model, obs, info = llm_env(
        [ChatReply(text="My order is wrong.", thought="be vague")], opening="live", privileged=True
    )
    assert obs.startswith("Customer's request: My order is wrong.\n")
    assert info["privileged"]["user_utterance"] == "My order is wrong."
    assert info["privileged"]["user_thought"] == "be vague"


def test_stop_from_the_llm_user_terminates_and_scores():
    env, model, *_ = llm_env(["Hi, I need help.", f"Thanks! {STOP}"], user_temperature=0.3, user_max_tokens=99)
    obs, reward, terminated, _, info = env.step("[action] Anything else?")
    assert (obs, reward, terminated) == (f"Thanks! {STOP}", 0.0, True)
    assert info["reward_parts"]["r_actions"] == 0 and info["reward_parts"]["reward"] == 0.0
    assert model.calls[1]["temperature"] == 0.3 and model.calls[1]["max_tokens"] == 99


def test_stop_after_a_correct_run_scores_1_and_shows_the_reward_in_train():
    env, *_ = llm_env(["Hi, I need help.", STOP], reward_profile="train")
    while (action := env.unwrapped.oracle_action()).startswith("[answer]"):
        env.step(action)
    obs, reward, terminated, *_ = env.step("[action] Done.")
    assert (obs, reward, terminated) == (f"{STOP}\nReward: 1.0", 1.0, True)


def test_a_failing_user_reports_and_does_not_terminate():
    env, model, _, info = llm_env([refusal()])
    assert info["user_failure"] == "user:refusal"
    obs, reward, terminated, _, info = env.step("[action] Hello?")
    assert (obs, reward, terminated) == ("Error communicating with user: refusal", 0.0, False)
    assert info["user_failure"] == "user:refusal"
    assert model.calls[1]["messages"][-1] == {"role": "user", "content": "Hello?"}
    env.step("[action] Still there?")
    assert model.calls[2]["messages"][-1] == {"role": "user", "content": "Hello?\n\nStill there?"}


@pytest.mark.parametrize("privileged", [False, True])
def test_think_blocks_are_stripped_and_kept_as_privileged(privileged):
    env, *_ = llm_env(["Opening.", "<think>x</think>ok"], privileged=privileged)
    obs, _, _, _, info = env.step("[action] Hi")
    assert obs == "ok"
    if privileged:
        assert info["privileged"]["thoughts"]["user"]["reasoning"] == "x"
        assert (info["privileged"]["user_thought"], info["privileged"]["user_utterance"]) == ("x", "ok")
    else:
        assert info["privileged"] == {}
    assert [record.thought for record in env.unwrapped.thought_records] == ["x"]


def test_a_refusing_user_server_gives_every_turn_the_failure_text():
    import random

    from mimesis_gym.core.conventions import RetryPolicy
    from mimesis_gym.core.http import EndpointConfig, OpenAIChatModel
    from tests.support.fault_server import FaultServer

    async def no_sleep(seconds):
        pass

    server = FaultServer()
    try:
        server.script(*["refusal_text"] * 40)
        endpoint = EndpointConfig(base_url=server.base_url, model="fault-model", timeout_s=5)
        policy = RetryPolicy(
            max_retries=endpoint.max_retries,
            content_retries=endpoint.content_retries,
            rng=random.Random(0),
            sleep=no_sleep,
        )
        user = OpenAIChatModel(endpoint, retry_policy=policy)
        env = make(user=user, judge="scripted", split="demo", role_max_tokens=64)
        _, info = env.reset(seed=0, options={"task_id": DEMO})
        assert info["user_failure"] == "user:refusal"
        for _ in range(3):
            obs, reward, terminated, truncated, info = env.step("[action] Can you tell me your email?")
            assert obs == "Error communicating with user: refusal"
            assert (reward, terminated, info["user_failure"]) == (0.0, False, "user:refusal")
        bodies = [request["body"] for request in server.requests]
        assert len(bodies) == 8  # reset and three steps: each call and its one refusal retry
        assert all(body["max_tokens"] == 64 and body["temperature"] is None for body in bodies)
        env.close()
    finally:
        server.close()


# ---------------------------------------------------------------- contract and cost


def test_construct_reset_and_step_read_no_files_after_the_first_load(tau_dir, monkeypatch):
    import builtins
    import pathlib

    for kwargs in ({}, {"pack": "upstream", "data_dir": tau_dir}):
        TauEnv(**kwargs).reset(seed=0)  # first load (and first gold replay) may read

    def refuse(*args, **kwargs):
        raise AssertionError("a file was touched after the first load")

    monkeypatch.setattr(builtins, "open", refuse)
    for name in ("open", "read_text", "read_bytes", "is_dir", "is_file", "exists", "stat", "resolve"):
        monkeypatch.setattr(pathlib.Path, name, refuse)
    for kwargs in ({}, {"pack": "upstream", "data_dir": tau_dir}):
        env = TauEnv(**kwargs)
        env.reset(seed=1)
        env.step("[search] tools")
        env.step("[action] What is your email?")
