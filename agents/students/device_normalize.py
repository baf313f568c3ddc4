"""Stable-Baselines3's ``VecNormalize`` statistics kept on a torch device, for a learner whose envs step there.

:class:`DeviceRunningMeanStd` is SB3's ``RunningMeanStd`` (the same parallel update of mean, variance and count)
on tensors; it reads as one (``mean``, ``var`` as numpy arrays) and pickles as one, so a checkpoint's
``vecnormalize.pkl`` and the evaluation's copy of the statistics are SB3's as always, loadable on a machine without
the device. :class:`DeviceNormalization` does what ``VecNormalize.step_wait`` does to a step's observations and
rewards (update the statistics while training, normalise, clip; the discounted return behind the reward's scale,
zeroed where an episode ended), on the device, with the ``VecNormalize`` object's own settings and statistics.
"""

from __future__ import annotations

import numpy as np
import torch
from stable_baselines3.common.running_mean_std import RunningMeanStd
from stable_baselines3.common.vec_env import VecNormalize

from agents.students.normalization import torch_normalize_obs


def _plain(mean: np.ndarray, var: np.ndarray, count: float) -> RunningMeanStd:
    """SB3's ``RunningMeanStd`` holding ``mean``, ``var`` and ``count`` (what a :class:`DeviceRunningMeanStd` pickles as)."""
    rms = RunningMeanStd(shape=mean.shape)
    rms.mean, rms.var, rms.count = mean, var, count
    return rms


class DeviceRunningMeanStd(RunningMeanStd):
    """SB3's ``RunningMeanStd`` whose ``mean`` and ``var`` live as float64 tensors (``mean_t``, ``var_t``) on
    ``device``; :meth:`update` takes tensors or numpy arrays; ``mean``/``var`` read (and set) numpy copies; a pickle
    or a deep copy is a plain ``RunningMeanStd``."""

    def __init__(self, rms: RunningMeanStd, device: torch.device) -> None:
        self.mean_t = torch.as_tensor(np.asarray(rms.mean), dtype=torch.float64, device=device).clone()
        self.var_t = torch.as_tensor(np.asarray(rms.var), dtype=torch.float64, device=device).clone()
        self.count = float(rms.count)

    @property
    def mean(self) -> np.ndarray:
        return self.mean_t.cpu().numpy()

    @mean.setter
    def mean(self, value) -> None:
        self.mean_t = torch.as_tensor(value, dtype=torch.float64, device=self.mean_t.device)

    @property
    def var(self) -> np.ndarray:
        return self.var_t.cpu().numpy()

    @var.setter
    def var(self, value) -> None:
        self.var_t = torch.as_tensor(value, dtype=torch.float64, device=self.var_t.device)

    def update(self, arr) -> None:
        """Fold the batch ``arr`` (n, ...) into the statistics (SB3's ``update``: the population variance)."""
        batch = torch.as_tensor(arr, device=self.mean_t.device).to(torch.float64)
        self.update_from_moments(batch.mean(dim=0), batch.var(dim=0, unbiased=False), batch.shape[0])

    def update_from_moments(self, batch_mean, batch_var, batch_count: float) -> None:
        batch_mean = torch.as_tensor(batch_mean, dtype=torch.float64, device=self.mean_t.device)
        batch_var = torch.as_tensor(batch_var, dtype=torch.float64, device=self.mean_t.device)
        delta = batch_mean - self.mean_t
        total = self.count + batch_count
        self.mean_t = self.mean_t + delta * batch_count / total
        m_2 = self.var_t * self.count + batch_var * batch_count + delta.square() * self.count * batch_count / total
        self.var_t = m_2 / total
        self.count = total

    def copy(self) -> RunningMeanStd:
        return _plain(self.mean, self.var, self.count)

    def __reduce__(self):
        return _plain, (self.mean, self.var, self.count)


class DeviceNormalization:
    """``norm``'s normalisation (a ``VecNormalize``, or None: observations and rewards pass as they are) of ``n_envs``
    envs' steps on ``device``; it moves ``norm``'s statistics there (:class:`DeviceRunningMeanStd`)."""

    def __init__(self, norm: VecNormalize | None, n_envs: int, device: torch.device) -> None:
        self.norm = norm
        self.returns = torch.zeros(n_envs, dtype=torch.float64, device=device)
        if norm is not None:
            for name in ("obs_rms", "ret_rms"):
                rms = getattr(norm, name)
                if not isinstance(rms, DeviceRunningMeanStd):
                    setattr(norm, name, DeviceRunningMeanStd(rms, device))

    def obs(self, raw: torch.Tensor) -> torch.Tensor:
        """``raw`` observations normalised with the current statistics (float32), not updating them."""
        if self.norm is None:
            return raw.to(torch.float32)
        return torch_normalize_obs(self.norm, raw.to(torch.float64)).to(torch.float32)  # in float64, as SB3

    def step(self, raw: torch.Tensor, reward: torch.Tensor, done: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """A step's (normalised observations, normalised rewards) as ``VecNormalize.step_wait`` makes them: while
        training, the observation statistics take ``raw`` and the return statistics the discounted return first."""
        norm = self.norm
        if norm is None:
            return raw.to(torch.float32), reward.to(torch.float32)
        if norm.training and norm.norm_obs:
            norm.obs_rms.update(raw)
        obs = self.obs(raw)
        reward = reward.to(torch.float64)
        if norm.training:
            self.returns = self.returns * norm.gamma + reward
            norm.ret_rms.update(self.returns)
        if norm.norm_reward:
            reward = torch.clamp(reward / torch.sqrt(norm.ret_rms.var_t + norm.epsilon), -norm.clip_reward,
                                 norm.clip_reward)
        self.returns[done] = 0.0
        return obs, reward.to(torch.float32)
