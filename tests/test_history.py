"""The quadruped's proprioceptive history (``history_steps``, ``envs.quadruped.history``): the layout, the
frames it holds, its reset, its absence at ``k = 1`` and what export tells a deploy loop. The batched env's
bits: ``tests/test_batched.py`` (case ``terrain-history``)."""

from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest
import torch

import envs  # noqa: F401
from agents.export.run import export_metadata
from envs.quadruped import QuadrupedEnv
from envs.quadruped.history import FRAME, frame_index

FRAME_WIDTH = 42  # ang_vel 3, gravity 3, joint_pos 12, joint_vel 12, last_action 12


def rollout(steps: int, reset_at: int, **kwargs) -> list[np.ndarray]:
    """Observations of one seeded episode of ``Quadruped-v1`` with observation noise, reset (unseeded) at step
    ``reset_at``; the same actions whatever ``kwargs``."""
    env = gym.make("OpenClaw/Quadruped-v1", obs_noise=1.0, **kwargs)
    actions = np.random.default_rng(3).uniform(-1, 1, (steps, 12))
    observations = [env.reset(seed=4)[0]]
    for t, action in enumerate(actions):
        observations.append(env.reset()[0] if t == reset_at else env.step(action)[0])
    env.close()
    return observations


def test_history_frames_follow_the_observations_and_k1_is_todays_observation():
    plain, one, four = rollout(12, 6), rollout(12, 6, history_steps=1), rollout(12, 6, history_steps=4)
    dim = plain[0].shape[0]
    assert four[0].shape == (dim + 3 * FRAME_WIDTH,)
    index = frame_index(QuadrupedEnv.OBS_SLICES)
    for t, (p, o, f) in enumerate(zip(plain, one, four)):
        assert p.dtype == o.dtype == f.dtype == np.float32
        assert np.array_equal(p, o), f"history_steps=1 changed the observation at step {t}"
        assert np.array_equal(f[:dim], p), f"the history changed the current observation at step {t}"
        slots = f[dim:].reshape(3, FRAME_WIDTH)
        started = 0 if t < 7 else 7  # observation 7 is the reset's
        for j in range(1, 4):  # history_j: the frame j steps back, or the episode's first frame
            assert np.array_equal(slots[j - 1], plain[max(t - j, started)][index]), (t, j)


def test_terrain_layout_keeps_the_privileged_entries_and_appends_the_history():
    env = gym.make("OpenClaw/QuadrupedTerrain-v1", history_steps=3)
    u = env.unwrapped
    assert u.privileged_obs["height_scan"] == slice(57, 134)
    assert u.OBS_SLICES["history_1"] == slice(138, 180) and u.OBS_SLICES["history_2"] == slice(180, 222)
    assert env.observation_space.shape == (222,) == env.reset(seed=0)[0].shape
    env.close()


@pytest.mark.parametrize("bad", [0, 101])
def test_history_steps_out_of_range_is_refused(bad):
    with pytest.raises(ValueError, match=r"history_steps=.* must be a whole number in \[1, 100\]"):
        gym.make("OpenClaw/Quadruped-v1", history_steps=bad)


def test_export_metadata_says_how_a_deploy_loop_fills_the_history():
    meta = export_metadata("OpenClaw/Quadruped-v1", {"history_steps": 3}, "ppo", {})
    layout = json.loads(meta["observation_layout"])
    assert layout["history_1"] == [57, 99] and layout["history_2"] == [99, 141] and meta["observation_dim"] == "141"
    history = json.loads(meta["observation_history"])
    assert history["steps"] == 3 and history["slots"] == ["history_1", "history_2"]
    assert list(history["frame"]) == list(FRAME) and history["frame"]["joint_pos"] == layout["joint_pos"]
    assert sum(stop - start for start, stop in history["frame"].values()) == FRAME_WIDTH
    assert "observation_history" not in export_metadata("OpenClaw/Quadruped-v1", {}, "ppo", {})


