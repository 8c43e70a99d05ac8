"""The verl agent loop ``mimesis_agent``: one env episode per trajectory (docs/integrations.md, "verl").

verl 0.9's ``ToolAgentLoop`` creates and releases a tool instance around every call, so a stateful
tool loses its episode between turns. :class:`MimesisAgentLoop` is that loop with the episode kept
for the whole trajectory: before generating it creates the episode of the row's
``tools_kwargs.interact_with_env.create_kwargs`` on the :class:`~mimesis_gym.integrations.verl.MimesisTool`
and puts the live opening observation into the prompt's last user message; every
``interact_with_env`` call steps that episode; the trajectory ends when the env terminates or
truncates (or the model stops calling the tool, or verl's length and turn limits end it); the
trajectory's ``reward_score`` is the tool's ``calc_reward`` (verl then skips its reward function);
``extra_fields`` carry ``mimesis_episode_score``, ``mimesis_turns``, ``mimesis_ended`` and
``mimesis_user_failure``. An episode whose reset or step raised (an unavailable user) raises here,
so training stops with that error instead of learning from it. Other tools of the run are called
as ``ToolAgentLoop`` calls them.

Register it with verl through the ``agent_loop.yaml`` that ``mimesis-gym verl-data`` writes
(``actor_rollout_ref.rollout.agent.agent_loop_config_path``); importing this module registers it too.
"""

from __future__ import annotations

import json
from typing import Any
from uuid import uuid4

from verl.experimental.agent_loop.agent_loop import AgentLoopOutput, register
from verl.experimental.agent_loop.tool_agent_loop import AgentData, AgentState, ToolAgentLoop
from verl.tools.schemas import ToolResponse

from mimesis_gym.core.errors import ConfigurationError
from mimesis_gym.integrations.episode import TOOL_NAME
from mimesis_gym.integrations.verl import MimesisTool
from mimesis_gym.integrations.verl_data import AGENT_LOOP_NAME

__all__ = ["MimesisAgentLoop"]


@register(AGENT_LOOP_NAME)
class MimesisAgentLoop(ToolAgentLoop):
    """verl's ``ToolAgentLoop`` with one env episode held for the trajectory (see the module docstring)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        tool = self.tools.get(TOOL_NAME)
        if not isinstance(tool, MimesisTool):
            raise ConfigurationError(
                f"the agent loop {AGENT_LOOP_NAME!r} needs the tool {TOOL_NAME!r} of class "
                f"mimesis_gym.integrations.verl.MimesisTool in the tool config (got {type(tool).__name__}); "
                "pass the tool_config.yaml that mimesis-gym verl-data writes as multi_turn.tool_config_path"
            )
        self.mimesis_tool: MimesisTool = tool
        self.instance_id: str | None = None

    async def run(self, sampling_params: dict[str, Any], priority: int = 0, **kwargs: Any) -> AgentLoopOutput:
        tools_kwargs = kwargs.get("tools_kwargs") or {}
        create_kwargs = (tools_kwargs.get(TOOL_NAME) or {}).get("create_kwargs")
        if not create_kwargs:
            raise ConfigurationError(
                f"the row has no extra_info.tools_kwargs.{TOOL_NAME}.create_kwargs (env_id, task_id, seed); "
                "write the data with mimesis-gym verl-data"
            )
        instance_id = uuid4().hex
        _, opening = await self.mimesis_tool.create(instance_id, create_kwargs=dict(create_kwargs))
        self.instance_id = instance_id
        try:
            prompt = [dict(message) for message in kwargs["raw_prompt"]]
            if not prompt or prompt[-1].get("role") != "user":
                raise ConfigurationError("the row's prompt must end with the user message holding the observation")
            prompt[-1]["content"] = opening.text
            output = await super().run(sampling_params, priority, **{**kwargs, "raw_prompt": prompt})
            episode = self.mimesis_tool.episode(instance_id)
            if episode.error is not None:
                raise RuntimeError(
                    f"{episode.recipe.env_id} task {episode.task_id!r} (seed {episode.seed}) failed: {episode.error}"
                ) from episode.error
            output.reward_score = await self.mimesis_tool.calc_reward(instance_id)
            output.extra_fields.update(
                {
                    "mimesis_episode_score": episode.episode_score,
                    "mimesis_turns": len(episode.actions),
                    "mimesis_ended": episode.done,
                    "mimesis_user_failure": bool(episode.user_failures),
                }
            )
            return output
        finally:
            await self.mimesis_tool.release(instance_id)

    async def _handle_processing_tools_state(self, agent_data: AgentData) -> AgentState:
        state = await super()._handle_processing_tools_state(agent_data)
        if self.instance_id is not None and self.mimesis_tool.episode(self.instance_id).done:
            return AgentState.TERMINATED
        return state

    async def _call_tool(
        self, tool_call: Any, tools_kwargs: dict[str, Any], agent_data: AgentData
    ) -> tuple[ToolResponse, float, dict]:
        if tool_call.name != TOOL_NAME or self.instance_id is None:
            return await super()._call_tool(tool_call, tools_kwargs, agent_data)
        try:
            parameters = json.loads(tool_call.arguments)
        except (json.JSONDecodeError, TypeError) as error:
            return ToolResponse(text=f"Invalid JSON in arguments for '{TOOL_NAME}': {error}"), 0.0, {}
        return await self.mimesis_tool.execute(self.instance_id, parameters)
