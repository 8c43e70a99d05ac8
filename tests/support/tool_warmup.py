"""Teach the embedded tiny model the tool-call format before a TRL run (tests of docs/integrations.md, "TRL").

SmolLM2-135M-Instruct has never seen a tool call: under a tool-calling chat template it chats and
TRL's tool loop never runs. A few supervised steps on KeywordEcho's *train* tasks fix that. Each
example is the opening request, an ``interact_with_env`` call, the env's real reply and a short
closing turn; the call echoes the keyword in half of the examples and another train keyword in the
other half, so that the tuned model succeeds on some samples and fails on others (GRPO learns only
from groups whose rewards differ). The whole conversation goes through the model: a warm-up that
reused a frozen key/value cache of the shared system-and-tools prefix taught nothing in as many steps.
"""

from __future__ import annotations

import random
from typing import Any

from mimesis_gym.integrations.trl import EnvironmentFactory


def tool_call_message(arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"type": "function", "function": {"name": "interact_with_env", "arguments": arguments}}],
    }


def warmup_conversations(factory: EnvironmentFactory, count: int, seed: int) -> list[list[dict[str, Any]]]:
    """``count`` KeywordEcho train-task conversations played through the factory's own environments."""
    rng = random.Random(seed)
    environment = factory()
    tasks = environment.episode.env.unwrapped.task_pack.pool("train")
    conversations = []
    for index in range(count):
        task = rng.choice(tasks)
        word = task.keyword if index % 2 == 0 else rng.choice([t.keyword for t in tasks if t.id != task.id])
        opening = environment.reset(task_id=task.id, seed=0)
        reply = environment.interact_with_env(choice="action", content=word)
        conversations.append(
            [
                {"role": "system", "content": environment.episode.system_prompt},
                {"role": "user", "content": opening},
                tool_call_message({"choice": "action", "content": word}),
                {"role": "tool", "name": "interact_with_env", "content": reply},
                {"role": "assistant", "content": "Done."},
            ]
        )
    return conversations


def teach_tool_calls(
    model: Any, tokenizer: Any, factory: EnvironmentFactory, *, steps: int = 6, batch: int = 2, lr: float = 1e-4
) -> None:
    """``steps`` AdamW steps of ``batch`` conversations each; the loss covers everything after the request."""
    import torch

    tool = factory().interact_with_env
    conversations = warmup_conversations(factory, steps * batch, seed=0)
    encoded = []
    for conversation in conversations:
        prompt = tokenizer.apply_chat_template(
            conversation[:2], tools=[tool], add_generation_prompt=True, return_dict=False
        )
        full = tokenizer.apply_chat_template(conversation, tools=[tool], return_dict=False)
        assert full[: len(prompt)] == prompt, "the chat template is not prefix-preserving"
        encoded.append((full, len(prompt)))
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
    model.train()
    for step in range(steps):
        for ids, prompt_len in encoded[step * batch : (step + 1) * batch]:
            input_ids = torch.tensor([ids])
            labels = input_ids.clone()
            labels[0, :prompt_len] = -100
            out = model(input_ids=input_ids, labels=labels)
            (out.loss / batch).backward()
        optimizer.step()
        optimizer.zero_grad()
    model.eval()
