"""SearchGym acceptance tests (docs/envs/search.md): the demo walkthrough, the search backends
offline, the answer check and its judge, rewards, the oracle, determinism, pickling, the contract."""

import asyncio
import json
import pickle
from typing import ClassVar

import gymnasium as gym
import pytest

from mimesis_gym.core.chat import ChatReply
from mimesis_gym.envs.search.backends import DEFAULT_NOTICE, SearchResult
from mimesis_gym.envs.search.env import SEARCH_LIMIT_TEXT
from mimesis_gym.envs.search.roles import JUDGE_SYSTEM, exact_match, norm
from tests.support.chat_models import ScriptedChatModel, refusal

ENV_ID = "mimesis/SearchGym-v0"

DEMO = "search-demo-01"
QUESTION = "In which village was the designer of the Harrowgate Bridge born?"
YES = '{"reasoning": "Same place.", "judgment": "Yes", "feedback": "Well reasoned."}'
NO = '{"reasoning": "Another place.", "judgment": "No", "feedback": "Check the birthplace again."}'


def start(**kwargs):
    kwargs.setdefault("split", "demo")
    env = gym.make(ENV_ID, **kwargs)
    env.reset(seed=0, options={"task_id": DEMO})
    return env


class CountingBackend:
    """A third-party backend (``search_backend="tests.test_search_env:CountingBackend"``)."""

    calls: ClassVar[list[tuple[str, int]]] = []
    configs: ClassVar[list[dict]] = []

    def __init__(self, config):
        CountingBackend.configs.append(config)

    async def search(self, query, k):
        CountingBackend.calls.append((query, k))
        return SearchResult(hits=[("Counted", f"query number {len(CountingBackend.calls)}", {})])


class BrokenBackend:
    def __init__(self, config):
        pass

    async def search(self, query, k):
        raise RuntimeError("index file is corrupt")


@pytest.fixture
def counting_backend():
    CountingBackend.calls.clear()
    CountingBackend.configs.clear()
    return CountingBackend


# ---------------------------------------------------------------- demo fixture


def test_demo_walkthrough_with_bm25_and_the_scripted_judge():
    env = gym.make(ENV_ID, split="demo")
    obs, info = env.reset(seed=0, options={"task_id": DEMO})
    assert obs.startswith(QUESTION + "\n") and info["task_id"] == DEMO
    obs, reward, terminated, _, info = env.step("[search] Who designed the Harrowgate Bridge?")
    assert obs.startswith(
        "Search results for 'Who designed the Harrowgate Bridge?':\n1. Harrowgate Bridge\n"
        "- Snippet: The Harrowgate Bridge is"
    )
    assert (reward, terminated, info["action_kind"], info["valid_action"]) == (0.0, False, "search", True)
    obs, reward, *_ = env.step("[search] Where was Odile Marsh born?")
    assert obs.startswith("Search results for 'Where was Odile Marsh born?':\n1. Odile Marsh\n- Snippet: ")
    assert reward == 0.0
    obs, reward, terminated, _, info = env.step("[answer] Carrowmere")
    assert obs.startswith("Incorrect.") and "'Carrowmere'" in obs
    assert (reward, terminated) == (0.0, False)
    obs, reward, terminated, _, info = env.step("[answer] penmoor!")
    assert obs.startswith("Correct!") and "'penmoor!'" in obs
    assert (reward, terminated, info["episode_score"]) == (1.0, True, 1.0)
    assert info["reward_parts"] == {"answer": 1.0, "step_penalty": 0.0, "clip": 0.0}


def test_the_village_alias_is_correct():
    _, reward, terminated, _, _ = start().step("[answer] Penmoor village")
    assert (reward, terminated) == (1.0, True)


def test_train_profile_appends_the_reward_line():
    env = start(reward_profile="train")
    assert env.step("[search] Harrowgate Bridge")[0].endswith("\nReward: 0.0")
    assert env.step("[answer] penmoor!")[0].endswith("\nReward: 1.0")


def test_action_tag_gets_the_invalid_format_reply():
    env = start(privileged=True)
    obs, reward, terminated, _, info = env.step("[action] hi")
    assert obs.startswith("Invalid action format.")
    assert (reward, terminated, info["valid_action"], info["action_kind"]) == (0.0, False, False, "action")
    assert info["privileged"]["hidden"]["search_steps"] == 0


