"""The quadruped's gait measures and foot reward terms (``envs.quadruped.gait``, ``envs.quadruped.rewards``)."""

from __future__ import annotations

from types import SimpleNamespace

import gymnasium as gym
import numpy as np
import pytest

import envs  # noqa: F401  (registers OpenClaw/*)
from envs.array_math import BatchMath, ScalarMath
from envs.controllers.trot import QuadrupedScore, TrotController
from envs.quadruped import QuadrupedEnv
from envs.quadruped.gait import GAIT_METRICS, advance_gait, foot_motion, gait_info, new_gait_state
from envs.quadruped.rewards import (reward_feet_clearance, reward_feet_clearance_ahead, reward_feet_slip,
                                    reward_trunk_clearance)

R = 0.02  # m, a foot sphere's radius
# the constants the foot and trunk terms read of their env (m): clearance target, step margin, trunk margin
ENV = SimpleNamespace(FOOT_CLEARANCE_TARGET=0.08, FOOT_STEP_MARGIN=0.04, TRUNK_MARGIN=0.05)


def slip(scale, contact, slip2, m=ScalarMath):
    return reward_feet_slip(scale, SimpleNamespace(contact=contact, slip2=slip2), ENV, m)


def clearance(scale, height, speed2, m=ScalarMath):
    return reward_feet_clearance(scale, SimpleNamespace(height=height, speed2=speed2), ENV, m)


def clearance_ahead(scale, ahead, speed2, m=ScalarMath):
    return reward_feet_clearance_ahead(scale, SimpleNamespace(ahead=ahead, speed2=speed2), ENV, m)


def trunk(scale, trunk_clearance, m=ScalarMath):
    return reward_trunk_clearance(scale, SimpleNamespace(trunk_clearance=trunk_clearance), ENV, m)


def readings(pos, vel, ang) -> list[float]:
    """The 36 foot sensor values of four feet with the same position, velocity and angular velocity."""
    return [float(v) for v in np.concatenate([np.tile(pos, 4), np.tile(vel, 4), np.tile(ang, 4)])]


def test_a_rolling_foot_does_not_slip_and_a_sliding_one_does():
    # rolling forward at 1 m/s: centre speed r * w_y about +y, contact point at rest
    height, speed2, slip2 = foot_motion(readings([0, 0, R], [1.0, 0, 0], [0, 1.0 / R, 0]), R)
    np.testing.assert_allclose(height, 0.0, atol=1e-12)
    np.testing.assert_allclose(speed2, 1.0)
    np.testing.assert_allclose(slip2, 0.0, atol=1e-12)
    _, _, slip2 = foot_motion(readings([0, 0, R], [0.3, -0.4, 0], [0, 0, 0]), R)  # sliding, not turning
    np.testing.assert_allclose(slip2, 0.25)
    _, _, slip2 = foot_motion(readings([0, 0, R], [0, 0, 0], [2.0, 0, 0]), R)  # turning about x in place
    np.testing.assert_allclose(slip2, (2.0 * R) ** 2)


def test_gait_state_counts_stance_swings_and_apex():
    state = new_gait_state()
    # two stance steps sliding at 0.1 m/s, a 3-step swing peaking 5 cm above lift-off, a touchdown
    for contact, height, slip in ((True, 0.01, 0.1), (True, 0.01, 0.1), (False, 0.03, 0), (False, 0.06, 0),
                                  (False, 0.02, 0), (True, 0.0, 0.0)):
        state = advance_gait(state, [contact] * 4, [height] * 4, [slip * slip] * 4, ScalarMath)
    info = gait_info(state, ScalarMath)
    assert info["duty_factor"] == pytest.approx(0.5) and info["duty_factor_RL"] == pytest.approx(0.5)
    assert info["stance_slip"] == pytest.approx(0.2 / 3) and info["stance_slip_FR"] == pytest.approx(0.2 / 3)
    assert info["swing_apex"] == pytest.approx(5.0)  # cm
    assert [m.info_key for m in GAIT_METRICS] == list(info)  # every measure declared, in the info's order
    batch = gait_info(np.array([state, new_gait_state()]).T, BatchMath)  # two envs: (ROWS x 4, N)
    assert batch["swing_apex"].tolist() == [info["swing_apex"], 0.0]


def test_foot_terms_vanish_without_slip_or_at_the_clearance_height():
    contact, slip2 = [True, False, True, False], [0.0, 4.0, 0.0, 4.0]
    assert slip(-1.0, contact, slip2) == 0.0  # the sliding feet are in the air
    assert slip(-1.0, [not c for c in contact], slip2) == -8.0
    assert clearance(-2.0, [0.08] * 4, [1.0] * 4) == 0.0
    assert clearance(-2.0, [0.0] * 4, [1.0] * 4) == pytest.approx(-0.64)
    assert clearance(-2.0, [0.0] * 4, [0.0] * 4) == 0.0  # standing feet


def test_clearance_ahead_charges_only_feet_below_the_margin():
    """One-sided: a moving foot below the margin over the ground ahead costs its shortfall times the root of its
    speed; at or above it, or standing, nothing; one env's floats and a batch give the same bits."""
    speed2 = [1.0, 1.0, 4.0, 0.0]
    assert clearance_ahead(-2.0, [0.04, 0.2, 0.04, -0.1], speed2) == 0.0
    cost = clearance_ahead(-2.0, [0.0, -0.06, 0.03, -0.1], speed2)
    assert cost == pytest.approx(-2.0 * (0.04 + 0.1 + 0.01 * 2**0.5))
    batch = clearance_ahead(-2.0, [np.array([0.0, 0.04])] * 4, [np.array(v) for v in speed2], BatchMath)
    assert batch.tolist() == [clearance_ahead(-2.0, [0.0] * 4, speed2), 0.0]


