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

# old distill.name -> its name now: still accepted (a command line, a saved run's config.yaml), with a message
RENAMED_TEACHERS = {"llm_hint": "adaptive"}
# (old name, source) pairs already said: a command reads its config more than once (the check before Hydra starts,
# then the run), and it is said once
_told: set[tuple[str, str]] = set()


def renamed_teacher(distill: Any, source: str) -> None:
    """Give a ``distill`` config section that names a teacher by its old name (:data:`RENAMED_TEACHERS`) the
    new name, saying so in one line on stderr once per process and ``source`` (where the config came from: the
    command line, a run's config file); leave any other alone."""
    old = distill.get("name")
    new = RENAMED_TEACHERS.get(old)
    if new is None:
        return
    if (old, source) not in _told:
        _told.add((old, source))
        print(f"warning: distill={old} is deprecated: it is distill={new} now (the same teacher; "
              "distill.proposer says whether an LLM proposes)", file=sys.stderr)
    distill.name = new


def renamed_recipe(recipe: str) -> str:
    """A ``configs/distill/<recipe>.yaml`` name as it is now (:data:`RENAMED_TEACHERS`: ``llm_hint`` is ``adaptive``)."""
    return RENAMED_TEACHERS.get(recipe, recipe)

# distill.proposer: where the adaptive teacher's parameters come from (agents.teachers.adaptive builds them): the
# llm channel as configured (llm=...), the bundled offline coach whatever llm says, uniform random search, CMA-ES,
# and CMA-ES seeded by the llm channel's first proposal per context. Those named in LLM_PROPOSERS open a channel.
PROPOSERS = ("llm", "coach", "random", "cma", "llm_cma")
LLM_PROPOSERS = ("llm", "llm_cma")
# distill.verify_on: what the verifier replays for a proposal: episodes of its task context, seeded by the verifier
# (the parameters serve the whole context), or the episode start of the segment it was asked about.
VERIFY_ON = ("context", "segment")
