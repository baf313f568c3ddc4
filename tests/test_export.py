"""``export.py``: the ONNX / TorchScript file acts like the torch policy and evaluates like ``evaluate.py``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import torch
from stable_baselines3.common.vec_env import VecNormalize

from agents import checkpoint
from agents.run_checkpoints import run_config
from agents.factory import load_agent
from agents.export.onnx_policy import OnnxPolicy, flatten_observation
from agents.vec_env import env_kwargs, make_vec_env
from envs.claw import ClawEnv
from envs.quadruped import QuadrupedEnv

ROOT = Path(__file__).resolve().parent.parent
STEPS = 150  # episode length cap for the return comparison (gym.make's max_episode_steps)


def _script(name: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(ROOT / name), *args], cwd=ROOT, capture_output=True, text=True, timeout=300,
        env={**os.environ, "HYDRA_FULL_ERROR": "0"},
    )


@pytest.fixture(scope="module", params=[("quadruped", "ppo"), ("claw", "sac")], ids=["quadruped-ppo", "claw-sac"])
def exported(request, tmp_path_factory) -> Path:
    """A smoke-trained run (quadruped: normalised observations; claw: Dict observations), exported."""
    env, agent = request.param
    path = tmp_path_factory.mktemp(f"export-{env}") / "run"
    result = _script("train.py", "train=smoke", f"env={env}", f"agent={agent}", "train.total_timesteps=2048", f"hydra.run.dir={path}")
    assert result.returncode == 0, result.stderr[-3000:]
    result = _script("export.py", f"run={path}", "torchscript=true")
    assert result.returncode == 0, result.stderr[-3000:]
    assert f"onnx: {path / 'export' / 'policy.onnx'}" in result.stdout
    return path


def _torch_policy(run: Path, num_envs: int):
    """The checkpoint's SB3 learner and a vector env wrapped in its frozen normalisation (as evaluate.py)."""
    saved = run_config(run)
    ckpt = checkpoint.best(run)
    venv = make_vec_env(saved.env.id, env_kwargs(saved, evaluation=True), num_envs)
    if ckpt.normalization is not None:
        venv = VecNormalize.load(str(ckpt.normalization), venv)
        venv.training, venv.norm_reward = False, False
    return load_agent(saved.agent.name, str(ckpt.model), venv, "cpu"), venv


def test_exported_files_match_the_torch_policy_on_a_thousand_rollout_observations(exported):
    model, venv = _torch_policy(exported, num_envs=4)
    normalised = isinstance(venv, VecNormalize)
    venv.seed(3)
    obs, raws = venv.reset(), []
    for _ in range(250):  # 4 envs x 250 steps of the deterministic policy
        raws.append(venv.get_original_obs() if normalised else obs)
        obs, *_ = venv.step(model.predict(obs, deterministic=True)[0])
    venv.close()
    raw = {k: np.concatenate([r[k] for r in raws]) for k in raws[0]} if isinstance(raws[0], dict) else np.concatenate(raws)
    expected = model.predict(venv.normalize_obs(raw) if normalised else raw, deterministic=True)[0]
    assert expected.shape[0] == 1000 and np.ptp(expected) > 1e-3  # a policy whose actions vary

    policy = OnnxPolicy(exported / "export" / "policy.onnx")
    np.testing.assert_allclose(policy.predict(raw)[0], expected, rtol=0, atol=1e-5)
    flat = torch.as_tensor(flatten_observation(raw, policy.observation_keys))
    extra = {"metadata.json": ""}
    scripted = torch.jit.load(str(exported / "export" / "policy.pt"), _extra_files=extra)
    np.testing.assert_allclose(scripted(flat).detach().numpy(), expected, rtol=0, atol=1e-5)
    assert json.loads(extra["metadata.json"]) == policy.metadata
    if normalised:  # the statistics are folded in: feeding normalised observations would be wrong
        assert np.abs(policy.predict(venv.normalize_obs(raw))[0] - expected).max() > 1e-3


