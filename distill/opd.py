"""Online policy distillation: ``combined_loss = rl_loss + alpha * distill_loss``.

``distill_loss`` is the KL between teacher and student Gaussians (:mod:`distill.kl`) for a student whose
Gaussian is over the actions (PPO), and the KL between the teacher's action and the squashed student in action
units (:mod:`distill.squashed`, well-posed at the action bounds) for a tanh-squashed student (SAC: its policy
entry is ``squashed``).

:class:`OnlinePolicyDistillation` owns the student's :class:`~distill.policy.PolicyEntry`, the teachers in sequence,
each with its alpha schedule (a :class:`~distill.sequence.TeacherSequence`; one teacher is a sequence of one stage,
:meth:`~distill.sequence.TeacherSequence.alone`), and the KL direction. Learners
call :meth:`~OnlinePolicyDistillation.distill_loss` with a minibatch of observations (and, when the
teacher wants them, the raw observations) and add ``alpha * loss`` to their own loss before the
gradient step, then call :meth:`~OnlinePolicyDistillation.after_optimizer_step` so that an EMA teacher
updates in the order "optimiser step -> teacher update".
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch

from distill.kl import Direction, distillation_kl, weighted_mean
from distill.policy import DiagGaussian, Observation, PolicyEntry
from distill.sequence import TeacherSequence
from distill.squashed import squashed_distillation_loss
from distill.teachers import TeacherActions


class NonFiniteLoss(FloatingPointError):
    """A loss term is NaN or infinite; raised before the gradient step it would poison."""


def check_finite(**terms: torch.Tensor | float) -> None:
    """Raise :class:`NonFiniteLoss` naming the first of ``terms`` (in order) that is NaN or infinite."""
    for name, value in terms.items():
        number = float(value)
        if not math.isfinite(number):
            raise NonFiniteLoss(f"the {name.replace('_', ' ')} is {number} (the first non-finite loss term)")


@dataclass
class DistillStats:
    """Running sums of per-minibatch statistics, averaged by :meth:`means`."""

    sums: dict[str, float] = field(default_factory=dict)
    count: int = 0

    def add(self, values: dict[str, float]) -> None:
        for key, value in values.items():
            self.sums[key] = self.sums.get(key, 0.0) + value
        self.count += 1

    def means(self) -> dict[str, float]:
        return {key: value / self.count for key, value in self.sums.items()} if self.count else {}


class OnlinePolicyDistillation:
    """The distillation term for the policy ``student``, taught by ``teacher``: the stages in order, each with its
    alpha schedule and its weight of the learner's RL actor loss (:meth:`rl_weight`). ``teacher`` is what a
    checkpoint saves (``state_dict``) and a resume restores."""

    def __init__(self, student: PolicyEntry, teacher: TeacherSequence, direction: Direction = "forward") -> None:
        if not isinstance(teacher, TeacherSequence):
            raise TypeError("pass the teachers as a TeacherSequence (one teacher: TeacherSequence.alone(teacher, schedule))")
        self.student = student
        self.teacher = teacher
        self.direction = direction
        self.stats = DistillStats()
        self.stage_stats = {stage.label: DistillStats() for stage in teacher.stages}

    @property
    def needs_raw_obs(self) -> bool:
        return self.teacher.needs_raw_obs

    @property
    def needs_teacher_actions(self) -> bool:
        return self.teacher.needs_teacher_actions

    def alpha(self, progress: float) -> float:
        """alpha at training progress in [0, 1]."""
        return self.teacher.alpha(progress)

    def rl_weight(self, progress: float) -> float:
        """The weight the learner gives its RL actor loss at training ``progress`` (the teaching stage's ``rl_weight``;
        1 after the last stage): ``loss = rl_weight * actor_loss + critic_loss + alpha * distill_loss``."""
        return self.teacher.rl_weight(progress)

    def finished(self, progress: float, stage: str | None = None) -> bool:
        """Whether the teacher has nothing left to teach, so that it can stop acting and computing targets: training
        goes on (``progress`` < 1; a run that ends before its teacher's schedule does taught to the end) and alpha is
        0 from ``progress`` to its end (the schedule ended at 0); with ``stage``, that stage's alpha
        (:meth:`~distill.sequence.TeacherSequence.finished`)."""
        return progress < 1.0 and self.teacher.finished(progress, stage)

    def distill_loss(
        self,
        obs: Observation,
        progress: float,
        raw_obs: Observation | None = None,
        student_dist: DiagGaussian | None = None,
        teacher_actions: TeacherActions | None = None,
    ) -> tuple[torch.Tensor, float]:
        """(weighted loss, alpha) for a minibatch; the caller adds ``alpha * loss`` to its loss. The loss is the
        KL (logged as ``kl``, nats) or, for a squashed student, :func:`distill.squashed.squashed_distillation_loss`
        (``action_kl``, nats).

        ``student_dist`` may be passed when the learner has already computed it (saves a forward
        pass); otherwise it is the student entry's. ``teacher_actions`` are the minibatch's recorded teacher
        actions, for a teacher that acted while the samples were collected.
        """
        alpha = self.alpha(progress)
        stage = self.teacher.select(progress)
        if student_dist is None:
            student_dist = self.student.distribution(obs)
        targets = stage.teacher.targets(obs, raw_obs, teacher_actions)
        entry = self.student
        if entry.squashed:
            name = "action_kl"
            per_sample = squashed_distillation_loss(targets.actions, student_dist, entry.width_log_std)
            teacher_action, student_action = targets.actions, torch.tanh(student_dist.mean)
            teacher_log_std = entry.width_log_std
        else:
            name, per_sample = "kl", distillation_kl(targets.dist, student_dist, self.direction)
            teacher_action, student_action = targets.dist.mean, student_dist.mean
            teacher_log_std = float(targets.dist.log_std.mean())
        loss = weighted_mean(per_sample, targets.weight)
        check_finite(distillation_loss=loss.detach(), alpha=alpha)
        with torch.no_grad():
            values = {
                name: float(loss),
                "alpha": alpha,
                "rl_weight": self.rl_weight(progress),
                "weighted_loss": alpha * float(loss),
                "action_distance": float(weighted_mean((teacher_action - student_action).norm(dim=-1), targets.weight)),
                "teacher_log_std": teacher_log_std,
                "student_log_std": float(student_dist.log_std.mean()),
                "coverage": targets.coverage,
            }
        self.stats.add(values)
        if len(self.teacher.stages) > 1:
            self.stage_stats[stage.label].add(values)
        return loss, alpha

    def after_optimizer_step(self) -> None:
        self.teacher.after_optimizer_step()

    def pop_stats(self) -> dict[str, float]:
        """Means since the last call (for logging under ``distill/``), then reset; with teachers in sequence also
        each stage's that taught, as ``<stage>/<statistic>``."""
        means = self.stats.means()
        for name, stats in self.stage_stats.items():
            means.update({f"{name}/{key}": value for key, value in stats.means().items()})
            self.stage_stats[name] = DistillStats()
        self.stats = DistillStats()
        return means
