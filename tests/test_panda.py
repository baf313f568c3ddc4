"""The Franka Panda on the claw tasks (``arm="panda"``, envs/claw/panda.py): the built model, the differential IK's
accuracy, joint and torque limits under any action, the scripted grasp on a few seeds, the batched vector
env, and the error without the ``arms`` extra."""

from __future__ import annotations

import importlib.util
import math
import os

import gymnasium as gym
import numpy as np
import pytest

import envs  # noqa: F401  (registers the ids)
from envs.batched import BatchedVecEnv
from envs.claw import ClawEnv
from envs.claw.scene import GRIP_HOME, OBJECT_REST_Z, WORKSPACE_HIGH, WORKSPACE_LOW
from envs.controllers.grasp import GraspController

HAVE_PACKAGE = importlib.util.find_spec("gymnasium_robotics") is not None  # setup.sh installs the arms extra
pytestmark = pytest.mark.skipif(not HAVE_PACKAGE, reason='gymnasium-robotics missing: pip install -e ".[arms]"')

LIFT, PLACE = "OpenClaw/Claw-v0", "OpenClaw/ClawPlace-v0"


@pytest.fixture(scope="module")
def panda():
    return ClawEnv(arm="panda")


def test_model_is_the_packages_panda_in_our_scene(panda):
    from envs.claw.panda import ARM_JOINTS

    m = panda.model
    assert m.nu == 9 and m.nsensor == 2 and m.opt.timestep == 0.002 and panda.dt == pytest.approx(0.04)
    joints = [m.joint(name).id for name in ARM_JOINTS]
    # the package's limits: joint ranges (rad), servo gains and torque limits (N m), from its files
    np.testing.assert_allclose(m.jnt_range[joints, 1], [2.8973, 1.7628, 2.8973, -0.4, 2.8973, 2.1127, 2.8973])
    np.testing.assert_allclose(m.actuator_gainprm[:7, 0], [870] * 4 + [120] * 3)
    np.testing.assert_allclose(m.actuator_forcerange[:7, 1], [87] * 4 + [12] * 3)
    assert all(m.body_gravcomp[m.jnt_bodyid[j]] == 1 for j in joints)
    # meshes come from the installed package, nothing is copied into the repository
    assert m.nmesh == 20
    assert not any(f.endswith(".stl") for _, _, files in os.walk("assets") for f in files)
    assert panda.task_context().name == "panda"


def test_home_pose_points_down_at_the_gantrys_home(panda):
    obs, _ = panda.reset(seed=0)
    o = obs["observation"]
    np.testing.assert_allclose(o[0:3], GRIP_HOME, atol=1e-4)  # grip position (m)
    assert o[3] == pytest.approx(0.08, abs=1e-6) and abs(o[7]) < 1e-3  # jaws open (m), yaw 0
    rot = panda.data.site_xmat[panda.model.site("panda/grip").id].reshape(3, 3)
    assert rot[2, 2] == pytest.approx(-1.0, abs=1e-3)  # the hand points down


def test_ik_reaches_the_cube_workspace(panda):
    """From home, the IK puts the grip on targets across the cube and goal region (x, y within 0.2 m, z from the
    table's lowest grip height to 0.3 m above it, any yaw in +-pi/2) within 0.1 mm and 1 mrad, inside the joint
    limits; one control step's 3 iterations reach a target 5 cm away within 1 mm."""
    ik, home = panda.claw_arm.ik, panda.claw_arm.home
    rng = np.random.default_rng(0)
    for _ in range(40):
        target = rng.uniform([-0.2, -0.2, WORKSPACE_LOW[2]], [0.2, 0.2, 0.70])
        yaw = float(rng.uniform(-math.pi / 2, math.pi / 2))
        q = ik.solve(home, target, yaw, iterations=100)
        assert np.all(q >= ik.low) and np.all(q <= ik.high)
        pos, got_yaw = ik.pose(q)
        assert np.linalg.norm(pos - target) < 1e-4 and abs(got_yaw - yaw) < 1e-3, (target, yaw, pos, got_yaw)
        step = rng.normal(size=3)
        near = np.clip(target + 0.05 * step / np.linalg.norm(step), WORKSPACE_LOW, WORKSPACE_HIGH)
        q_step = ik.solve(q, near, yaw)  # IK_ITERATIONS: what one control step does
        assert np.linalg.norm(ik.pose(q_step)[0] - near) < 1e-3


