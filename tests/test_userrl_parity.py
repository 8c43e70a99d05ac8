"""prompt_set="userrl" on the upstream tasks: every prompt byte-identical to what UserRL's gyms would send
(IntentionGym, PersuadeGym, TurtleGym, TelepathyGym, SearchGym).

The expected strings are built here by transcribing UserRL's prompt builders (``build_response_prompt``,
``build_evaluation_prompt``, ``build_prompt`` in each gym's ``env/prompts.py``, read, never imported)
over the raw records of its JSON files, with the template constants read from ``../shared/data`` by
``ast``. The env under test builds its prompts from its own task objects; a drift in either the
template filling, the history text or the serialisation fails here. Skipped without ``../shared/data``.
"""

from __future__ import annotations

import ast
import json
from copy import deepcopy

import gymnasium as gym
import pytest

from tests.support.chat_models import ScriptedChatModel

INTENTION = "gyms/IntentionGym/intentiongym"
PERSUADE = "gyms/PersuadeGym/persuadegym"
TURTLE = "gyms/TurtleGym/turtlegym"


def constants(path) -> dict[str, str]:
    """Every module-level string constant of a prompts.py (``ast`` only)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {
        node.targets[0].id: node.value.value
        for node in tree.body
        if isinstance(node, ast.Assign)
        and isinstance(node.targets[0], ast.Name)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    }


def strip_tag(action: str) -> str:
    """UserRL's ``question[8:].strip()`` for an ``[action]``/``[answer]`` prefix."""
    return action[8:].strip() if action.startswith(("[action]", "[answer]")) else action


def make(env_id, userrl_dir, model, **kwargs):
    return gym.make(
        env_id,
        pack="upstream",
        split="test",
        data_dir=str(userrl_dir),
        user=model,
        judge=model,
        prompt_set="userrl",
        **kwargs,
    )


# ---------------------------------------------------------------- IntentionGym


def intention_expected(templates, record, question, history, remaining):
    """UserRL's ``build_response_generation_prompt`` and ``build_evaluation_prompt``."""
    question = strip_tag(question)
    responder_context = judge_context = ""
    if history:
        responder_context = "\n\nPrevious conversation:\n"
        judge_context = "\n\nPrevious conversation:\n"
        for i, (prev_q, prev_r) in enumerate(history[-3:], 1):
            responder_context += f"Helper: {prev_q}\nYou: {prev_r}\n"
            judge_context += f"Q{i}: {prev_q}\nA{i}: {prev_r}\n"
    details = ""
    for i, detail in enumerate(remaining):
        label = {1: "LOW", 2: "MEDIUM", 3: "HIGH"}[int(detail.get("importance", 1))]
        details += f"{i}. [{label}] {detail['description']}\n"
        if "inquiry" in detail:
            details += f"   Example question type expected: {detail['inquiry']}\n"
        details += "\n"
    responder = templates["RESPONSE_GENERATION_PROMPT"].format(
        task=record,
        category=record.get("category", "General"),
        question=question,
        conversation_history=responder_context or "This is the first question in our conversation.",
    )
    judge = templates["EVALUATION_PROMPT"].format(
        task=record,
        category=record.get("category", "General"),
        details_list=details if details.strip() else "None - all details have been covered!",
        question=question,
        conversation_history=judge_context or "None",
    )
    return responder, judge


INTENTION_SYSTEMS = (
    "You are helping someone respond naturally to questions about their request for help.",
    "You are evaluating question quality for task clarification. Focus only on evaluation, not response generation.",
)


