"""HardEcho: KeywordEcho with a scripted user who plays the behaviours its words allow (issue 29).

The learners' test env (``mimesis_gym.algorithms.testing.KeywordEchoEnv``) answers through no role, so
``user_behavior=`` has nothing to rewrite there. HardEcho sends the same replies through a scripted
role named ``user``, so the shared enactment rewrites them, and declares which behaviours that user
plays: those whose rules need no env facts beyond the keyword (B3, B4, B9, B10, B12, B13). Importing
this module registers :data:`ENV_ID` (``max_episode_steps=3``, like KeywordEcho); the command line
reaches it as ``tests.support.hard_echo:test_behaviors/HardEcho-v0``.
"""

from __future__ import annotations

from typing import Any, ClassVar

import gymnasium as gym

from mimesis_gym.algorithms.testing import REPEAT, KeywordEchoEnv
from mimesis_gym.behaviors.play import EnvBehaviors
from mimesis_gym.core.actions import ParsedAction
from mimesis_gym.core.env import StepOutcome
from mimesis_gym.core.roles import ScriptedRole

ENV_ID = "test_behaviors/HardEcho-v0"
CLI_ENV_ID = f"{__name__}:{ENV_ID}"
PLAYED = ("B3", "B4", "B9", "B10", "B12", "B13")
NEEDS_FACTS = "HardEcho's user has no task facts for it beyond the keyword"


class EchoUser(ScriptedRole[str]):
    """Says what the env's rule decided (``text``); the behaviour, if any, rewrites it."""

    name = "user"

    def decide(self, *, text: str, **_: Any) -> str:
        return text


def hard_echo_facts(env: Any) -> dict[str, Any]:
    """The keyword is the one value the agent could use (B9's low-signal check must not count it)."""
    return {"informative": (env.task.keyword,)}


HARD_ECHO_BEHAVIORS = EnvBehaviors(
    user_role="user",
    not_applicable={behavior: NEEDS_FACTS for behavior in ("B1", "B2", "B5", "B6", "B7", "B8", "B11")},
    facts=hard_echo_facts,
)


class HardEchoEnv(KeywordEchoEnv):
    """KeywordEcho whose user replies through :class:`EchoUser` and plays :data:`PLAYED`."""

    env_name: ClassVar[str] = "hard_echo"
    role_names: ClassVar[tuple[str, ...]] = ("user",)
    user_behaviors: ClassVar[EnvBehaviors] = HARD_ECHO_BEHAVIORS

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.user = EchoUser()

    async def _handle(self, action: ParsedAction) -> StepOutcome:
        rewarded = self.rewarded(action.content)
        text = "Thank you." if rewarded else REPEAT.format(keyword=self.task.keyword)  # type: ignore[union-attr]
        said = (await self.user(self._session, text=text)).value
        return StepOutcome(obs=said, reward_parts={"echo": float(rewarded)}, terminated=rewarded, user_utterance=said)


def register() -> None:
    """Register :data:`ENV_ID` (idempotent)."""
    if ENV_ID not in gym.registry:
        gym.register(id=ENV_ID, entry_point=f"{__name__}:HardEchoEnv", max_episode_steps=3)


register()
