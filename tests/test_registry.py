"""user= / judge= resolution and the alias registry (docs/users.md, "Aliases")."""

import asyncio
import pickle
import sys
import textwrap

import pytest

from mimesis_gym.core.http import OpenAIChatModel
from mimesis_gym.core.roles import RoleModels
from mimesis_gym.users.builtin import BUILTIN_ALIASES, alias_env_key, alias_variable
from mimesis_gym.users.registry import (
    UserSpec,
    list_users,
    make_chat_model,
    register_user,
    resolve_role_models,
    resolve_user,
)
from mimesis_gym.users.vllm_local import vllm_available
from tests.support.chat_models import ScriptedChatModel

EVALUATION_USERS = [
    "gpt-5.6",
    "claude-opus-5",
    "claude-sonnet-5",
    "gemini-3.8-flash",
    "kimi-k3",
    "ditto-8b",
    "osim-8b",
    "humanlm-8b",
    "sotopia-7b",
]


@pytest.fixture(autouse=True)
def no_user_variables(monkeypatch):
    import os

    for name in list(os.environ):
        if name.startswith(("MIMESIS_USER_", "OPENAI_", "MIMESIS_TINY_")):
            monkeypatch.delenv(name)


def test_scripted_and_human_aliases_case_insensitively():
    assert resolve_user("Scripted").kind == "scripted" and make_chat_model("scripted") is None
    assert resolve_user("HUMAN").kind == "human" and make_chat_model("human").is_human


def test_every_builtin_alias_of_the_table_exists():
    assert set(BUILTIN_ALIASES) == {"mimesis-9b", "mimesis-4b", "gpt-5.5", "deepseek-v4.1-flash", *EVALUATION_USERS}


@pytest.mark.parametrize(
    ("alias", "label", "base_url", "model", "thinking"),
    [
        ("mimesis-9b", "MIMESIS-9B", "http://127.0.0.1:8000/v1", "mimesis-9b", True),
        ("mimesis-4b", "MIMESIS-4B", "http://127.0.0.1:8001/v1", "mimesis-4b", True),
        ("gpt-5.5", "GPT-5.5", "https://api.openai.com/v1", "gpt-5.5", False),
        ("ditto-8b", "Ditto-8B", "http://127.0.0.1:8002/v1", "Ditto-8B", False),
        ("humanlm-8b", "HumanLM-8B", "http://127.0.0.1:8004/v1", "humanlm-opinion", False),
        ("sotopia-7b", "Sotopia-7B", "http://127.0.0.1:8005/v1", "sotopia-rl-qwen-2.5-7B-grpo", False),
    ],
)
def test_builtin_http_aliases(alias, label, base_url, model, thinking):
    spec = resolve_user(alias.upper())
    assert (spec.label, spec.kind, spec.endpoint.base_url, spec.endpoint.model, spec.thinking) == (
        label,
        "http",
        base_url,
        model,
        thinking,
    )
    assert spec.endpoint.json_mode == "auto" and spec.endpoint.refusal_check


def test_mimesis_hub_ids_and_serve_specs():
    spec = resolve_user("mimesis-9b")
    assert spec.hub_id == "phanviethoang1512/MIMESIS-9B"
    assert (spec.serve.model, spec.serve.served_model_name, spec.serve.port) == (
        "phanviethoang1512/MIMESIS-9B",
        "mimesis-9b",
        8000,
    )
    assert resolve_user("mimesis-4b").hub_id == "phanviethoang1512/MIMESIS-4B"
    assert resolve_user("gpt-5.5").serve is None


def test_gpt_aliases_use_max_completion_tokens_and_fall_back_to_openai_key():
    endpoint = resolve_user("gpt-5.5").endpoint
    assert endpoint.token_param == "max_completion_tokens"
    assert endpoint.api_key_env == ["MIMESIS_USER_GPT_5_5_API_KEY", "OPENAI_API_KEY"]


def test_alias_without_endpoint_names_its_variable():
    with pytest.raises(ValueError, match="set MIMESIS_USER_CLAUDE_OPUS_5_BASE_URL"):
        resolve_user("claude-opus-5")


