"""Build Stable-Baselines3 vector envs for training and evaluation from the env config."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium as gym
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.vec_env import (
    DummyVecEnv,
    SubprocVecEnv,
    VecEnv,
    VecNormalize,
    sync_envs_normalization,
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


def make_vec_env(
    env_id: str, kwargs: dict[str, Any], num_envs: int, mode: str = "dummy", wrapper: Wrapper | None = None
) -> VecEnv:
    """``num_envs`` copies of ``env_id`` stepped together (``dummy``: in this process, ``subproc``: one process each)."""
    fns = [env_factory(env_id, kwargs, wrapper) for _ in range(num_envs)]
    if mode == "subproc":
        return SubprocVecEnv(fns, start_method="forkserver")
    return DummyVecEnv(fns)


def is_goal_env(venv: VecEnv) -> bool:
    """True for Gymnasium-Robotics style ``Dict(observation, achieved_goal, desired_goal)`` spaces."""
    space = venv.observation_space
    return isinstance(space, gym.spaces.Dict) and {"achieved_goal", "desired_goal"} <= set(space.spaces)


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
    sync_envs_normalization(train_venv, wrapped)
    return wrapped
