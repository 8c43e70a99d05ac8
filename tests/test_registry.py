"""user= / judge= resolution (users.md §5, DESIGN §2.3)."""

import pytest

from mimesis_gym.users import registry
from mimesis_gym.users.registry import (
    UserSpec,
    list_users,
    make_chat_model,
    register_user,
    resolve_role_models,
    resolve_user,
)
from tests.support.chat_models import ScriptedChatModel


def test_scripted_alias_case_insensitively():
    assert resolve_user("Scripted").kind == "scripted"
    assert make_chat_model("scripted") is None


def test_unknown_alias_lists_the_known_ones():
    with pytest.raises(ValueError, match=r"unknown user alias 'mimesis9b'; known: scripted"):
        resolve_user("mimesis9b")


def test_non_alias_value_is_a_type_error():
    with pytest.raises(TypeError, match="alias string or a chat-model object"):
        resolve_user(42)


def test_chat_model_objects_are_used_as_is():
    model = ScriptedChatModel(["x"], name="my-model")
    assert resolve_user(model) == UserSpec(alias="my-model", label="my-model", kind="custom")
    assert make_chat_model(model) is model
    with pytest.raises(ValueError, match="user_kwargs"):
        make_chat_model(model, timeout_s=3)


def test_scripted_user_gets_scripted_judges():
    assert resolve_role_models("scripted") == registry.RoleModels()


def test_judge_none_means_the_user_model_judges():
    model = ScriptedChatModel(["x"])
    roles = resolve_role_models(model)
    assert roles.user is model and roles.judge is model and roles.owned == ()


def test_judge_can_be_scripted_or_another_model():
    user, judge = ScriptedChatModel(["x"]), ScriptedChatModel(["y"])
    assert resolve_role_models(user, "scripted").judge is None
    assert resolve_role_models(user, judge).judge is judge


def test_a_human_user_gets_scripted_judges():
    human = ScriptedChatModel(["x"])
    human.is_human = True
    assert resolve_role_models(human).judge is None


@pytest.fixture
def clean_registry():
    specs, factories = dict(registry._specs), dict(registry._factories)
    yield
    registry._specs.clear()
    registry._specs.update(specs)
    registry._factories.clear()
    registry._factories.update(factories)


def test_registered_alias_builds_owned_models_with_overrides(clean_registry):
    built = []

    def factory(**overrides):
        built.append(overrides)
        return ScriptedChatModel(["x"], name="echo")

    register_user("Echo-User", factory, label="Echo")
    assert [s.alias for s in list_users()][-1] == "echo-user"
    roles = resolve_role_models("ECHO-USER", user_kwargs={"timeout_s": 3})
    assert built == [{"timeout_s": 3}]
    assert roles.owned == (roles.user,) and roles.judge is roles.user
    with pytest.raises(ValueError, match="already registered"):
        register_user("echo-user", factory)


def test_factory_must_return_a_chat_model(clean_registry):
    register_user("broken", lambda **_: object())
    with pytest.raises(TypeError, match="not a chat model"):
        make_chat_model("broken")
