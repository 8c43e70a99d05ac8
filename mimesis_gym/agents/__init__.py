"""Agent policies for rollouts and evaluation (evaluation.md §3)."""

from mimesis_gym.agents.oracle import OracleAgent, run_oracle_episode

__all__ = ["OracleAgent", "run_oracle_episode"]
