"""Build Stable-Baselines3 vector envs for training and evaluation from the env config."""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np
from omegaconf import DictConfig, OmegaConf
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.vec_env import (
    DummyVecEnv,
    SubprocVecEnv,
    VecEnv,
    VecNormalize,
)


Wrapper = Callable[[gym.Env], gym.Env]


def env_factory(env_id: str, kwargs: dict[str, Any], wrapper: Wrapper | None = None) -> Callable[[], gym.Env]:
    """A picklable constructor of one monitored env (episode return and length in ``info["episode"]``).

    ``wrapper`` (picklable, e.g. a ``functools.partial``) wraps the env inside the ``Monitor``.
    """

    def make() -> gym.Env:
        import envs  # noqa: F401  (registers OpenClaw ids in worker processes too)

        env = gym.make(env_id, **kwargs)
        return Monitor(wrapper(env) if wrapper is not None else env)

    return make


VEC_MODES = ("dummy", "subproc", "batched", "warp")


def make_vec_env(
    env_id: str, kwargs: dict[str, Any], num_envs: int, mode: str = "dummy", wrapper: Wrapper | None = None
) -> VecEnv:
    """``num_envs`` copies of ``env_id`` stepped together.

    ``mode``: ``dummy`` (one after another in this process), ``subproc`` (one process each) or
    ``batched`` (:class:`BatchedDummyVecEnv`: this process, the physics of all copies in one
    multithreaded native call; OpenClaw envs only, no ``wrapper``) or ``warp`` (``agents.warp_vec_env.WarpVecEnv``:
    the flat and rough quadruped's copies as worlds on MuJoCo Warp, a GPU when there is one; no ``wrapper``).
    """
    if mode not in VEC_MODES:
        raise ValueError(f"vectorization mode {mode!r} is unknown; choose one of: {', '.join(VEC_MODES)}")
    if mode in ("batched", "warp") and wrapper is not None:
        raise ValueError(f"mode={mode!r} steps the unwrapped envs and cannot apply a wrapper; use 'dummy'")
    if mode == "batched":
        return BatchedDummyVecEnv(env_id, kwargs, num_envs)
    if mode == "warp":
        from agents.warp_vec_env import WarpVecEnv  # MuJoCo Warp: the gpu extra

        return WarpVecEnv(env_id, kwargs, num_envs)
    fns = [env_factory(env_id, kwargs, wrapper) for _ in range(num_envs)]
    if mode == "subproc":
        return SubprocVecEnv(fns, start_method="forkserver")
    return DummyVecEnv(fns)


class BatchedDummyVecEnv(DummyVecEnv):
    """A ``DummyVecEnv`` of monitored OpenClaw envs whose physics steps in one multithreaded native call.

    Built on :class:`envs.batched.BatchedSimulation` (``nthread``: its native threads, default one
    per CPU core). Same seeds and actions give what ``make_vec_env(env_id, kwargs, n, "dummy")``
    gives, bit for bit: observations (the reset observation on done), ``float32`` rewards, dones,
    and infos with ``TimeLimit.truncated``, ``terminal_observation`` and, at an episode's end,
    ``Monitor``'s ``episode`` = ``{"r": return, "l": length in steps, "t": seconds since this
    vector env was made}`` (only ``t``, wall-clock time, differs). ``env_is_wrapped(Monitor)`` is
    therefore true. Seeds, options, ``get_attr``, ``env_method`` and ``close`` are ``DummyVecEnv``'s.
    """

    def __init__(self, env_id: str, kwargs: dict[str, Any], num_envs: int, nthread: int | None = None) -> None:
        from envs.batched import BatchedSimulation  # importing envs registers the OpenClaw ids

        self.sim = BatchedSimulation(env_id, num_envs, nthread=nthread, **kwargs)
        super().__init__([lambda env=env: env for env in self.sim.envs])
        self._episode_rewards: list[list[float]] = [[] for _ in range(num_envs)]
        self._t_start = time.time()

    def _reset_env(self, i: int, seed: int | None = None, options: dict[str, Any] | None = None):
        self._episode_rewards[i] = []
        return self.sim.reset(i, seed=seed, options=options)

    def reset(self):
        for i in range(self.num_envs):
            obs, self.reset_infos[i] = self._reset_env(i, self._seeds[i], self._options[i] or None)
            self._save_obs(i, obs)
        self._reset_seeds()
        self._reset_options()
        return self._obs_from_buf()

    def step_wait(self):
        step = self.sim.step(self.actions)
        done = step.terminated | step.truncated
        self.buf_rews[:], self.buf_dones[:] = step.rewards, done
        for key, buffer in self.buf_obs.items():
            buffer[:] = step.obs[key] if key is not None else step.obs
        infos = step.infos.dicts()
        time_limit = (step.truncated & ~step.terminated).tolist()
        for i, (reward, info, truncated) in enumerate(zip(step.rewards.tolist(), infos, time_limit)):
            self._episode_rewards[i].append(reward)
            if done[i]:  # what Monitor adds
                rewards = self._episode_rewards[i]
                elapsed = round(time.time() - self._t_start, 6)
                info["episode"] = {"r": round(sum(rewards), 6), "l": len(rewards), "t": elapsed}
            info["TimeLimit.truncated"] = truncated
            if done[i]:
                info["terminal_observation"] = step.obs_of(i)
                obs, self.reset_infos[i] = self._reset_env(i)
                self._save_obs(i, obs)
        self.buf_infos = infos
        return self._obs_from_buf(), np.copy(self.buf_rews), np.copy(self.buf_dones), list(self.buf_infos)

    def env_is_wrapped(self, wrapper_class: type[gym.Wrapper], indices=None) -> list[bool]:
        return [issubclass(Monitor, wrapper_class) or w for w in super().env_is_wrapped(wrapper_class, indices)]

    def close(self) -> None:
        self.sim.close()


