"""Teachers: where the distillation targets come from.

Every teacher answers :meth:`Teacher.targets` with a :class:`TeacherTargets` — a diagonal Gaussian
per sample and a per-sample weight (0 masks the sample: no target, never a guess). Teachers are
evaluated under ``torch.no_grad()``: they only provide targets.

* :class:`EMATeacher` — an exponential moving average of the student's weights.
* :class:`CheckpointTeacher` — a saved policy with its own observation preprocessing; it may read
  observations the student does not see (privileged teacher -> student), and may teach only where the weights
  recorded with the samples say (a mask of the episodes it knows).
* :class:`RecordedActionTeacher` — a teacher's actions recorded with each sample when it was collected
  (:class:`TeacherActions`: a scripted controller's action, driven by its default or adapted parameters,
  and a weight that masks samples without accepted parameters).
"""

from __future__ import annotations

import copy
import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from distill.policy import DiagGaussian, Observation, PolicyEntry


@dataclass(frozen=True)
class TeacherTargets:
    """Targets for a batch: ``dist`` (mean, log_std) and ``weight`` of shape (batch,), 0 = masked;
    ``squashed``: ``dist`` is over pre-tanh actions (a SAC teacher's)."""

    dist: DiagGaussian
    weight: torch.Tensor
    squashed: bool = False

    @property
    def actions(self) -> torch.Tensor:
        """The teacher's deterministic action in the env's action units: ``tanh(mean)`` when squashed, else the mean."""
        return torch.tanh(self.dist.mean) if self.squashed else self.dist.mean

    @property
    def coverage(self) -> float:
        """Fraction of samples with a target."""
        return float((self.weight > 0).float().mean()) if self.weight.numel() else 0.0


@dataclass(frozen=True)
class TeacherActions:
    """A teacher's actions on the observations the student's actions were taken on, one per sample:
    ``actions`` (n, action_dim) in the env's action units and ``weights`` (n,), 0 where the teacher had no
    action (the sample is masked). The one type from the teacher that acts to the loss: numpy arrays for one
    collected step (n = n_envs, the acting teacher's ``teacher_actions``), torch tensors for a minibatch
    (n = batch, the minibatch's ``teacher_actions``, :meth:`Teacher.targets`' ``teacher_actions``)."""

    actions: torch.Tensor | np.ndarray
    weights: torch.Tensor | np.ndarray

    def rows(self, index: slice) -> TeacherActions:
        """The actions and weights of rows ``index`` (one minibatch of several gathered together)."""
        return TeacherActions(self.actions[index], self.weights[index])


class Teacher:
    """Interface. ``obs`` is what the student sees; ``raw_obs`` is the un-normalised observation;
    ``teacher_actions`` holds the teacher's actions recorded with the samples."""

    #: True when the teacher wants ``raw_obs`` (its own normalisation, or privileged inputs).
    needs_raw_obs: bool = False
    #: True when the teacher acted when the samples were collected and reads its actions back (``teacher_actions``).
    needs_teacher_actions: bool = False

    def targets(
        self, obs: Observation, raw_obs: Observation | None = None, teacher_actions: TeacherActions | None = None
    ) -> TeacherTargets:
        raise NotImplementedError

    def after_optimizer_step(self) -> None:
        """Called once after each student optimiser step (the EMA teacher updates here)."""

    def begin(self) -> None:
        """Called when the teacher's stage of a :class:`~distill.sequence.TeacherSequence` starts teaching (not for
        the first stage, which starts with the run)."""


def _unit_weights(dist: DiagGaussian) -> torch.Tensor:
    """Weight 1 for each sample of the batch ``dist`` is the teacher's distribution of."""
    return torch.ones(dist.mean.shape[0], device=dist.mean.device)


