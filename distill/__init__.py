"""Online policy distillation (OPD): the policy interface, KL losses, alpha schedules and teachers.

Imports torch and nothing else of ours; the LLM plumbing lives in :mod:`distill.llm`.
"""
