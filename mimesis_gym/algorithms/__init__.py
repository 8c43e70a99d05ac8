"""Learners that turn the environments into training signal (algorithms.md).

So far: the advantage estimators (``advantages``), the PPO-clip core (``losses``), the CSD gate and
loss (``csd``) and coach-note handling (``coach``). The token-exact collectors and the trainer build
on them.
"""
