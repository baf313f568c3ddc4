"""What a student's buffer stores for a teacher that acts while samples are collected.

A scripted-controller teacher (:class:`agents.teachers.controller.ControllerTeacher`) acts on the same
observations as the student. When SB3 adds a collected step to the buffer, the buffer reads the teacher's
:attr:`TeacherActionSource.acted_on` and stores it in its named fields ``teacher_actions`` and
``teacher_weights`` (:mod:`agents.students.rollout_buffer`, :mod:`agents.students.replay_buffer`).
"""

from __future__ import annotations

from typing import NamedTuple, Protocol

import numpy as np

from distill.teachers import RecordedActions


class TeacherActions(NamedTuple):
    """One collected step's teacher actions, for every env: ``actions`` (n_envs, action_dim) float32 in the
    env's action units and ``weights`` (n_envs,) float32, 0 where the teacher had no action (masked)."""

    actions: np.ndarray
    weights: np.ndarray


class TeacherActionSource(Protocol):
    """A teacher that acts on the observations the student acts on."""

    @property
    def acted_on(self) -> TeacherActions:
        """The teacher's actions on the observations the last stepped actions were taken on."""


def recorded_actions(batch) -> RecordedActions | None:
    """The minibatch's teacher fields as the distillation reads them (None when the buffer has none)."""
    if getattr(batch, "teacher_actions", None) is None:
        return None
    return RecordedActions(batch.teacher_actions, batch.teacher_weights)
