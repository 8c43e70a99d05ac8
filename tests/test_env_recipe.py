"""One way to build a conversation env (mimesis_gym/envs/recipe.py, docs/env-contract.md "Building an env"):
evaluation, training, the adapters and ``play`` build through :class:`EnvRecipe`, under ``TimeLimit`` only."""

from __future__ import annotations

import ast
from pathlib import Path

import gymnasium as gym
import pytest

from mimesis_gym.algorithms import testing as keyword_echo
from mimesis_gym.envs.recipe import EnvRecipe
from mimesis_gym.integrations import episode as adapters

ROOT = Path(__file__).resolve().parents[1]
TELEPATHY = "mimesis/TelepathyGym-v0"

GYM_MAKE_ALLOWED = {
    "mimesis_gym/envs/recipe.py": "the recipe itself",
    "mimesis_gym/evaluation/contract.py": "the contract suite checks gymnasium's own gym.make path",
    "mimesis_gym/envs/telepathy/discrete.py": "a view (not a conversation env) wrapping TelepathyGym",
    "mimesis_gym/cli/explore.py": "`list` makes every table entry, views included, to print its spaces",
}
"""The modules that may call ``gym.make`` themselves, and why; every other construction is a recipe's."""


def wrapper_names(env: gym.Env) -> list[str]:
    names = []
    while isinstance(env, gym.Wrapper):
        names.append(type(env).__name__)
        env = env.env
    return names


def gym_make_callers() -> set[str]:
    """The package modules that call ``gym.make(...)``."""
    found = set()
    for path in sorted((ROOT / "mimesis_gym").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            func = node.func if isinstance(node, ast.Call) else None
            if isinstance(func, ast.Attribute) and func.attr == "make" and getattr(func.value, "id", None) == "gym":
                found.add(path.relative_to(ROOT).as_posix())
    return found


def test_only_the_recipe_and_the_gymnasium_checks_call_gym_make():
    assert gym_make_callers() - set(GYM_MAKE_ALLOWED) == set()


def test_a_recipe_builds_the_env_under_its_time_limit_only():
    env = EnvRecipe(env_id=TELEPATHY, env_kwargs={"split": "demo"}, max_episode_steps=2).build()
    assert wrapper_names(env) == ["TimeLimit"] and env.spec.max_episode_steps == 2
    env.reset(seed=0)
    assert env.step("[action] Is it alive?")[3] is False
    assert env.step("[action] Is it a place?")[3] is True
    env.close()


def test_the_envs_recipe_takes_privileged_and_the_adapters_recipe_refuses_it():
    env = EnvRecipe(env_id=TELEPATHY, env_kwargs={"privileged": True}).build()
    assert env.unwrapped.privileged is True
    env.close()
    with pytest.raises(ValueError, match="never expose privileged information"):
        adapters.EnvRecipe(env_id=TELEPATHY, env_kwargs={"privileged": True})
    assert issubclass(adapters.EnvRecipe, EnvRecipe)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"env_id": "mimesis/TelepathyDiscrete-v0"}, "is not a conversation env.*made with gym.make"),
        ({"env_id": TELEPATHY, "env_kwargs": {"user": "scripted"}}, "pass the user as user="),
        ({"env_id": TELEPATHY, "env_kwargs": {"splitt": "test"}}, "takes no 'splitt'; it takes .*split"),
    ],
)
def test_a_bad_recipe_fails_at_construction(kwargs, message):
    with pytest.raises(ValueError, match=message):
        EnvRecipe(**kwargs)


def test_with_kwargs_lays_kwargs_over_and_checks_them_again():
    judge = object()
    recipe = EnvRecipe(env_id=TELEPATHY, env_kwargs={"split": "demo", "judge": judge})
    again = recipe.with_kwargs(user_behavior="control")
    assert again.env_kwargs == {"split": "demo", "judge": judge, "user_behavior": "control"}
    assert again.env_kwargs["judge"] is judge and recipe.env_kwargs == {"split": "demo", "judge": judge}
    with pytest.raises(ValueError, match="takes no 'nope'"):
        recipe.with_kwargs(nope=1)
    adapter = adapters.EnvRecipe(env_id=TELEPATHY)
    assert type(adapter.with_kwargs(split="demo")) is adapters.EnvRecipe
    with pytest.raises(ValueError, match="never expose privileged information"):
        adapter.with_kwargs(privileged=True)


def test_training_envs_are_built_from_the_recipe():
    pytest.importorskip("torch", reason="the trainer's modules import torch")
    from mimesis_gym.algorithms.config import TrainerConfig
    from mimesis_gym.algorithms.tasks import build_env_specs

    config = TrainerConfig.preset("cpu-tiny")
    (spec,) = build_env_specs(
        [(keyword_echo.ENV_ID, {"user_behavior": "control"})],
        config,
        user_model="scripted",
        train_kwargs={"privileged": True},
    )
    train, validation = spec.factory(), spec.eval_factory(user_behavior="control")
    assert wrapper_names(train) == wrapper_names(validation) == ["TimeLimit"]
    assert train.unwrapped.privileged is True and validation.unwrapped.privileged is False
    assert train.unwrapped.split == validation.unwrapped.split == "train"
    train.close()
    validation.close()