@pytest.mark.parametrize("action", ["Penmoor", "[search]   ", "[answer]", "[Search] bridge"])
def test_untagged_or_empty_input_is_malformed_and_not_a_search(action):
    env = start(privileged=True)
    obs, reward, _, _, info = env.step(action)
    assert obs.startswith("Invalid action:") and reward == 0.0
    assert (info["valid_action"], info["action_kind"]) == (False, "invalid")
    assert info["privileged"]["hidden"]["search_steps"] == 0


def test_notice_backend_and_the_search_limit():
    env = start(search_backend="notice")
    for number in range(1, 6):
        query = f"who designed bridge {number}"
        obs, reward, *_ = env.step(f"[search] {query}")
        assert obs == f"Search results for '{query}':\n{DEFAULT_NOTICE}" and reward == 0.0
    for _ in range(2):  # the 6th and 7th searches
        obs, reward, terminated, _, info = env.step("[search] Harrowgate Bridge")
        assert (obs, reward, terminated, info["valid_action"]) == (SEARCH_LIMIT_TEXT, 0.0, False, True)


def test_searches_past_the_limit_never_reach_the_backend(counting_backend):
    env = start(search_backend="tests.test_search_env:CountingBackend", max_search_steps=2)
    assert env.step("[search] one")[0] == "Search results for 'one':\n1. Counted\n- Snippet: query number 1"
    env.step("[search] two")
    assert env.step("[search] three")[0] == SEARCH_LIMIT_TEXT
    assert env.step("[search] four")[0] == SEARCH_LIMIT_TEXT
    assert counting_backend.calls == [("one", 5), ("two", 5)]
    config = counting_backend.configs[0]
    assert config["max_search_steps"] == 2 and config["split"] == "demo"


def test_custom_notice_text():
    obs = start(search_backend="notice", search_notice="Offline.").step("[search] x")[0]
    assert obs == "Search results for 'x':\nOffline."


def test_finish_before_answering_reveals_the_answer():
    obs, reward, terminated, _, info = start().step("[finish]")
    assert obs.startswith("Finished without a correct answer.") and "The correct answer was: Penmoor" in obs
    assert (reward, terminated, info["action_kind"]) == (0.0, True, "finish")


def test_a_backend_exception_becomes_search_failed():
    obs = start(search_backend="tests.test_search_env:BrokenBackend").step("[search] bridge")[0]
    assert obs == "Search results for 'bridge':\nSearch failed: RuntimeError: index file is corrupt"


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("google", "search_backend must be one of notice, bm25, serper or '<module>:<Class>'"),
        ("no_such_module_xyz:Backend", "cannot import 'no_such_module_xyz'"),
        ("tests.test_search_env:NoSuchClass", "is not a class with an async search"),
    ],
)
def test_bad_backend_names_fail_at_construction(spec, message):
    with pytest.raises(ValueError, match=message):
        gym.make(ENV_ID, search_backend=spec)


def test_other_bad_arguments_fail_at_construction():
    with pytest.raises(ValueError, match="eval_method must be one of llm, rule"):
        gym.make(ENV_ID, eval_method="judge")
    with pytest.raises(ValueError, match="unknown task_id"):
        gym.make(ENV_ID).reset(options={"task_id": "search-9999"})


# ---------------------------------------------------------------- BM25 backend


def test_bm25_edge_cases_and_result_count():
    env = start()
    assert env.step("[search] the of and")[0] == "Search results for 'the of and':\nNo results found."
    assert env.step("[search] zzqx wwvu")[0] == "Search results for 'zzqx wwvu':\nNo results found."
    obs = start(max_search_results=2).step("[search] bridge designed engineer")[0]
    assert obs.count("\n- Snippet: ") == 2 and "\n3. " not in obs


