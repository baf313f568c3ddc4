"""PPO's rollout buffer with the teacher's per-sample fields, sampled with the minibatch.

:class:`TeacherRolloutBuffer` (:class:`TeacherDictRolloutBuffer` for Dict observations) is SB3's rollout
buffer plus named fields, filled once per collected step (when SB3 calls ``add``) and handed out with every
minibatch (:class:`TeacherRolloutSamples`):

* ``teacher_actions`` (n_steps, n_envs, action_dim) and ``teacher_weights`` (n_steps, n_envs): what a teacher
  that acts while the samples are collected did on the observation each sample's action was taken on, and its
  weight (0: masked); :class:`~agents.students.teacher_actions.TeacherActionFields`, the extension SAC's replay
  buffer has too, attached the same way (:func:`~agents.students.teacher_actions.with_teacher_actions` with
  :data:`ROLLOUT_EXTENSIONS`); the minibatch's ``teacher_actions`` holds both;
* ``raw_observations``: that observation un-normalised (``VecNormalize.get_original_obs``), for a teacher
  with its own normalisation (:func:`with_raw_observations`).

A field the distillation does not need is None. Without any, the student keeps SB3's buffer.
"""

from __future__ import annotations

import operator
from typing import Any, NamedTuple

import numpy as np
import torch
from stable_baselines3.common.buffers import DictRolloutBuffer, RolloutBuffer
from stable_baselines3.common.vec_env import VecNormalize

from agents.students.teacher_actions import TeacherActionFields, extended
from distill.policy import per_entry
from distill.teachers import TeacherActions


class TeacherRolloutSamples(NamedTuple):
    """SB3's ``RolloutBufferSamples`` fields, then the teacher's (None where not recorded)."""

    observations: Any
    actions: torch.Tensor
    old_values: torch.Tensor
    old_log_prob: torch.Tensor
    advantages: torch.Tensor
    returns: torch.Tensor
    teacher_actions: TeacherActions | None
    raw_observations: Any


class _TeacherRolloutFields(TeacherActionFields):
    """Mixin for ``RolloutBuffer`` / ``DictRolloutBuffer``: the teacher's actions (:class:`TeacherActionFields`) and,
    once :attr:`normalizer` (the learner's ``VecNormalize``) is set, the raw observations."""

    normalizer: VecNormalize | None = None
    raw_observations: Any = None

    def reset(self) -> None:
        """Empty the buffer; SB3 calls this at the start of every rollout, on the observation the rollout's
        first action will be taken on."""
        super().reset()
        self.raw_observations = None
        if self.normalizer is not None:
            self.raw_observations = per_entry(np.zeros_like, self.observations)
            self._raw_acted_on = self.normalizer.get_original_obs()

    def add(self, obs, action, reward, episode_start, value, log_prob) -> None:
        if self.normalizer is not None:
            _store(self.raw_observations, self.pos, self._raw_acted_on)
            # the env has stepped: its raw observation now is the one the next stored action is taken on
            self._raw_acted_on = self.normalizer.get_original_obs()
        super().add(obs, action, reward, episode_start, value, log_prob)

    def get(self, batch_size: int | None = None):
        if not self.generator_ready:  # flattened as SB3 flattens its own fields, before its first minibatch
            for name in ("teacher_actions", "teacher_weights", "raw_observations"):
                value = getattr(self, name)
                if value is not None:
                    setattr(self, name, per_entry(self.swap_and_flatten, value))
            if self.teacher_weights is not None:  # swap_and_flatten gives 2-D fields a trailing axis of 1
                self.teacher_weights = self.teacher_weights.reshape(-1)
        yield from super().get(batch_size)

    def _get_samples(self, batch_inds: np.ndarray, env: VecNormalize | None = None) -> TeacherRolloutSamples:
        raw = self.raw_observations
        raw = None if raw is None else per_entry(lambda array: self.to_torch(array[batch_inds]), raw)
        return TeacherRolloutSamples(*super()._get_samples(batch_inds, env), self.teacher_actions_at(batch_inds), raw)


class TeacherRolloutBuffer(_TeacherRolloutFields, RolloutBuffer):
    """``RolloutBuffer`` with the teacher's fields (module docstring)."""


class TeacherDictRolloutBuffer(_TeacherRolloutFields, DictRolloutBuffer):
    """``DictRolloutBuffer`` with the teacher's fields (module docstring)."""


#: SB3 rollout buffer class -> its extension with the teacher's fields
ROLLOUT_EXTENSIONS = {RolloutBuffer: TeacherRolloutBuffer, DictRolloutBuffer: TeacherDictRolloutBuffer}


def with_raw_observations(buffer: RolloutBuffer, normalizer: VecNormalize) -> TeacherRolloutBuffer:
    """``buffer`` recording ``normalizer``'s raw observations from its next reset (every rollout's start) on."""
    buffer = extended(buffer, ROLLOUT_EXTENSIONS)
    buffer.normalizer = normalizer
    return buffer


def _store(field: Any, pos: int, value: Any) -> None:
    """Write the observation ``value`` into row ``pos`` of the buffer ``field`` (a Dict observation's each array)."""
    per_entry(lambda array, row: operator.setitem(array, pos, row), field, value)
