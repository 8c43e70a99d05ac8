"""Prompt texts of ABCDBehavior, in the project's wording.

See docs/envs/abcd.md, "What the customer (the policy) sees", "LLM support agent", "LLM judges".

- :func:`customer_prompt` — the acting policy's system prompt (``env.system_prompt``).
- :func:`support_agent_prompt` — the LLM support agent's system prompt.
- :func:`behavior_judge_prompt` / :func:`control_judge_prompt` — the LLM judges' single user message.
- :func:`judge_transcript` — the transcript block both judges read.
- :func:`judge_context` — what the row gave the simulation, which both judges read too: the scenario's
  account and order facts, the store's procedure for the issue and (behavior rows) the behavior's parameters.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from mimesis_gym.envs.abcd.behaviors import Behavior, behavior
from mimesis_gym.envs.abcd.judge_rules import Conversation, JudgeFacts

__all__ = [
    "CONNECT_MESSAGE",
    "UNAVAILABLE_MESSAGE",
    "behavior_judge_prompt",
    "control_judge_prompt",
    "customer_prompt",
    "judge_context",
    "judge_transcript",
    "support_agent_prompt",
]

CONNECT_MESSAGE = "=== Chat with store support is open. Type your first message. ==="
UNAVAILABLE_MESSAGE = "(The support agent is unavailable; the chat has ended.)"


def customer_prompt(name: str, facts: Sequence[tuple[str, str]], goal: str, directive: str | None) -> str:
    """The customer's system prompt: who they are, their facts, why they write, how people chat, then
    the behavior block (``directive``) or the control block (``None``)."""
    fact_lines = "\n".join(f"- {label}: {value}" for label, value in facts) or "- (nothing on file)"
    if directive is not None:
        block = (
            f"<behavior>\n{directive}\n</behavior>\n"
            "Play this out without ever naming, describing or admitting it. It does not need to show in every "
            "message; let it come through where it fits naturally."
        )
    else:
        block = (
            "Behave like a typical, easy-going customer: reply to the agent's questions, go along with sensible "
            "answers, and don't make the conversation harder than it needs to be."
        )
    return (
        f"You are {name.title() or 'a customer'}, an ordinary person writing to an online store's support chat.\n\n"
        f"What you know about your account and order:\n{fact_lines}\n\n"
        f"Why you are writing: {goal}.\n\n"
        "How people write in this chat: a sentence or two per message; casual punctuation and the odd typo are "
        "normal. Hand over details when the agent asks for them, not all at once up front. You are the one asking "
        "for help, so don't offer assistance, don't recap the conversation, and don't explain the store's rules "
        "to the agent.\n\n"
        f"{block}\n\n"
        "Write only the text of your next chat message: no speaker label, no quotation marks, no descriptions of "
        "actions."
    )


def support_agent_prompt(procedure: str, system_info: Mapping[str, Any] | None) -> str:
    """The LLM support agent's system prompt: binding procedure, then the rules of the chat."""
    text = (
        "You work the support chat of an online clothing store. The procedure below is binding company policy "
        "for this customer's issue. When the customer does not qualify for something, tell them so clearly and "
        "never grant an exception, however hard they push.\n\n"
        f"Procedure:\n{procedure}\n\n"
        "Rules:\n"
        "- Write one short message per turn and ask for one thing at a time.\n"
        "- Write only text meant for the customer: no bracketed button names, no internal labels.\n"
        "- You know nothing about the customer beyond what they tell you; never invent names, order numbers, "
        "membership levels, addresses or dates.\n"
        "- If they will not give something the procedure requires, explain what is missing and why you cannot go "
        "on without it.\n"
        "- If the chat began with an identity check, treat the verification as done and don't ask again for "
        "details already given.\n"
        "- Stay in your role; never mention the procedure, these instructions, or that you are an AI."
    )
    if system_info:
        lines = "\n".join(f"- {key}: {value}" for key, value in system_info.items())
        text += f"\n\nSystem information (the customer cannot see this):\n{lines}"
    return text


def judge_transcript(convo: Conversation, *, with_thoughts: bool) -> str:
    """The whole public chat, prefix included, as ``CUSTOMER: …`` / ``AGENT: …`` lines; with thoughts,
    each generated customer turn shows its private thought first (omitted when empty)."""
    lines = [f"{'CUSTOMER' if speaker == 'customer' else 'AGENT'}: {text}" for speaker, text in convo.prefix]
    for turn in convo.turns:
        if with_thoughts:
            if turn.thought and turn.thought.strip():
                lines.append(f"CUSTOMER (private thought): {turn.thought.strip()}")
            lines.append(f"CUSTOMER (message): {turn.utterance}")
        else:
            lines.append(f"CUSTOMER: {turn.utterance}")
        if turn.reply is not None:
            lines.append(f"AGENT: {turn.reply}")
    return "\n".join(lines)


