"""Keep per-sample extras beside a PPO rollout buffer: raw observations and recorded teacher targets.

When ``VecNormalize`` normalises observations the rollout buffer stores normalised ones. A teacher
with its own normalisation (a policy saved by another run) needs the raw ones: :class:`RawObsRecorder`
records ``VecNormalize.get_original_obs()`` for every stored step. A teacher whose targets are
recorded at collection time (a scripted controller) gets them through :class:`SampleTargetsRecorder`.
The buffers below remember the indices of the last minibatch so the matching rows are looked up exactly.
"""

from __future__ import annotations

import numpy as np
import torch
from stable_baselines3.common.buffers import DictRolloutBuffer, RolloutBuffer
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.vec_env import VecNormalize

from distill.policy import Observation

#: info key under which a vector env wrapper records, for each step, the teacher's target action for the
#: observation that step's action was taken on, followed by the sample's weight: shape (action_dim + 1,).
TARGET_KEY = "teacher_target"


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


class _StepRecorder(BaseCallback):
    """Rows recorded once per stored step, flattened at rollout end exactly like the rollout buffer."""

    def __init__(self) -> None:
        super().__init__()
        self._rows: list = []
        self._flat: Observation | None = None

    def _on_rollout_start(self) -> None:
        self._rows = []
        self._flat = None

    def _on_rollout_end(self) -> None:
        def stack(rows: list[np.ndarray]) -> torch.Tensor:
            arr = np.stack(rows)  # (n_steps, n_envs, ...) like the buffer before flattening
            return torch.as_tensor(RolloutBuffer.swap_and_flatten(arr), dtype=torch.float32)

        if isinstance(self._rows[0], dict):
            self._flat = {k: stack([r[k] for r in self._rows]) for k in self._rows[0]}
        else:
            self._flat = stack(self._rows)

    def batch(self, indices: np.ndarray, device: torch.device) -> Observation:
        """Recorded rows for flat buffer ``indices``."""
        idx = torch.as_tensor(indices)
        if isinstance(self._flat, dict):
            return {k: v[idx].to(device) for k, v in self._flat.items()}
        return self._flat[idx].to(device)


class RawObsRecorder(_StepRecorder):
    """Collect the raw observation on which each stored action was taken, in buffer order."""

    def __init__(self) -> None:
        super().__init__()
        self._pending = None

    def _normalizer(self) -> VecNormalize:
        env = self.model.get_env()
        if not isinstance(env, VecNormalize):
            raise TypeError("raw observations are only needed (and available) with VecNormalize")
        return env

    def _on_rollout_start(self) -> None:
        super()._on_rollout_start()
        self._pending = self._normalizer().get_original_obs()

    def _on_step(self) -> bool:
        self._rows.append(self._pending)
        self._pending = self._normalizer().get_original_obs()
        return True


class SampleTargetsRecorder(_StepRecorder):
    """Collect ``info["teacher_target"]`` (target action and weight of the acted-on observation) per step."""

    def _on_step(self) -> bool:
        self._rows.append(np.stack([info[TARGET_KEY] for info in self.locals["infos"]]))
        return True
