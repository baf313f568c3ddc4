"""The buffer extension that stores a teacher's actions with every sample, for PPO and SAC alike.

A teacher that acts while samples are collected (an :class:`ActingTeacher`: the scripted-controller teacher,
:class:`agents.teachers.controller.ControllerTeacher`) acts on the observations the student acts on. One path
carries its actions, under one name, from the teacher to the loss:

1. the teacher's ``teacher_actions`` (:class:`distill.teachers.TeacherActions`, numpy, one row per env);
2. the buffer's fields ``teacher_actions`` and ``teacher_weights`` (:class:`TeacherActionFields`: filled when
   SB3 adds the collected step, as SB3 fills its own fields);
3. the minibatch's ``teacher_actions`` (a :class:`~distill.teachers.TeacherActions` of torch tensors);
4. :meth:`distill.opd.OnlinePolicyDistillation.distill_loss`'s ``teacher_actions``.

:func:`with_teacher_actions` attaches the fields to the learner's existing buffer, PPO's rollout buffer
(:mod:`agents.students.rollout_buffer`) and SAC's replay buffer (:mod:`agents.students.replay_buffer`) alike:
it makes it an instance of its extension class (the SB3 class with :class:`TeacherActionFields` first),
keeping what it holds. Nothing draws a random number, so SB3's sampling is unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

import numpy as np
import torch
from stable_baselines3.common.buffers import BaseBuffer

from distill.teachers import TeacherActions


class ActingTeacher(Protocol):
    """A teacher that acts on the observations the student acts on, while the samples are collected."""

    @property
    def teacher_actions(self) -> TeacherActions:
        """Its actions (n_envs, action_dim) and weights (n_envs,) on the observations the last stepped actions
        were taken on."""


class TeacherActionFields:
    """Mixin placed before an SB3 buffer class: ``teacher_actions`` (buffer_size, n_envs, action_dim) and
    ``teacher_weights`` (buffer_size, n_envs), float32, filled at every ``add`` from :attr:`teacher` (None: the
    fields are None too, nothing is recorded). Reset with the buffer; saved with it, without the live teacher."""

    teacher: ActingTeacher | None = None
    teacher_actions: np.ndarray | None = None
    teacher_weights: np.ndarray | None = None

    def reset(self) -> None:
        super().reset()
        self.allocate_teacher_fields()

    def allocate_teacher_fields(self) -> None:
        """Empty fields for the buffer's slots (zeros: weight 0, masked), or None without a teacher."""
        recording = self.teacher is not None
        slots = (self.buffer_size, self.n_envs)
        self.teacher_actions = np.zeros((*slots, self.action_dim), np.float32) if recording else None
        self.teacher_weights = np.zeros(slots, np.float32) if recording else None

    def add(self, *args: Any, **kwargs: Any) -> None:
        """SB3's ``add``; first the teacher's actions on the observation the added step's action was taken on."""
        if self.teacher is not None:
            taught = self.teacher.teacher_actions
            self.teacher_actions[self.pos] = taught.actions
            self.teacher_weights[self.pos] = taught.weights
        super().add(*args, **kwargs)

    def teacher_actions_at(self, *index: np.ndarray) -> TeacherActions | None:
        """The stored teacher actions at ``index`` (rows, and envs for a replay buffer) as torch tensors."""
        if self.teacher_actions is None:
            return None
        return TeacherActions(as_tensor(self, self.teacher_actions[index]), as_tensor(self, self.teacher_weights[index]))

    def __getstate__(self) -> dict[str, Any]:
        # saved with checkpoints: the stored fields, not the live teacher (with_teacher_actions attaches it)
        return {**self.__dict__, "teacher": None}


def with_teacher_actions(buffer: BaseBuffer, teacher: ActingTeacher, extensions: Mapping[type, type]) -> BaseBuffer:
    """``buffer`` filled from ``teacher`` from now on (:func:`extended`); the samples stored before have weight 0,
    and a buffer that already has the fields (loaded with a checkpoint) keeps them."""
    buffer = extended(buffer, extensions)
    buffer.teacher = teacher
    if buffer.teacher_actions is None:
        buffer.allocate_teacher_fields()
    return buffer


def extended(buffer: BaseBuffer, extensions: Mapping[type, type]) -> BaseBuffer:
    """``buffer`` as an instance of its class's extension in ``extensions`` (SB3 class -> that class with
    :class:`TeacherActionFields` first), holding the same samples; ``buffer`` itself when it is one already.

    Raises:
        TypeError: ``buffer``'s class has no extension, or it is memory-optimised (its layout differs).
    """
    if isinstance(buffer, TeacherActionFields):
        return buffer
    optimized = getattr(buffer, "optimize_memory_usage", False)
    if type(buffer) not in extensions or optimized:
        raise TypeError(
            f"teacher actions need a plain {' or '.join(c.__name__ for c in extensions)}, not "
            f"{type(buffer).__name__}{' with optimize_memory_usage' if optimized else ''}; for goal envs set agent.her=false"
        )
    return copy_as(buffer, extensions[type(buffer)])


def copy_as(buffer: BaseBuffer, cls: type) -> BaseBuffer:
    """A shallow copy of ``buffer`` (the same arrays and settings) as an instance of ``cls``."""
    copied = cls.__new__(cls)
    copied.__dict__.update(buffer.__dict__)
    return copied


def as_tensor(buffer: BaseBuffer, array: np.ndarray) -> torch.Tensor:
    """``array`` as a tensor on the buffer's device (no copy on the CPU when it is contiguous)."""
    return torch.from_numpy(np.ascontiguousarray(array)).to(buffer.device)
