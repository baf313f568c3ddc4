"""Which teacher ``distill.name=<name>`` needs what (:data:`TEACHERS`), and the proposer and verifier choices.

Everything that depends on the kind of teacher (the config checks, :mod:`agents.teachers` that builds them, the
training run) reads this table, so this module imports nothing; :mod:`agents.teachers` describes the teachers.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class TeacherKind:
    """What the teacher ``distill.name=<name>`` needs.

    Args:
        name: the ``configs/distill/<name>.yaml`` name.
        controller: a scripted controller of the env's family acts beside the student (its actions travel in
            the student's buffer; the env needs a controller family, and SAC cannot relabel with HER).
        adaptive: a proposer (``distill.proposer``) adapts the controller's parameters; those of
            :data:`LLM_PROPOSERS` need an ``llm`` channel config.
        reads_run: the teacher is another run's saved policy (``distill.teacher``).
        stage: it may be a stage of ``distill=sequence`` (``distill.stages[i].name``; :data:`STAGE_TEACHERS`).

    ``sequence`` lists teachers in ``distill.stages`` (:mod:`agents.teachers.stages`): what it needs is what its
    stages' teachers need.
    """

    name: str
    controller: bool = False
    adaptive: bool = False
    reads_run: bool = False
    stage: bool = False


TEACHERS: dict[str, TeacherKind] = {kind.name: kind for kind in (
    TeacherKind("none"),
    TeacherKind("ema", stage=True),
    TeacherKind("checkpoint", reads_run=True, stage=True),
    TeacherKind("scripted", controller=True, stage=True),
    TeacherKind("adaptive", controller=True, adaptive=True),
    TeacherKind("sequence"),
)}
STAGE_TEACHERS = tuple(name for name, kind in TEACHERS.items() if kind.stage)  # in TEACHERS' order

# old distill.name -> its name now: a saved run's config.yaml that names a teacher by its old name is read with the new
# one (with a message); a command line is refused, naming the new one (one name per concept)
RENAMED_TEACHERS = {"llm_hint": "adaptive"}
# (old name, source) pairs already said: a command reads a run's config more than once (the check before Hydra starts,
# then the run), and it is said once
_told: set[tuple[str, str]] = set()


def renamed_teacher(distill: Any, source: str) -> None:
    """Give a saved run's ``distill`` config section that names a teacher by its old name (:data:`RENAMED_TEACHERS`)
    the new name, saying so in one line on stderr once per process and ``source`` (the run's config file); leave any
    other alone."""
    old = distill.get("name")
    new = RENAMED_TEACHERS.get(old)
    if new is None:
        return
    if (old, source) not in _told:
        _told.add((old, source))
        print(f"warning: {source} names distill={old}, the old name of distill={new} (the same teacher; "
              f"distill.proposer says whether an LLM proposes): read as distill={new}", file=sys.stderr)
    distill.name = new


def old_name_refusal(key: str, name: str) -> str | None:
    """The refusal of ``<key>=<name>`` on a command line (``distill`` or ``distill.name``) when ``name`` is an old name
    of a teacher (:data:`RENAMED_TEACHERS`), naming the new one; None for any other name."""
    new = RENAMED_TEACHERS.get(name)
    if new is None:
        return None
    return (f"{key}={name} is the old name of distill={new} (the same teacher; distill.proposer says whether an LLM "
            f"proposes): use distill={new}")

# distill.proposer: where the adaptive teacher's parameters come from (agents.teachers.adaptive builds them): the
# llm channel as configured (llm=...), the bundled offline coach whatever llm says, uniform random search, CMA-ES,
# and CMA-ES seeded by the llm channel's first proposal per context. Those named in LLM_PROPOSERS open a channel.
PROPOSERS = ("llm", "coach", "random", "cma", "llm_cma")
LLM_PROPOSERS = ("llm", "llm_cma")
# distill.verify_on: what the verifier replays for a proposal: episodes of its task context, seeded by the verifier
# (the parameters serve the whole context), or the episode start of the segment it was asked about.
VERIFY_ON = ("context", "segment")