def test_alias_variables_override_the_defaults(monkeypatch):
    assert alias_env_key("gemini-3.8-flash") == "GEMINI_3_8_FLASH"
    monkeypatch.setenv(alias_variable("claude-opus-5", "BASE_URL"), "https://proxy.example/v1")
    monkeypatch.setenv(alias_variable("claude-opus-5", "MODEL"), "claude-opus-5-20260101")
    monkeypatch.setenv(alias_variable("claude-opus-5", "EXTRA_BODY"), '{"top_p": 0.9}')
    monkeypatch.setenv(alias_variable("ditto-8b", "HUB_ID"), "someone/Ditto-8B")
    endpoint = resolve_user("claude-opus-5").endpoint
    assert (endpoint.base_url, endpoint.model, endpoint.extra_body) == (
        "https://proxy.example/v1",
        "claude-opus-5-20260101",
        {"thinking": {"type": "adaptive"}, "top_p": 0.9},  # the alias's reasoning setting stays
    )
    assert endpoint.api_key_env == ["MIMESIS_USER_CLAUDE_OPUS_5_API_KEY"]
    assert resolve_user("ditto-8b").serve.model == "someone/Ditto-8B"
    monkeypatch.setenv(alias_variable("claude-opus-5", "EXTRA_BODY"), "{not json")
    with pytest.raises(ValueError, match="MIMESIS_USER_CLAUDE_OPUS_5_EXTRA_BODY is not valid JSON"):
        resolve_user("claude-opus-5")


@pytest.mark.parametrize(
    ("alias", "reasoning"),
    [
        ("gpt-5.5", {"reasoning_effort": "medium"}),
        ("gpt-5.6", {"reasoning_effort": "medium"}),
        ("gemini-3.8-flash", {"reasoning_effort": "medium"}),
        ("claude-opus-5", {"thinking": {"type": "adaptive"}}),
        ("claude-sonnet-5", {"thinking": {"type": "adaptive"}}),
        ("kimi-k3", {}),
        ("mimesis-9b", {}),
    ],
)
def test_hosted_users_ask_for_the_papers_reasoning_setting(monkeypatch, alias, reasoning):
    monkeypatch.setenv(alias_variable(alias, "BASE_URL"), "https://gateway.example/v1")
    assert resolve_user(alias).endpoint.extra_body == reasoning


def test_the_reasoning_setting_reaches_the_request_and_can_be_overridden_or_removed(monkeypatch, fault_server):
    monkeypatch.setenv(alias_variable("gpt-5.5", "BASE_URL"), fault_server.base_url)
    monkeypatch.setenv(alias_variable("gpt-5.5", "API_KEY"), "k")
    messages = [{"role": "user", "content": "hi"}]

    def body() -> dict:
        model = make_chat_model("gpt-5.5")
        asyncio.run(model.chat(messages, max_tokens=8, temperature=0.0, seed=1))
        return fault_server.requests[-1]["body"]

    assert body()["reasoning_effort"] == "medium"
    monkeypatch.setenv(alias_variable("gpt-5.5", "EXTRA_BODY"), '{"reasoning_effort": "high"}')
    assert body()["reasoning_effort"] == "high"
    monkeypatch.setenv(alias_variable("gpt-5.5", "EXTRA_BODY"), '{"reasoning_effort": null}')
    assert "reasoning_effort" not in body()


def test_deepseek_training_user_alias_and_its_variables(monkeypatch):
    with pytest.raises(ValueError, match="set MIMESIS_USER_DEEPSEEK_V4_1_FLASH_BASE_URL"):
        resolve_user("deepseek-v4.1-flash")
    monkeypatch.setenv("MIMESIS_USER_DEEPSEEK_V4_1_FLASH_BASE_URL", "https://api.deepseek.example/v1")
    spec = resolve_user("deepseek-v4.1-flash")
    assert (spec.label, spec.endpoint.model) == ("DeepSeek-V4.1-Flash", "deepseek-v4.1-flash")
    assert spec.endpoint.api_key_env == ["MIMESIS_USER_DEEPSEEK_V4_1_FLASH_API_KEY"]