def test_intention_prompts_match_userrl(userrl_dir):
    templates = constants(userrl_dir / INTENTION / "env/prompts.py")
    records = json.loads((userrl_dir / INTENTION / "data/all_intentions_test.json").read_text(encoding="utf-8"))
    actions = [
        "[action] What is your budget?",
        {"choice": "action", "content": "[action] When do you need it?"},
        "[answer] Any constraints on location?",
        {"choice": "action", "content": "Anything else?"},
        "[action] And the colour?",
    ]
    for record in records[:3]:
        replies = []
        for turn in range(len(actions)):
            replies += [json.dumps({"thought": "t", "response": f"Reply {turn}."}), '{"covered_detail_indices": [0]}']
        model = ScriptedChatModel(replies)
        env = make("mimesis/IntentionGym-v0", userrl_dir, model)
        env.reset(seed=0, options={"task_id": record["id"]})
        history, remaining = [], list(record["missing_details"])
        for turn, action in enumerate(actions):
            if not remaining:
                break
            written = action if isinstance(action, str) else action["content"]
            if not written.startswith("["):
                written = f"[{action['choice']}] {written}"
            responder, judge = intention_expected(templates, record, written, history, remaining)
            env.step(action)
            sent = model.calls[-2:]
            assert [call["messages"][0]["content"] for call in sent] == list(INTENTION_SYSTEMS)
            assert sent[0]["messages"][1]["content"] == responder
            assert sent[1]["messages"][1]["content"] == judge
            history.append((written, f"Reply {turn}."))
            remaining = remaining[1:]


# ---------------------------------------------------------------- PersuadeGym


def persuade_expected(templates, claim, argument, stance, history, action):
    """UserRL's ``build_response_prompt``."""
    history_text = ""
    if history:
        for i, (persuader_arg, env_response) in enumerate(history, 1):
            history_text += f"Turn {i}:\nPersuader: {persuader_arg}\nYou: {env_response}\n\n"
    else:
        history_text = "This is the first argument."
    return templates["PERSUADEE_RESPONSE_USER"].format(
        statement=claim,
        initial_argument=argument,
        current_stance=stance,
        conversation_history=history_text,
        latest_argument=strip_tag(action),
    )


def test_persuade_prompts_match_userrl(userrl_dir):
    from mimesis_gym.envs.persuade.tasks import load_upstream_pack

    templates = constants(userrl_dir / PERSUADE / "env/prompts.py")
    stances = ["Agree", "Agree", "Neutral", "Disagree"]
    actions = ["[answer] Costs are rising.", "[action] Look at the data.", "[answer] Experts disagree.", "[answer] So?"]
    for task in load_upstream_pack(str(userrl_dir)).pool("test")[:3]:
        replies = [json.dumps({"thought": "t", "response": f"Reply {i}.", "stance": s}) for i, s in enumerate(stances)]
        model = ScriptedChatModel(replies)
        env = make("mimesis/PersuadeGym-v0", userrl_dir, model)
        env.reset(seed=0, options={"task_id": task.id})
        history, stance = [], "Strongly Agree"
        for turn, action in enumerate(actions):
            env.step(action)
            assert model.calls[-1]["messages"][0]["content"] == templates["PERSUADEE_RESPONSE_SYS"]
            expected = persuade_expected(templates, task.claim, task.argument, stance, history, action)
            assert model.calls[-1]["messages"][1]["content"] == expected
            history.append((strip_tag(action), f"Reply {turn}."))
            stance = stances[turn]


# ---------------------------------------------------------------- TurtleGym


def turtle_expected(templates, story, action, is_answer):
    """UserRL's ``build_prompt`` over a story record (surface, bottom, evaluation criteria)."""
    surface, bottom = story["new_surface"], story["new_bottom"]
    if is_answer:
        criteria = deepcopy(story["evaluation"])
        for criterion in criteria:
            criterion.pop("score", None)
        protocol = json.dumps(criteria, indent=4)
        return templates["ANSWER_SYS"], (
            templates["ANSWER_USER"]
            .replace("<protocol>", protocol)
            .replace("<surface>", surface)
            .replace("<bottom>", bottom)
            .replace("<user>", action[8:].strip())
        )
    user = templates["ACTION_USER"].replace("<surface>", surface).replace("<bottom>", bottom)
    return templates["ACTION_SYS"], user.replace("<query>", action[8:].strip())


