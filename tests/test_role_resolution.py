"""``ConversationEnv`` resolves ``user=``/``judge=`` itself, through the resolver the users layer installs."""

from __future__ import annotations

from typing import Any, ClassVar

import gymnasium as gym
import pytest

import mimesis_gym.algorithms.testing  # noqa: F401  (registers KeywordEcho, an env that never builds roles)
from mimesis_gym.core.roles import RoleModels, install_role_resolver, resolve_roles
from mimesis_gym.evaluation.contract import check_user_alias, run_checks
from mimesis_gym.users.registry import register_user, resolve_role_models
from tests.support.chat_models import ScriptedChatModel
from tests.support.echo_env import EchoEnv

FORGETFUL_ID = "mimesis_test/Forgetful-v0"


class ForgetfulEnv(EchoEnv):
    """An env that hands the base class a fixed scripted user: it ignores the caller's ``user=``."""

    env_name: ClassVar[str] = "forgetful"

    def __init__(self, **common: Any) -> None:
        super().__init__(**{**common, "user": "scripted"})


@pytest.fixture
def forgetful_id():
    gym.register(id=FORGETFUL_ID, entry_point=ForgetfulEnv, max_episode_steps=4)
    yield FORGETFUL_ID
    del gym.registry[FORGETFUL_ID]


def test_the_users_package_installed_its_registry_as_the_resolver():
    model = ScriptedChatModel(["x"])
    assert resolve_roles(model, None) == resolve_role_models(model, None)
    with pytest.raises(ValueError, match="unknown user alias 'no-such-alias'"):
        resolve_roles("no-such-alias", None)


def test_the_base_class_builds_role_models_through_the_installed_resolver():
    seen: list[tuple[Any, Any, Any]] = []
    model = ScriptedChatModel(['{"reply": "from the resolver"}'])

    def recording(user: Any, judge: Any, user_kwargs: Any) -> RoleModels:
        seen.append((user, judge, user_kwargs))
        return RoleModels(user=model)

    install_role_resolver(recording)
    try:
        env = EchoEnv(user="any-name", judge="a-judge", user_kwargs={"timeout_s": 3})
    finally:
        install_role_resolver(resolve_role_models)
    assert seen == [("any-name", "a-judge", {"timeout_s": 3})]
    env.reset(seed=0)
    assert env.step("[action] hi")[0] == "from the resolver"
    env.close()


def test_an_env_that_builds_no_roles_still_rejects_an_unknown_alias():
    with pytest.raises(ValueError, match="no-such-alias"):
        gym.make("mimesis_testing/KeywordEcho-v0", user="no-such-alias")
    with pytest.raises(ValueError, match="no-such-alias"):
        gym.make("mimesis/FunctionGym-v0", user="no-such-alias")


def test_objects_passed_in_are_kept_and_not_closed_aliases_are_owned(clean_user_registry):
    passed = ScriptedChatModel(["x"])
    env = gym.make("mimesis/FunctionGym-v0", user=passed).unwrapped
    assert env.role_models.user is passed and env.role_models.owned == ()
    env.close()
    assert passed.closed == 0
    built = ScriptedChatModel(["x"])
    register_user("built-for-test", lambda **_: built)
    env = gym.make("mimesis/TurtleGym-v0", user="built-for-test").unwrapped
    assert env.role_models.user is built and env.role_models.owned == (built,)
    env.close()
    assert built.closed == 1


def test_a_judge_alias_is_resolved_except_where_no_role_judges():
    with pytest.raises(ValueError, match="no-such-alias"):
        gym.make("mimesis/TurtleGym-v0", judge="no-such-alias")
    tau = gym.make("mimesis/TauGym-v0", judge="no-such-alias").unwrapped  # TauGym: has_judge = False
    assert tau.role_models == RoleModels()
    tau.close()


def test_the_contract_check_catches_an_env_that_ignores_user(forgetful_id):
    with pytest.raises(AssertionError, match="ignores its user= argument"):
        check_user_alias(forgetful_id)
    (result,) = run_checks([forgetful_id], ["user_alias"])
    assert not result.ok
    check_user_alias("mimesis/TurtleGym-v0")  # a well-behaved env passes
