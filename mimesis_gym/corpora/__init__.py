"""Real human conversations: loaders for conversation corpora and their ``dev``/``test`` halves
(docs/humans.md). Depends only on the standard library and pydantic, so every layer may read it."""

from mimesis_gym.corpora.conversation import SPLITS, HumanConversation, HumanTurn, split_of

__all__ = ["SPLITS", "HumanConversation", "HumanTurn", "split_of"]
