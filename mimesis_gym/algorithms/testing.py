"""Test fixtures of the learners: KeywordEcho, its scripted coach, a tiny random model, recorded rollouts.

See docs/algorithms.md, "KeywordEcho and the tiny model", and docs/testing.md, "Learner golden tests".

Importing this module registers ``mimesis_testing/KeywordEcho-v0`` (``max_episode_steps=3``);
``gym.make("mimesis_gym.algorithms.testing:mimesis_testing/KeywordEcho-v0")`` works without the
import. torch and transformers are imported inside :func:`tiny_random_model` only.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, ClassVar

import gymnasium as gym

from mimesis_gym.algorithms.records import Episode
from mimesis_gym.core.actions import ParsedAction
from mimesis_gym.core.conventions import split_thought
from mimesis_gym.core.env import ConversationEnv, StepOutcome
from mimesis_gym.core.tasks import TaskPack

__all__ = [
    "COACH_NOTE",
    "ENV_ID",
    "TEST_KEYWORDS",
    "TRAIN_KEYWORDS",
    "KeywordEchoEnv",
    "RecordingCollector",
    "ReplayCollector",
    "ReplayMismatchError",
    "keyword_echo_coach",
    "register",
    "tiny_random_model",
    "tiny_tokenizer",
]

ENV_ID = "mimesis_testing/KeywordEcho-v0"
SYSTEM_PROMPT = "You are a helpful assistant."
OPENING = "Reply with exactly one word: {keyword}"
REPEAT = "That is not what I asked for. Reply with exactly one word: {keyword}"
COACH_NOTE = "The user wants only the single word they asked for, nothing else."

TRAIN_KEYWORDS: tuple[str, ...] = (
    "apple", "bread", "chair", "river", "garden", "window", "pencil", "mountain",
    "ocean", "candle", "basket", "bridge", "butter", "camera", "carpet", "castle",
    "cloud", "coffee", "copper", "cotton", "desert", "dinner", "doctor", "dragon",
    "engine", "farmer", "feather", "finger", "forest", "garlic", "guitar", "hammer",
    "helmet", "island", "jacket", "kettle", "ladder", "lemon", "letter", "market",
    "mirror", "monkey", "needle", "orange", "oyster", "palace", "parrot", "pepper",
    "pillow", "planet", "pocket", "rabbit", "ribbon", "saddle", "silver", "spider",
    "stone", "summer", "ticket", "tomato", "tunnel", "valley", "wallet", "winter",
)  # fmt: skip
TEST_KEYWORDS: tuple[str, ...] = (
    "anchor", "banana", "bottle", "button", "cherry", "circle", "cookie", "dollar",
    "flower", "garage", "harbor", "hunter", "jungle", "lizard", "meadow", "napkin",
    "onion", "pirate", "puzzle", "rocket", "salmon", "shadow", "sponge", "statue",
    "temple", "thunder", "turtle", "violin", "walnut", "wizard", "yogurt", "zipper",
)  # fmt: skip
_WORD = re.compile(r"[\w'-]+")
_ACTION_TAG = "[action]"


@dataclass(frozen=True)
class KeywordTask:
    id: str
    keyword: str


@lru_cache(maxsize=1)
def load_pack() -> TaskPack[KeywordTask]:
    """64 train and 32 test keywords (ids ``train-NN`` / ``test-NN``); ``demo`` = the first 4 test tasks."""
    train = [KeywordTask(f"train-{i:02d}", word) for i, word in enumerate(TRAIN_KEYWORDS)]
    test = [KeywordTask(f"test-{i:02d}", word) for i, word in enumerate(TEST_KEYWORDS)]
    demo = [KeywordTask(f"demo-{i:02d}", task.keyword) for i, task in enumerate(test[:4])]
    return TaskPack("keyword_echo", {"train": train, "test": test, "demo": demo})


def reply_words(action_content: str) -> list[str]:
    """The words of a reply: think blocks stripped, a leading ``[action]`` tag removed."""
    utterance, _ = split_thought(action_content)
    utterance = utterance.strip()
    if utterance.startswith(_ACTION_TAG):
        utterance = utterance[len(_ACTION_TAG) :].strip()
    return utterance.split()


class KeywordEchoEnv(ConversationEnv[KeywordTask]):
    """
    ## Description

    The learners' test env: the opening message asks the agent to reply with exactly one given word.
    A reply that contains the keyword as a whole word (any case) in at most three words earns 1.0
    and ends the episode; otherwise the scripted user repeats the request. See
    docs/algorithms.md, "KeywordEcho and the tiny model".

    ## Action Space

    Plain text (``tools == []``): bare text counts as ``[action]``; think blocks are stripped and a
    leading ``[action]`` tag removed before the check. A tool call ``{"choice": "action", ...}`` also works.

    ## Observation Space

    The opening request, then the repeated request after each failed reply.

    ## Roles

    One scripted user (no LLM role): it repeats the request.

    ## Rewards

    | rule | reward |
    |---|---|
    | ``keyword`` (default) | 1.0 when the reply has the keyword as a whole word and ≤ 3 words, else 0.0 |
    | ``parity`` (test-only) | 1.0 when the stripped reply has an even number of characters, else 0.0 |

    ``reward_parts = {"echo"}``; ``train`` appends the reward line; episode score 1 or 0.

    ## Starting State

    A keyword from the split (``train``: 64, ``test``: 32, ``demo``: 4), or ``options["task_id"]``.

    ## Episode End

    1. Termination: a rewarded reply.
    2. Truncation: ``max_episode_steps`` (3).

    ## Arguments

    | parameter | type | default | description |
    |---|---|---|---|
    | ``reward_rule`` | str | ``"keyword"`` | ``"keyword"`` or ``"parity"`` (random models get mixed rewards) |

    Plus the common kwargs (``user``/``judge`` are accepted and ignored: the user is scripted).

    >>> import gymnasium as gym, mimesis_gym.algorithms.testing
    >>> env = gym.make("mimesis_testing/KeywordEcho-v0", split="demo")
    >>> obs, info = env.reset(seed=0, options={"task_id": "demo-00"})
    >>> env.step("Anchor")[1]
    1.0

    ## Version History

    - v0: initial release.
    """

    env_name: ClassVar[str] = "keyword_echo"
    accepted_kinds: ClassVar[frozenset[str]] = frozenset({"action"})
    reward_part_names: ClassVar[tuple[str, ...]] = ("echo",)
    packs: ClassVar[tuple[str, ...]] = ("original",)
    default_system_prompt: ClassVar[str] = SYSTEM_PROMPT
    draws_llm_seed_base: ClassVar[bool] = False

    def __init__(self, *, reward_rule: str = "keyword", **common: Any) -> None:
        if reward_rule not in ("keyword", "parity"):
            raise ValueError(f"reward_rule must be 'keyword' or 'parity'; got {reward_rule!r}")
        super().__init__(**common)
        self.reward_rule = reward_rule
        self.tools = []

    @classmethod
    def load_task_pack(cls, pack: str, data_dir: str | None) -> TaskPack[KeywordTask]:
        return load_pack()

    async def astep(self, action: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if isinstance(action, str) and not action.strip().startswith(_ACTION_TAG):
            action = f"{_ACTION_TAG} {action.strip()}"
        return await super().astep(action)

    async def _begin(self, task: KeywordTask) -> str:
        return OPENING.format(keyword=task.keyword)

    def rewarded(self, content: str) -> bool:
        """The reward rule on the content of an ``[action]``."""
        task: KeywordTask = self.task  # type: ignore[assignment]
        if self.reward_rule == "parity":
            utterance, _ = split_thought(content)
            return len(utterance.strip()) % 2 == 0
        words = reply_words(content)
        found = any(word.lower() == task.keyword for word in _WORD.findall(" ".join(words)))
        return found and len(words) <= 3

    async def _handle(self, action: ParsedAction) -> StepOutcome:
        task: KeywordTask = self.task  # type: ignore[assignment]
        if self.rewarded(action.content):
            return StepOutcome(
                obs="Thank you.", reward_parts={"echo": 1.0}, terminated=True, user_utterance="Thank you."
            )
        repeat = REPEAT.format(keyword=task.keyword)
        return StepOutcome(obs=repeat, reward_parts={"echo": 0.0}, user_utterance=repeat)

    def _hidden(self) -> dict[str, Any]:
        return {"keyword": self.task.keyword if self.task else None}

    def oracle_action(self) -> str:
        """The keyword itself."""
        return self.task.keyword  # type: ignore[union-attr]


def register() -> None:
    """Register ``mimesis_testing/KeywordEcho-v0`` (idempotent)."""
    if ENV_ID not in gym.registry:
        gym.register(id=ENV_ID, entry_point=f"{__name__}:KeywordEchoEnv", max_episode_steps=3)


register()


def keyword_echo_coach(request: Any) -> str:
    """The scripted coach of KeywordEcho: the same public-information note for every turn."""
    return COACH_NOTE


@lru_cache(maxsize=1)
def tiny_tokenizer() -> Any:
    """The tiny model's tokenizer (loaded once per process; treat it as read-only)."""
    from transformers import AutoTokenizer

    from mimesis_gym.core.tiny import ensure_tiny_model

    return AutoTokenizer.from_pretrained(str(ensure_tiny_model()))


