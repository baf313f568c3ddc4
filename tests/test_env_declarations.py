"""What an env declares (its metrics) is all that generic evaluation and training code reads.

``Beacon`` is a third env family that exists only in this file, with metrics no OpenClaw env has:
evaluation, the training callbacks and the run summary must report them without any edit elsewhere.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from hydra import compose, initialize_config_dir
from omegaconf import open_dict

from agents.evaluation.protocol import evaluate
from agents.vec_env import make_vec_env
from envs.base import Metric

ROOT = Path(__file__).resolve().parent.parent
BEACON = "Test/Beacon-v0"
MAX_STEPS = 10


class Beacon(gym.Env):
    """A point on a line pushed by its action (0.1 m per unit per step) towards x = 0.45 m."""

    METRICS = (
        Metric("push_energy", "energy", "mean", "J", "push energy"),  # action^2 per step
        Metric("arrival_rate", "arrived", "last", "fraction", "arrivals"),
    )
    observation_space = gym.spaces.Box(-np.inf, np.inf, shape=(1,), dtype=np.float32)
    action_space = gym.spaces.Box(-1.0, 1.0, shape=(1,), dtype=np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.x = 0.0
        return np.array([self.x], dtype=np.float32), {}

    def step(self, action):
        a = float(np.clip(action[0], -1.0, 1.0))
        self.x += 0.1 * a
        arrived = self.x >= 0.45
        info = {"energy": a * a, "arrived": arrived, "reward_effort": -a * a}
        return np.array([self.x], dtype=np.float32), float(arrived) - a * a, arrived, False, info


if BEACON not in gym.registry:
    gym.register(BEACON, entry_point=Beacon, max_episode_steps=MAX_STEPS)


class FixedPushes:
    """Env 0 pushes with 1.0 (arrives after 5 steps), env 1 with 0.2 (truncated after 10 steps)."""

    def predict(self, observation, state=None, episode_start=None, deterministic=True):
        return np.array([[1.0], [0.2]], dtype=np.float32), None


def test_evaluation_reports_the_metrics_a_new_env_declares():
    venv = make_vec_env(BEACON, {}, 2)
    result = evaluate(FixedPushes(), venv, 2)
    venv.close()
    assert result.per_episode["length"] == [5.0, 10.0]
    assert result.push_energy == pytest.approx((1.0 + 0.2**2) / 2)  # mean over steps, then over episodes
    assert result.arrival_rate == 0.5  # last step of each episode
    assert result.per_episode["arrived"] == [1.0, 0.0]
    assert result.reward_terms == pytest.approx({"reward_effort": -(1.0 + 0.2**2) / 2})
    reported = result.as_dict()
    assert reported["push_energy"] == result.push_energy and reported["arrival_rate"] == 0.5
    assert not {"tracking_error", "fall_rate", "success_rate"} & set(reported)  # no other env's metrics
    assert [m.format(result.metrics[m.name]) for m in result.declared] == ["push energy 0.520 J", "arrivals 50%"]


def test_training_logs_and_summarises_the_metrics_a_new_env_declares(tmp_path):
    from agents.training.config import register_configs
    from agents.training.runner import train

    register_configs()
    with initialize_config_dir(config_dir=str(ROOT / "configs"), version_base="1.3"):
        cfg = compose("train", overrides=["train=smoke", "train.vec_mode=dummy", "train.progress_bar=false",
                                          "train.total_timesteps=1024", "train.eval_freq=1024",
                                          "train.checkpoint_freq=1024", "env.normalize_obs=false",
                                          "env.normalize_reward=false"])
    with open_dict(cfg):
        cfg.env.id, cfg.env.kwargs, cfg.run_dir = BEACON, {}, str(tmp_path / "run")
    summary = train(cfg)

    assert 0.0 <= summary["final_arrival_rate"] <= 1.0 and summary["final_push_energy"] >= 0.0
    assert json.loads((tmp_path / "run" / "summary.json").read_text())["final_push_energy"] == summary["final_push_energy"]
    with (tmp_path / "run" / "eval.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0])[-2:] == ["push_energy", "arrival_rate"]
    assert float(rows[-1]["push_energy"]) == pytest.approx(summary["final_push_energy"])
    header = (tmp_path / "run" / "progress.csv").read_text().splitlines()[0].split(",")
    assert {"env/energy", "eval/push_energy", "eval/arrival_rate"} <= set(header)
