"""What hardware users expect of a sim policy: observation noise, action delay, motor strength and Kp/Kd
randomization (QuadrupedEnv arguments, off by default), each checked by what it does."""

from __future__ import annotations

import envs  # noqa: F401, I001  first: registers the ids and picks a headless GL backend before mujoco loads

import numpy as np
import pytest

from envs.quadruped import QuadrupedEnv

SL = {**QuadrupedEnv.OBS_SLICES, **QuadrupedEnv.CLOCK_SLICES}


def test_off_by_default():
    env = QuadrupedEnv()
    assert env.obs_noise == 0.0 and env.action_delay_steps == (0, 0)
    assert env.motor_strength == env.kp_scale == env.kd_scale == (1.0, 1.0)


def test_observation_noise_has_playgrounds_scales_and_spares_the_command():
    clean, noisy = QuadrupedEnv(gait_clock=True), QuadrupedEnv(gait_clock=True, obs_noise=1.0)
    deviations = []
    for seed in range(30):
        a, _ = clean.reset(seed=seed)
        b, _ = noisy.reset(seed=seed)  # the same state: the noise is drawn after the episode's draws
        deviations.append(np.abs(b - a))
    dev = np.max(deviations, axis=0)
    for name, scale in QuadrupedEnv.OBS_NOISE_SCALES.items():
        assert 0.8 * scale < dev[SL[name]].max() <= scale + 1e-6, name  # uniform in +-scale, and used
    for name in ("command", "last_action", "phase_sin", "phase_cos", "gait_frequency"):
        assert dev[SL[name]].max() == 0.0, name
    again = QuadrupedEnv(gait_clock=True, obs_noise=1.0)
    np.testing.assert_array_equal(again.reset(seed=3)[0], noisy.reset(seed=3)[0])  # seeded


@pytest.mark.parametrize("delay", [0, 1, 2])
def test_action_delay_applies_the_action_of_d_steps_ago(delay):
    env = QuadrupedEnv(action_delay_steps=(delay, delay))
    env.reset(seed=0)
    actions = np.random.default_rng(0).uniform(-1, 1, (6, 12))
    for t, action in enumerate(actions):
        obs, *_ = env.step(action)
        applied = actions[t - delay] if t >= delay else np.zeros(12)
        np.testing.assert_allclose(env.data.ctrl, env.default_pose + env.ACTION_SCALE * applied)
        np.testing.assert_allclose(obs[SL["last_action"]], action, atol=1e-6)  # what the policy sent


def test_delay_is_drawn_per_episode_within_its_range():
    env = QuadrupedEnv(action_delay_steps=(0, 2))
    delays = set()
    for seed in range(20):
        env.reset(seed=seed)
        delays.add(env.state.delay.item())
    assert delays == {0, 1, 2}


def test_motor_strength_and_gains_are_drawn_per_episode_and_joint():
    env = QuadrupedEnv(motor_strength=(0.8, 0.8), kp_scale=(1.0, 1.5), kd_scale=(2.0, 2.0))
    env.reset(seed=0)
    kp = env.model.actuator_gainprm[:, 0]
    assert np.all((kp >= 35 * 0.8 * 1.0 - 1e-9) & (kp <= 35 * 0.8 * 1.5 + 1e-9)) and kp.std() > 0
    np.testing.assert_allclose(env.model.actuator_biasprm[:, 1], -kp)
    np.testing.assert_allclose(env.model.actuator_biasprm[:, 2], -0.5 * 0.8 * 2.0)
    np.testing.assert_allclose(env.model.actuator_forcerange[:, 1], [23.7, 23.7, 35.55] * 4)  # limits kept
    first = kp.copy()
    env.reset(seed=1)
    assert not np.allclose(env.model.actuator_gainprm[:, 0], first)  # redrawn from the nominal, not compounded
    assert np.all(env.model.actuator_gainprm[:, 0] <= 35 * 0.8 * 1.5 + 1e-9)


def test_weaker_motors_sag_more():
    heights = {}
    for strength in (1.0, 0.6):
        env = QuadrupedEnv(motor_strength=(strength, strength), reset_noise_scale=0.0)
        env.reset(seed=0)
        for _ in range(50):
            env.step(np.zeros(12))
        heights[strength] = float(env.data.qpos[2])
    assert heights[0.6] < heights[1.0] - 0.01, heights


@pytest.mark.parametrize("bad, match", [
    ({"obs_noise": -0.1}, "obs_noise"),
    ({"action_delay_steps": (2, 1)}, "action_delay_steps"),
    ({"action_delay_steps": (0, 1.5)}, "whole numbers"),
    ({"motor_strength": (0.0, 1.0)}, "motor_strength"),
    ({"kd_scale": "1"}, "kd_scale"),
])
def test_bad_values_name_the_argument(bad, match):
    with pytest.raises(ValueError, match=match):
        QuadrupedEnv(**bad)
