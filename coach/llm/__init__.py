"""LLM plumbing of the adaptive teacher (its LLM proposers): the unified key channel, the hint protocol,
the asynchronous hint service, the bundled OpenAI-compatible server and its coaches, and
``python -m coach.llm.check``.

Imports nothing of ours but :mod:`coach.proposals`; the distillation method (:mod:`distill`) never imports it.
"""
