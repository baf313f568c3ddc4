"""Which teacher ``distill.name=<name>`` needs what (:data:`TEACHERS`), and the proposer and verifier choices.

Everything that depends on the kind of teacher (the config checks, :mod:`agents.teachers` that builds them, the
training run) reads this table, so this module imports nothing; :mod:`agents.teachers` describes the teachers.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TeacherKind:
    """What the teacher ``distill.name=<name>`` needs.

    Args:
        name: the ``configs/distill/<name>.yaml`` name.
        controller: a scripted controller of the env's family acts beside the student (its actions travel in
            the student's buffer; the env needs a controller family, and SAC cannot relabel with HER).
        llm: the controller's parameters come from LLM hints (needs an ``llm`` channel config).
        reads_run: the teacher is another run's saved policy (``distill.teacher``).
    """

    name: str
    controller: bool = False
    llm: bool = False
    reads_run: bool = False


TEACHERS: dict[str, TeacherKind] = {kind.name: kind for kind in (
    TeacherKind("none"),
    TeacherKind("ema"),
    TeacherKind("checkpoint", reads_run=True),
    TeacherKind("scripted", controller=True),
    TeacherKind("llm_hint", controller=True, llm=True),
)}

# distill.proposer: where the llm_hint teacher's parameters come from (agents.teachers.hinted builds them): the
# llm channel as configured (llm=...), the bundled offline coach whatever llm says, uniform random search, CMA-ES,
# and CMA-ES seeded by the llm channel's first proposal per context. Those named in LLM_PROPOSERS open a channel.
PROPOSERS = ("llm", "coach", "random", "cma", "llm_cma")
LLM_PROPOSERS = ("llm", "llm_cma")
# distill.verify_on: what the verifier replays for a proposal: episodes of its task context, seeded by the verifier
# (the parameters serve the whole context), or the episode start of the segment it was asked about.
VERIFY_ON = ("context", "segment")
