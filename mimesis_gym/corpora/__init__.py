"""Real human conversations: loaders for conversation corpora and their ``dev``/``test`` halves
(docs/humans.md). Depends only on the standard library and :mod:`mimesis_gym.core`, so every layer may read it.

- :mod:`.conversation`: :class:`HumanConversation`, :class:`HumanTurn` and the split rule :func:`split_of`;
- :mod:`.assemble`: the rules every corpus shares and :class:`CorpusLoad` (what was kept, dropped, skipped);
- :mod:`.registry`: :data:`CORPORA` by name and :func:`load_corpus` (``NAME``, ``NAME:PATH``, ``jsonl:PATH``);
- one adapter per corpus: :mod:`.oasst1`, :mod:`.simulatorarena`, :mod:`.thoughttrace`, :mod:`.chitchat`,
  :mod:`.abcd`, and :mod:`.jsonl` for your own.
"""

from mimesis_gym.corpora.assemble import CorpusLoad
from mimesis_gym.corpora.conversation import SPLITS, HumanConversation, HumanTurn, split_of
from mimesis_gym.corpora.registry import CORPORA, CorpusSpec, load_corpus, shipped_corpora, split_conversations

__all__ = [
    "CORPORA",
    "SPLITS",
    "CorpusLoad",
    "CorpusSpec",
    "HumanConversation",
    "HumanTurn",
    "load_corpus",
    "shipped_corpora",
    "split_conversations",
    "split_of",
]
