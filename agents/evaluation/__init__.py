"""Evaluation: the rollout protocol, video recording and the ``evaluate.py`` back end.

Never imports :mod:`agents.training`: evaluating a policy does not load the training stack.
"""
