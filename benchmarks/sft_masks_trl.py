"""Do TRL's SFTTrainer masks equal ours? (docs/algorithms.md, "SFT: the warm start", "Why not TRL's SFTTrainer").

For the tiny model's tokenizer (SmolLM2, ChatML) and a few conversations (with ``<think>`` blocks, two
agent turns, a tool-call-free and a user-trained case) this prints, per conversation, the number of
trained tokens under

* ours: :func:`~mimesis_gym.algorithms.learners.sft.data.encode_conversation` (``side`` agent / user);
* TRL 1.x ``assistant_only_loss=True``: the mask ``apply_chat_template(..., return_assistant_tokens_mask=True)``
  gives with the tokenizer's template, or with the training template TRL swaps in
  (``trl.chat_template_utils.get_training_chat_template``) when it has one for this template;

and whether the masks are identical token for token. TRL has no user-side mask (it trains the
assistant role, or a prompt/completion split), so the simulator side is ours only.

    python benchmarks/sft_masks_trl.py
"""

from __future__ import annotations

from typing import Any

from mimesis_gym.algorithms.learners.sft.data import SFTExample, encode_conversation
from mimesis_gym.algorithms.render import ChatRenderer
from mimesis_gym.algorithms.testing import tiny_tokenizer

CONVERSATIONS: list[list[dict[str, Any]]] = [
    [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": "Reply with exactly one word: apple"},
        {"role": "assistant", "content": "<think>The word is apple.</think>apple"},
        {"role": "user", "content": "Thank you."},
    ],
    [
        {"role": "system", "content": "Guess the animal."},
        {"role": "user", "content": "I am thinking of an animal."},
        {"role": "assistant", "content": "<think>Start broad.</think>[action] Is it a mammal?"},
        {"role": "user", "content": "Yes"},
        {"role": "assistant", "content": "[answer] Hippopotamus"},
        {"role": "user", "content": "Yes! You read my mind."},
    ],
]


def trl_mask(tokenizer: Any, messages: list[dict[str, Any]], template: str | None) -> list[int] | str:
    try:
        out = tokenizer.apply_chat_template(
            messages, return_dict=True, return_assistant_tokens_mask=True, chat_template=template
        )
    except Exception as error:  # report what TRL would hit
        return f"{type(error).__name__}: {error}"
    return list(out["assistant_masks"])


def main() -> int:
    import trl
    from trl.chat_template_utils import get_training_chat_template

    tokenizer = tiny_tokenizer()
    renderer = ChatRenderer(tokenizer)
    try:
        training = get_training_chat_template(tokenizer)
        swap = "a training template" if training else "none needed"
    except Exception as error:  # an unsupported template
        training, swap = None, f"none ({type(error).__name__}: {str(error).splitlines()[0][:120]})"
    print(f"TRL {trl.__version__}; tokenizer {renderer.name}; TRL's swapped-in training template: {swap}")
    same_all = True
    for k, messages in enumerate(CONVERSATIONS):
        ours = encode_conversation(SFTExample.model_validate({"messages": messages}), renderer, "agent")
        for label, template in (("tokenizer template", None), ("TRL training template", training)):
            if label == "TRL training template" and training is None:
                continue
            theirs = trl_mask(tokenizer, messages, template)
            if isinstance(theirs, str):
                print(f"conversation {k}: ours {sum(ours.loss_mask)} tokens; TRL ({label}): {theirs}")
                same_all = False
                continue
            same = theirs == ours.loss_mask
            same_all &= same
            print(
                f"conversation {k}: ours {sum(ours.loss_mask)} trained tokens of {len(ours.input_ids)}; TRL ({label}) "
                f"{sum(theirs)} of {len(theirs)}; identical: {same}"
            )
    print(f"masks identical everywhere: {same_all}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