class EMATeacher(Teacher):
    """Exponential moving average of the student's parameters: theta_T <- d * theta_T + (1 - d) * theta_S.

    Args:
        student: the student's policy entry (module and distribution function).
        decay: d in [0, 1); larger is slower.
        update_every: update after every k-th optimiser step.
        condition: optional callable; when it returns False the update is skipped (e.g. "only if the
            latest evaluation did not get worse").
    """

    def __init__(
        self,
        student: PolicyEntry,
        decay: float = 0.995,
        update_every: int = 1,
        condition: Callable[[], bool] | None = None,
    ) -> None:
        if not 0.0 <= decay < 1.0:
            raise ValueError(f"EMA decay={decay} must be in [0, 1)")
        if update_every < 1:
            raise ValueError(f"update_every={update_every} must be >= 1")
        self.student = student
        self.entry = dataclasses.replace(student, module=copy.deepcopy(student.module).requires_grad_(False))
        self.decay = decay
        self.update_every = update_every
        self.condition = condition
        self.steps = 0
        self.updates = 0

    def targets(
        self, obs: Observation, raw_obs: Observation | None = None, teacher_actions: TeacherActions | None = None
    ) -> TeacherTargets:
        with torch.no_grad():
            dist = self.entry.distribution(obs).detach()
        return TeacherTargets(dist, _unit_weights(dist), self.entry.squashed)

    def begin(self) -> None:
        """Start from the student's weights as they are now (the EMA anchors what the stages before taught)."""
        self.entry.module.load_state_dict(self.student.module.state_dict())

    def after_optimizer_step(self) -> None:
        self.steps += 1
        if self.steps % self.update_every:
            return
        if self.condition is not None and not self.condition():
            return
        with torch.no_grad():
            for t, s in zip(self.entry.module.parameters(), self.student.module.parameters()):
                t.mul_(self.decay).add_(s, alpha=1.0 - self.decay)
            for t, s in zip(self.entry.module.buffers(), self.student.module.buffers()):
                t.copy_(s)
        self.updates += 1

    def state_dict(self) -> dict:
        return {"module": self.entry.module.state_dict(), "steps": self.steps, "updates": self.updates}

    def load_state_dict(self, state: dict) -> None:
        self.entry.module.load_state_dict(state["module"])
        self.steps, self.updates = state["steps"], state["updates"]


class CheckpointTeacher(Teacher):
    """A frozen, saved policy.

    Args:
        entry: the teacher's module and distribution function.
        preprocess: maps an observation to the teacher's input (its own normalisation, or a
            selection of privileged entries); ``None`` feeds the observation unchanged.
        raw_input: read the raw (un-normalised) observation rather than the student's, e.g. when
            the student normalises its inputs with statistics the teacher never saw.
        masked: weigh each sample by the weight recorded with it (``teacher_actions.weights``: 0 masks it, e.g.
            the samples of tasks the teacher was not trained on); the recorded actions are not read. False: every
            sample has weight 1.
    """

    def __init__(
        self,
        entry: PolicyEntry,
        preprocess: Callable[[Observation], Observation] | None = None,
        raw_input: bool = False,
        masked: bool = False,
    ) -> None:
        entry.module.requires_grad_(False).eval()
        self.entry = entry
        self.preprocess = preprocess
        self.needs_raw_obs = raw_input
        self.needs_teacher_actions = masked

    def targets(
        self, obs: Observation, raw_obs: Observation | None = None, teacher_actions: TeacherActions | None = None
    ) -> TeacherTargets:
        source = obs
        if self.needs_raw_obs:
            if raw_obs is None:
                raise ValueError("this CheckpointTeacher reads raw (un-normalised) observations; none were given")
            source = raw_obs
        if self.preprocess is not None:
            source = self.preprocess(source)
        with torch.no_grad():
            dist = self.entry.distribution(source).detach()
        if not self.needs_teacher_actions:
            weight = _unit_weights(dist)
        elif teacher_actions is None:
            raise ValueError("this CheckpointTeacher is masked by the weights recorded with the samples; none were given")
        else:
            weight = teacher_actions.weights
        return TeacherTargets(dist, weight, self.entry.squashed)


class RecordedActionTeacher(Teacher):
    """A Gaussian of fixed width around the teacher action recorded with each sample, with its weight.

    Args:
        std: the teacher's standard deviation in action units (the KL of an unsquashed, PPO, student; a squashed,
            SAC, student is taught the recorded action itself, :mod:`distill.squashed`, and the width is unused).
    """

    needs_teacher_actions = True

    def __init__(self, std: float) -> None:
        if not std > 0:
            raise ValueError(f"teacher std={std} must be > 0")
        self.log_std = math.log(std)

    def targets(
        self, obs: Observation, raw_obs: Observation | None = None, teacher_actions: TeacherActions | None = None
    ) -> TeacherTargets:
        if teacher_actions is None:
            raise ValueError("this teacher's actions are recorded with the samples; none were given")
        mean = teacher_actions.actions
        return TeacherTargets(DiagGaussian(mean, torch.full_like(mean, self.log_std)), teacher_actions.weights)
