"""SearchGym's answer judge behind a real HTTP chat model, against the fault-injecting loopback server
(docs/envs/search.md, "The answer check and the judge"): failures fall back to "incorrect" and are reported,
never raised."""

import random

import gymnasium as gym
import pytest

from mimesis_gym.core.conventions import RetryPolicy
from mimesis_gym.core.http import EndpointConfig, OpenAIChatModel
from tests.support.fault_server import FaultServer

ENV_ID = "mimesis/SearchGym-v0"

INCORRECT = "Incorrect. 'Carrowmere' is not the right answer to the question."


@pytest.fixture
def server():
    fault = FaultServer()
    yield fault
    fault.close()


async def no_sleep(seconds):
    pass


def model(server, **config):
    config.setdefault("timeout_s", 5)
    endpoint = EndpointConfig(base_url=server.base_url, model="fault-model", **config)
    policy = RetryPolicy(
        max_retries=endpoint.max_retries, content_retries=endpoint.content_retries, rng=random.Random(0), sleep=no_sleep
    )
    return OpenAIChatModel(endpoint, retry_policy=policy)


def start(judge, **kwargs):
    env = gym.make(ENV_ID, judge=judge, split="demo", **kwargs)
    env.reset(seed=0, options={"task_id": "search-demo-01"})
    return env


def test_a_refusing_judge_server_marks_every_mismatch_incorrect(server):
    server.script(*["refusal_text"] * 20)
    env = start(model(server), role_max_tokens=64)
    for _ in range(3):
        obs, reward, terminated, truncated, info = env.step("[answer] Carrowmere")
        assert (obs, reward, terminated, truncated) == (INCORRECT, 0.0, False, False)
        assert info["user_failure"] == "answer_judge:refusal"
    assert len(server.requests) == 6  # each answer: the call and its one refusal retry
    assert all(r["body"]["max_tokens"] == 64 for r in server.requests)  # role_max_tokens caps 512
    _, reward, terminated, _, info = env.step("[answer] Penmoor")  # exact: no request at all
    assert (reward, terminated, info["user_failure"]) == (1.0, True, None) and len(server.requests) == 6
    env.close()


def test_a_refusing_user_server_judges_under_j_self(server):
    server.script(*["refusal_text"] * 4)
    env = gym.make(ENV_ID, user=model(server), split="demo")
    env.reset(seed=0, options={"task_id": "search-demo-01"})
    obs, reward, _, _, info = env.step("[answer] Carrowmere")
    assert (obs, reward, info["user_failure"]) == (INCORRECT, 0.0, "answer_judge:refusal")
    env.close()


@pytest.mark.parametrize(
    ("modes", "failure"),
    [
        (["bad_json"] * 3, "answer_judge:bad_json"),
        (["status:500"] * 2, "answer_judge:http"),
        (["empty"] * 3, "answer_judge:empty"),
    ],
)
def test_other_judge_faults_are_reported(server, modes, failure):
    server.script(*modes)
    env = start(model(server, max_retries=1, fail_fast=False))  # 5xx only, never answered: unavailable otherwise
    obs, reward, terminated, _, info = env.step("[answer] Carrowmere")
    assert (obs, reward, terminated, info["user_failure"]) == (INCORRECT, 0.0, False, failure)
    env.close()


def test_a_fenced_json_yes_over_http_is_correct(server):
    server.script('ok:```json\n{"reasoning": "Same village.", "judgment": "Yes", "feedback": "Good."}\n```')
    env = start(model(server), privileged=True)
    obs, reward, terminated, _, info = env.step("[answer] Penmoor, a coastal village")
    assert obs.startswith("Correct!") and (reward, terminated, info["user_failure"]) == (1.0, True, None)
    body = server.requests[0]["body"]
    assert body["max_tokens"] == 512 and body["temperature"] == 0.0
    assert body["seed"] == env.unwrapped._session.llm_seed_base
    assert info["privileged"]["thoughts"]["answer_judge"]["thought"] == "Same village."
    env.close()
