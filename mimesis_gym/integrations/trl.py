"""The TRL adapter: any registered env, with any user, in TRL's ``GRPOTrainer`` (docs/integrations.md, "TRL").

``GRPOTrainer(environment_factory=...)`` calls the factory once per concurrent rollout, calls
``reset(**row)`` with each dataset row before generating, exposes every public method of the
instance as a tool, and passes the instances to the reward functions as ``environments``. This
module supplies the three pieces::

    factory = environment_factory("mimesis/TelepathyGym-v0", user="scripted")
    dataset = build_dataset(factory, split="train", limit=64, seeds=[0, 1])
    trainer = GRPOTrainer(model, reward_funcs=reward_function(), train_dataset=dataset,
                          environment_factory=factory, args=GRPOConfig(...))

- :func:`environment_factory` → :class:`EnvironmentFactory`: each call builds one
  :class:`MimesisEnvironment` holding its own env. Its only tool is the env's
  ``interact_with_env(choice, content)``; the method's docstring is generated from the env's tool
  schema, so the tool schema TRL renders into the prompt is the env's own (choices, descriptions).
- :func:`build_dataset`: one row per (task, seed) of a split, columns ``prompt`` (the env's system
  prompt and an empty user message, which TRL completes with the opening observation that
  ``reset`` returns), ``task_id``, ``seed`` and optionally ``environment`` (TRL's multi-env routing).
- :func:`reward_function`: per completion the env's ``episode_score`` or the summed turn rewards.

This module imports neither ``trl`` nor ``torch``; :func:`build_dataset` imports ``datasets``
(extra ``trl``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from typing import Any, Literal

from mimesis_gym.core.errors import ConfigurationError
from mimesis_gym.integrations.episode import EnvRecipe, ToolEpisode

__all__ = [
    "EnvironmentFactory",
    "MimesisEnvironment",
    "build_dataset",
    "environment_factory",
    "reward_function",
    "tool_docstring",
]

RewardKind = Literal["episode_score", "turn_rewards"]
UserFailureMode = Literal["skip", "score"]


def tool_docstring(schema: dict[str, Any]) -> str:
    """A Google-style docstring from which ``transformers.utils.get_json_schema`` rebuilds ``schema``.

    ``schema`` is an ``interact_with_env`` tool (``mimesis_gym.core.actions.interact_with_env_tool``).
    """
    function = schema["function"]
    properties = function["parameters"]["properties"]
    choice, content = properties["choice"], properties["content"]
    return (
        f"{function['description']}\n\n"
        "Args:\n"
        f"    choice: {choice['description']} (choices: {json.dumps(choice['enum'])})\n"
        f"    content: {content['description']}\n"
    )


class MimesisEnvironment:
    """One env in TRL's rollouts: ``reset(**row)`` starts an episode, ``interact_with_env`` steps it.

    TRL turns every public method of the class into a tool, so the class has none besides
    ``reset`` and the tool (state is read through :attr:`episode`). The concrete class of an env is
    made by :class:`EnvironmentFactory`, which adds ``interact_with_env`` with the env's own docstring.
    """

    def __init__(self, episode: ToolEpisode) -> None:
        self._episode = episode

    @property
    def episode(self) -> ToolEpisode:
        """The episode: task, seed, actions, observations, rewards, score, end state, user failures."""
        return self._episode

    def reset(self, **row: Any) -> str:
        """Start the episode of a dataset row (``task_id``, ``seed``; other columns are ignored).

        Returns the opening observation, which TRL appends to the prompt's last user message.
        """
        missing = [column for column in ("task_id", "seed") if column not in row]
        if missing:
            raise ConfigurationError(
                f"the dataset row has no {' and no '.join(missing)} column (columns: {sorted(row)}); "
                "build the dataset with mimesis_gym.integrations.trl.build_dataset"
            )
        return self._episode.start(row["task_id"], int(row["seed"]))


def _tool_method(schema: dict[str, Any]) -> Callable[..., str]:
    # ``self`` and the return value have no annotation: get_json_schema reads every hint, and the
    # schema TRL renders should be exactly the env's own schema (no "return" entry).
    def interact_with_env(self, choice: str, content: str):
        return self._episode.act(choice, content)

    interact_with_env.__doc__ = tool_docstring(schema)
    return interact_with_env


class EnvironmentFactory:
    """The ``environment_factory`` of ``GRPOTrainer``: each call returns a new :class:`MimesisEnvironment`.

    The recipe is checked and one env is built at construction (an unknown id, alias or kwarg fails
    here); that env serves the first call. :meth:`close` closes every env the factory made.
    """

    def __init__(self, recipe: EnvRecipe) -> None:
        self.recipe = recipe
        first = ToolEpisode(recipe)
        self.tool_schema: dict[str, Any] = first.schema
        """The env's ``interact_with_env`` schema, as TRL renders it into prompts."""
        name = re.sub(r"\W", "_", recipe.env_id.rpartition(":")[2].rpartition("/")[2])
        self.environment_class: type[MimesisEnvironment] = type(
            name,
            (MimesisEnvironment,),
            {
                "__module__": __name__,
                "__doc__": f"{recipe.env_id} in TRL's rollouts (see MimesisEnvironment).",
                "interact_with_env": _tool_method(self.tool_schema),
            },
        )
        self._spare: ToolEpisode | None = first
        self.environments: list[MimesisEnvironment] = []
        """Every environment made so far (TRL keeps them in a pool and resets them)."""

    def __call__(self) -> MimesisEnvironment:
        episode, self._spare = self._spare or ToolEpisode(self.recipe), None
        environment = self.environment_class(episode)
        self.environments.append(environment)
        return environment

    def close(self) -> None:
        """Close the env of every environment made (and the unused first one); idempotent."""
        for environment in self.environments:
            environment.episode.close()
        if self._spare is not None:
            self._spare.close()


