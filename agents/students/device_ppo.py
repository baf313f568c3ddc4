"""The PPO student whose rollouts never leave the device its envs step on: :class:`DevicePPOStudent`.

For vector envs that step on a torch device and say so with ``step_tensors`` (``agents.warp_vec_env.WarpVecEnv``:
MuJoCo Warp worlds, ``sim=warp``). It is :class:`~agents.students.ppo.PPOStudent` - the same update, distillation
term, alpha schedules and stages, adaptive learning rate, checkpoints - with SB3's rollout collection done on
tensors: the policy acts on the device, the envs step there, ``VecNormalize``'s statistics are updated and applied
there (:class:`~agents.students.device_normalize.DeviceNormalization`), the scripted teacher acts there (its
``teach`` on tensors), and the samples go into a :class:`~agents.students.device_buffer.DeviceRolloutBuffer`. What
crosses to the host per step is the records of the episodes that ended (SB3's ``ep_info_buffer``); the reward terms
the loggers average are summed on the device (``info_terms``).

Step for step it collects what SB3's ``collect_rollouts`` collects through ``VecNormalize`` and the teacher's
wrapper (the same normalised observations and rewards, the value bootstrap at a time limit, the teacher's actions on
the raw observations): ``tests/test_device_ppo.py`` compares the two on the same worlds.
"""

from __future__ import annotations

from typing import Any

import torch
from stable_baselines3.common.vec_env import VecEnv, VecEnvWrapper, VecNormalize

from agents.students.device_buffer import DeviceRolloutBuffer
from agents.students.device_normalize import DeviceNormalization
from agents.students.ppo import PPOStudent
from agents.students.teacher_actions import ActingTeacher
from distill.opd import OnlinePolicyDistillation


class DevicePPOStudent(PPOStudent):
    """:class:`~agents.students.ppo.PPOStudent` collecting on the device of envs with ``step_tensors`` (module
    docstring). Between the learner and those envs only ``VecNormalize`` and the acting teacher's wrapper may stand."""

    _acting_teacher: ActingTeacher | None = None

    def _setup_model(self) -> None:
        super()._setup_model()
        self.rollout_buffer = self._device_buffer(self.n_steps)
        self._on_device: tuple[Any, DeviceNormalization] | None = None
        self._device_state: tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None = None

    def _excluded_save_params(self) -> list[str]:
        return [*super()._excluded_save_params(), "_acting_teacher", "_on_device", "_device_state"]

    def _device_buffer(self, size: int, raw: bool = False, taught: bool = False) -> DeviceRolloutBuffer:
        return DeviceRolloutBuffer(size, self.n_envs, self.observation_space.shape[0], self.action_space.shape[0],
                                   self.device, self.gamma, self.gae_lambda, raw=raw, taught=taught)

    def _record_for(self, distillation: OnlinePolicyDistillation, acting_teacher: ActingTeacher | None) -> None:
        if distillation.needs_teacher_actions and not getattr(acting_teacher, "on_device", False):
            raise TypeError(f"{type(acting_teacher).__name__} cannot teach on the device: train on C MuJoCo "
                            "(sim=mujoco) with this teacher")
        self._acting_teacher = acting_teacher if distillation.needs_teacher_actions else None
        self.rollout_buffer = self._device_buffer(self.n_steps, raw=distillation.needs_raw_obs,
                                                  taught=distillation.needs_teacher_actions)

    def _setup_learn(self, *args, **kwargs):
        result = super()._setup_learn(*args, **kwargs)
        self._device_state = None  # read again from the envs (reset, or where a resumed run's envs are)
        return result

    def _devices(self, env: VecEnv) -> tuple[Any, DeviceNormalization]:
        """The envs that step on the device below ``env``, and ``env``'s normalisation on the device."""
        if self._on_device is None or self._on_device[0] is not _innermost(env):
            norm = None
            layer = env
            while isinstance(layer, VecEnvWrapper):
                if isinstance(layer, VecNormalize):
                    norm = layer
                elif layer is not self._acting_teacher:
                    raise TypeError(f"{type(layer).__name__} wraps the envs of a learner on the device; only "
                                    "VecNormalize and the scripted teacher may")
                layer = layer.venv
            if not hasattr(layer, "step_tensors"):
                raise TypeError(f"{type(layer).__name__} does not step on a device (no step_tensors); use PPOStudent")
            self._on_device = (layer, DeviceNormalization(norm, layer.num_envs, self.device))
        return self._on_device

    def _collect(self, env, callback, rollout_buffer: DeviceRolloutBuffer, n_rollout_steps: int) -> bool:
        """SB3's ``collect_rollouts`` on the device (module docstring)."""
        sim, norm = self._devices(env)
        low, high = (torch.as_tensor(b, device=self.device) for b in (self.action_space.low, self.action_space.high))
        if self._device_state is None:
            raw = sim.sim.obs.to(self.device)
            starts = torch.as_tensor(self._last_episode_starts, dtype=torch.float32, device=self.device)
            self._device_state = (norm.obs(raw), raw, starts)
        obs, raw, starts = self._device_state
        self.policy.set_training_mode(False)
        rollout_buffer.reset()
        callback.on_rollout_start()
        teacher = self._acting_teacher
        done = starts.bool()
        for _ in range(n_rollout_steps):
            with torch.no_grad():
                actions, values, log_probs = self.policy(obs)
            taught = None if teacher is None or teacher.retired else teacher.teach(raw, done)
            step = sim.step_tensors(torch.clamp(actions, low, high))
            new_raw, done = step.obs.to(self.device), step.done.to(self.device)
            new_obs, rewards = norm.step(new_raw, step.reward.to(self.device), done)
            self.num_timesteps += sim.num_envs
            infos = [{"episode": episode} for episode in step.episodes.values()]
            info_terms = step.terms  # noqa: F841 (read by the loggers through update_locals)
            callback.update_locals(locals())
            if not callback.on_step():
                return False
            self._update_info_buffer(infos)
            ended = step.time_limit.to(self.device).nonzero().squeeze(1)
            if len(ended):  # a time limit is not a terminal state: bootstrap with the value of where it stopped
                with torch.no_grad():
                    final = norm.obs(step.final_obs[ended].to(self.device))
                    rewards[ended] += self.gamma * self.policy.predict_values(final).flatten()
            rollout_buffer.add(obs, actions, rewards, starts, values, log_probs, raw, taught)
            obs, raw, starts = new_obs, new_raw, done.to(torch.float32)
        with torch.no_grad():
            values = self.policy.predict_values(obs)
        rollout_buffer.compute_returns_and_advantage(last_values=values, dones=done)
        self._device_state = (obs, raw, starts)
        callback.update_locals(locals())
        callback.on_rollout_end()
        return True


def _innermost(env: VecEnv) -> VecEnv:
    while isinstance(env, VecEnvWrapper):
        env = env.venv
    return env
