"""What an env declares is all that generic code reads: its metrics, and its scripted controller's table row.

``Beacon`` is a third env family that exists only in this file, with metrics no OpenClaw env has:
evaluation, the training callbacks and the run summary must report them without any edit elsewhere.
Scripted controllers are found through the one table ``envs.controllers.FAMILIES``.
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

from agents.teachers.adaptive import parameter_schema
from agents.evaluation.protocol import evaluate
from agents.vec_env import make_vec_env
from envs.controllers import CONTROLLER_NAMES, FAMILIES, controller_named, family_of, family_of_id
from envs.declarations import ControllerSpec, Metric

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


def test_a_metric_named_like_a_result_field_is_refused(monkeypatch):
    monkeypatch.setattr(Beacon, "METRICS", (Metric("returns", "energy", "mean", "J", "energy"),))
    with pytest.raises(ValueError, match=r"metric\(s\) \['returns'\] named like EvalResult fields"):
        evaluate(FixedPushes(), make_vec_env(BEACON, {}, 2), 2)
    with pytest.raises(ValueError, match="per_episode='max' is unknown"):
        Metric("peak", "energy", "max", "J", "peak energy")


def test_training_logs_and_summarises_the_metrics_a_new_env_declares(tmp_path):
    from agents.config.schema import register_configs
    from agents.training.runner import train

    register_configs()
    with initialize_config_dir(config_dir=str(ROOT / "configs"), version_base="1.3"):
        # distill=none: the new env borrows the quadruped's config here, not the quadruped's trot teacher
        cfg = compose("train", overrides=["train=smoke", "train.vec_mode=dummy", "train.progress_bar=false",
                                          "distill=none", "train.total_timesteps=1024", "train.eval_freq=1024",
                                          "train.checkpoint_freq=1024", "env.normalize_obs=false",
                                          "env.normalize_reward=false"])
    with open_dict(cfg):
        cfg.env.id, cfg.env.kwargs, cfg.env.eval_kwargs, cfg.run_dir = BEACON, {}, {}, str(tmp_path / "run")
    summary = train(cfg)

    assert 0.0 <= summary["final_arrival_rate"] <= 1.0 and summary["final_push_energy"] >= 0.0
    assert json.loads((tmp_path / "run" / "summary.json").read_text())["final_push_energy"] == summary["final_push_energy"]
    with (tmp_path / "run" / "eval.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0])[-2:] == ["push_energy", "arrival_rate"]
    assert float(rows[-1]["push_energy"]) == pytest.approx(summary["final_push_energy"])
    header = (tmp_path / "run" / "progress.csv").read_text().splitlines()[0].split(",")
    assert {"env/energy", "eval/push_energy", "eval/arrival_rate"} <= set(header)


# ---------------------------------------------------------------- one table: env family -> scripted controller
@pytest.mark.parametrize("family", list(FAMILIES.values()), ids=list(FAMILIES))
def test_every_controller_family_shares_one_interface(family):
    env = gym.make(family.env_id)
    assert family_of(env) is family and family_of_id(family.env_id) is family and controller_named(family.name) is family
    controller = family.controller(spec=env.unwrapped.controller_spec)
    assert isinstance(controller.params, family.params) and controller.spec.dt == env.unwrapped.dt
    controller.params = family.params.from_dict(controller.params.to_dict())
    for name, args in controller.env_settings().items():  # what the env must be told to match the params
        env.get_wrapper_attr(name)(*args)
    segment, score = family.segment(), family.score()
    first, _ = env.reset(seed=0)
    obs = first
    controller.reset()
    for _ in range(3):
        action = controller.act(obs)
        assert action.dtype == np.float32 and env.action_space.contains(action)
        obs, _, _, _, info = env.step(action)
        segment.add(obs, info)
        score.add(obs, info)
    summary, outcome = segment.summary()
    assert summary["steps"] == 3 and outcome and np.isfinite(score.metrics()["score"])
    start = family.episode_start(first)
    replayed, _ = env.reset(seed=1, options=start)  # another seed, the same start
    assert list(family.episode_start(replayed)) == list(start)
    np.testing.assert_allclose(np.hstack([np.ravel(v) for v in family.episode_start(replayed).values()]),
                               np.hstack([np.ravel(v) for v in start.values()]), atol=1e-6)
    schema = parameter_schema(family, env.unwrapped.controller_spec)
    assert schema.task == family.family and schema.bounds.items() <= family.params.BOUNDS.items()
    with pytest.raises(ValueError, match="must be > 0"):
        family.controller(spec=ControllerSpec(dt=0.0))


def test_whole_number_hint_parameters_come_from_the_params_class():
    assert parameter_schema(FAMILIES["claw"], None).integers == {"close_steps", "release_steps"}
    assert parameter_schema(FAMILIES["quadruped"], None).integers == frozenset()


def test_an_env_without_a_controller_is_named_with_the_families_that_have_one():
    from agents.errors import ConfigError
    from agents.config.schema import register_configs
    from agents.training.checks import validate

    with pytest.raises(ValueError, match=r"no scripted controller for Beacon.*quadruped \(QuadrupedEnv: trot\)"):
        family_of(gym.make(BEACON))
    register_configs()
    with initialize_config_dir(config_dir=str(ROOT / "configs"), version_base="1.3"):
        cfg = compose("train", overrides=["distill=scripted"])
    with open_dict(cfg):
        cfg.env.id = BEACON
        cfg.env.kwargs = {}  # Beacon takes none of the quadruped's arguments
    with pytest.raises(ConfigError, match=r"distill=scripted needs a scripted controller: no scripted controller for Beacon"):
        validate(cfg)


def test_evaluate_runs_each_scripted_controller_on_its_env(tmp_path):
    from omegaconf import OmegaConf

    from agents.evaluation.run import EvalConfig, format_metrics, run

    for name in CONTROLLER_NAMES:
        cfg = OmegaConf.merge(OmegaConf.structured(EvalConfig), dict(
            policy=name, episodes=1, envs=1, videos=0, out_dir=str(tmp_path / name), env_kwargs={"max_episode_steps": 20}))
        metrics = run(cfg)
        assert metrics["env_id"] == controller_named(name).env_id and metrics["mean_length"] == 20
        assert metrics["declared"] == family_of_id(metrics["env_id"]).env_class.METRICS
        assert all(m.name in metrics and m.label in format_metrics(metrics) for m in metrics["declared"])