def environment_factory(
    env_id: str, *, user: Any = "scripted", max_episode_steps: int | None = None, **env_kwargs: Any
) -> EnvironmentFactory:
    """The factory for ``GRPOTrainer(environment_factory=...)``: ``env_id`` with ``user`` and ``env_kwargs``.

    ``env_kwargs`` go to ``gym.make`` (``split``, ``reward_profile``, ``judge``, ``pack``, …); the
    split of the env only matters for tasks drawn without an id, and every dataset row names one.
    """
    return EnvironmentFactory(
        EnvRecipe(env_id=env_id, user=user, env_kwargs=env_kwargs, max_episode_steps=max_episode_steps)
    )


def build_dataset(
    env: str | EnvironmentFactory,
    *,
    split: str = "train",
    limit: int | None = None,
    seeds: Sequence[int] = (0,),
    environment: str | None = None,
    **env_kwargs: Any,
) -> Any:
    """The ``datasets.Dataset`` of prompts for an env: one row per task of ``split`` and seed.

    ``env`` is an env id (built with ``env_kwargs``) or the :class:`EnvironmentFactory` used for
    training (its kwargs shape the system prompt, e.g. ``prompt_set``). Tasks come in the pack's
    order, the first ``limit`` of them; the rows of a task follow ``seeds`` in order. Columns:
    ``prompt`` (``[system prompt, empty user message]``: TRL appends the opening observation
    returned by ``reset``), ``task_id``, ``seed`` and, when ``environment`` is given, ``environment``
    (the key of the env's factory in a dict passed to ``environment_factory``). One env of the
    recipe is reset once per task to read its system prompt (no shipped env calls its user or judge
    to open an episode); no privileged text enters the prompts.
    """
    from datasets import Dataset

    if isinstance(env, EnvironmentFactory):
        if env_kwargs:
            raise ConfigurationError(
                f"build_dataset got a factory and env kwargs {sorted(env_kwargs)}: the factory's own kwargs apply"
            )
        recipe = env.recipe
    else:
        recipe = EnvRecipe(env_id=env, env_kwargs=env_kwargs)
    if limit is not None and limit < 1:
        raise ConfigurationError(f"limit must be a positive int or None; got {limit!r}")
    seeds = list(seeds)
    if not seeds or any(isinstance(seed, bool) or not isinstance(seed, int) for seed in seeds):
        raise ConfigurationError(f"seeds must be a non-empty sequence of ints; got {seeds!r}")
    episode = ToolEpisode(recipe)
    try:
        tasks = episode.env.unwrapped.task_pack.pool(split)
        rows: dict[str, list[Any]] = {"prompt": [], "task_id": [], "seed": []}
        for task in tasks[:limit]:
            episode.start(task.id, seeds[0])
            prompt = [{"role": "system", "content": episode.system_prompt}, {"role": "user", "content": ""}]
            for seed in seeds:
                rows["prompt"].append(prompt)
                rows["task_id"].append(task.id)
                rows["seed"].append(seed)
    finally:
        episode.close()
    if environment is not None:
        rows["environment"] = [environment] * len(rows["task_id"])
    return Dataset.from_dict(rows)