def is_goal_space(space: gym.Space) -> bool:
    """True for Gymnasium-Robotics style ``Dict(observation, achieved_goal, desired_goal)`` spaces."""
    return isinstance(space, gym.spaces.Dict) and {"achieved_goal", "desired_goal"} <= set(space.spaces)


def is_goal_env(venv: VecEnv) -> bool:
    """True when ``venv``'s observations are goal-conditioned (:func:`is_goal_space`): SAC may use HER."""
    return is_goal_space(venv.observation_space)


def wrap_normalization(venv: VecEnv, normalize_obs: bool, normalize_reward: bool, gamma: float) -> VecEnv:
    """Running-statistics observation (and optionally return) normalisation, or ``venv`` unchanged."""
    if not (normalize_obs or normalize_reward):
        return venv
    keys = None
    if isinstance(venv.observation_space, gym.spaces.Dict):
        keys = sorted(venv.observation_space.spaces)
    return VecNormalize(venv, norm_obs=normalize_obs, norm_reward=normalize_reward, gamma=gamma, norm_obs_keys=keys)


def eval_normalization(eval_venv: VecEnv, train_venv: VecEnv) -> VecEnv:
    """Wrap evaluation envs with frozen copies of the training normalisation statistics."""
    if not isinstance(train_venv, VecNormalize):
        return eval_venv
    wrapped = VecNormalize(
        eval_venv,
        training=False,
        norm_obs=train_venv.norm_obs,
        norm_reward=False,
        norm_obs_keys=train_venv.norm_obs_keys if train_venv.norm_obs else None,
    )
    copy_normalization(train_venv, wrapped)
    return wrapped


def copy_normalization(train_venv: VecEnv, eval_venv: VecEnv) -> None:
    """Give the outermost ``VecNormalize`` of ``eval_venv`` the training statistics (deep copies).

    Unlike SB3's ``sync_envs_normalization`` the two stacks may differ below it (the training envs
    may carry a teacher wrapper that evaluation does not need).
    """
    if isinstance(train_venv, VecNormalize) and isinstance(eval_venv, VecNormalize):
        if train_venv.norm_obs:  # SB3 makes ``obs_rms`` only when it normalises observations
            eval_venv.obs_rms = copy.deepcopy(train_venv.obs_rms)
        eval_venv.ret_rms = copy.deepcopy(train_venv.ret_rms)


def env_kwargs(cfg: DictConfig, evaluation: bool = False) -> dict[str, Any]:
    """The env's constructor arguments as plain Python values (``eval_kwargs`` on top for evaluation)."""
    kwargs = OmegaConf.to_container(cfg.env.kwargs, resolve=True)
    if evaluation:
        kwargs.update(OmegaConf.to_container(cfg.env.eval_kwargs, resolve=True))
    return kwargs