def test_trunk_clearance_charges_only_a_trunk_below_the_margin():
    """One-sided: the trunk's shortfall under the margin (m) times the scale; clear of it, nothing; floats and a batch
    give the same bits."""
    assert trunk(-40.0, 0.05) == 0.0
    assert trunk(-40.0, np.inf) == 0.0  # not measured
    assert trunk(-40.0, 0.02) == pytest.approx(-1.2)
    assert trunk(-40.0, -0.1) == pytest.approx(-6.0)  # into a riser
    batch = trunk(-40.0, np.array([0.02, 0.3, -0.1]), BatchMath)
    assert batch.tolist() == [trunk(-40.0, c) for c in (0.02, 0.3, -0.1)]


def test_a_standing_robot_has_duty_one_and_no_slip():
    env = gym.make("OpenClaw/Quadruped-v1")
    env.reset(seed=0, options={"command": (0.0, 0.0, 0.0)})
    for _ in range(100):
        _, _, terminated, _, info = env.step(np.zeros(12))
    assert not terminated
    assert info["duty_factor"] > 0.98 and info["stance_slip"] < 0.02, info
    assert {m.name for m in GAIT_METRICS} <= {m.name for m in QuadrupedEnv.METRICS}
    env.close()


def test_without_gait_measures_the_step_is_the_same_less_the_measures():
    """``gait_measures=False`` (the training envs of configs/env/quadruped.yaml) changes no observation, reward or
    other info entry, leaves the measures out of the info and out of the env's ``METRICS``."""
    on, off = gym.make("OpenClaw/Quadruped-v1"), gym.make("OpenClaw/Quadruped-v1", gait_measures=False)
    gait_keys = {m.info_key for m in GAIT_METRICS}
    assert not set(off.unwrapped.METRICS) & set(GAIT_METRICS) and set(on.unwrapped.METRICS) >= set(GAIT_METRICS)
    actions = np.random.default_rng(0).uniform(-1.0, 1.0, (300, 12))
    for env in (on, off):
        env.reset(seed=0)
    for action in actions:
        (o1, r1, t1, _, i1), (o2, r2, t2, _, i2) = on.step(action), off.step(action)
        assert o1.tobytes() == o2.tobytes() and (r1, t1) == (r2, t2)
        assert {k: v for k, v in i1.items() if k not in gait_keys} == i2 and gait_keys <= set(i1)
        if t1:
            on.reset()
            off.reset()
    on.close()
    off.close()


SKATING = 0.05  # m/s of stance slip: the target the learned gaits are held to (benchmarks/RESULTS.md, issue 37)


@pytest.fixture(scope="module")
def trot_episodes() -> list[dict]:
    """The default task's trot over the env's default commands: the last info of 8 s episodes from seeds 0-7."""
    env = gym.make("OpenClaw/Quadruped-v1")
    trot = TrotController(spec=env.unwrapped.controller_spec)
    env.unwrapped.set_gait_frequency(trot.params.frequency_hz)
    infos = []
    for seed in range(8):
        obs, _ = env.reset(seed=seed)
        for _ in range(400):
            obs, _, terminated, _, info = env.step(trot.act(obs))
            assert not terminated, (seed, info)
        infos.append(info)
    env.close()
    return infos


def test_the_scripted_trot_steps_with_clear_swings(trot_episodes):
    """No falls, and in every episode swings that clear the ground (measured 4.6-6.4 cm) and a trot's duty factor
    (0.41-0.55); its mean stance slip no worse than measured (0.118 m/s), while it misses the target below."""
    for info in trot_episodes:
        assert info["swing_apex"] > 4.0 and 0.35 < info["duty_factor"] < 0.75, info
    assert np.mean([info["stance_slip"] for info in trot_episodes]) <= 0.13


@pytest.mark.xfail(strict=True, raises=AssertionError, reason=(
    "the trot's stance slip is 0.118 m/s (mean of seeds 0-7, 8 s of the default commands; 0.04-0.18 per episode): "
    "its feet land with their swing speed; the touchdown steps, 10 % of the stance steps at 0.67 m/s, carry 55 % "
    "of it, the lift-offs 20 %, mid-stance 0.037 m/s; no TrotParams change tried reaches 0.05 (duty 0.6: 0.076)"))
def test_the_scripted_trot_walks_without_skating(trot_episodes):
    """The episodes' stance slip (the env's gait measure, as evaluations report it) within the skating target."""
    assert np.mean([info["stance_slip"] for info in trot_episodes]) <= SKATING


def test_the_trot_score_charges_slip_like_tracking_error():
    """What the trot's tuning and the adaptive teacher's checks rank by: a skating gait pays for its slip."""
    score = QuadrupedScore()
    for slip in (0.1, 0.3):  # info carries the episode's running stance slip; the last one counts
        score.add(None, {"tracking_error": 0.1, "fell": False, "stance_slip": slip})
    assert score.metrics()["score"] == pytest.approx(-0.4) and score.metrics()["stance_slip"] == 0.3
