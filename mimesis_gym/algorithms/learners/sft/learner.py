"""The SFT learner (docs/algorithms.md, "SFT: the warm start"): supervised fine-tuning on conversations.

Selected with ``algorithm="sft"``. Instead of rollouts, :meth:`SFT.episodes` supplies each step's
``rollout.prompts_per_batch`` conversations of ``sft.data`` (shuffled per epoch with a seed derived
from the run seed; the trainer's ``(epoch, cursor)`` is the data position, so a resumed run goes on
where it stopped), encoded by :func:`~mimesis_gym.algorithms.learners.sft.data.encode_conversation` with the
loss mask on ``sft.side``. Their advantages are 0, so the PPO-clip term has no gradient; the loss is
:meth:`SFT.extra_loss`, the mean negative log-likelihood of the mini-batch's trained tokens (every
rank's tokens in the denominator, like the PPO term). Mini-batches, micro-batches, packing, the
optimizer, checkpoints, evaluation and metrics are the trainer's.
"""

from __future__ import annotations

import logging
import random
from pathlib import Path

import torch

from mimesis_gym.algorithms.batching import Row
from mimesis_gym.algorithms.config import TrainerConfig
from mimesis_gym.algorithms.learners.base import Learner, MicroBatch, RolloutBatch
from mimesis_gym.algorithms.learners.sft.data import (
    MISSING_DATA_FIX,
    EncodedConversation,
    SFTExample,
    encode_conversation,
    load_examples,
    to_episode,
)
from mimesis_gym.algorithms.records import Episode
from mimesis_gym.algorithms.services import LoopServices

__all__ = ["SFT"]

logger = logging.getLogger(__name__)


class SFT(Learner):
    """Supervised fine-tuning: the NLL of the trained side's tokens of recorded conversations."""

    name = "sft"

    @classmethod
    def check_selected(cls, config: TrainerConfig) -> None:
        """SFT needs existing ``sft.data`` files, temperature 1 and a step count."""
        if not config.sft.data:
            raise ValueError(
                "algorithm 'sft' needs sft.data: JSONL conversation files (`mimesis-gym collect` writes them)"
            )
        missing = [path for path in config.sft.data if not Path(path).is_file()]
        if missing:
            raise ValueError(f"sft.data: {missing[0]} is not a file ({MISSING_DATA_FIX})")
        if config.rollout.temperature != 1.0:
            raise ValueError(
                f"algorithm 'sft' trains the log-likelihood at temperature 1 but rollout.temperature="
                f"{config.rollout.temperature} scales the log-probs: set rollout.temperature=1"
            )
        if config.run.total_epochs is not None:
            raise ValueError(
                "algorithm 'sft' counts run.total_steps (rollout.prompts_per_batch conversations each); "
                "run.total_epochs counts env tasks: unset it"
            )

    def __init__(self, services: LoopServices) -> None:
        super().__init__(services)
        cfg = self.config
        self.examples, self.encoded = self.load(cfg.sft.data)
        self.minibatch_tokens = 0
        self.sums = {"nll": 0.0, "tokens": 0.0}

    def load(self, paths: list[str]) -> tuple[list[SFTExample], list[EncodedConversation]]:
        """Read and encode every conversation; drop (with a warning) those longer than ``sft.max_tokens``."""
        cfg = self.config
        side = cfg.sft.side
        limit = cfg.sft.max_tokens or cfg.rollout.max_prompt_tokens + cfg.rollout.max_response_tokens
        examples, encoded = [], []
        too_long = 0
        for number, example in enumerate(load_examples(paths)):
            if example.side is not None and example.side != side:
                raise ValueError(
                    f"sft.data conversation {number} was collected for side {example.side!r} but sft.side={side!r}: "
                    f"set sft.side={example.side} or collect with --side {side}"
                )
            conversation = encode_conversation(example, self.services.renderer, side)
            if len(conversation.input_ids) > limit:
                too_long += 1
                continue
            examples.append(example)
            encoded.append(conversation)
        if too_long:
            logger.warning("sft: %d conversation(s) longer than %d tokens dropped", too_long, limit)
        if not encoded:
            raise ValueError(f"sft.data holds no conversation of at most {limit} tokens (sft.max_tokens)")
        self.dropped = too_long
        return examples, encoded

    def epoch_order(self, epoch: int) -> list[int]:
        """The order of the conversations in ``epoch``, shuffled by a seed of the run seed when ``sft.shuffle``."""
        order = list(range(len(self.encoded)))
        if self.config.sft.shuffle:
            random.Random(self.services.seed(epoch, 7)).shuffle(order)
        return order

    def episodes(self, step: int, epoch: int, cursor: int) -> tuple[list[Episode], tuple[int, int]]:
        """``prompts_per_batch`` conversations from ``(epoch, cursor)`` on, as records; and the position after them."""
        chosen: list[int] = []
        while len(chosen) < self.config.rollout.prompts_per_batch:
            order = self.epoch_order(epoch)
            take = order[cursor : cursor + self.config.rollout.prompts_per_batch - len(chosen)]
            chosen += take
            cursor += len(take)
            if cursor >= len(order):
                epoch, cursor = epoch + 1, 0
        episodes = [
            to_episode(self.encoded[i], self.examples[i], step=step, index=i, group=g) for g, i in enumerate(chosen)
        ]
        return episodes, (epoch, cursor)

    def advantages(self, batch: RolloutBatch) -> list[list[float]]:
        """0 for every turn: the PPO-clip term has no gradient, the NLL is the loss."""
        return [[0.0] * len(episode.turns) for episode in batch.episodes]

    def begin_minibatch(self, rows: list[Row]) -> bool:
        self.minibatch_tokens = sum(row.action_tokens for row in rows)
        return self.minibatch_tokens > 0

    def extra_loss(self, micro: MicroBatch, logprobs: torch.Tensor) -> torch.Tensor | None:
        """The NLL summed over the micro-batch's trained tokens, over the mini-batch's trained tokens."""
        nll = -torch.where(micro.score_mask, logprobs, torch.zeros_like(logprobs)).sum()
        self.sums["nll"] += float(nll.item())
        self.sums["tokens"] += float(micro.score_mask.sum().item())
        return nll / max(1, self.minibatch_tokens)

    def metrics(self, batch: RolloutBatch) -> dict[str, float]:
        """``sft/loss`` (mean NLL per trained token of the batch, before each update), ``sft/tokens``, data position."""
        totals = self.services.sum_over_ranks(self.sums)
        self.sums = {"nll": 0.0, "tokens": 0.0}
        return {
            "sft/loss": totals["nll"] / max(1.0, totals["tokens"]),
            "sft/tokens": totals["tokens"],
            "sft/conversations": float(len(batch.episodes)),
            "sft/dataset": float(len(self.encoded)),
            "sft/dropped_long": float(self.dropped),
        }
