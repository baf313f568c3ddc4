"""The quadruped's proprioceptive history (``history_steps``, ``envs.quadruped.history``): the layout, the
frames it holds, its reset, its absence at ``k = 1`` and what export tells a deploy loop. The batched env's
bits: ``tests/test_batched.py`` (case ``terrain-history``)."""

from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest

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
