"""Adapters that plug the registered envs into outside RL engines (docs/integrations.md).

``episode`` holds what every adapter shares: :class:`~mimesis_gym.integrations.episode.EnvRecipe`
(an env id, its user and kwargs, checked once) and
:class:`~mimesis_gym.integrations.episode.ToolEpisode` (one env driven through its single tool
``interact_with_env(choice, content)``, started from a task id and a seed). Each engine has its own
module behind its own extra; importing this package imports none of them:

- ``trl``: Hugging Face TRL's ``GRPOTrainer`` (extra ``trl``): an environment factory, the dataset
  of prompts, the reward function.
- ``openenv`` and ``openenv_server``: OpenEnv (extra ``openenv``): the env as an OpenEnv
  environment, its client, and the server of ``mimesis-gym serve-env``.
- ``verl``, ``verl_agent_loop``, ``verl_data``: verl (extra ``verl``): the env as a verl tool, the
  agent loop ``mimesis_agent`` holding one episode per trajectory, and the parquet prompts and YAML
  configs that ``mimesis-gym verl-data`` writes (``verl_data`` imports no verl).
"""
