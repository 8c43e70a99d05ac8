"""SFT — supervised fine-tuning on recorded conversations, in one folder (docs/algorithms.md, "SFT: the warm start").

* :mod:`~mimesis_gym.algorithms.learners.sft.learner`: the ``SFT`` learner (``algorithm="sft"``);
* :mod:`~mimesis_gym.algorithms.learners.sft.data`: the JSONL conversation format, its encoding and loss
  masks (``mimesis-gym collect`` writes it);
* :mod:`~mimesis_gym.algorithms.learners.sft.user_data`: user-side examples from human conversations
  (``mimesis-gym sft-data``).

Its options are ``TrainerConfig.sft`` (:class:`~mimesis_gym.algorithms.config.SFTConfig`). The names
below load on first use: the data modules import no torch.
"""

from __future__ import annotations

from mimesis_gym.algorithms.lazy import lazy_exports

__all__ = ["SFT"]

__getattr__, __dir__ = lazy_exports(__name__, {"SFT": ".learner"})