def test_turtle_prompts_match_userrl_including_non_ascii_criteria(userrl_dir):
    from mimesis_gym.envs.turtle.tasks import load_upstream_pack

    templates = constants(userrl_dir / TURTLE / "env/prompts.py")
    stories = json.loads((userrl_dir / TURTLE / "data/all_stories_refined.json").read_text(encoding="utf-8"))
    by_title = {story["new_title"]: story for story in stories.values() if story.get("judgment") == "Yes"}
    pack = load_upstream_pack(str(userrl_dir))
    titles = [*(task.id for task in pack.pool("test")[:2]), "The α-2017 Virus"]
    assert "\\u03b1" in json.dumps(by_title["The α-2017 Virus"]["evaluation"])  # the escaping case is covered
    for title in titles:
        story = by_title[title]
        scores = json.dumps({"scores": [{"score": 0} for _ in story["evaluation"]], "feedback": "f"})
        model = ScriptedChatModel(['{"response": "No"}', scores])
        env = make("mimesis/TurtleGym-v0", userrl_dir, model)
        env.reset(seed=0, options={"task_id": title})
        for action, is_answer in (("[action] Was it an accident?", False), ("[answer] It was the twin.", True)):
            env.step(action)
            system, user = turtle_expected(templates, story, action, is_answer)
            assert [message["content"] for message in model.calls[-1]["messages"]] == [system, user]


@pytest.mark.parametrize(
    ("env_id", "choice"),
    [("mimesis/IntentionGym-v0", "action"), ("mimesis/PersuadeGym-v0", "answer"), ("mimesis/TurtleGym-v0", "action")],
)
def test_tagged_tool_call_content_reaches_the_user_like_a_plain_one(userrl_dir, env_id, choice):
    """A tool call whose content repeats the tag sends the user the same prompts as one without it."""
    sent = []
    for content in (f"[{choice}] Is the weather relevant?", "Is the weather relevant?"):
        model = ScriptedChatModel(['{"response": "No", "stance": "Agree", "covered_detail_indices": []}'])
        env = make(env_id, userrl_dir, model)
        env.reset(seed=0)
        assert env.step({"choice": choice, "content": content})[4]["valid_action"] is True
        sent.append([call["messages"] for call in model.calls])
    assert sent[0] == sent[1] and sent[0]


# ---------------------------------------------------------------- TelepathyGym and SearchGym


def test_telepathy_prompts_match_userrl(userrl_dir):
    templates = constants(userrl_dir / "gyms/TelepathyGym/telepathygym/env/prompts.py")
    entities = json.loads(
        (userrl_dir / "gyms/TelepathyGym/telepathygym/data/all_entities_refined.json").read_text(encoding="utf-8")
    )
    by_id = {entity["id"]: entity for entity in entities}
    from mimesis_gym.envs.telepathy.tasks import load_upstream_pack

    for task in load_upstream_pack(str(userrl_dir)).pool("test")[:3]:
        target = by_id[task.id]["target_entity"]
        model = ScriptedChatModel(['{"response": "No"}', '{"judgment": "No", "feedback": "Not quite."}'])
        env = make("mimesis/TelepathyGym-v0", userrl_dir, model)
        env.reset(seed=0, options={"task_id": task.id})
        for action, kind in (("[action] Is it alive?", "ACTION"), ("[answer] a teapot", "ANSWER")):
            env.step(action)
            slot = "<user_question>" if kind == "ACTION" else "<user_guess>"
            user = templates[f"{kind}_USER"].replace("<target_entity>", target).replace(slot, action[8:].strip())
            assert [m["content"] for m in model.calls[-1]["messages"]] == [templates[f"{kind}_SYS"], user]


def test_search_judge_prompt_matches_userrl(userrl_dir):
    templates = constants(userrl_dir / "gyms/SearchGym/searchgym/env/prompts.py")
    questions = json.loads((userrl_dir / "gyms/SearchGym/searchgym/data/questions.json").read_text(encoding="utf-8"))
    for record in questions[:3]:
        model = ScriptedChatModel(['{"reasoning": "r", "judgment": "No", "feedback": "f"}'])
        env = make("mimesis/SearchGym-v0", userrl_dir, model)
        env.reset(seed=0, options={"task_id": record["id"]})
        env.step("[answer] Somebody Else Entirely")
        user = (
            templates["ANSWER_USER"]
            .replace("<question>", record["question"])
            .replace("<model_answer>", "Somebody Else Entirely")
            .replace("<correct_answer>", record["answer"])
        )
        assert [m["content"] for m in model.calls[-1]["messages"]] == [templates["ANSWER_SYS"], user]
