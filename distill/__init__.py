"""Online policy distillation (OPD): the policy interface, KL losses, alpha schedules and teachers.

Imports torch and nothing of ours; adapting a scripted teacher's parameters (proposers, the LLM channel, the
verifier) is :mod:`coach`'s.
"""
