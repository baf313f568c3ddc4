"""``examples/deploy_mujoco.py``'s courses (issue 81): a staircase or a slope, up and down, added to the package's own
scene; the ground MuJoCo collides with is the course's profile, the fall rule and the stance feet read the course, a
robot that stands at its foot never gets over it, and bad course arguments are one line, status 2."""

from __future__ import annotations

import math
import subprocess
import sys

import mujoco
import numpy as np
import pytest

from agents.export.run import export_metadata
from test_deploy import EXAMPLE, deploy  # noqa: F401  (the example as a module: a fixture)


@pytest.fixture(scope="module")
def meta(deploy):
    return deploy.read_metadata(export_metadata("OpenClaw/Quadruped-v1", {"robot": "go2"}, "ppo", {}), "test")


def built(deploy, meta, course):
    model = deploy.load_robot(meta, deploy.robot_file(meta), False, None, course)
    return model, deploy.Indices(model, meta, course), mujoco.MjData(model)


def ray_ground(model, data, x: float, y: float = 0.0) -> float:
    """The height (m) where a ray cast straight down at world (x, y) meets the scene's static geoms."""
    geom = np.zeros(1, dtype=np.int32)
    depth = mujoco.mj_ray(model, data, np.array([x, y, 5.0]), np.array([0.0, 0.0, -1.0]), None, 1, -1, geom)
    return 5.0 - depth


@pytest.mark.parametrize("course", ["stairs", "slope"])
def test_the_course_collides_as_its_profile(deploy, meta, course):
    shape = deploy.stairs(0.10, 0.25, 10) if course == "stairs" else deploy.slope(15.0)
    model, idx, data = built(deploy, meta, shape)
    mujoco.mj_forward(model, data)
    xs = np.arange(0.5, shape.end + 1.0, 0.0625) + 0.01  # off the steps' edges, past the robot at the spawn
    on = [ray_ground(model, data, x) for x in xs]
    np.testing.assert_allclose(on, [shape.ground(x) for x in xs], atol=1e-6)
    assert len(idx.ground) == len(shape.pieces) + 1  # the floor and every piece
    if course == "stairs":  # 10 risers of 10 cm up over 9 treads of 25 cm, the 1 m landing, 10 down
        assert max(on) == pytest.approx(1.0) and shape.end == pytest.approx(deploy.COURSE_START + 18 * 0.25 + 1.0)
        assert np.diff([p[2] for p in shape.pieces]).tolist() == pytest.approx([0.1] * 9 + [-0.1] * 9)
    else:
        assert max(on) == pytest.approx(deploy.RAMP * math.tan(math.radians(15.0)))
    assert ray_ground(model, data, 2.0, deploy.COURSE_WIDTH / 2 + 0.05) == pytest.approx(0.0, abs=1e-9)  # beside it


def test_the_fall_rule_and_the_stance_feet_read_the_course(deploy, meta):
    """On the stairs' landing (1 m up) a standing robot has not fallen though its trunk is 1.3 m above the floor; the
    trunk lowered onto the landing has (its touch); its feet stand on a step, in stance, swing apex over the step."""
    shape = deploy.stairs(0.10, 0.25, 10)
    model, idx, data = built(deploy, meta, shape)
    landing = deploy.COURSE_START + 9 * 0.25 + 0.5
    deploy.reset(model, data, idx, meta, np.random.default_rng(0))
    data.qpos[0] += landing
    data.qpos[2] += 1.0
    mujoco.mj_forward(model, data)
    obs = deploy.observation(model, data, idx, meta, np.zeros(3), np.zeros(12, dtype=np.float32), 0.0)
    assert not deploy.fell(model, data, idx, meta, obs)
    for _ in range(200):  # settle onto the landing, the motors holding the default pose
        data.ctrl[idx.motors] = np.asarray(meta["kp"]) * (np.asarray(meta["default_pose"]) - data.qpos[idx.qpos])
        mujoco.mj_step(model, data)
    mujoco.mj_forward(model, data)
    stats = deploy.FootStats(model, idx.feet, idx.ground, meta["gait_measures"]["contact_force_n"], idx.ground_under)
    assert (stats.normal_forces(model, data) > meta["gait_measures"]["contact_force_n"]).all()
    assert not deploy.fell(model, data, idx, meta, obs)
    data.qpos[2] = 1.0 + 0.06  # the trunk on the landing
    mujoco.mj_forward(model, data)
    assert deploy.fell(model, data, idx, meta, obs)


def test_a_robot_that_stands_at_the_foot_of_the_stairs_never_gets_over(deploy, meta):
    start, stop = meta["observation_layout"]["command"]
    commands = []

    class Stand:  # an onnxruntime session's run(), all actions zero: the default pose
        def run(self, _, feeds):
            commands.append(feeds["observation"][0, start:stop].copy())
            return [np.zeros((len(feeds["observation"]), 12), dtype=np.float32)]

    shape = deploy.stairs(0.10, 0.25, 2)
    model, idx, data = built(deploy, meta, shape)
    episode = deploy.run_episode(Stand(), model, data, idx, meta, np.array([0.5, 0.0, 0.3]), 2.0,
                                 np.random.default_rng(0))
    assert (episode["fell"], episode["over"]) == (False, False)
    row = deploy.summary(np.array([0.5, 0.0, 0.3]), [episode], course=True).split()
    assert row[-1] == "0/1" and row[-4] == "0/1"  # over, falls
    # the policy read the heading command (yaw held near 0: |wz| <= 0.5 x its yaw), not the command's 0.3 rad/s
    assert np.allclose(np.array(commands)[:, 0:2], (0.5, 0.0)) and np.abs(np.array(commands)[:, 2]).max() < 0.05


@pytest.mark.parametrize("args, message", [
    (["--stairs", "0.1,0.25"], "is not riser,tread,count"),
    (["--stairs", "0.1,-0.25,3"], "is not riser,tread,count"),
    (["--stairs", "0.1,0.25,2", "--slope", "10"], "not allowed with argument"),
    (["--slope", "50"], "below 45 degrees"),
    (["--slope", "x"], "is not a finite number"),
])
def test_bad_course_arguments_are_one_line_with_status_2(args, message, tmp_path):
    result = subprocess.run([sys.executable, str(EXAMPLE), str(tmp_path / "none.onnx"), *args], capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 2 and message in result.stderr and len(result.stderr.splitlines()) == 1, result.stderr
