"""SAC's replay buffers with the teacher's action stored beside every transition, sampled with it.

:class:`TeacherReplayBuffer` (:class:`TeacherDictReplayBuffer` for Dict observations) is SB3's replay buffer
plus two named fields, filled once per collected step (when SB3 calls ``add``) from a teacher that acts while
the samples are collected (:class:`~agents.students.teacher_actions.TeacherActionSource`):
``teacher_actions`` (buffer_size, n_envs, action_dim), the teacher's action on the observation the
transition's action was taken on, and ``teacher_weights`` (buffer_size, n_envs), 0 where it had none
(masked). Minibatches (:meth:`samples_at`, ``sample``) are :class:`TeacherReplaySamples`, drawn with exactly
SB3's random numbers, so storing teacher actions does not change which transitions are sampled.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import torch
from stable_baselines3.common.buffers import DictReplayBuffer, ReplayBuffer
from stable_baselines3.common.type_aliases import DictReplayBufferSamples, ReplayBufferSamples
from stable_baselines3.common.vec_env import VecNormalize

from agents.students.teacher_actions import TeacherActionSource

#: sha256 of ``inspect.getsource`` of the stable-baselines3 2.9.2 ``_get_samples`` that :func:`gather` computes
#: for given rows (the draw of env indices ``np.random.randint(0, n_envs, size=len(batch_inds))`` and the maths
#: of every field, stable_baselines3/common/buffers.py); tests/test_sb3_copies.py fails when the installed SB3
#: differs: re-check both, then the hash.
SB3_GET_SAMPLES_SHA256 = {
    "ReplayBuffer": "ffe73ca3cb22fc4c9c85e5109b6f6732b0513e58be0132a118ab6183d2c4ad3f",
    "DictReplayBuffer": "0eba32ff12043e280942881f5a9d8ae5671e1c7a4363cceba3cc581847d034f9",
}


class TeacherReplaySamples(NamedTuple):
    """SB3's ``ReplayBufferSamples`` fields, then the teacher's."""

    observations: Any
    actions: torch.Tensor
    next_observations: Any
    dones: torch.Tensor
    rewards: torch.Tensor
    discounts: torch.Tensor | None
    teacher_actions: torch.Tensor
    teacher_weights: torch.Tensor


class _TeacherFields:
    """Mixin for ``ReplayBuffer`` / ``DictReplayBuffer``; :func:`with_teacher_actions` makes one."""

    teacher: TeacherActionSource | None = None
    teacher_actions: np.ndarray
    teacher_weights: np.ndarray

    def add(self, obs, next_obs, action, reward, done, infos) -> None:
        acted_on = self.teacher.acted_on
        self.teacher_actions[self.pos] = acted_on.actions
        self.teacher_weights[self.pos] = acted_on.weights
        super().add(obs, next_obs, action, reward, done, infos)

    def _get_samples(self, batch_inds: np.ndarray, env: VecNormalize | None = None) -> TeacherReplaySamples:
        env_indices = np.random.randint(0, high=self.n_envs, size=(len(batch_inds),))  # SB3's draw
        return self.samples_at(batch_inds, env_indices, env)

    def samples_at(self, rows: np.ndarray, cols: np.ndarray, env: VecNormalize | None) -> TeacherReplaySamples:
        """The transitions at slots ``rows`` of envs ``cols``, with their teacher actions."""
        return TeacherReplaySamples(*gather(self, rows, cols, env), None, _tensor(self, self.teacher_actions[rows, cols]),
                                    _tensor(self, self.teacher_weights[rows, cols]))

    def __getstate__(self) -> dict[str, Any]:
        # saved with checkpoints: the stored fields, not the live teacher (with_teacher_actions attaches it)
        return {**self.__dict__, "teacher": None}


class TeacherReplayBuffer(_TeacherFields, ReplayBuffer):
    """``ReplayBuffer`` with the teacher's actions (module docstring)."""


class TeacherDictReplayBuffer(_TeacherFields, DictReplayBuffer):
    """``DictReplayBuffer`` with the teacher's actions (module docstring)."""


def with_teacher_actions(buffer: ReplayBuffer, teacher: TeacherActionSource) -> ReplayBuffer:
    """``buffer`` as a teacher-actions buffer filled from ``teacher``, holding the same transitions (those
    stored before have weight 0); a buffer that already is one (loaded with a checkpoint) keeps its fields."""
    if not isinstance(buffer, _TeacherFields):
        if type(buffer) not in (ReplayBuffer, DictReplayBuffer) or buffer.optimize_memory_usage:
            raise TypeError(
                f"teacher actions need a plain replay buffer, not {type(buffer).__name__}"
                f"{' with optimize_memory_usage' if buffer.optimize_memory_usage else ''}; for goal envs set agent.her=false"
            )
        cls = TeacherDictReplayBuffer if isinstance(buffer, DictReplayBuffer) else TeacherReplayBuffer
        converted = cls.__new__(cls)
        converted.__dict__.update(buffer.__dict__)
        slots = (buffer.buffer_size, buffer.n_envs)
        converted.teacher_actions = np.zeros((*slots, buffer.action_dim), np.float32)
        converted.teacher_weights = np.zeros(slots, np.float32)
        buffer = converted
    buffer.teacher = teacher
    return buffer


def gather(buffer: ReplayBuffer, rows: np.ndarray, cols: np.ndarray, env: VecNormalize | None) -> tuple:
    """(observations, actions, next observations, dones, rewards) at slots ``rows`` of envs ``cols`` as torch
    tensors, computed as SB3's ``_get_samples`` computes them."""
    def tensor(array: np.ndarray) -> torch.Tensor:
        return _tensor(buffer, array)

    def observations(stored: Any) -> Any:
        if isinstance(stored, dict):
            normalized = buffer._normalize_obs({key: obs[rows, cols, :] for key, obs in stored.items()}, env)
            return {key: tensor(obs) for key, obs in normalized.items()}
        return tensor(buffer._normalize_obs(stored[rows, cols, :], env))

    dones = (buffer.dones[rows, cols] * (1 - buffer.timeouts[rows, cols])).reshape(-1, 1)
    rewards = buffer._normalize_reward(buffer.rewards[rows, cols].reshape(-1, 1), env)
    return (observations(buffer.observations), tensor(buffer.actions[rows, cols]),
            observations(buffer.next_observations), tensor(dones), tensor(rewards))


def samples_type(buffer: ReplayBuffer) -> type:
    """The minibatch type of ``buffer``."""
    if isinstance(buffer, _TeacherFields):
        return TeacherReplaySamples
    return DictReplayBufferSamples if isinstance(buffer, DictReplayBuffer) else ReplayBufferSamples


def _tensor(buffer: ReplayBuffer, array: np.ndarray) -> torch.Tensor:
    """``array`` as a tensor on the buffer's device (no copy on the CPU when it is contiguous)."""
    return torch.from_numpy(np.ascontiguousarray(array)).to(buffer.device)
