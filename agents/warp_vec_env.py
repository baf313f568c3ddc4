"""Stable-Baselines3's vector env over the quadruped's worlds on MuJoCo Warp (``train.vec_mode=warp``, ``sim=warp``):
:class:`WarpVecEnv`.

The worlds step on the Warp device (``envs.quadruped.warp_sim.WarpQuadruped``: physics, observation, reward, resets
inside the step); the learner gets numpy arrays, as from any SB3 vector env, so PPO, the teachers, the distillation
term, checkpoints and ``VecNormalize`` work unchanged. What crosses to the host each step is the observations,
rewards and flags (N x 57 floats and 3 x N; the actions go back), not the simulation. Evaluation envs stay C MuJoCo's
(``agents.training.runner``): a policy trained on Warp is evaluated in the C MuJoCo env (sim-to-sim).
"""

from __future__ import annotations

import time
from typing import Any, NamedTuple

import numpy as np
import torch
from stable_baselines3.common.vec_env.base_vec_env import VecEnv

from envs.quadruped.warp_sim import WarpQuadruped


class WorldsStep(NamedTuple):
    """One step of every world, on the device: ``obs`` (N, obs_dim) (a new episode's first where one ended),
    ``reward`` (N,), ``done`` (N,) (a fall or the time limit), ``time_limit`` (N,) (ended by the time limit alone),
    ``final_obs`` (N, obs_dim) (the ended episodes' last observations; None when none ended), ``episodes`` (env index
    -> SB3's ``info["episode"]``, ``{"r", "l", "t"}``, for the episodes that ended) and ``terms`` (the step's
    per-world readings, name -> (N,): the reward terms, ``tracking_error``, ``fell``, the gait measures)."""

    obs: torch.Tensor
    reward: torch.Tensor
    done: torch.Tensor
    time_limit: torch.Tensor
    final_obs: torch.Tensor | None
    episodes: dict[int, dict[str, Any]]
    terms: dict[str, torch.Tensor]


def warp_device() -> str:
    """The Warp device the worlds run on: the first CUDA GPU when torch sees one, else Warp's CPU device."""
    return "cuda:0" if torch.cuda.is_available() else "cpu"


