"""prompt_set="userrl": role prompts read from UserRL's prompts.py with ast, never executed."""

import textwrap

import gymnasium as gym
import pytest

from mimesis_gym.envs._userrl import read_prompt_strings
from tests.support.chat_models import ScriptedChatModel

POISON = "raise SystemExit('prompts.py must never be executed')\n"


def write(root, relative, body):
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(POISON + textwrap.dedent(body))
    return path


def test_reader_takes_literals_only_and_names_what_is_missing(tmp_path):
    path = write(
        tmp_path,
        "p.py",
        """
        A = "alpha"
        B = "be" "ta"
        C = f"{A}"
        def make():
            return [{"role": "system", "content": "the system"}, {"role": "user", "content": "x"}]
    """,
    )
    assert read_prompt_strings(path, ["A", "B"], ["make"]) == {"A": "alpha", "B": "beta", "make": "the system"}
    with pytest.raises(ValueError, match="no string literal for C"):
        read_prompt_strings(path, ["C"])
    with pytest.raises(FileNotFoundError):
        read_prompt_strings(tmp_path / "missing.py", ["A"])


def test_turtle_userrl_prompts(tmp_path):
    write(
        tmp_path,
        "gyms/TurtleGym/turtlegym/env/prompts.py",
        """
        ACTION_SYS = "host of <surface>"
        ACTION_USER = "S=<surface> B=<bottom> Q=<query>"
        ANSWER_SYS = "judge"
        ANSWER_USER = "P=<protocol> U=<user>"
    """,
    )
    model = ScriptedChatModel(
        ['{"response": "No"}', '{"scores": [{"score": 0}, {"score": 0}, {"score": 0}, {"score": 0}]}']
    )
    env = gym.make("mimesis/TurtleGym-v0", split="demo", user=model, prompt_set="userrl", data_dir=str(tmp_path))
    env.reset(seed=0, options={"task_id": "turtle-demo-01"})
    env.step("[action] Was it a ghost?")
    env.step("[answer] my story")
    task = env.unwrapped.task
    oracle, rubric = model.calls
    assert oracle["messages"][0]["content"] == f"host of {task.surface}"
    assert oracle["messages"][1]["content"] == f"S={task.surface} B={task.bottom} Q=Was it a ghost?"
    assert rubric["messages"][1]["content"].startswith('P=[\n    {\n        "statement": ')
    assert rubric["messages"][1]["content"].endswith(" U=my story")


def test_telepathy_userrl_prompts(tmp_path):
    write(
        tmp_path,
        "gyms/TelepathyGym/telepathygym/env/prompts.py",
        """
        ACTION_SYS = "think of <target_entity>"
        ACTION_USER = "Q: <user_question>"
        ANSWER_SYS = "judge <target_entity>"
        ANSWER_USER = "G: <user_guess>"
    """,
    )
    model = ScriptedChatModel(['{"response": "Yes"}', '{"judgment": "No", "feedback": "Try again."}'])
    env = gym.make("mimesis/TelepathyGym-v0", split="demo", user=model, prompt_set="userrl", data_dir=str(tmp_path))
    env.reset(seed=0, options={"task_id": "telepathy-demo-01"})
    env.step("[action] Is it tall?")
    env.step("[answer] a zebra")
    answer, judge = model.calls
    assert answer["messages"][0]["content"].startswith("think of Giraffe - ")
    assert [answer["messages"][1]["content"], judge["messages"][1]["content"]] == ["Q: Is it tall?", "G: a zebra"]


def test_persuade_userrl_prompts(tmp_path):
    write(
        tmp_path,
        "gyms/PersuadeGym/persuadegym/env/prompts.py",
        """
        PERSUADEE_RESPONSE_SYS = "persuadee"
        PERSUADEE_RESPONSE_USER = "{statement}|{current_stance}|{conversation_history}|{latest_argument}"
    """,
    )
    model = ScriptedChatModel(['{"response": "Hm.", "stance": "Agree"}'])
    env = gym.make("mimesis/PersuadeGym-v0", split="demo", user=model, prompt_set="userrl", data_dir=str(tmp_path))
    env.reset(seed=0, options={"task_id": "persuade-demo-01"})
    env.step("[answer] first")
    env.step("[answer] second")
    claim = env.unwrapped.task.claim
    assert model.calls[0]["messages"][1]["content"] == f"{claim}|Strongly Agree|This is the first argument.|first"
    assert model.calls[1]["messages"][1]["content"] == (f"{claim}|Agree|Turn 1:\nPersuader: first\nYou: Hm.\n\n|second")


def test_intention_userrl_prompts(tmp_path):
    write(
        tmp_path,
        "gyms/IntentionGym/intentiongym/env/prompts.py",
        """
        RESPONSE_GENERATION_PROMPT = "T={task}|C={category}|Q={question}|H={conversation_history}"
        EVALUATION_PROMPT = "Q={question}|H={conversation_history}|D={details_list}"
        async def generate_response_async(question):
            messages = [{"role": "system", "content": "responder system"}, {"role": "user", "content": question}]
        async def evaluate_question_coverage_async(question):
            messages = [{"role": "system", "content": "judge system"}]
    """,
    )
    model = ScriptedChatModel(["Ten square metres.", '{"covered_detail_indices": [0]}'])
    env = gym.make("mimesis/IntentionGym-v0", split="demo", user=model, prompt_set="userrl", data_dir=str(tmp_path))
    env.reset(seed=0, options={"task_id": "intention-demo-01"})
    _, reward, *_ = env.step("[action] How much space?")
    responder, judge = model.calls
    assert responder["messages"][0]["content"] == "responder system"
    assert responder["messages"][1]["content"].startswith("T={'id': 'intention-demo-01', 'category': ")
    assert responder["messages"][1]["content"].endswith(
        "|Q=How much space?|H=This is the first question in our conversation."
    )
    assert judge["messages"][0]["content"] == "judge system"
    assert judge["messages"][1]["content"].startswith("Q=How much space?|H=None|D=0. [HIGH] Size")
    assert reward == 1.0


def test_missing_prompts_file_is_an_error(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"prompts\.py"):
        gym.make("mimesis/TurtleGym-v0", user=ScriptedChatModel(["x"]), prompt_set="userrl", data_dir=str(tmp_path))
