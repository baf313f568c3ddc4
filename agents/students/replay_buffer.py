"""Replay buffers that store, with every transition, the teacher target recorded when it was collected.

A vector env wrapper (see :mod:`agents.teachers.controller`) puts in each step's ``info["teacher_target"]``
the target action and weight for the observation that step's action was taken on. These buffers keep
that row beside the transition and expose the rows of the last sampled batch as ``last_targets``.
Sampling draws exactly the same random numbers as SB3's buffers, so attaching a teacher does not
change which transitions are sampled.
"""

from __future__ import annotations

import numpy as np
from stable_baselines3.common.buffers import DictReplayBuffer, ReplayBuffer

from agents.students.rollout_buffer import TARGET_KEY


#: sha256 of ``inspect.getsource`` of the stable-baselines3 2.9.2 ``_get_samples`` whose first random draw
#: (``np.random.randint(0, n_envs, size=len(batch_inds))``, stable_baselines3/common/buffers.py) the mixin
#: repeats; tests/test_sb3_copies.py fails when the installed SB3 differs: re-check that draw, then the hash.
SB3_GET_SAMPLES_SHA256 = {
    "ReplayBuffer": "ffe73ca3cb22fc4c9c85e5109b6f6732b0513e58be0132a118ab6183d2c4ad3f",
    "DictReplayBuffer": "0eba32ff12043e280942881f5a9d8ae5671e1c7a4363cceba3cc581847d034f9",
}


class _StoresTargets:
    """Mixin for ``ReplayBuffer`` / ``DictReplayBuffer``."""

    sample_targets: np.ndarray  # (buffer_size, n_envs, action_dim + 1): target action, then weight
    last_targets: np.ndarray | None = None

    def allocate_targets(self) -> None:
        """Zero targets (weight 0 = no target) for every slot, including transitions already stored."""
        self.sample_targets = np.zeros((self.buffer_size, self.n_envs, self.action_dim + 1), dtype=np.float32)

    def add(self, obs, next_obs, action, reward, done, infos) -> None:
        self.sample_targets[self.pos] = np.stack([info[TARGET_KEY] for info in infos])
        super().add(obs, next_obs, action, reward, done, infos)

    def _get_samples(self, batch_inds, env=None):
        # SB3 draws the env index inside _get_samples; draw the same numbers first, then rewind.
        state = np.random.get_state()
        env_indices = np.random.randint(0, high=self.n_envs, size=(len(batch_inds),))
        np.random.set_state(state)
        self.last_targets = self.sample_targets[batch_inds, env_indices]
        return super()._get_samples(batch_inds, env)


class TargetsReplayBuffer(_StoresTargets, ReplayBuffer):
    """``ReplayBuffer`` with recorded teacher targets."""


class TargetsDictReplayBuffer(_StoresTargets, DictReplayBuffer):
    """``DictReplayBuffer`` with recorded teacher targets."""


def with_targets(buffer: ReplayBuffer) -> ReplayBuffer:
    """``buffer`` as a targets buffer holding the same transitions (their targets: weight 0)."""
    if isinstance(buffer, _StoresTargets):
        return buffer
    if type(buffer) not in (ReplayBuffer, DictReplayBuffer):
        raise TypeError(
            f"recorded teacher targets need a plain replay buffer, not {type(buffer).__name__}; "
            "for goal envs set agent.her=false"
        )
    cls = TargetsDictReplayBuffer if isinstance(buffer, DictReplayBuffer) else TargetsReplayBuffer
    converted = cls.__new__(cls)
    converted.__dict__.update(buffer.__dict__)
    converted.allocate_targets()
    return converted
