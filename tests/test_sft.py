"""algorithm="sft": the trained-side loss mask, packing, a short run, and loud misconfiguration."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import torch

from mimesis_gym.algorithms.batching import collate
from mimesis_gym.algorithms.config import TrainerConfig
from mimesis_gym.algorithms.learners.sft.data import SFTExample, encode_conversation, load_examples
from mimesis_gym.algorithms.logprobs import PolicyScorer
from mimesis_gym.algorithms.render import ChatRenderer, TemplateNotIncrementalError, probe_tool_call
from mimesis_gym.algorithms.testing import ENV_ID, tiny_random_model, tiny_tokenizer
from mimesis_gym.algorithms.trainer import Trainer
from tests.support.torch_fixtures import one_thread  # noqa: F401

CONVERSATION = {
    "messages": [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": "Reply with exactly one word: apple"},
        {"role": "assistant", "content": "<think>The word is apple.</think>apple"},
        {"role": "user", "content": "<think>Good, but test again.</think>Now say pear"},
        {"role": "assistant", "content": "pear"},
    ]
}


def renderer() -> ChatRenderer:
    return ChatRenderer(tiny_tokenizer())


def trained_texts(example: SFTExample, side: str) -> list[str]:
    tokenizer = tiny_tokenizer()
    encoded = encode_conversation(example, renderer(), side)  # type: ignore[arg-type]
    assert encoded.loss_mask == [
        1 if any(s <= k < e for s, e in encoded.spans) else 0 for k in range(len(encoded.input_ids))
    ]
    return [tokenizer.decode(encoded.input_ids[s:e]) for s, e in encoded.spans]


def test_agent_mask_is_exactly_the_assistant_bodies_with_think_blocks() -> None:
    example = SFTExample.model_validate(CONVERSATION)
    assert trained_texts(example, "agent") == ["<think>The word is apple.</think>apple<|im_end|>", "pear<|im_end|>"]
    encoded = encode_conversation(example, renderer(), "agent")
    whole = tiny_tokenizer().apply_chat_template([m.chat() for m in example.messages], tokenize=False)
    assert tiny_tokenizer().decode(encoded.input_ids) == whole  # nothing lost or added between the pieces


def test_user_mask_is_exactly_the_user_bodies_and_train_false_is_left_out() -> None:
    example = SFTExample.model_validate(CONVERSATION)
    assert trained_texts(example, "user") == [
        "Reply with exactly one word: apple<|im_end|>",
        "<think>Good, but test again.</think>Now say pear<|im_end|>",
    ]
    data = copy.deepcopy(CONVERSATION)
    data["messages"][1]["train"] = False
    assert trained_texts(SFTExample.model_validate(data), "user") == [
        "<think>Good, but test again.</think>Now say pear<|im_end|>"
    ]


def test_template_that_drops_past_think_blocks_is_refused() -> None:
    tokenizer = copy.copy(tiny_tokenizer())
    tokenizer.chat_template = (
        "{% for m in messages %}<|im_start|>{{ m.role }}\n"
        "{% if m.role == 'assistant' and not loop.last %}{{ m.content.split('</think>')[-1] }}"
        "{% else %}{{ m.content }}{% endif %}<|im_end|>\n{% endfor %}"
        "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
    )
    with pytest.raises(TemplateNotIncrementalError, match="re-renders earlier messages"):
        encode_conversation(SFTExample.model_validate(CONVERSATION), ChatRenderer(tokenizer), "agent")


def test_tool_calls_the_template_does_not_render_are_refused() -> None:
    data = copy.deepcopy(CONVERSATION)
    data["messages"][2] = {"role": "assistant", "content": None, "tool_calls": [probe_tool_call()]}
    with pytest.raises(ValueError, match="does not render tool calls"):
        encode_conversation(SFTExample.model_validate(data), renderer(), "agent")


def test_invalid_line_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "data.jsonl"
    path.write_text(json.dumps(CONVERSATION) + "\n" + json.dumps({"messages": [{"role": "robot"}]}) + "\n")
    with pytest.raises(ValueError, match=r"data.jsonl:2: not an SFT conversation"):
        load_examples([path])


def test_packing_keeps_conversations_separate() -> None:
    """Packed rows score exactly as each row alone; no trained token sits at a row's first position."""
    model, tokenizer = tiny_random_model(seed=3)
    scorer = PolicyScorer(model)
    first = encode_conversation(SFTExample.model_validate(CONVERSATION), renderer(), "agent")
    second_data = copy.deepcopy(CONVERSATION)
    second_data["messages"][2]["content"] = "apple"
    second = encode_conversation(SFTExample.model_validate(second_data), renderer(), "agent")
    rows, masks = [first.input_ids, second.input_ids], [first.loss_mask, second.loss_mask]
    with torch.no_grad():
        packed = collate(rows, packing=True, pad_id=tokenizer.pad_token_id)
        assert packed.input_ids.shape[0] == 1
        score_mask = packed.place(masks, dtype=torch.bool)
        assert not score_mask[0, len(rows[0])]  # the second conversation's first id is not a target
        together = packed.take(scorer(packed.input_ids, score_mask, packed.position_ids, None)[0])
        for row, mask, values in zip(rows, masks, together, strict=True):
            alone = collate([row], packing=False, pad_id=tokenizer.pad_token_id)
            single = alone.take(scorer(alone.input_ids, alone.place([mask], dtype=torch.bool))[0])[0]
            assert values == pytest.approx(single, abs=1e-5)
            assert sum(1 for v in values if v != 0) == sum(mask)