def _gru_student(history_steps: int):
    """A PPO student whose actor reads ``history_steps`` frames through a GRU (``agent.history_encoder=gru``) on a
    one-copy ``Quadruped-v1`` vector env, built as ``train.py`` builds it."""
    from omegaconf import OmegaConf
    from stable_baselines3.common.vec_env import DummyVecEnv

    from agents.config.schema import PPOConfig
    from agents.factory import learner_kwargs
    from agents.students import PPOStudent

    venv = DummyVecEnv([lambda: gym.make("OpenClaw/Quadruped-v1", history_steps=history_steps)])
    agent = OmegaConf.merge(OmegaConf.structured(PPOConfig), {"history_encoder": "gru", "n_steps": 32, "batch_size": 32})
    kwargs = learner_kwargs(OmegaConf.create({"agent": agent}), venv)
    return PPOStudent(kwargs.pop("policy"), venv, seed=0, **kwargs), venv


def test_the_gru_encoder_reads_every_frame_oldest_first_and_no_history_slot_directly():
    model, venv = _gru_student(4)
    env = venv.envs[0].unwrapped
    frames = env.history_frames
    assert frames[-1] == frame_index(env.OBS_SLICES).tolist()  # the current frame last
    assert frames[0] == list(range(*env.OBS_SLICES["history_3"].indices(10**6)[:2]))  # the oldest first
    extractor = model.policy.pi_features_extractor
    dim = venv.observation_space.shape[0]
    assert extractor.features_dim == dim - 3 * FRAME_WIDTH + 64  # the history slots leave; the GRU's state joins
    assert model.policy.vf_features_extractor.features_dim == dim  # the critic reads the flat observation
    obs = torch.as_tensor(np.random.default_rng(0).normal(size=(1, dim)), dtype=torch.float32)
    base = extractor(obs)
    for j in (1, 3):  # a past frame reaches the actor, through the GRU's state only
        moved = obs.clone()
        moved[0, env.OBS_SLICES[f"history_{j}"]] += 1.0
        features = extractor(moved)
        assert torch.equal(features[:, :-64], base[:, :-64]) and not torch.allclose(features[:, -64:], base[:, -64:])
    swapped = obs.clone()  # the order of the frames matters to a GRU (it would not to a sum of frames)
    swapped[0, env.OBS_SLICES["history_1"]], swapped[0, env.OBS_SLICES["history_3"]] = (
        obs[0, env.OBS_SLICES["history_3"]], obs[0, env.OBS_SLICES["history_1"]])
    assert not torch.allclose(extractor(swapped), base)
    venv.close()


def test_the_gru_student_learns_exports_and_resumes_like_the_flat_one(tmp_path):
    """One PPO update moves the GRU's weights; the ONNX file gives the torch actor's actions; the saved learner
    loads with the same encoder."""
    from agents.export.run import deployed_actor, write_onnx
    from agents.students import PPOStudent

    onnxruntime = pytest.importorskip("onnxruntime")

    model, venv = _gru_student(3)
    before = [p.detach().clone() for p in model.policy.pi_features_extractor.gru.parameters()]
    model.learn(64)
    assert any(not torch.equal(a, b) for a, b in zip(before, model.policy.pi_features_extractor.gru.parameters()))
    actor = deployed_actor(model, venv)
    dim = venv.observation_space.shape[0]
    path = write_onnx(actor, dim, {}, tmp_path / "policy.onnx")
    obs = np.random.default_rng(1).normal(size=(5, dim)).astype(np.float32)
    with torch.no_grad():
        expected = actor(torch.as_tensor(obs)).numpy()
    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    np.testing.assert_allclose(session.run(None, {session.get_inputs()[0].name: obs})[0], expected, atol=1e-5)
    model.save(tmp_path / "model.zip")
    loaded = PPOStudent.load(tmp_path / "model.zip", env=venv)
    assert type(loaded.policy.pi_features_extractor).__name__ == "HistoryGRU"
    np.testing.assert_array_equal(loaded.predict(obs, deterministic=True)[0], model.predict(obs, deterministic=True)[0])
    venv.close()


def test_the_gru_encoder_without_a_history_is_refused_before_anything_is_written(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    for value, message in (("gru", "set env.kwargs.history_steps to 2 or more"),
                           ("lstm", "agent.history_encoder='lstm' is unknown; choose one of: mlp, gru")):
        run = tmp_path / value
        result = subprocess.run([sys.executable, "train.py", "env=quadruped", f"agent.history_encoder={value}",
                                 "train=smoke", f"hydra.run.dir={run}"], cwd=root, capture_output=True, text=True,
                                timeout=300)
        assert result.returncode != 0 and message in result.stderr and not run.exists()