def test_bm25_over_another_corpus(tmp_path):
    corpus = tmp_path / "corpus.jsonl"
    passages = [
        {"title": "Lantern Quay", "text": "Lantern Quay is a harbour street."},
        {"title": "Gull Rock", "text": "Gull Rock is an island near Lantern Quay."},
        {"title": "Moss Lane", "text": "Moss Lane is a quiet lane."},
    ]
    corpus.write_text("".join(json.dumps(p) + "\n" for p in passages))
    obs = start(corpus_path=str(corpus)).step("[search] Lantern Quay")[0]
    assert obs == (
        "Search results for 'Lantern Quay':\n1. Lantern Quay\n- Snippet: Lantern Quay is a harbour street.\n"
        "2. Gull Rock\n- Snippet: Gull Rock is an island near Lantern Quay."
    )


def test_bm25_results_are_identical_across_envs_and_after_pickling():
    queries = ["[search] Who designed the Harrowgate Bridge?", "[search] river flows village", "[search] 1874"]
    first, second = start(), start()
    copy = pickle.loads(pickle.dumps(first))
    for query in queries:
        assert first.step(query) == second.step(query) == copy.step(query)


def test_the_index_is_not_pickled():
    env = start()
    env.step("[search] Harrowgate Bridge")  # builds (or reuses) the per-process index
    payload = pickle.dumps(env)
    assert b"bm25s" not in payload and b"BM25" not in payload  # neither the index nor the backend object
    assert (
        pickle.loads(payload)
        .step("[search] Odile Marsh")[0]
        .startswith("Search results for 'Odile Marsh':\n1. Odile Marsh\n")
    )


# ---------------------------------------------------------------- answer check and judge


@pytest.mark.parametrize(
    ("answer", "gold", "aliases", "expected"),
    [
        ("penmoor!", "Penmoor", (), True),
        ("James  Madison", "james madison", (), True),
        ("12,400", "12400", (), True),
        ("Penmoor village", "Penmoor", ("Penmoor village",), True),
        ("Penmoor-village", "Penmoor", (), False),
        ("!!!", "Penmoor", (), False),
        ("", "", (), False),
    ],
)
def test_normalised_exact_match(answer, gold, aliases, expected):
    assert exact_match(answer, gold, aliases) is expected


def test_norm_keeps_only_alphanumerics():
    assert norm("November 6, 1905") == "november61905"


def test_the_llm_judge_sees_only_mismatches_with_the_documented_call():
    judge = ScriptedChatModel([YES])
    env = start(judge=judge, privileged=True)
    obs, reward, terminated, _, info = env.step("[answer] Penmore")
    assert (reward, terminated) == (1.0, True) and obs.startswith("Correct!") and "Well reasoned" not in obs
    (call,) = judge.calls
    assert call["messages"][0] == {"role": "system", "content": JUDGE_SYSTEM}
    assert (
        call["messages"][1]["content"] == f"Question: {QUESTION}\n\nModel's answer: Penmore\n\nCorrect answer: Penmoor"
    )
    assert (call["max_tokens"], call["temperature"]) == (512, 0.0)
    assert call["json_keys"] == ("reasoning", "judgment", "feedback")
    assert (call["role"], call["turn"]) == ("answer_judge", 1)
    privileged = info["privileged"]
    assert privileged["judgements"] == {
        "answer_judge": {"judgment": "Yes", "feedback": "Well reasoned."},
        "exact_match": False,
    }
    assert privileged["thoughts"] == {"answer_judge": {"reasoning": None, "thought": "Same place."}}
    assert privileged["user_thought"] is None and privileged["user_utterance"] is None


def test_judge_seeds_count_calls_from_the_episode_seed_base():
    judge = ScriptedChatModel([NO])
    env = start(judge=judge)
    env.step("[answer] Carrowmere")
    env.step("[answer] Velm")
    first, second = (call["seed"] for call in judge.calls)
    assert second == first + 1
    env.reset(seed=0, options={"task_id": DEMO})
    env.step("[answer] Carrowmere")
    assert judge.calls[2]["seed"] == first


def test_an_exact_answer_makes_no_judge_call():
    judge = ScriptedChatModel([RuntimeError("the judge must not be called")])
    _, reward, *_ = start(judge=judge).step("[answer] PENMOOR")
    assert reward == 1.0 and judge.calls == []


def test_judge_no_and_feedback_never_shown():
    obs, reward, terminated, _, info = start(judge=ScriptedChatModel([NO])).step("[answer] Carrowmere")
    assert obs == "Incorrect. 'Carrowmere' is not the right answer to the question."
    assert (reward, terminated, info["user_failure"]) == (0.0, False, None)


