"""Evaluation: the env contract suite (and, later, the async episode runner and scoring reports)."""