def test_any_action_keeps_joint_and_torque_limits(panda):
    """Random and saturated actions for 300 steps: joint angles stay within the model's ranges (1 mrad: the
    constraint's softness), servo torques within the package's limits, the grip within the workspace (1 cm)."""
    rng = np.random.default_rng(1)
    m, d = panda.model, panda.data
    joints = [m.joint(f"panda/robot:panda0_joint{i}").id for i in range(1, 8)]
    adr = m.jnt_qposadr[joints]
    panda.reset(seed=1)
    for t in range(300):
        action = rng.uniform(-1, 1, 5) if t % 50 < 25 else np.sign(rng.uniform(-1, 1, 5))
        obs, *_ = panda.step(action.astype(np.float32))
        assert np.all(d.qpos[adr] >= m.jnt_range[joints, 0] - 1e-3) and np.all(d.qpos[adr] <= m.jnt_range[joints, 1] + 1e-3)
        assert np.all(np.abs(d.actuator_force) <= m.actuator_forcerange[:, 1] + 1e-9)
        grip = obs["observation"][:3]
        assert np.all(grip >= WORKSPACE_LOW - 0.01) and np.all(grip <= WORKSPACE_HIGH + 0.01), grip


def _success(env_id: str, seeds) -> list[float]:
    env = gym.make(env_id, arm="panda")
    ctrl = GraspController(spec=env.unwrapped.controller_spec)
    outcomes = []
    for seed in seeds:
        obs, _ = env.reset(seed=seed)
        ctrl.reset()
        done, lifted = False, 0.0
        while not done:
            obs, _, terminated, truncated, info = env.step(ctrl.act(obs))
            lifted = max(lifted, float(obs["achieved_goal"][2]) - OBJECT_REST_Z)
            done = terminated or truncated
        outcomes.append((info["is_success"], lifted))
    env.close()
    return outcomes


def test_scripted_grasp_lifts_and_places_with_the_panda():
    """The gantry's GraspController, unchanged, lifts (Claw-v0) and places (ClawPlace-v0) the cube with the Panda."""
    lift = _success(LIFT, range(4))
    assert all(success == 1.0 and lifted > 0.09 for success, lifted in lift), lift
    place = _success(PLACE, range(3))
    assert all(success == 1.0 and lifted > 0.02 for success, lifted in place), place  # carried, not pushed


def test_batched_vec_env_matches_sync():
    ref = gym.make_vec(LIFT, num_envs=2, vectorization_mode="sync", arm="panda", max_episode_steps=20)
    ours = BatchedVecEnv(LIFT, 2, arm="panda", max_episode_steps=20)
    a, b = ref.reset(seed=5), ours.reset(seed=5)
    np.testing.assert_array_equal(a[0]["observation"], b[0]["observation"])
    rng = np.random.default_rng(2)
    for t in range(30):  # one autoreset
        action = rng.uniform(-1, 1, (2, 5)).astype(np.float32)
        x, y = ref.step(action), ours.step(action)
        for key in ("observation", "achieved_goal", "desired_goal"):
            np.testing.assert_array_equal(x[0][key], y[0][key], err_msg=f"step {t} {key}")
        np.testing.assert_array_equal(x[1], y[1])
        np.testing.assert_array_equal(x[2], y[2])
    ref.close()
    ours.close()


def test_unknown_arm_and_missing_package_are_named(check_missing_extra):
    with pytest.raises(ValueError, match="arm='ur5' is not supported; use arm='gantry'"):
        ClawEnv(arm="ur5")
    check_missing_extra("gymnasium_robotics", "arms", LIFT, {"arm": "panda"}, ["env=claw_panda", "agent=sac"])
