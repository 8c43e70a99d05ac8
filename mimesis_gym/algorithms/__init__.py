"""Learners that turn the environments into training signal (algorithms.md).

This package holds the estimators (``advantages``) and the PPO-clip core (``losses``) so far; the
token-exact collectors, CSD and the trainer build on them.
"""