@pytest.mark.parametrize(
    ("spec", "model", "base_url"),
    [
        ("openai:gpt-4o-mini", "gpt-4o-mini", "https://api.openai.com/v1"),
        ("openai:my@model@http://127.0.0.1:9000/v1", "my@model", "http://127.0.0.1:9000/v1"),
        ("openai:Qwen/Qwen3-8B@https://host.example/v1", "Qwen/Qwen3-8B", "https://host.example/v1"),
    ],
)
def test_openai_grammar(spec, model, base_url):
    resolved = resolve_user(spec)
    assert (resolved.kind, resolved.endpoint.model, resolved.endpoint.base_url) == ("http", model, base_url)
    assert resolved.endpoint.api_key_env == ["OPENAI_API_KEY"]


def test_openai_grammar_uses_openai_base_url(monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:7777/v1")
    assert resolve_user("openai:m").endpoint.base_url == "http://127.0.0.1:7777/v1"


def test_hf_and_vllm_grammars(tmp_path):
    local = str(tmp_path)
    assert (resolve_user(f"hf:{local}").kind, resolve_user(f"hf:{local}").model_path) == ("hf", local)
    with pytest.raises(ValueError, match="no model at '/no/such/model'"):
        resolve_user("hf:/no/such/model")
    spec = resolve_user("vllm:org/Model-8B")
    assert (spec.kind, spec.model_path, spec.serve.model, spec.serve.served_model_name) == (
        "vllm",
        "org/Model-8B",
        "org/Model-8B",
        "Model-8B",
    )
    with pytest.raises(ValueError, match="names no model"):
        resolve_user("hf:")


def test_tiny_alias_local_or_over_http(monkeypatch):
    assert resolve_user("tiny").kind == "hf"
    monkeypatch.setenv("MIMESIS_TINY_BASE_URL", "http://127.0.0.1:8123/v1")
    spec = resolve_user("tiny")
    assert (spec.kind, spec.endpoint.base_url, spec.endpoint.model) == ("http", "http://127.0.0.1:8123/v1", "tiny")


def test_user_kwargs_override_the_endpoint():
    model = make_chat_model("mimesis-9b", timeout_s=30, max_retries=1)
    assert isinstance(model, OpenAIChatModel)
    assert (model.config.timeout_s, model.config.max_retries, model.name) == (30, 1, "mimesis-9b")
    with pytest.raises(ValueError, match=r"unknown key.*no_such_field; accepted: api_key_env"):
        make_chat_model("mimesis-9b", no_such_field=1)
    with pytest.raises(ValueError, match="bad user_kwargs"):
        make_chat_model("mimesis-9b", timeout_s=-1)


def test_unknown_alias_lists_the_known_ones():
    with pytest.raises(ValueError, match=r"unknown user alias 'mimesis9b'; known: scripted, human, tiny, mimesis-9b"):
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
    assert resolve_role_models("scripted") == RoleModels()


def test_judge_none_means_the_user_model_judges():
    model = ScriptedChatModel(["x"])
    roles = resolve_role_models(model)
    assert roles.user is model and roles.judge is model and roles.owned == ()


def test_judge_can_be_scripted_or_another_model():
    user, judge = ScriptedChatModel(["x"]), ScriptedChatModel(["y"])
    assert resolve_role_models(user, "scripted").judge is None
    assert resolve_role_models(user, judge).judge is judge


def test_a_human_user_gets_scripted_judges():
    roles = resolve_role_models("human")
    assert roles.user.is_human and roles.judge is None
    assert resolve_role_models("human", judge=ScriptedChatModel(["j"])).judge is not None


def test_registered_alias_builds_owned_models_with_overrides(clean_user_registry):
    built = []

    def factory(**overrides):
        built.append(overrides)
        return ScriptedChatModel(["x"], name="echo")

    register_user("Echo-User", factory, label="Echo")
    assert any(row.alias == "echo-user" for row in list_users())
    roles = resolve_role_models("ECHO-USER", user_kwargs={"timeout_s": 3})
    assert built == [{"timeout_s": 3}]
    assert roles.owned == (roles.user,) and roles.judge is roles.user
    with pytest.raises(ValueError, match="already registered"):
        register_user("echo-user", factory)
    with pytest.raises(ValueError, match="already registered"):
        register_user("mimesis-9b", factory)


def test_factory_must_return_a_chat_model(clean_user_registry):
    register_user("broken", lambda **_: object())
    with pytest.raises(TypeError, match="not a chat model"):
        make_chat_model("broken")


def test_list_users_shows_readiness(monkeypatch):
    for alias in ("ditto-8b", "osim-8b", "humanlm-8b", "sotopia-7b"):
        monkeypatch.delenv(alias_variable(alias, "HUB_ID"), raising=False)
    rows = {row.alias: row for row in list_users()}
    assert rows["scripted"].readiness == "ready"
    assert rows["mimesis-9b"].readiness == "serve it: mimesis-gym serve-user mimesis-9b"
    assert rows["claude-opus-5"].readiness == "set MIMESIS_USER_CLAUDE_OPUS_5_BASE_URL"
    assert rows["gpt-5.5"].readiness == "set MIMESIS_USER_GPT_5_5_API_KEY or OPENAI_API_KEY"
    # the open evaluation users: no hub id pinned, so serving one starts with naming its checkpoint
    assert (
        rows["ditto-8b"].readiness == "set MIMESIS_USER_DITTO_8B_HUB_ID, then serve it: mimesis-gym serve-user ditto-8b"
    )
    for alias in ("osim-8b", "humanlm-8b", "sotopia-7b"):
        assert rows[alias].readiness.startswith(f"set {alias_variable(alias, 'HUB_ID')}, then serve it:")


def test_every_spec_and_lazy_chat_model_pickles(tmp_path):
    local = f"hf:{tmp_path}"
    for alias in ["scripted", "human", "tiny", "mimesis-9b", "gpt-5.5", "openai:x", local, "vllm:o/m"]:
        spec = resolve_user(alias)
        assert pickle.loads(pickle.dumps(spec)) == spec
    for alias in ["human", "tiny", "mimesis-9b", local, *(["vllm:o/m"] if vllm_available() else [])]:
        model = make_chat_model(alias)
        assert type(pickle.loads(pickle.dumps(model))) is type(model)


# ---------------------------------------------------------------- third-party entry points


@pytest.fixture
def thirdparty_distribution(tmp_path, monkeypatch, clean_user_registry):
    """A throwaway installed distribution (a real .dist-info on sys.path) declaring two users."""
    (tmp_path / "acme_users.py").write_text(
        textwrap.dedent("""
        from tests.support.chat_models import ScriptedChatModel

        def make_user(**overrides):
            return ScriptedChatModel(["from acme"], name="acme-" + overrides.get("flavour", "plain"))
    """)
    )
    info = tmp_path / "acme_users-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-users\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        "[mimesis_gym.users]\nacme = acme_users:make_user\nacme-broken = acme_missing_module:factory\n"
        "mimesis-9b = acme_users:make_user\n"
    )
    (info / "RECORD").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    with clean_user_registry.scoped_user_registry(reread_entry_points=True):
        yield
    sys.modules.pop("acme_users", None)


def test_entry_point_users_are_loaded_lazily(thirdparty_distribution, caplog):
    model = make_chat_model("ACME", flavour="spicy")
    assert model.name == "acme-spicy"
    assert resolve_role_models("acme").user.name == "acme-plain"
    rows = {row.alias: row for row in list_users()}
    assert rows["acme"].description == "from acme-users"
    assert "shadowed by the built-in alias" in caplog.text
    assert resolve_user("mimesis-9b").kind == "http"  # the built-in wins


def test_a_broken_entry_point_fails_only_when_used(thirdparty_distribution):
    assert resolve_user("acme-broken").kind == "custom"
    with pytest.raises(ImportError, match="user alias 'acme-broken' from acme-users failed to import"):
        make_chat_model("acme-broken")


def test_a_scoped_registry_forgets_what_was_registered_inside_it():
    from mimesis_gym.users import registry

    with registry.scoped_user_registry():
        registry.register_user("scoped-only", lambda **kwargs: None)
        assert "scoped-only" in {row.alias for row in registry.list_users()}
    assert "scoped-only" not in {row.alias for row in registry.list_users()}
