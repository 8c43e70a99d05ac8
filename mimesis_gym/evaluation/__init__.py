"""Evaluation: the env contract suite, the async episode runner, scoring, reports and plots (docs/evaluation.md)."""
