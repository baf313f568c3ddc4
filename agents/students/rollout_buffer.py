"""PPO's rollout buffer with the distillation's per-sample fields, sampled with the minibatch.

:class:`DistillRolloutBuffer` (:class:`DistillDictRolloutBuffer` for Dict observations) is SB3's rollout
buffer plus named fields, filled once per collected step (when SB3 calls ``add``) and handed out with every
minibatch (:class:`DistillRolloutSamples`):

* ``teacher_actions`` (n_steps, n_envs, action_dim) and ``teacher_weights`` (n_steps, n_envs): what a
  teacher that acts while the samples are collected (:class:`~agents.students.teacher_actions.TeacherActionSource`)
  did on the observation each sample's action was taken on, and its weight (0: masked);
* ``raw_observations``: that observation un-normalised (``VecNormalize.get_original_obs``), for a teacher
  with its own normalisation.

A field the distillation does not need is None. Without any, the student keeps SB3's buffer.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import torch
from stable_baselines3.common.buffers import DictRolloutBuffer, RolloutBuffer
from stable_baselines3.common.vec_env import VecNormalize

from agents.students.teacher_actions import TeacherActionSource


class DistillRolloutSamples(NamedTuple):
    """SB3's ``RolloutBufferSamples`` fields, then the distillation's (None where not recorded)."""

    observations: Any
    actions: torch.Tensor
    old_values: torch.Tensor
    old_log_prob: torch.Tensor
    advantages: torch.Tensor
    returns: torch.Tensor
    teacher_actions: torch.Tensor | None
    teacher_weights: torch.Tensor | None
    raw_observations: Any


class _DistillFields:
    """Mixin for ``RolloutBuffer`` / ``DictRolloutBuffer``.

    Args (keywords, besides SB3's):
        teacher: fills ``teacher_actions`` / ``teacher_weights``; None records none.
        normalizer: the learner's ``VecNormalize``, whose raw observations fill ``raw_observations``; None records none.
    """

    _FIELDS = ("teacher_actions", "teacher_weights", "raw_observations")

    def __init__(self, *args, teacher: TeacherActionSource | None = None, normalizer: VecNormalize | None = None,
                 **kwargs) -> None:
        self.teacher, self.normalizer = teacher, None  # SB3's __init__ resets the buffer before the env has an observation
        super().__init__(*args, **kwargs)
        self.normalizer = normalizer  # raw observations are recorded from the next reset (every rollout's start) on

    def reset(self) -> None:
        """Empty the buffer; SB3 calls this at the start of every rollout, on the observation the rollout's
        first action will be taken on."""
        super().reset()
        steps = (self.buffer_size, self.n_envs)
        recording = self.teacher is not None
        self.teacher_actions = np.zeros((*steps, self.action_dim), np.float32) if recording else None
        self.teacher_weights = np.zeros(steps, np.float32) if recording else None
        self.raw_observations = None
        if self.normalizer is not None:
            self.raw_observations = _map(np.zeros_like, self.observations)
            self._raw_acted_on = self.normalizer.get_original_obs()

    def add(self, obs, action, reward, episode_start, value, log_prob) -> None:
        if self.teacher is not None:
            acted_on = self.teacher.acted_on
            self.teacher_actions[self.pos] = acted_on.actions
            self.teacher_weights[self.pos] = acted_on.weights
        if self.normalizer is not None:
            _store(self.raw_observations, self.pos, self._raw_acted_on)
            # the env has stepped: its raw observation now is the one the next stored action is taken on
            self._raw_acted_on = self.normalizer.get_original_obs()
        super().add(obs, action, reward, episode_start, value, log_prob)

    def get(self, batch_size: int | None = None):
        if not self.generator_ready:  # flattened as SB3 flattens its own fields, before its first minibatch
            for name in self._FIELDS:
                value = getattr(self, name)
                if value is not None:
                    setattr(self, name, _map(self.swap_and_flatten, value))
            if self.teacher_weights is not None:  # swap_and_flatten gives 2-D fields a trailing axis of 1
                self.teacher_weights = self.teacher_weights.reshape(-1)
        yield from super().get(batch_size)

    def _get_samples(self, batch_inds: np.ndarray, env: VecNormalize | None = None) -> DistillRolloutSamples:
        def rows(field: Any) -> Any:
            return None if field is None else _map(lambda array: self.to_torch(array[batch_inds]), field)

        samples = super()._get_samples(batch_inds, env)
        return DistillRolloutSamples(*samples, *(rows(getattr(self, name)) for name in self._FIELDS))


class DistillRolloutBuffer(_DistillFields, RolloutBuffer):
    """``RolloutBuffer`` with the distillation's fields (module docstring)."""


class DistillDictRolloutBuffer(_DistillFields, DictRolloutBuffer):
    """``DictRolloutBuffer`` with the distillation's fields (module docstring)."""


def _map(fn, field: Any) -> Any:
    """``fn`` applied to an array, or to each array of a Dict observation's dict."""
    return {key: fn(value) for key, value in field.items()} if isinstance(field, dict) else fn(field)


def _store(field: Any, pos: int, value: Any) -> None:
    if isinstance(field, dict):
        for key, array in field.items():
            array[pos] = value[key]
    else:
        field[pos] = value