def test_metadata_describes_env_layout_scale_rate_and_commit(exported):
    meta = OnnxPolicy(exported / "export" / "policy.onnx").metadata
    saved = run_config(exported)
    env = gym.make(saved.env.id, **env_kwargs(saved, evaluation=True))
    assert meta["env_id"] == saved.env.id and meta["env_version"] == str(env.spec.version)
    assert meta["observation_dim"] == str(gym.spaces.flatdim(env.observation_space))
    recorded = checkpoint.best(exported).meta[checkpoint.COMMIT_KEY]  # by train.py: git rev-parse HEAD
    assert meta["training_commit"] == recorded and len(recorded) == 40 and int(recorded, 16) >= 0
    assert json.loads(meta["env_kwargs"]) == env_kwargs(saved, evaluation=True)
    layout = json.loads(meta["observation_layout"])
    if saved.env.name == "quadruped":  # the env's slices (v1: the class's table and the gait clock's)
        assert layout == {k: [s.start, s.stop] for k, s in env.unwrapped.OBS_SLICES.items()}
        assert set(QuadrupedEnv.OBS_SLICES) <= set(layout)
        assert json.loads(meta["action_scale"]) == [QuadrupedEnv.ACTION_SCALE] * 12
        assert float(meta["control_rate_hz"]) == pytest.approx(50.0)
        # the robot's joints for a deploy script: our order, the SDK's, the map, pose and gains
        assert json.loads(meta["robot"]) == "openclaw_go1"
        ours, sdk = json.loads(meta["joint_names"]), json.loads(meta["sdk_joint_names"])
        assert ours[:3] == ["FR_hip_joint", "FR_thigh_joint", "FR_calf_joint"] and sdk[0] == "FL_hip_joint"
        index = json.loads(meta["sdk_index"])
        assert [sdk[i] for i in index] == ours and sorted(index) == list(range(12))
        assert json.loads(meta["default_pose"]) == env.unwrapped.default_pose.tolist()
        assert json.loads(meta["kp"]) == [35.0] * 12 and json.loads(meta["kd"]) == [0.5] * 12
        assert json.loads(meta["torque_limit"]) == [23.7, 23.7, 35.55] * 4
    else:  # the Dict flattened as gymnasium.spaces.flatten does
        obs, _ = env.reset(seed=0)
        flat = gym.spaces.flatten(env.observation_space, obs)
        assert json.loads(meta["observation_keys"]) == ["achieved_goal", "desired_goal", "observation"]
        np.testing.assert_array_equal(flatten_observation(obs, json.loads(meta["observation_keys"])), flat)
        grip = layout["observation.grip_pos"]
        np.testing.assert_array_equal(flat[grip[0] : grip[1]], obs["observation"][ClawEnv.OBS_SLICES["grip_pos"]])
        assert layout["desired_goal"] == [3, 6] and list(layout["observation"]) == [6, 35]
        assert json.loads(meta["action_scale"]) == pytest.approx(list(ClawEnv.ACTION_SCALE))
        assert float(meta["control_rate_hz"]) == pytest.approx(25.0) and meta["observation_dim"] == "35"
    env.close()


def test_a_rollout_driven_by_the_file_and_evaluate_py_on_it_match_evaluate_py(exported, tmp_path):
    onnx_file = exported / "export" / "policy.onnx"
    common = ["episodes=2", "envs=2", "videos=0", "seed=11", f"+env_kwargs.max_episode_steps={STEPS}"]
    by_torch = _script("evaluate.py", f"run={exported}", *common, f"out_dir={tmp_path / 'torch'}")
    by_onnx = _script("evaluate.py", f"checkpoint={onnx_file}", *common, f"out_dir={tmp_path / 'onnx'}")
    assert by_torch.returncode == 0 and by_onnx.returncode == 0, (by_torch.stderr + by_onnx.stderr)[-3000:]
    torch_metrics = json.loads((tmp_path / "torch" / "metrics.json").read_text())
    onnx_metrics = json.loads((tmp_path / "onnx" / "metrics.json").read_text())
    assert onnx_metrics["checkpoint"] == str(onnx_file) and onnx_metrics["env_id"] == torch_metrics["env_id"]
    for key in ("mean_return", "std_return", "mean_length"):
        assert onnx_metrics[key] == pytest.approx(torch_metrics[key], rel=1e-5, abs=1e-6), key

    # a plain Gymnasium loop: env i's episode is reset with seed + i, as in evaluate.py's protocol
    policy = OnnxPolicy(onnx_file)
    returns = []
    for i in range(2):
        env = gym.make(policy.env_id, max_episode_steps=STEPS, **policy.env_kwargs)
        obs, _ = env.reset(seed=11 + i)
        total, done = 0.0, False
        while not done:
            obs, reward, terminated, truncated, _ = env.step(policy.act(obs))
            total, done = total + float(reward), terminated or truncated
        env.close()
        returns.append(total)
    assert sorted(returns) == pytest.approx(sorted(torch_metrics["returns"]), rel=1e-5, abs=1e-6)


def test_bad_sources_fail_with_one_clear_line(tmp_path):
    result = _script("export.py", f"run={tmp_path / 'nope'}")
    assert result.returncode == 2 and result.stderr.strip().count("\n") == 0, result.stderr
    assert "no such directory" in result.stderr
    (tmp_path / "bad.onnx").write_bytes(b"not onnx")
    result = _script("evaluate.py", f"checkpoint={tmp_path / 'bad.onnx'}", "videos=0", "episodes=1")
    assert result.returncode == 2 and "cannot be loaded" in result.stderr and "re-export" in result.stderr, result.stderr
