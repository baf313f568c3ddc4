"""Teachers in sequence: one teacher after another over a run, each with its own alpha schedule.

A :class:`TeachingStage` teaches over a span ``[start, end)`` of the run with an alpha schedule over its own span
(0 where it starts, 1 where it ends); a :class:`TeacherSequence` holds the stages in order, contiguous from 0. The
spans are whole env steps of a run of ``total_steps`` env steps: the progress a learner passes (0 at the first
update, 1 at the end of the run; SB3's ``1 - (1 - n / total)``, a float a few ulps off ``n / total``) is read as the
env step ``round(progress * total_steps)`` and compared with the stages' steps as integers, so a stage ends exactly
at its last env step. A sequence built without ``total_steps`` counts in progress itself (a run of 1): a single
teacher is a sequence of one stage over ``[0, 1]``, whose alpha is its schedule's at the run's progress (``(p - 0) /
(1 - 0) == p``, bit for bit). After a last stage that ends before the run does, alpha is 0: RL alone.

The stage that teaches is a function of the progress alone, so a run resumed mid-sequence continues in the
stage it was in; what a stage's teacher learns (the EMA teacher's weights) travels in :meth:`TeacherSequence.state_dict`.
A stage's teacher is told when its stage starts (:meth:`~distill.teachers.Teacher.begin`: the EMA teacher starts
from the student's weights then) and gets the optimiser steps only while it teaches.
"""

from __future__ import annotations

from dataclasses import dataclass

from distill.policy import Observation
from distill.schedules import AlphaSchedule
from distill.teachers import Teacher, TeacherActions, TeacherTargets


@dataclass(frozen=True)
class TeachingStage:
    """``teacher`` teaches over ``[start, end)`` (env steps, or progress in a sequence without ``total_steps``) with
    ``schedule`` (alpha over the stage's own progress in [0, 1]); ``label`` names its statistics and its state.
    ``rl_weight`` weighs the learner's RL actor loss while the stage teaches (1: RL plus distillation; 0: pure distillation, rsl_rl's recipe
    with this project's KL; the critic learns either way)."""

    label: str
    teacher: Teacher
    schedule: AlphaSchedule
    start: float = 0.0
    end: float = 1.0
    rl_weight: float = 1.0

    def alpha(self, at: float) -> float:
        """alpha at position ``at`` of the run inside the stage (its schedule at ``(at - start) / (end - start)``)."""
        return self.schedule((at - self.start) / (self.end - self.start))