def reward_function(
    kind: RewardKind = "episode_score", *, user_failures: UserFailureMode = "skip"
) -> Callable[..., list[float | None]]:
    """A reward function for ``GRPOTrainer(reward_funcs=...)`` reading each completion's environment.

    ``kind="episode_score"``: the env's ``info["episode_score"]`` at the end of the rollout (the
    paper's episode score); ``"turn_rewards"``: the sum of the turn rewards (the same for envs scored
    by their sum; TravelGym keeps each aspect's best). ``user_failures="skip"`` returns ``None`` for
    an episode with a user failure (TRL leaves it out of the group baseline and gives it advantage
    0); ``"score"`` scores it like any other. Environments that are not :class:`MimesisEnvironment`
    get ``None``. An episode whose reset or step raised (an unavailable user) raises here, so the
    trainer stops with that error instead of training on it. Logs ``mimesis/user_failure_frac``,
    ``mimesis/ended_frac`` and ``mimesis/turns_mean`` through TRL's ``log_metric``.
    """
    if kind not in ("episode_score", "turn_rewards"):
        raise ConfigurationError(f"kind must be 'episode_score' or 'turn_rewards'; got {kind!r}")
    if user_failures not in ("skip", "score"):
        raise ConfigurationError(f"user_failures must be 'skip' or 'score'; got {user_failures!r}")

    def reward(completions: list[Any], environments: Sequence[Any] | None = None, **kwargs: Any) -> list[float | None]:
        if environments is None:
            raise ConfigurationError(
                "the mimesis reward function needs TRL's environments: pass environment_factory= to GRPOTrainer"
            )
        episodes = [env.episode for env in environments if isinstance(env, MimesisEnvironment)]
        for episode in episodes:
            if episode.error is not None:
                raise RuntimeError(
                    f"{episode.recipe.env_id} task {episode.task_id!r} (seed {episode.seed}) failed: {episode.error}"
                ) from episode.error
        rewards: list[float | None] = []
        for env in environments:
            ours = isinstance(env, MimesisEnvironment)
            if not ours or (user_failures == "skip" and env.episode.user_failures):
                rewards.append(None)
            else:
                rewards.append(env.episode.episode_score if kind == "episode_score" else env.episode.reward_sum)
        log_metric = kwargs.get("log_metric")
        if log_metric is not None and episodes:
            log_metric("mimesis/user_failure_frac", sum(bool(e.user_failures) for e in episodes) / len(episodes))
            log_metric("mimesis/ended_frac", sum(e.done for e in episodes) / len(episodes))
            log_metric("mimesis/turns_mean", sum(len(e.actions) for e in episodes) / len(episodes))
        return rewards

    reward.__name__ = f"mimesis_{kind}"
    reward.__qualname__ = reward.__name__
    return reward
