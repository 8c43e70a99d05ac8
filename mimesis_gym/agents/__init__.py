"""Agent policies for rollouts and evaluation (docs/evaluation.md, "Agents")."""

from mimesis_gym.agents.base import Agent, AgentTurn, Conversation
from mimesis_gym.agents.oracle import OracleAgent, run_oracle_episode
from mimesis_gym.agents.registry import make_agent

__all__ = ["Agent", "AgentTurn", "Conversation", "OracleAgent", "make_agent", "run_oracle_episode"]