class WarpVecEnv(VecEnv):
    """``num_envs`` worlds of ``env_id`` (made with ``kwargs``) on a Warp device, as an SB3 ``VecEnv``.

    Infos as SB3's ``Monitor``-wrapped envs give them at an episode's end (``episode`` = ``{"r", "l", "t"}``,
    ``terminal_observation``, ``TimeLimit.truncated``); ``get_attr`` reads the copies' shared settings (every world
    runs the same env's task); ``env_method("set_gait_frequency", f)`` sets the gait clock of the worlds named,
    ``env_method("task_context")`` gives each world's episode's task context, and on the terrain
    ``env_method("curriculum_state")`` / ``("set_curriculum_state", state)`` read and restore the worlds' places in
    the curriculum (checkpoints, resume).
    """

    def __init__(self, env_id: str, kwargs: dict[str, Any], num_envs: int, device: str | None = None,
                 seed: int = 0) -> None:
        self.sim = WarpQuadruped(env_id, num_envs, device=device or warp_device(), seed=seed, **kwargs)
        env = self.sim.env
        super().__init__(num_envs, env.observation_space, env.action_space)
        self._returns = torch.zeros(num_envs, dtype=torch.float64, device=self.sim.device)
        self._lengths = torch.zeros(num_envs, dtype=torch.int64, device=self.sim.device)
        self._actions: np.ndarray | None = None
        self._t_start = time.time()

    def reset(self) -> np.ndarray:
        seed = self._seeds[0] if self._seeds and self._seeds[0] is not None else None
        if seed is not None:
            self.sim.generator.manual_seed(int(seed))
            if self.sim.tiles is not None:  # the terrain's worlds spread over its columns from the seed
                self.sim.tiles.reseed(int(seed))
        self.sim.reset_worlds(torch.ones(self.num_envs, dtype=torch.bool, device=self.sim.device))
        self.sim.obs = self.sim.observe_reset()
        self._returns.zero_()
        self._lengths.zero_()
        self._reset_seeds()
        self._reset_options()
        return self.sim.obs.cpu().numpy()

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = actions

    def step_tensors(self, actions: torch.Tensor) -> WorldsStep:
        """Step every world with ``actions`` (a tensor on the device) and keep everything on the device but the
        records of the episodes that ended (:class:`WorldsStep`): the step of a learner that stays on the device."""
        obs, reward, terminated, truncated, info = self.sim.step(actions)
        done = terminated | truncated
        self._returns += reward
        self._lengths += 1
        ended = done.nonzero().squeeze(1)
        episodes: dict[int, dict[str, Any]] = {}
        if len(ended):
            returns, lengths = self._returns[ended].tolist(), self._lengths[ended].tolist()
            elapsed = round(time.time() - self._t_start, 6)
            episodes = {i: {"r": round(returns[j], 6), "l": lengths[j], "t": elapsed} for j, i in enumerate(ended.tolist())}
            self._returns[ended] = 0.0
            self._lengths[ended] = 0
        terms = {key: value for key, value in info.items() if key != "final_obs"}
        return WorldsStep(obs, reward, done, truncated & ~terminated, info.get("final_obs"), episodes, terms)

    def step_wait(self):
        step = self.step_tensors(torch.as_tensor(self._actions, device=self.sim.device))
        columns = {key: value.tolist() for key, value in step.terms.items()}
        infos: list[dict[str, Any]] = [{key: column[i] for key, column in columns.items()} for i in range(self.num_envs)]
        if step.episodes:
            ended = list(step.episodes)
            final = step.final_obs[ended].cpu().numpy()
            limit = step.time_limit[ended].tolist()
            for j, i in enumerate(ended):
                infos[i].update(episode=step.episodes[i], terminal_observation=final[j], **{"TimeLimit.truncated": limit[j]})
        return step.obs.cpu().numpy(), step.reward.to(torch.float32).cpu().numpy(), step.done.cpu().numpy(), infos

    def close(self) -> None:
        self.sim = None

    def get_attr(self, attr_name: str, indices=None) -> list[Any]:
        return [getattr(self.sim.env, attr_name) for _ in self._get_indices(indices)]

    def set_attr(self, attr_name: str, value: Any, indices=None) -> None:
        raise NotImplementedError(f"set_attr({attr_name!r}): the Warp worlds share one env's settings; set them in "
                                  "env.kwargs")

    def env_method(self, method_name: str, *method_args, indices=None, **method_kwargs) -> list[Any]:
        ids = list(self._get_indices(indices))
        tiles = self.sim.tiles
        if method_name == "set_gait_frequency":
            self.sim.set_gait_frequency(float(method_args[0]), torch.as_tensor(ids, device=self.sim.device))
            return [None for _ in ids]
        if method_name == "task_context":  # on the terrain each world's tile; elsewhere the robot's, every world's
            return [tiles.task_context(i) if tiles is not None else self.sim.env.task_context() for i in ids]
        if method_name == "curriculum_state" and tiles is not None:
            return [tiles.curriculum_state(i) for i in ids]
        if method_name == "set_curriculum_state" and tiles is not None:
            return [tiles.set_curriculum_state(i, method_args[0]) for i in ids]
        raise NotImplementedError(f"env_method({method_name!r}) is not on the Warp worlds (only set_gait_frequency, "
                                  "task_context, and curriculum_state / set_curriculum_state on the terrain); use "
                                  "train.vec_mode=batched for this run")

    def env_is_wrapped(self, wrapper_class, indices=None) -> list[bool]:
        from stable_baselines3.common.monitor import Monitor

        return [issubclass(Monitor, wrapper_class) for _ in self._get_indices(indices)]
