"""The CSD coach (docs/algorithms.md): requests, pinned prompts, note handling, turn selection."""

import asyncio

import pytest

from mimesis_gym.algorithms.config import CSDConfig
from mimesis_gym.algorithms.learners.csd.coach import (
    COACH_SYSTEM_PROMPTS,
    NOT_AVAILABLE,
    ChatCoach,
    CoachRequest,
    ScriptedCoach,
    build_request,
    coach_episodes,
    note_message,
    render_request,
    select_turns,
)
from mimesis_gym.algorithms.records import Episode, Segment, Turn
from mimesis_gym.core.chat import ChatFailure, ChatReply
from tests.support.chat_models import ScriptedChatModel


def episode(*, thoughts=("z1", "z2", "z3"), opening_thought="z0", tool_call=False):
    turns = []
    messages = [{"role": "user", "content": "I need a hotel."}]
    for t, thought in enumerate(thoughts, start=1):
        turns.append(
            Turn(index=t, action_span=(10 * t, 10 * t + 3), gen_prompt_len=4,
                 action_text=f"<think>plan {t}</think>ask {t}",
                 parsed_action={"choice": "action", "content": f"ask {t}"} if tool_call else f"ask {t}",
                 tool_call=tool_call, user_thought=thought, user_utterance=f"u{t}", observation=f"u{t}\nReward: 0.0")
        )  # fmt: skip
        messages += [
            {"role": "assistant", "content": f"[action] ask {t}"},
            {"role": "user", "content": f"u{t}\nReward: 0.0"},
        ]
    return Episode(
        rollout_id="1:0:0", group_id="g", env_id="mimesis/TravelGym-v0", task_id="t", seed=0,
        segments=[Segment(rollout_id="1:0:0", input_ids=[0] * 40, prompt_len=10, loss_mask=[0] * 40,
                          turn_of_position=[0] * 40)],
        turns=turns, messages=messages, opening_thought=opening_thought,
        privileged=[{"hidden": {"budget": "$950", "city": "Lisbon"}}],
    )  # fmt: skip


def test_pairing_answered_and_reaction():
    answered = build_request(episode(), 2, pairing="answered")
    reaction = build_request(episode(), 2, pairing="reaction")
    assert (answered.thought, reaction.thought) == ("z1", "z2")
    assert answered.next_utterance == reaction.next_utterance == "u2"
    assert build_request(episode(), 1, pairing="answered").thought == "z0"
    assert build_request(episode(opening_thought=None), 1, pairing="answered").thought == NOT_AVAILABLE


def test_the_default_request_is_the_papers_coach():
    """H_t, y_t, the user's private reaction z_t to y_t, and the next utterance (corrective + reaction)."""
    request = build_request(episode(tool_call=True), 2)
    assert request.style == "corrective" and request.thought == "z2" and request.next_utterance == "u2"
    assert request.action.startswith("ask 2\n[tool_call] interact_with_env(")
    assert request.history.endswith("[user] u1\nReward: 0.0")
    user = render_request(request)[1]["content"]
    assert "The user's private thought (private material): z2" in user
    assert "The assistant's message at this turn:\nask 2\n[tool_call]" in user
    release = build_request(episode(), 2, style="prospective", pairing="answered")
    assert (release.thought, release.action) == ("z1", None)


def test_history_is_public_and_before_the_turn():
    request = build_request(episode(), 3, style="prospective")
    assert request.history == "[user] I need a hotel.\n[assistant] [action] ask 1\n[user] u1\nReward: 0.0\n" + (
        "[assistant] [action] ask 2\n[user] u2\nReward: 0.0"
    )
    assert "plan" not in request.history and request.action is None


def test_corrective_style_sees_the_public_action_and_its_tool_call():
    request = build_request(episode(tool_call=True), 2, style="corrective")
    assert request.action == 'ask 2\n[tool_call] interact_with_env({"choice": "action", "content": "ask 2"})'


def test_ablation_blanks_the_thought_and_withholds_the_next_utterance():
    request = build_request(episode(), 2, ablate_privileged=True)
    assert (request.thought, request.next_utterance) == ("", NOT_AVAILABLE)


