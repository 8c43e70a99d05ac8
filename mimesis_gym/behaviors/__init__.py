"""The 13 realistic user behaviours, B1–B13, as a switch on the user of any env (docs/behaviors.md).

- :mod:`~mimesis_gym.behaviors.registry`: the one registry (``data/behaviors.json``), read by ABCD too;
- :mod:`~mimesis_gym.behaviors.spec`: ``user_behavior=`` (one condition, a list, weights) and its draw;
- :mod:`~mimesis_gym.behaviors.play`: an env's declaration (:class:`EnvBehaviors`) and one episode's
  state (:class:`EpisodeBehavior`), with the LLM directive;
- :mod:`~mimesis_gym.behaviors.enact`: how a scripted user plays each behaviour;
- :mod:`~mimesis_gym.behaviors.detect`: the enactment check of each behaviour;
- :mod:`~mimesis_gym.behaviors.text`, :mod:`~mimesis_gym.behaviors.phrases`: the text primitives and
  phrase lists these checks and ABCD's scripted judge share.
"""

from mimesis_gym.behaviors.detect import Detection, Exchange, detect
from mimesis_gym.behaviors.play import NO_USER, EnvBehaviors, EpisodeBehavior, directive_for
from mimesis_gym.behaviors.registry import BEHAVIOR_IDS, CONDITIONS, CONTROL, Behavior, behavior, behaviors
from mimesis_gym.behaviors.spec import BehaviorMix

__all__ = [
    "BEHAVIOR_IDS",
    "CONDITIONS",
    "CONTROL",
    "NO_USER",
    "Behavior",
    "BehaviorMix",
    "Detection",
    "EnvBehaviors",
    "EpisodeBehavior",
    "Exchange",
    "behavior",
    "behaviors",
    "detect",
    "directive_for",
]
