"""mimesis-guess: an example plug-in package of mimesis_gym (examples/plugin/README.md).

Installed, its entry points add the env ``guess-number`` (``mimesis_guess/GuessNumber-v0``), the
algorithm ``rloo`` and the agent ``guess-bisect`` to ``mimesis-gym`` with no edit to the library.
Not installed, on ``PYTHONPATH``, the same parts are named by module: importing this package registers
the env, so ``--envs mimesis_guess:mimesis_guess/GuessNumber-v0``, ``algorithm:
mimesis_guess.learner:RLOO`` and ``--agents mimesis_guess.agent:BisectAgent`` work too.

The learner (torch) is imported on its own: ``mimesis_guess.learner``.
"""

from __future__ import annotations

from mimesis_guess.env import ENTRY, GuessNumberEnv, register

__all__ = ["ENTRY", "GuessNumberEnv", "register"]

register()
