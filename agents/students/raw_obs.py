"""Keep raw (un-normalised) observations beside a PPO rollout buffer, for teachers that need them.

When ``VecNormalize`` normalises observations the rollout buffer stores normalised ones. A teacher
with its own normalisation (a policy saved by another run) needs the raw ones: :class:`RawObsRecorder`
records ``VecNormalize.get_original_obs()`` for every stored step, and the buffers below remember
the indices of the last minibatch so the matching raw rows can be looked up exactly.
"""

from __future__ import annotations

import numpy as np
import torch
from stable_baselines3.common.buffers import DictRolloutBuffer, RolloutBuffer
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.vec_env import VecNormalize

from distill.policy import Observation


class _RemembersIndices:
    """Mixin: record the flat indices of the last sampled minibatch."""

    last_indices: np.ndarray | None = None

    def _get_samples(self, batch_inds, env=None):
        self.last_indices = batch_inds
        return super()._get_samples(batch_inds, env)


class IndexedRolloutBuffer(_RemembersIndices, RolloutBuffer):
    """``RolloutBuffer`` that exposes ``last_indices``."""


class IndexedDictRolloutBuffer(_RemembersIndices, DictRolloutBuffer):
    """``DictRolloutBuffer`` that exposes ``last_indices``."""


class RawObsRecorder(BaseCallback):
    """Collect the raw observation on which each stored action was taken, in buffer order."""

    def __init__(self) -> None:
        super().__init__()
        self._rows: list = []
        self._pending = None
        self._flat: Observation | None = None

    def _normalizer(self) -> VecNormalize:
        env = self.model.get_env()
        if not isinstance(env, VecNormalize):
            raise TypeError("raw observations are only needed (and available) with VecNormalize")
        return env

    def _on_rollout_start(self) -> None:
        self._rows = []
        self._flat = None
        self._pending = self._normalizer().get_original_obs()

    def _on_step(self) -> bool:
        self._rows.append(self._pending)
        self._pending = self._normalizer().get_original_obs()
        return True

    def _on_rollout_end(self) -> None:
        def stack(rows: list[np.ndarray]) -> torch.Tensor:
            arr = np.stack(rows)  # (n_steps, n_envs, ...) like the buffer before flattening
            return torch.as_tensor(RolloutBuffer.swap_and_flatten(arr), dtype=torch.float32)

        if isinstance(self._rows[0], dict):
            self._flat = {k: stack([r[k] for r in self._rows]) for k in self._rows[0]}
        else:
            self._flat = stack(self._rows)

    def batch(self, indices: np.ndarray, device: torch.device) -> Observation:
        """Raw observations for flat buffer ``indices``."""
        idx = torch.as_tensor(indices)
        if isinstance(self._flat, dict):
            return {k: v[idx].to(device) for k, v in self._flat.items()}
        return self._flat[idx].to(device)
