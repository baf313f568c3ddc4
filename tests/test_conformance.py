"""Gymnasium/SB3 conformance and bad-input handling, for every registered OpenClaw env."""

from __future__ import annotations

import pickle

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env as gym_check_env
from stable_baselines3.common.env_checker import check_env as sb3_check_env

import envs

ENV_IDS = list(envs.ENV_IDS)


def _flat(obs) -> np.ndarray:
    if isinstance(obs, dict):
        return np.concatenate([np.ravel(obs[k]) for k in sorted(obs)])
    return np.ravel(obs)


@pytest.fixture(params=ENV_IDS)
def env_id(request) -> str:
    return request.param


def test_registered_and_made(env_id):
    env = gym.make(env_id)
    obs, info = env.reset(seed=0)
    assert env.observation_space.contains(obs)
    assert env.action_space.shape is not None and env.action_space.low.min() == -1.0
    assert env.spec.max_episode_steps is not None
    env.close()


def test_gymnasium_check_env(env_id):
    env = gym.make(env_id).unwrapped
    gym_check_env(env, skip_render_check=True)


def test_sb3_check_env(env_id):
    sb3_check_env(gym.make(env_id).unwrapped, warn=True)


def test_same_seed_same_rollout_for_1000_steps(env_id):
    def rollout():
        env = gym.make(env_id)
        obs, _ = env.reset(seed=123)
        env.action_space.seed(7)
        out = [_flat(obs)]
        for _ in range(1000):
            obs, reward, terminated, truncated, _ = env.step(env.action_space.sample())
            out.append(np.append(_flat(obs), reward))
            if terminated or truncated:
                obs, _ = env.reset()
                out.append(_flat(obs))
        return np.concatenate(out)

    a, b = rollout(), rollout()
    np.testing.assert_array_equal(a, b)


def test_different_seeds_differ(env_id):
    env = gym.make(env_id)
    o1, _ = env.reset(seed=1)
    o2, _ = env.reset(seed=2)
    assert not np.array_equal(_flat(o1), _flat(o2))


def test_out_of_bounds_action_is_clipped(env_id):
    env = gym.make(env_id)
    n = env.action_space.shape[0]
    env.reset(seed=3)
    state = env.unwrapped.data
    o_big = env.step(np.full(n, 7.5))[0]
    qpos_big = state.qpos.copy()
    env.reset(seed=3)
    o_one = env.step(np.ones(n))[0]
    np.testing.assert_array_equal(qpos_big, state.qpos)
    np.testing.assert_array_equal(_flat(o_big), _flat(o_one))


@pytest.mark.parametrize(
    "bad, message",
    [(np.array([np.nan]), "NaN"), (np.array([np.inf]), "inf"), (None, "shape")],
)
def test_bad_actions_raise_value_error(env_id, bad, message):
    env = gym.make(env_id).unwrapped
    env.reset(seed=0)
    n = env.action_space.shape[0]
    action = np.zeros(n + 1) if bad is None else np.concatenate([bad, np.zeros(n - 1)])
    with pytest.raises(ValueError, match=message):
        env.step(action)


def test_unknown_constructor_argument_is_named(env_id):
    with pytest.raises(TypeError, match="no_such_option.*valid arguments"):
        gym.make(env_id, no_such_option=1)


def test_bad_render_mode(env_id):
    with pytest.raises(ValueError, match="render_mode"):
        gym.make(env_id, render_mode="cinema").unwrapped


def test_physics_blowup_ends_episode_and_reset_recovers(env_id):
    env = gym.make(env_id)
    obs, _ = env.reset(seed=0)
    env.unwrapped.data.qvel[:] = 1e12  # beyond MuJoCo's mjMAXVAL: the solver flags a divergence
    obs, reward, terminated, truncated, info = env.step(np.zeros(env.action_space.shape))
    assert terminated and info["physics_blowup"] is True
    assert np.isfinite(_flat(obs)).all() and np.isfinite(reward)
    obs, _ = env.reset(seed=0)
    assert np.isfinite(_flat(obs)).all()
    obs, reward, terminated, _, info = env.step(np.zeros(env.action_space.shape))
    assert not info.get("physics_blowup", False)
    assert np.isfinite(_flat(obs)).all()


def test_env_pickles_mid_episode(env_id):
    env = gym.make(env_id).unwrapped
    env.reset(seed=5)
    for _ in range(3):
        env.step(np.zeros(env.action_space.shape))
    clone = pickle.loads(pickle.dumps(env))
    a = np.linspace(-0.5, 0.5, env.action_space.shape[0])
    np.testing.assert_array_equal(_flat(env.step(a)[0]), _flat(clone.step(a)[0]))


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_make_vec(env_id, mode):
    vec = gym.make_vec(env_id, num_envs=2, vectorization_mode=mode)
    obs, _ = vec.reset(seed=0)
    for _ in range(5):
        obs, reward, terminated, truncated, info = vec.step(vec.action_space.sample())
    assert reward.shape == (2,)
    assert np.isfinite(_flat(obs)).all()
    vec.close()


def test_rgb_render_headless(env_id):
    env = gym.make(env_id, render_mode="rgb_array", width=96, height=64)
    env.reset(seed=0)
    frame = env.render()
    env.close()
    assert frame.shape == (64, 96, 3) and frame.dtype == np.uint8
    assert frame.std() > 5.0  # a real scene, not a blank buffer
