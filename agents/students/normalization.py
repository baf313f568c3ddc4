"""A saved ``VecNormalize``'s observation normalisation on torch tensors (batch first, any device): a checkpoint
teacher's input in its own statistics, the SAC student's raw observations read back from its replay buffer."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from stable_baselines3.common.vec_env import VecNormalize

TorchObs = torch.Tensor | dict[str, torch.Tensor]


def _per_key(norm: VecNormalize, obs: TorchObs, fn: Callable[[torch.Tensor, Any], torch.Tensor]) -> TorchObs:
    """``fn(tensor, running_stats)`` on the observation, or on each key ``norm`` normalises."""
    if isinstance(obs, dict):
        return {k: fn(v, norm.obs_rms[k]) if k in norm.norm_obs_keys else v for k, v in obs.items()}
    return fn(obs, norm.obs_rms)


def _std(norm: VecNormalize, rms: Any, like: torch.Tensor) -> torch.Tensor:
    """``sqrt(var + epsilon)`` of the running statistics ``rms`` as a tensor like ``like``; statistics kept on a device
    (:class:`~agents.students.device_normalize.DeviceRunningMeanStd`) are read there, without a host copy."""
    var = getattr(rms, "var_t", None)
    std = np.sqrt(rms.var + norm.epsilon) if var is None else torch.sqrt(var + norm.epsilon)
    return torch.as_tensor(std, dtype=like.dtype, device=like.device)


def _mean(rms: Any, like: torch.Tensor) -> torch.Tensor:
    """The running mean of ``rms`` as a tensor like ``like`` (read on its device when it is kept on one)."""
    return torch.as_tensor(getattr(rms, "mean_t", None) if hasattr(rms, "mean_t") else rms.mean, dtype=like.dtype,
                           device=like.device)


def torch_normalize_obs(norm: VecNormalize, obs: TorchObs) -> TorchObs:
    """``norm.normalize_obs`` on torch tensors (batch first, on any device), unchanged if it does not normalise.

    ``clip((obs - mean) / sqrt(var + epsilon), -clip_obs, clip_obs)`` with ``norm``'s running statistics.
    """
    if not norm.norm_obs:
        return obs
    clip = float(norm.clip_obs)

    def one(x: torch.Tensor, rms: Any) -> torch.Tensor:
        return torch.clamp((x - _mean(rms, x)) / _std(norm, rms, x), -clip, clip)

    return _per_key(norm, obs, one)


def torch_unnormalize_obs(norm: VecNormalize | None, obs: TorchObs) -> TorchObs:
    """``norm.unnormalize_obs`` on torch tensors: ``obs * sqrt(var + epsilon) + mean`` (clipped values stay
    clipped); unchanged without a ``norm`` that normalises observations."""
    if norm is None or not norm.norm_obs:
        return obs

    def one(x: torch.Tensor, rms: Any) -> torch.Tensor:
        return x * _std(norm, rms, x) + _mean(rms, x)

    return _per_key(norm, obs, one)
