"""PPO's rollout storage as torch tensors on the learner's device: :class:`DeviceRolloutBuffer`.

The buffer a learner whose envs step on the same device fills (:class:`~agents.students.device_ppo.DevicePPOStudent`):
SB3's ``RolloutBuffer`` - the same fields, the same generalised advantage estimate, minibatches of a shuffled
pass over every sample - with nothing on the host. It carries the teacher's fields of
:mod:`agents.students.rollout_buffer` (the acting teacher's actions and weights, the raw observations) in its
minibatches (:class:`~agents.students.rollout_buffer.TeacherRolloutSamples`), so the PPO update and the
distillation term read it as they read SB3's. Shuffled with torch's generator of the device (SB3's ``set_random_seed``
seeds it).
"""

from __future__ import annotations

from collections.abc import Iterator

import torch

from agents.students.rollout_buffer import TeacherRolloutSamples
from distill.teachers import TeacherActions


class DeviceRolloutBuffer:
    """``buffer_size`` steps of ``n_envs`` envs on ``device`` (module docstring). ``raw``: also store the raw
    observations; ``taught``: also store the acting teacher's actions and weights."""

    def __init__(self, buffer_size: int, n_envs: int, obs_dim: int, action_dim: int, device: torch.device,
                 gamma: float = 0.99, gae_lambda: float = 0.95, raw: bool = False, taught: bool = False) -> None:
        self.buffer_size, self.n_envs, self.obs_dim, self.action_dim = buffer_size, n_envs, obs_dim, action_dim
        self.device, self.gamma, self.gae_lambda, self.raw, self.taught = device, gamma, gae_lambda, raw, taught
        self.reset()

    def reset(self) -> None:
        """Empty the buffer (fresh zeroed storage for ``buffer_size`` steps)."""
        zeros = lambda *shape: torch.zeros((self.buffer_size, self.n_envs, *shape), device=self.device)  # noqa: E731
        self.observations, self.actions = zeros(self.obs_dim), zeros(self.action_dim)
        self.rewards, self.episode_starts, self.values, self.log_probs = zeros(), zeros(), zeros(), zeros()
        self.advantages, self.returns = zeros(), zeros()
        self.raw_observations = zeros(self.obs_dim) if self.raw else None
        self.teacher_actions = zeros(self.action_dim) if self.taught else None
        self.teacher_weights = zeros() if self.taught else None
        self.pos, self.full = 0, False

    def add(self, obs: torch.Tensor, action: torch.Tensor, reward: torch.Tensor, episode_start: torch.Tensor,
            value: torch.Tensor, log_prob: torch.Tensor, raw_obs: torch.Tensor | None = None,
            taught: TeacherActions | None = None) -> None:
        """Store one step of every env: the observation the action was taken on (and its raw form, the teacher's
        action and weight on it when the buffer keeps them; a retired teacher's ``taught`` None: weight 0)."""
        i = self.pos
        self.observations[i], self.actions[i], self.rewards[i] = obs, action, reward
        self.episode_starts[i], self.values[i], self.log_probs[i] = episode_start, value.flatten(), log_prob
        if self.raw:
            self.raw_observations[i] = raw_obs
        if self.taught:
            self.teacher_actions[i] = 0.0 if taught is None else taught.actions
            self.teacher_weights[i] = 0.0 if taught is None else taught.weights
        self.pos += 1
        self.full = self.pos == self.buffer_size

    def compute_returns_and_advantage(self, last_values: torch.Tensor, dones: torch.Tensor) -> None:
        """The generalised advantage estimate (SB3's ``RolloutBuffer.compute_returns_and_advantage``): ``last_values``
        (n_envs,) the value of the observation after the last step, ``dones`` (n_envs,) whether that step ended
        its episode; returns = advantages + values."""
        last_values = last_values.flatten()
        gae = torch.zeros(self.n_envs, device=self.device)
        for step in reversed(range(self.buffer_size)):
            if step == self.buffer_size - 1:
                non_terminal, next_values = 1.0 - dones.to(torch.float32), last_values
            else:
                non_terminal, next_values = 1.0 - self.episode_starts[step + 1], self.values[step + 1]
            delta = self.rewards[step] + self.gamma * next_values * non_terminal - self.values[step]
            gae = delta + self.gamma * self.gae_lambda * non_terminal * gae
            self.advantages[step] = gae
        self.returns = self.advantages + self.values

    def get(self, batch_size: int | None = None) -> Iterator[TeacherRolloutSamples]:
        """Minibatches of ``batch_size`` samples (all of them: one) in a random order, each sample once."""
        total = self.buffer_size * self.n_envs
        order = torch.randperm(total, device=self.device)
        flat = lambda x: None if x is None else x.reshape(total, *x.shape[2:])  # noqa: E731
        obs, actions, values, log_probs = (flat(x) for x in (self.observations, self.actions, self.values,
                                                              self.log_probs))
        advantages, returns, raw = flat(self.advantages), flat(self.returns), flat(self.raw_observations)
        taught_actions, taught_weights = flat(self.teacher_actions), flat(self.teacher_weights)
        for start in range(0, total, batch_size or total):
            rows = order[start:start + (batch_size or total)]
            taught = None if taught_actions is None else TeacherActions(taught_actions[rows], taught_weights[rows])
            yield TeacherRolloutSamples(obs[rows], actions[rows], values[rows], log_probs[rows], advantages[rows],
                                        returns[rows], taught, None if raw is None else raw[rows])
