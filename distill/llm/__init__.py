"""LLM plumbing of the adaptive teacher (its LLM proposers): the unified key channel, the hint protocol,
the asynchronous hint service, the bundled OpenAI-compatible server and its coaches, and
``python -m distill.llm.check``.

The distillation method (:mod:`distill`'s other modules) never imports this package.
"""
