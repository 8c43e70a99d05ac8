"""The human user at the terminal (docs/users.md, "A human"), driven through its input function."""

import asyncio
import json

from mimesis_gym.core.chat import call_context
from mimesis_gym.users.human import HumanChatModel

MESSAGES = [
    {"role": "system", "content": "You are the oracle. Secret: a cat."},
    {"role": "user", "content": "Is it an animal?"},
]


def human(answers):
    lines, shown = iter(answers), []

    def read(prompt):
        try:
            return next(lines)
        except StopIteration:
            raise EOFError from None

    return HumanChatModel(input_fn=read, print_fn=shown.append), shown


def ask(model, json_keys=None, episode="ep-1", turn=1):
    async def run():
        with call_context(episode, "oracle", turn):
            return await model.chat(MESSAGES, max_tokens=10, temperature=0.0, seed=None, json_keys=json_keys)

    return asyncio.run(run())


def test_plain_answer_with_role_turn_system_and_last_message():
    model, shown = human(["Yes, it is."])
    reply = ask(model)
    assert (reply.text, reply.thought, reply.failure) == ("Yes, it is.", None, None)
    assert shown == [
        "\n=== you are playing: oracle (turn 1) ===",
        MESSAGES[0]["content"],
        "--- they said ---\nIs it an animal?",
    ]


def test_system_message_only_once_per_episode_and_on_show():
    model, shown = human(["a", "/show", "b"])
    ask(model, turn=1)
    ask(model, turn=2)
    assert shown.count(MESSAGES[0]["content"]) == 2  # first time, then on /show


def test_backslash_continues_a_line():
    model, _ = human(["first line\\", "second line"])
    assert ask(model).text == "first line\nsecond line"


def test_json_keys_are_asked_one_by_one():
    model, _ = human(["Yes", "it is an animal"])
    reply = ask(model, json_keys=["answer", "reason"])
    assert json.loads(reply.text) == {"answer": "Yes", "reason": "it is an animal"}
    assert reply.json(["answer", "reason"])["answer"] == "Yes"


def test_quit_and_end_of_input_fail_with_human_quit():
    assert ask(human(["/quit"])[0]).failure.kind == "human_quit"
    assert ask(human([])[0]).failure.info_kind == "other"


def test_the_human_is_recognised_as_such():
    assert HumanChatModel().is_human