@pytest.mark.parametrize(
    ("reply", "lenient", "reward", "failure"),
    [
        ('{"reasoning": "r", "judgment": "yes", "feedback": "f"}', False, 0.0, None),
        ('{"reasoning": "r", "judgment": " yes ", "feedback": "f"}', True, 1.0, None),
        ("no json here at all", False, 0.0, "answer_judge:bad_json"),
        ('{"reasoning": "r", "judgment": "Yes"}', False, 0.0, "answer_judge:bad_json"),
        # non-string fields are kept as their str, as UserRL accepted them: true is judgment "True", not "Yes"
        ('{"reasoning": "r", "judgment": true, "feedback": "f"}', False, 0.0, None),
        ('{"reasoning": "r", "judgment": "Yes", "feedback": 3}', False, 1.0, None),
        (refusal(), False, 0.0, "answer_judge:refusal"),
    ],
)
def test_judge_parsing_and_failures(reply, lenient, reward, failure):
    env = start(judge=ScriptedChatModel([reply]), lenient_parsing=lenient, privileged=True)
    obs, got, terminated, _, info = env.step("[answer] the village of Penmoor")
    assert (got, terminated, info["user_failure"]) == (reward, reward == 1.0, failure)
    assert obs.startswith("Correct!" if reward else "Incorrect.")
    if failure:
        assert info["privileged"]["judgements"]["answer_judge"]["judgment"] == "Error"


def test_non_string_judge_fields_are_recorded_as_text():
    reply = '{"reasoning": "r", "judgment": "Yes", "feedback": 5}'
    info = start(judge=ScriptedChatModel([reply]), privileged=True).step("[answer] the village of Penmoor")[4]
    assert info["privileged"]["judgements"]["answer_judge"] == {"judgment": "Yes", "feedback": "5"}


def test_rule_method_never_calls_the_judge():
    judge = ScriptedChatModel([YES])
    env = start(judge=judge, eval_method="rule")
    assert env.step("[answer] the village of Penmoor")[1] == 0.0
    assert env.step("[answer] Penmoor")[1] == 1.0 and judge.calls == []


def test_the_user_model_judges_under_j_self_and_role_max_tokens_caps_it():
    model = ScriptedChatModel([YES])
    start(user=model, role_max_tokens=64).step("[answer] Penmore")
    assert model.calls[0]["role"] == "answer_judge" and model.calls[0]["max_tokens"] == 64


def test_userrl_prompt_set_fills_the_upstream_templates(tmp_path):
    prompts = tmp_path / "gyms/SearchGym/searchgym/env/prompts.py"
    prompts.parent.mkdir(parents=True)
    prompts.write_text(
        'ANSWER_SYS = "Grade it. Q: <question>"\n'
        'ANSWER_USER = "Model said <model_answer>; truth is <correct_answer>."\n'
        "def unused():\n    raise SystemExit('prompts.py must never be run')\n"
    )
    judge = ScriptedChatModel([YES])
    start(judge=judge, prompt_set="userrl", data_dir=str(tmp_path)).step("[answer] Penmore")
    assert judge.calls[0]["messages"] == [
        {"role": "system", "content": f"Grade it. Q: {QUESTION}"},
        {"role": "user", "content": "Model said Penmore; truth is Penmoor."},
    ]


# ---------------------------------------------------------------- rewards, info, attributes


def test_step_penalty_and_reward_constants():
    env = start(step_penalty=0.1, correct_answer_reward=2.0, incorrect_answer_reward=-0.5)
    _, reward, _, _, info = env.step("[search] bridge")
    assert reward == pytest.approx(-0.1) and info["reward_parts"]["step_penalty"] == pytest.approx(-0.1)
    _, reward, _, _, info = env.step("[answer] Carrowmere")
    assert reward == pytest.approx(-0.7)
    assert info["reward_parts"] == {"answer": -0.5, "step_penalty": pytest.approx(-0.2), "clip": 0.0}
    _, reward, terminated, _, info = env.step("[answer] Penmoor")
    assert reward == pytest.approx(1.7) and terminated
    assert info["episode_score"] == pytest.approx(-0.1 - 0.7 + 1.7)