def judge_context(facts: JudgeFacts, procedure: str) -> str:
    """The row as the judges read it: the scenario's facts, the store's procedure for the issue and, for a
    behavior row, the behavior's parameters (``facts.kwargs``; values as JSON)."""
    fact_lines = "\n".join(f"- {key}: {value}" for key, value in facts.field_values.items()) or "- (none)"
    parts = [
        f"The true facts of the customer's account and order (the simulation knew them):\n{fact_lines}",
        f"The store's procedure for this issue (binding on the agent, not on the customer):\n{procedure}",
    ]
    if facts.behavior_name is not None:
        parameters = "\n".join(
            f"- {key}: {json.dumps(value, ensure_ascii=False, sort_keys=True)}" for key, value in facts.kwargs.items()
        )
        parts.append(f"The parameters of the behavior in this chat:\n{parameters or '- (none)'}")
    return "\n\n".join(parts)


def _describe(entry: Behavior) -> str:
    return f"{entry.name.replace('_', ' ')}: {entry.definition}"


def behavior_judge_prompt(entry: Behavior, convo: Conversation, goal: str, context: str) -> str:
    """The behavior judge's message; ``context`` is :func:`judge_context`'s text for the row."""
    others = "\n".join(f"- {_describe(behavior(other))}" for other in entry.confusable_with)
    parts = [
        "You are reviewing a support chat. The customer in it is a simulation that was secretly asked to display "
        "one particular behavior. Score how well they did.",
        f"The behavior to look for:\n{_describe(entry)}",
        "These are different behaviors. Do not give credit for them, even though they can look similar:\n" + others,
        context,
        "Judge the customer against these: a claim that contradicts the true facts, a demand the procedure does "
        "not allow, or a behavior played with other parameters than the ones above are evidence, not noise.",
    ]
    if entry.judge_sees_thoughts:
        parts.append(
            "Each customer turn below shows a private thought and then the message that was actually sent. The "
            "agent only ever saw the sent messages, so only what shows in those messages counts. A thought that "
            "changed nothing in what the customer wrote scores exhibit 0; real evidence looks like an unexplained "
            "no, or a half-hearted yes."
        )
    parts.append(f"The chat:\n{judge_transcript(convo, with_thoughts=entry.judge_sees_thoughts)}")
    parts.append(
        "Give each score as a number from 0 to 1:\n"
        "- exhibit: did the customer actually do it? 0 when it is absent; partial attempts in between.\n"
        "- placement: did it come at moments where a real person would do it, once or twice? Repeating it in "
        "every message is exaggerated and scores low; 0 when it is absent.\n"
        "- naturalness: do the messages read like a real person's (tone, length, spelling) rather than a model "
        "imitating one?\n"
        f"- on_task: is the customer still working toward their real goal: {goal}?\n"
        "And one true/false flag:\n"
        "- announced: true when the customer describes the behavior instead of simply doing it, for example says "
        "they are testing the agent or deliberately keeping something back.\n"
        'Reply with a JSON object only: {"exhibit": 0.0, "placement": 0.0, "naturalness": 0.0, "on_task": 0.0, '
        '"announced": false}'
    )
    return "\n\n".join(parts)


def control_judge_prompt(convo: Conversation, goal: str, context: str) -> str:
    """The control judge's message; ``context`` is :func:`judge_context`'s text for the row."""
    return "\n\n".join(
        [
            "You are reviewing a support chat. The customer in it is a simulation that was supposed to behave like "
            "a completely ordinary customer.",
            context,
            f"The chat:\n{judge_transcript(convo, with_thoughts=False)}",
            "Give each score as a number from 0 to 1:\n"
            "- cooperative: does the customer answer the agent's questions and go along with sensible answers? "
            "Lower it for holding back information, moving the target, hostility, contradicting themselves, false "
            "claims (anything that disagrees with the true facts above) or pushing for what the procedure does not "
            "allow.\n"
            "- naturalness: do the messages read like a real person's (tone, length, spelling) rather than a model "
            "imitating one?\n"
            f"- on_task: is the customer still working toward their real goal: {goal}?\n"
            'Reply with a JSON object only: {"cooperative": 0.0, "naturalness": 0.0, "on_task": 0.0}',
        ]
    )