def tiny_random_model(seed: int = 0, *, stop_logit: float = 1.25) -> tuple[Any, Any]:
    """A randomly initialised 2-layer Llama (hidden 64) with the tiny model's tokenizer, dropout 0.

    A random model almost never samples the end-of-turn id (1 in 49,152), so every turn would end
    by length and no env would be stepped. One hidden channel is therefore held constant (channel 0
    of every embedding is 1 and no layer writes to it) and the untied output row of ``<|im_end|>``
    reads it with weight ``stop_logit``: turns end after a few tokens and episodes get rewards.
    Everything else is an ordinary seeded random initialisation.
    """
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    tokenizer = tiny_tokenizer()
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=4096,
        tie_word_embeddings=False,
        attention_dropout=0.0,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    torch.manual_seed(seed)
    model = LlamaForCausalLM(config)
    stop = tokenizer.convert_tokens_to_ids("<|im_end|>")
    with torch.no_grad():
        model.model.embed_tokens.weight[:, 0] = 1.0
        for layer in model.model.layers:
            layer.self_attn.o_proj.weight[0, :] = 0.0
            layer.mlp.down_proj.weight[0, :] = 0.0
        model.lm_head.weight[:, 0] = 0.0
        model.lm_head.weight[stop, 0] = stop_logit
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.eos_token_id = stop
    model.eval()
    return model, tokenizer