def test_privileged_information():
    _, info = gym.make(ENV_ID, split="demo").reset(seed=0, options={"task_id": DEMO})
    assert info["privileged"] == {}
    env = start(privileged=True)
    env.step("[search] Harrowgate Bridge")
    info = env.step("[answer] Penmoor")[4]
    hidden = info["privileged"]["hidden"]
    assert hidden["answer"] == "Penmoor" and hidden["aliases"] == ["Penmoor village"]
    assert hidden["support"] == ["p-demo-1", "p-demo-2"] and hidden["search_steps"] == 1
    assert hidden["hops"][0] == {
        "question": "Who designed the Harrowgate Bridge?",
        "answer": "Odile Marsh",
        "passage": "p-demo-1",
    }
    assert info["privileged"]["judgements"] == {
        "answer_judge": {"judgment": None, "feedback": None},
        "exact_match": True,
    }


def test_policy_facing_attributes():
    env = start(render_mode="ansi").unwrapped
    assert "`search`" in env.system_prompt and "`answer`" in env.system_prompt
    (tool,) = env.tools
    assert tool["function"]["parameters"]["properties"]["choice"]["enum"] == ["search", "answer", "finish"]
    env.step({"choice": "search", "content": "Harrowgate Bridge"})
    assert env.transcript[1] == {"role": "assistant", "content": "[search] Harrowgate Bridge"}
    assert env.render().endswith("[turn 1, score 0.0]")


def test_a_random_draw_from_the_test_split_is_seeded():
    env = gym.make(ENV_ID)
    first = env.reset(seed=11)[1]["task_id"]
    assert env.reset(seed=11)[1]["task_id"] == first and first.startswith("search-")
    assert env.unwrapped.task.split == "test"


# ---------------------------------------------------------------- oracle and the contract


def test_oracle_agent_answers_every_test_question_within_hops_plus_one_turns():
    env = gym.make(ENV_ID)
    found = total = 0
    for task in env.unwrapped.task_pack.pool("test"):
        env.reset(seed=0, options={"task_id": task.id})
        rewards = []
        for hop in task.hops:
            action = env.unwrapped.oracle_action()
            assert action == f"[search] {hop.question}"
            obs, reward, *_ = env.step(action)
            found += hop.answer.lower() in obs.lower()
            total += 1
            rewards.append(reward)
        assert env.unwrapped.oracle_action() == f"[answer] {task.answer}"
        _, reward, terminated, _, info = env.step(env.unwrapped.oracle_action())
        assert (reward, terminated, info["episode_score"], info["turn"]) == (1.0, True, 1.0, len(task.hops) + 1)
    assert found / total >= 0.9, f"oracle searches surfaced only {found}/{total} hop answers"


def test_oracle_stops_searching_at_the_limit():
    env = start(max_search_steps=1)
    assert env.unwrapped.oracle_action() == "[search] Who designed the Harrowgate Bridge?"
    env.step(env.unwrapped.oracle_action())
    assert env.unwrapped.oracle_action() == "[answer] Penmoor"


def test_pickle_round_trip_mid_episode():
    env = gym.make(ENV_ID, split="demo")
    env.reset(seed=0)
    env.step("[action] hello there")
    copy = pickle.loads(pickle.dumps(env))
    assert copy.unwrapped.transcript == env.unwrapped.transcript
    action = env.unwrapped.oracle_action()
    assert copy.step(action) == env.step(action)


def test_native_async_api():
    async def episode():
        env = gym.make(ENV_ID, split="demo", judge=ScriptedChatModel([YES])).unwrapped
        await env.areset(seed=0, options={"task_id": DEMO})
        await env.astep("[search] Harrowgate Bridge")
        return await env.astep("[answer] Penmore")

    assert asyncio.run(episode())[1] == 1.0


def test_a_judge_reply_object_with_a_thought_is_recorded():
    reply = ChatReply(text=YES, thought="private musing")
    env = start(judge=ScriptedChatModel([reply]), privileged=True)
    info = env.step("[answer] Penmore")[4]
    assert info["privileged"]["thoughts"]["answer_judge"] == {"reasoning": "private musing", "thought": "Same place."}
    assert [record.role for record in env.unwrapped.thought_records] == ["answer_judge"]
