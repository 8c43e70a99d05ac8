"""Chat-template deltas (docs/algorithms.md): exact ChatML deltas and the prefix check."""

import copy

import pytest

pytest.importorskip("transformers", reason="the local stack is installed by `make test`")

from mimesis_gym.algorithms.render import (
    ChatRenderer,
    TemplateNotIncrementalError,
    probe_tool_call,
    strip_reward_line,
)
from mimesis_gym.core.tiny import TinyModelUnavailable


@pytest.fixture(scope="module")
def tokenizer():
    from mimesis_gym.algorithms.testing import tiny_tokenizer

    try:
        return tiny_tokenizer()
    except TinyModelUnavailable as error:
        pytest.skip(str(error))


def test_chatml_observation_delta_is_exact(tokenizer):
    renderer = ChatRenderer(tokenizer)
    assert renderer.end_of_turn == "<|im_end|>"
    delta = renderer.observation_delta("hi")
    assert tokenizer.decode(delta.ids) == "\n<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
    assert delta.text == "\n<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
    assert delta.gen_prompt_len == 4
    assert tokenizer.decode(delta.ids[-4:]) == "<|im_start|>assistant\n"


def test_feedback_span_covers_the_text_without_the_reward_line(tokenizer):
    delta = ChatRenderer(tokenizer).observation_delta("Yes, it is an animal.\nReward: 0.5")
    start, end = delta.feedback_span
    assert tokenizer.decode(delta.ids[start:end]) == "Yes, it is an animal."
    assert "Reward" in tokenizer.decode(delta.ids[end:])


def test_note_delta_has_no_leading_newline(tokenizer):
    renderer = ChatRenderer(tokenizer)
    assert tokenizer.decode(renderer.note_delta("N")) == "<|im_start|>user\nN<|im_end|>\n"
    assert tokenizer.decode(renderer.note_delta("N", after_tool=True)) == "<|im_start|>user\nN<|im_end|>\n"


def test_tool_observation_is_a_tool_message(tokenizer):
    delta = ChatRenderer(tokenizer).observation_delta("42", tool_call=probe_tool_call())
    assert tokenizer.decode(delta.ids) == "\n<|im_start|>tool\n42<|im_end|>\n<|im_start|>assistant\n"


def test_first_prompt_and_its_generation_prompt(tokenizer):
    messages = [{"role": "system", "content": "S"}, {"role": "user", "content": "U"}]
    ids, gen_prompt_len = ChatRenderer(tokenizer).prompt_ids(messages)
    assert (
        tokenizer.decode(ids)
        == "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU<|im_end|>\n<|im_start|>assistant\n"
    )
    assert gen_prompt_len == 4


def test_the_tiny_template_ignores_tools(tokenizer):
    assert ChatRenderer(tokenizer).renders_tools([probe_tool_call()["function"]]) is False


def test_a_template_that_rerenders_history_fails_the_prefix_check(tokenizer):
    broken = copy.deepcopy(tokenizer)
    # marks the last message differently from earlier ones: appending a message changes the past
    broken.chat_template = (
        "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}"
        "{% if loop.last %} (latest){% endif %}<|im_end|>\n{% endfor %}"
        "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
    )
    renderer = ChatRenderer(broken)
    with pytest.raises(TemplateNotIncrementalError, match="prefix check"):
        renderer.check_incremental()


def test_strip_reward_line():
    assert strip_reward_line("No.\nReward: 0.0") == "No."
    assert strip_reward_line("Reward: 1 is fine") == "Reward: 1 is fine"