class RecordingCollector:
    """A trainer's collector that keeps a JSON copy of the episodes of every ``collect`` call.

    Wrap the trainer's own: ``trainer.collector = RecordingCollector(trainer.collector)``; after the steps,
    :attr:`calls` holds, per call, the episodes as they left the collector (privileged fields included,
    before the trainer filled its old log-probs, advantages or notes), ready for :class:`ReplayCollector`.
    """

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.calls: list[list[dict[str, Any]]] = []

    def collect(self, requests: Sequence[Any], **kwargs: Any) -> list[Episode]:
        episodes = self.inner.collect(requests, **kwargs)
        self.calls.append([episode.model_dump(mode="json") for episode in episodes])
        return episodes

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class ReplayMismatchError(AssertionError):
    """The trainer asked a :class:`ReplayCollector` for episodes other than the recorded ones."""


class ReplayCollector:
    """A trainer's collector that answers each ``collect`` call with recorded episodes, sampling nothing.

    ``calls`` are :attr:`RecordingCollector.calls`. What the trainer computes from replayed episodes
    (old log-probs, advantages, losses, the update) depends on the episodes' token ids, masks, spans,
    rewards and sampler log-probs and on the weights only, never on a sampler, so it is the same on any
    processor up to floating-point rounding. The trainer must ask for the recorded episodes in the
    recorded order (rollout id, env, task and reset seed of each request; skipped tasks left out):
    anything else raises :class:`ReplayMismatchError`, so a change in task scheduling is caught.
    """

    def __init__(self, calls: Sequence[Sequence[dict[str, Any]]]) -> None:
        self.calls = [list(call) for call in calls]
        self.position = 0

    def collect(self, requests: Sequence[Any], **kwargs: Any) -> list[Episode]:
        if self.position >= len(self.calls):
            raise ReplayMismatchError(f"collect call {self.position + 1}: only {len(self.calls)} were recorded")
        recorded = [Episode.model_validate(data) for data in self.calls[self.position]]
        self.position += 1
        asked = {r.rollout_id: (r.env_id, r.task_id, r.seed, r.group_id) for r in requests}
        order = [r.rollout_id for r in requests]
        for episode in recorded:
            key = (episode.env_id, episode.task_id, episode.seed, episode.group_id)
            if asked.get(episode.rollout_id) != key:
                raise ReplayMismatchError(
                    f"collect call {self.position}: recorded episode {episode.rollout_id} {key} was not "
                    f"requested as such (asked: {asked.get(episode.rollout_id)})"
                )
        positions = [order.index(episode.rollout_id) for episode in recorded]
        if positions != sorted(positions):
            raise ReplayMismatchError(f"collect call {self.position}: the recorded episodes are out of request order")
        return recorded
