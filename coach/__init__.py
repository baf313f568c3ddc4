"""Adapting a scripted teacher's parameters: who proposes them, how they are checked and where they are kept.

:mod:`coach.proposals` (``ProposalService``: any proposer, asynchronous, verified, under one budget),
:mod:`coach.search` (random search, CMA-ES, LLM-seeded CMA-ES), :mod:`coach.contexts` (``ContextTable``: one
parameter set per task context), :mod:`coach.verifier` (``ShadowVerifier``: a proposal replayed in simulation)
and :mod:`coach.llm` (the LLM channel, the hint protocol, the bundled OpenAI-compatible server and its coaches).

Depends on :mod:`envs` alone (and numpy, gymnasium, ``cma``, ``openai``): nothing of :mod:`distill` (the method)
or :mod:`agents` (which wires it in, :mod:`agents.teachers.adaptive`).
"""