def write_data(path: Path, words: list[str], side: str | None = None) -> Path:
    with path.open("w", encoding="utf-8") as handle:
        for word in words:
            line = copy.deepcopy(CONVERSATION)
            line["messages"] = line["messages"][:3]
            line["messages"][1]["content"] = f"Reply with exactly one word: {word}"
            line["messages"][2]["content"] = f"<think>say it</think>{word}"
            if side:
                line["side"] = side
            handle.write(json.dumps(line) + "\n")
    return path


def sft_config(tmp_path: Path, data: Path, *extra: str) -> TrainerConfig:
    return TrainerConfig.preset("cpu-tiny").with_overrides(
        [
            f"run.output_dir={tmp_path / 'run'}",
            "run.progress=false",
            f"sft.data={data}",
            "optim.lr=1e-3",
            "rollout.prompts_per_batch=2",
            "update.mini_batch_prompts=2",
            *extra,
        ]
    )


def test_two_sft_steps_lower_the_loss_and_a_checkpoint_keeps_the_data_position(tmp_path: Path) -> None:
    data = write_data(tmp_path / "data.jsonl", ["apple", "bread"])
    config = sft_config(tmp_path, data, "sft.shuffle=false", "run.total_steps=2")
    trainer = Trainer([ENV_ID], tiny_random_model(seed=0), algorithm="sft", config=config)
    first, second = trainer.step(), trainer.step()
    # the same two conversations each step: the first update lowered their loss
    assert second["sft/loss"] < first["sft/loss"] - 0.05
    assert first["sft/tokens"] == second["sft/tokens"] > 0
    assert first["loss/pg"] == 0.0 and trainer.counters["old_logprob_passes"] == 0
    trainer.save_checkpoint()
    state = json.loads((trainer.last_checkpoint / "trainer_state.json").read_text())  # type: ignore[operator]
    assert (state["epoch"], state["cursor"]) == (2, 0)
    resumed = Trainer([ENV_ID], tiny_random_model(seed=0), algorithm="sft", config=config)
    assert (resumed.state.step, resumed.state.epoch) == (2, 2)
    third = resumed.step()
    assert third["sft/loss"] < second["sft/loss"]


@pytest.mark.parametrize(
    ("extra", "side", "message"),
    [
        (["sft.data=[]"], None, "needs sft.data"),
        (["rollout.temperature=0.7"], None, "rollout.temperature=1"),
        (["sft.side=agent"], "user", "collected for side 'user'"),
    ],
)
def test_misconfiguration_is_refused(tmp_path: Path, extra: list[str], side: str | None, message: str) -> None:
    data = write_data(tmp_path / "data.jsonl", ["apple"], side)
    with pytest.raises(ValueError, match=message):
        Trainer([ENV_ID], tiny_random_model(seed=0), algorithm="sft", config=sft_config(tmp_path, data, *extra))


def test_train_command_runs_sft_and_refuses_missing_data_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from mimesis_gym.algorithms.cli import train_main

    data = write_data(tmp_path / "data.jsonl", ["apple", "bread"])
    job = tmp_path / "job.json"
    job.write_text(
        json.dumps(
            {
                "envs": [ENV_ID],
                "policy": "factory:mimesis_gym.algorithms.testing:tiny_random_model",
                "algorithm": "sft",
                "preset": "cpu-tiny",
                "run": {"total_steps": 1, "output_dir": str(tmp_path / "run"), "progress": False},
                "sft": {"data": str(data)},
            }
        )
    )
    assert train_main(["--config", str(job), "--set", "run.save_every=0"]) == 0
    metrics = json.loads((tmp_path / "run" / "metrics.jsonl").read_text().splitlines()[-1])
    assert metrics["sft/conversations"] == 4 and metrics["sft/dataset"] == 2 and metrics["sft/loss"] > 0
    capsys.readouterr()
    assert train_main(["--config", str(job), "--set", f"sft.data={tmp_path / 'missing.jsonl'}"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "missing.jsonl is not a file" in err