class TeacherSequence(Teacher):
    """The stages in order; at progress ``p`` the stage whose span holds it teaches (the first one before 0, a stage
    ending at the run's end after it; none after a last stage ending earlier). ``total_steps``: the run's env steps,
    the unit of the stages' spans (whole numbers); None: the spans are progress (the run ends at 1)."""

    def __init__(self, stages: list[TeachingStage], total_steps: int | None = None) -> None:
        if not stages:
            raise ValueError("a teacher sequence needs at least one stage")
        labels = [stage.label for stage in stages]
        if len(set(labels)) != len(labels):
            raise ValueError(f"the stages' labels {labels} repeat; give each stage its own")
        if stages[0].start != 0 or any(a.end != b.start for a, b in zip(stages, stages[1:])):
            raise ValueError("the stages must follow one another from 0, each starting where the last ended")
        self.run_end = 1.0 if total_steps is None else total_steps
        if any(not stage.start < stage.end <= self.run_end for stage in stages):
            raise ValueError(f"every stage must end after it starts, at the run's end ({self.run_end}) at the latest")
        if total_steps is not None and not all(type(x) is int for s in stages for x in (s.start, s.end)):
            raise ValueError(f"the stages' spans must be whole env steps of the run of total_steps={total_steps}")
        self.total_steps = total_steps
        self.stages = list(stages)
        self.needs_raw_obs = any(stage.teacher.needs_raw_obs for stage in stages)
        self.needs_teacher_actions = any(stage.teacher.needs_teacher_actions for stage in stages)
        self.current = 0  # the stage that taught last (it gets the optimiser steps)
        self.begun = 0  # stages 0 .. begun have started (the first one with the run)

    @classmethod
    def alone(cls, teacher: Teacher, schedule: AlphaSchedule, rl_weight: float = 1.0) -> TeacherSequence:
        """``teacher`` alone over the whole run: one stage, labelled ``teacher``, over progress ``[0, 1]``."""
        return cls([TeachingStage("teacher", teacher, schedule, rl_weight=rl_weight)])

    def at(self, progress: float) -> float:
        """The position of training ``progress`` in the stages' unit: the env step ``round(progress * total_steps)``
        (a whole number), or the progress itself in a sequence without ``total_steps``."""
        return progress if self.total_steps is None else round(progress * self.total_steps)

    def index_at(self, progress: float) -> int | None:
        """The index of the stage teaching at ``progress``, or None after a last stage that ended."""
        at = self.at(progress)
        index = max([i for i, stage in enumerate(self.stages) if stage.start <= at] or [0])
        last = self.stages[index]
        return None if index == len(self.stages) - 1 and last.end < self.run_end and at >= last.end else index

    def alpha(self, progress: float) -> float:
        """alpha at training ``progress``: the teaching stage's, 0 when none teaches."""
        index = self.index_at(progress)
        return 0.0 if index is None else self.stages[index].alpha(self.at(progress))

    def rl_weight(self, progress: float) -> float:
        """The RL actor loss's weight at training ``progress``: the teaching stage's, 1 when none teaches."""
        index = self.index_at(progress)
        return 1.0 if index is None else self.stages[index].rl_weight

    def finished(self, progress: float, stage: str | None = None) -> bool:
        """Whether alpha stays 0 from ``progress`` to the end of training: the whole sequence's, or stage ``stage``'s
        (by label). Every schedule is monotone, so 0 now and at a stage's end means 0 in between."""
        index, at = self.index_at(progress), self.at(progress)
        for i, s in enumerate(self.stages):
            if stage is not None and s.label != stage or index is None or i < index:
                continue
            if s.schedule(1.0) != 0.0 or (s.schedule(0.0) if i > index else s.alpha(at)) != 0.0:
                return False
        return True

    def select(self, progress: float) -> TeachingStage:
        """The stage teaching at ``progress`` (the last one after the sequence ended), started if it had not."""
        index = self.index_at(progress)
        self.current = len(self.stages) - 1 if index is None else index
        while self.begun < self.current:
            self.begun += 1
            self.stages[self.begun].teacher.begin()
        return self.stages[self.current]

    def targets(self, obs: Observation, raw_obs: Observation | None = None,
                teacher_actions: TeacherActions | None = None) -> TeacherTargets:
        return self.stages[self.current].teacher.targets(obs, raw_obs, teacher_actions)

    def after_optimizer_step(self) -> None:
        self.stages[self.current].teacher.after_optimizer_step()

    def state_dict(self) -> dict:
        """The stages started so far and the state of each stage's teacher that learns (by stage label)."""
        return {"begun": self.begun, "stages": {stage.label: stage.teacher.state_dict() for stage in self.stages
                                                 if hasattr(stage.teacher, "state_dict")}}

    def load_state_dict(self, state: dict) -> None:
        """:meth:`state_dict`'s state; or, for a sequence of one stage, the state of its teacher alone (what a
        checkpoint of a single teacher saved before every teacher was a sequence)."""
        if "stages" not in state and len(self.stages) == 1:
            state = {"begun": 0, "stages": {self.stages[0].label: state}}
        self.begun = int(state["begun"])
        for stage in self.stages:
            if stage.label in state["stages"]:
                stage.teacher.load_state_dict(state["stages"][stage.label])
