"""SAC's replay buffers with the teacher's action stored beside every transition, sampled with it.

:class:`TeacherReplayBuffer` (:class:`TeacherDictReplayBuffer` for Dict observations) is SB3's replay buffer
plus the teacher's fields (:class:`~agents.students.teacher_actions.TeacherActionFields`, the extension PPO's
rollout buffer has too, attached the same way: :func:`~agents.students.teacher_actions.with_teacher_actions`
with :data:`REPLAY_EXTENSIONS`): ``teacher_actions`` (buffer_size, n_envs, action_dim), the teacher's action on
the observation the transition's action was taken on, and ``teacher_weights`` (buffer_size, n_envs), 0 where it
had none (masked). Minibatches (:meth:`~_TeacherReplayFields.samples_at`, ``sample``) are
:class:`TeacherReplaySamples`, drawn with exactly SB3's random numbers, so storing teacher actions does not
change which transitions are sampled.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import torch
from stable_baselines3.common.buffers import DictReplayBuffer, ReplayBuffer
from stable_baselines3.common.type_aliases import DictReplayBufferSamples, ReplayBufferSamples
from stable_baselines3.common.vec_env import VecNormalize

from agents.students.teacher_actions import TeacherActionFields, as_tensor
from distill.teachers import TeacherActions

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
    teacher_actions: TeacherActions


class _TeacherReplayFields(TeacherActionFields):
    """Mixin for ``ReplayBuffer`` / ``DictReplayBuffer``: minibatches with the teacher's actions."""

    def _get_samples(self, batch_inds: np.ndarray, env: VecNormalize | None = None) -> TeacherReplaySamples:
        env_indices = np.random.randint(0, high=self.n_envs, size=(len(batch_inds),))  # SB3's draw
        return self.samples_at(batch_inds, env_indices, env)

    def samples_at(self, rows: np.ndarray, cols: np.ndarray, env: VecNormalize | None) -> TeacherReplaySamples:
        """The transitions at slots ``rows`` of envs ``cols``, with their teacher actions."""
        return TeacherReplaySamples(*gather(self, rows, cols, env), None, self.teacher_actions_at(rows, cols))


class TeacherReplayBuffer(_TeacherReplayFields, ReplayBuffer):
    """``ReplayBuffer`` with the teacher's actions (module docstring)."""


class TeacherDictReplayBuffer(_TeacherReplayFields, DictReplayBuffer):
    """``DictReplayBuffer`` with the teacher's actions (module docstring)."""


#: SB3 replay buffer class -> its extension with the teacher's fields
REPLAY_EXTENSIONS = {ReplayBuffer: TeacherReplayBuffer, DictReplayBuffer: TeacherDictReplayBuffer}


def gather(buffer: ReplayBuffer, rows: np.ndarray, cols: np.ndarray, env: VecNormalize | None) -> tuple:
    """(observations, actions, next observations, dones, rewards) at slots ``rows`` of envs ``cols`` as torch
    tensors, computed as SB3's ``_get_samples`` computes them."""
    def tensor(array: np.ndarray) -> torch.Tensor:
        return as_tensor(buffer, array)

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
    if isinstance(buffer, _TeacherReplayFields):
        return TeacherReplaySamples
    return DictReplayBufferSamples if isinstance(buffer, DictReplayBuffer) else ReplayBufferSamples