def test_golden_prompt_text():
    request = CoachRequest(
        env_id="E", turn=2, history="[user] hi", thought="T", next_utterance="U", style="prospective"
    )
    system, user = render_request(request)
    assert system == {"role": "system", "content": COACH_SYSTEM_PROMPTS["prospective"]}
    assert COACH_SYSTEM_PROMPTS["prospective"] == (
        "You coach an assistant that is talking with a user. You can see the conversation so far and some "
        "private material about the user that the assistant cannot see. Write a short briefing that the "
        "assistant will read just before it writes its next message.\n\n"
        "State concretely what the user needs from that next message, in present, forward-looking terms "
        '("The user needs ...", "Ask about ..."). Be specific enough that a good reply becomes more likely '
        "and a poor one less likely.\n\n"
        "Rules:\n- Write at most 3 sentences.\n- Do not mention tool syntax, output format or protocol.\n"
        "- Never state a fact that appears only in the private material (dates, places, budgets, names, "
        "numbers, unstated preferences). Say what to ask or clarify, never the answer itself.\n"
        "- If there is nothing useful to say, reply with the single word NONE."
    )
    assert user["content"] == (
        "Environment: E\n\nTurn: 2\n\nConversation so far:\n[user] hi\n\n"
        "The user's private thought (private material): T\n\n"
        "The user's next reply (private material): U\n\nWrite the note now."
    )
    assert note_message("N") == (
        "=== HINDSIGHT CONTEXT ===\n[Guidance about what the user needs; use it to shape your reply.]\nN"
    )


def test_turn_selection_prefers_turns_with_thoughts_and_skips_envs():
    item = episode(thoughts=(None, "z2", None), opening_thought=None)
    assert select_turns(item, CSDConfig(max_coached_turns=1, pairing="answered")) == [3]  # turn 3 sees z2
    assert select_turns(item, CSDConfig(max_coached_turns=1)) == [2]  # reaction (default): turn 2 sees z2
    assert select_turns(item, CSDConfig(max_coached_turns=2, pairing="answered")) == [1, 3]
    for skip in (["travel"], ["TRAVEL"], ["mimesis/TravelGym-v0"], ["mimesis_gym:mimesis/TravelGym-v0"], ["TravelGym"]):
        assert select_turns(episode(), CSDConfig(skip_envs=skip)) == [], skip
    assert select_turns(episode(), CSDConfig(skip_envs=["tau", "function"])) == [1, 2, 3]


def test_skip_envs_refuses_a_name_of_no_env():
    """Ids, short names or UserRL's names only (a part of an id fails loudly, instead of quietly
    coaching the env it was meant to skip)."""
    for name in ("TravelGym-v0", "Gym", "no-such-env"):
        with pytest.raises(ValueError, match=f"unknown env '{name}'; known: .*travel \\(mimesis/TravelGym-v0\\)"):
            CSDConfig(skip_envs=[name])


@pytest.mark.parametrize("answer", ["NONE", "none.", "", "   "])
def test_none_and_empty_answers_give_no_note(answer):
    item = episode()
    stats = coach_episodes([item], ScriptedCoach(lambda request: answer), CSDConfig(max_coached_turns=1))
    assert item.notes == {} and stats.none == 1


def test_long_notes_are_cut_and_leaks_are_dropped():
    item = episode()
    stats = coach_episodes([item], ScriptedCoach(lambda request: "x" * 700), CSDConfig(max_coached_turns=1))
    assert len(item.notes[1]) == 600 and stats.notes == 1
    leaky = episode()
    stats = coach_episodes([leaky], ScriptedCoach(lambda request: "Offer hotels under $950."), CSDConfig())
    assert leaky.notes == {} and stats.dropped_leak == 3
    safe = episode()
    coach_episodes([safe], ScriptedCoach(lambda request: "Ask about the budget."), CSDConfig())
    assert safe.notes == {1: "Ask about the budget.", 2: "Ask about the budget.", 3: "Ask about the budget."}


def test_chat_coach_calls_the_model_with_its_budget_and_counts_failures():
    model = ScriptedChatModel(["Ask which dates work.", ChatReply(failure=ChatFailure("timeout", "slow", attempts=3))])
    item = episode(thoughts=("z1", "z2"))
    config = CSDConfig(coach={"kind": "chat", "concurrency": 1})
    stats = coach_episodes([item], ChatCoach(model), config, seed=5)
    assert item.notes == {1: "Ask which dates work."} and stats.failed == 1
    assert model.calls[0]["max_tokens"] == 300 and model.calls[0]["seed"] == 5
    assert model.calls[0]["messages"][0]["content"] == COACH_SYSTEM_PROMPTS["corrective"]
    assert "The assistant's message at this turn:\nask 1" in model.calls[0]["messages"][1]["content"]


def test_async_scripted_coaches_work_too():
    async def coach(request):
        await asyncio.sleep(0)
        return f"Ask more at turn {request.turn}."

    item = episode(thoughts=("z1",))
    coach_episodes([item], ScriptedCoach(coach), CSDConfig())
    assert item.notes == {1: "Ask more at turn 1."}
