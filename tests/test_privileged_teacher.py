"""A checkpoint teacher observing more than its student (``agents/teachers/observation_map.py``): the teacher's
observation gathered from the student's by entry name, built from the same env state; refused, naming the
entries and the fix, when the student's observation lacks some. PPO and SAC students in-process here; the PPO
student through ``train.py``: ``tests/test_run_phases.py`` (case "terrain teacher, flat student with history")."""

from __future__ import annotations

import csv
import math
import warnings

import gymnasium as gym
import numpy as np
import pytest

import envs  # noqa: F401
import torch
from omegaconf import OmegaConf
from stable_baselines3.common.logger import configure

from agents import checkpoint, saved_config
from agents.errors import ConfigError
from agents.factory import build_agent
from agents.students import policy_entry
from agents.teachers.builders import build_distillation
from agents.training.checks import validate
from agents.teachers.observation_map import observation_entries, teacher_input_index
from agents.students.normalization import torch_normalize_obs
from agents.vec_env import env_kwargs, make_vec_env, wrap_normalization
from distill.teachers import CheckpointTeacher, EMATeacher
from test_train import compose_train

TERRAIN, FLAT = "OpenClaw/QuadrupedTerrain-v1", "OpenClaw/Quadruped-v1"


def test_the_perceptive_teachers_observation_is_the_blind_students_entries_of_the_same_state():
    teacher, student = observation_entries(TERRAIN, {}), observation_entries(TERRAIN, {"history_steps": 3})
    index = teacher_input_index("run", teacher, student)
    assert np.array_equal(index, np.arange(138))  # every entry but the history, in the teacher's order
    envs_ = [gym.make(TERRAIN, obs_noise=1.0), gym.make(TERRAIN, obs_noise=1.0, history_steps=3)]
    first, second = (env.reset(seed=2)[0] for env in envs_)
    assert np.array_equal(second[index], first)
    for action in np.random.default_rng(0).uniform(-1, 1, (20, 12)):
        first, second = (env.step(action)[0] for env in envs_)
        assert np.array_equal(second[index], first)


def test_a_flat_teacher_reads_its_entries_from_a_student_with_history():
    index = teacher_input_index("run", observation_entries(FLAT, {}), observation_entries(FLAT, {"history_steps": 4}))
    assert np.array_equal(index, np.arange(57))
    assert teacher_input_index("run", observation_entries(FLAT, {}), observation_entries(FLAT, {})) is None


def test_entries_the_student_lacks_are_named_with_the_fix():
    with pytest.raises(ConfigError) as err:
        teacher_input_index("runs/perceptive", observation_entries(TERRAIN, {}), observation_entries(FLAT, {"history_steps": 3}))
    message = str(err.value)
    for named in ("distill.teacher=runs/perceptive", "observation space", "height_scan (77)", "friction (1)",
                  "true_lin_vel (3)", "env.kwargs.history_steps"):
        assert named in message, message
    with pytest.raises(ConfigError, match="names no entries"):
        teacher_input_index("run", observation_entries(FLAT, {}), observation_entries("OpenClaw/Claw-v0", {}))


def learner(tmp_path, *overrides: str, distill: str = "distill=none"):
    """The config ``overrides`` compose (2 envs) and its learner on normalised training envs, as ``train.py`` builds them."""
    chosen = [distill] if distill else []  # "": the env config's own teacher
    cfg = compose_train(*chosen, "train.num_envs=2", f"hydra.run.dir={tmp_path}", *overrides)
    venv = wrap_normalization(make_vec_env(cfg.env.id, env_kwargs(cfg), 2, "batched"), True, False, cfg.agent.gamma)
    return cfg, build_agent(cfg, venv, tensorboard_dir=None)


def saved_teacher(run_dir, *overrides: str):
    """A run directory holding an (untrained) PPO policy of the config ``overrides`` compose, and the policy."""
    cfg, model = learner(run_dir, *overrides)
    model.get_env().reset()
    model.get_env().step(np.zeros((2, 12), np.float32))  # statistics of something
    OmegaConf.save(cfg, run_dir / saved_config.CONFIG, resolve=True)
    checkpoint.save(run_dir, model, model.get_env())
    checkpoint.save_best(run_dir, model, model.get_env())
    return run_dir, model


@pytest.fixture(scope="module")
def flat_teacher(tmp_path_factory):
    """A run directory holding an (untrained) PPO policy of ``Quadruped-v1`` (57 observation entries)."""
    return saved_teacher(tmp_path_factory.mktemp("teacher"))


# configs/env/reward_terms
CLIMB_TERMS = ("tracking_lin_vel", "termination", "feet_clearance", "feet_clearance_ahead", "orientation")


def test_the_stairs_teacher_config_is_a_perceptive_stairs_specialist_in_the_students_units(tmp_path):
    """``env=quadruped_terrain_stairs``, the terrain students' teacher: every copy on the stairs-up column, the height
    scan in the actor and the critic, the students' joint range, a fifth of the orientation term, the tracking term and
    the fall's cost doubled, no swing-height target but a clearance over the ground ahead of a moving foot, and the
    terrain's trot teaching the first 1 M steps."""
    cfg, model = learner(tmp_path, "env=quadruped_terrain_stairs", distill="")
    assert list(cfg.env.kwargs.terrain_types) == ["stairs_up"]
    assert cfg.agent.perceptive_actor and cfg.agent.privileged_critic
    assert list(cfg.env.kwargs.action_scale) == [0.5, 0.8, 0.9]
    assert (cfg.distill.name, cfg.distill.schedule_steps) == ("scripted", 1_000_000)
    scales = model.get_env().get_attr("config", indices=[0])[0].reward_scales
    assert scales["action_rate"] == -0.01
    assert tuple(scales[term] for term in CLIMB_TERMS) == (2.0, -100.0, 0.0, -4.0, -1.0)


# env config: (history frames, action_rate scale, the PPO actor reads the scan, env steps the checkpoint teacher
# teaches, the CLIMB_TERMS' scales, the second stage's teacher and the task contexts it teaches in)
TERRAIN_STUDENTS = {"quadruped_terrain_blind": (5, -0.05, False, 1_500_000, (1.0, -50.0, -0.5, 0.0, -5.0),
                                                CheckpointTeacher, ["*/stairs_up/*"]),
                    "quadruped_terrain_perceptive": (1, -0.01, True, 1_000_000, (2.0, -100.0, 0.0, -4.0, -1.0),
                                                     EMATeacher, None)}


@pytest.mark.parametrize("agent", ["ppo", "sac"])
@pytest.mark.parametrize("env", TERRAIN_STUDENTS)
def test_the_terrain_student_configs_learn_from_a_perceptive_run(tmp_path, env, agent):
    """``env=quadruped_terrain_blind`` (5 frames of history, a blind actor, a 5x action_rate term) and
    ``env=quadruped_terrain_perceptive`` (the actor reads the height scan, and the reward has the stairs teacher's
    tracking, termination, clearance and orientation terms; the blind student the quadruped's): the asymmetric critic
    (PPO), the teacher's wider thigh and knee range, the checkpoint teacher named on the command line for the first
    1.5 M steps (blind) or 1 M (perceptive), its alpha falling from 1 to 0 over them (its actor reads the height scan
    it gathers from the student's observation; the teacher run's last checkpoint), then at alpha 0.1 the same teacher
    on the stairs-up samples (blind) or an EMA anchor (perceptive); the teachers are the env's, for a SAC student too."""
    frames, action_rate, perceptive, taught, terms, second, contexts = TERRAIN_STUDENTS[env]
    (tmp_path / "teacher").mkdir()
    run_dir, teacher = saved_teacher(tmp_path / "teacher", "env=quadruped_terrain_stairs")  # the README's teacher
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # SAC's actor reads the privileged entries (factory's warning)
        cfg, model = learner(tmp_path / "student", f"env={env}", f"agent={agent}",
                             f"distill.teacher={run_dir}", *(["agent.buffer_size=1000"] if agent == "sac" else []),
                             distill="")
    assert (cfg.env.kwargs.get("history_steps", 1), cfg.distill.name) == (frames, "sequence")
    assert cfg.distill.teacher_checkpoint == "latest"
    assert list(cfg.env.kwargs.action_scale) == [0.5, 0.8, 0.9]
    scales = model.get_env().get_attr("config", indices=[0])[0].reward_scales
    assert scales["action_rate"] == action_rate
    assert tuple(scales[term] for term in CLIMB_TERMS) == terms
    if agent == "ppo":
        assert cfg.agent.privileged_critic and cfg.agent.perceptive_actor == perceptive
    distillation = build_distillation(cfg, model)
    first, anchor = distillation.teacher.stages
    assert isinstance(first.teacher, CheckpointTeacher) and isinstance(anchor.teacher, second)
    assert (cfg.distill.stages[0].get("teach_contexts"), cfg.distill.stages[1].get("teach_contexts")) == (None, contexts)
    assert first.end == anchor.start == taught  # whole env steps
    assert (first.alpha(0.0), first.alpha(first.end / 2), anchor.alpha(0.5), anchor.alpha(1.0)) == (1.0, 0.5, 0.1, 0.1)
    assert distillation.teacher.select(0.0) is first
    venv = model.get_env()
    venv.reset()
    raw = venv.get_original_obs()
    assert raw.shape == (2, 138 + (frames - 1) * 42)
    targets = distillation.teacher.targets(torch.as_tensor(venv.normalize_obs(raw)), torch.as_tensor(raw))
    expected = policy_entry(teacher).distribution(torch_normalize_obs(teacher.get_env(), torch.as_tensor(raw[:, :138])))
    assert torch.equal(targets.dist.mean, expected.mean)


def test_a_teacher_whose_scan_samples_other_points_is_refused_naming_the_kwargs(tmp_path):
    """A stairs teacher on a scan of other spacing observes a space of the same shape as the student's, but its
    height_scan entries are other points: refused before training, naming the entry and the env kwargs that differ;
    the student given the teacher's scan learns from it."""
    (tmp_path / "teacher").mkdir()
    run_dir, _ = saved_teacher(tmp_path / "teacher", "env=quadruped_terrain_stairs", "+env.kwargs.scan_spacing=0.1")
    student = ["env=quadruped_terrain_perceptive", f"distill.teacher={run_dir}"]
    cfg, model = learner(tmp_path / "student", *student, distill="")
    with pytest.raises(ConfigError) as err:
        build_distillation(cfg, model)
    for named in (f"distill.teacher={run_dir}", "height_scan samples the world at other points",
                  "scan_spacing (teacher 0.1, student None)", "give the student the teacher's env kwargs"):
        assert named in str(err.value), str(err.value)
    cfg, model = learner(tmp_path / "same", *student, "+env.kwargs.scan_spacing=0.1", distill="")
    assert isinstance(build_distillation(cfg, model).teacher.stages[0].teacher, CheckpointTeacher)


@pytest.mark.parametrize("agent", ["ppo", "sac"])
def test_ppo_and_sac_students_with_history_learn_from_a_teacher_without(agent, flat_teacher, tmp_path):
    run_dir, teacher = flat_teacher
    short = ("agent.learning_starts=64", "agent.buffer_size=1024") if agent == "sac" else ("agent.n_steps=32", "agent.batch_size=64")
    cfg, model = learner(tmp_path, f"agent={agent}", "env.kwargs.history_steps=3", "distill=checkpoint",
                         f"distill.teacher={run_dir}", "distill.teacher_checkpoint=best", *short)
    checked = validate(cfg)  # loads the teacher's checkpoint to check it; the run teaches with that one
    distillation = build_distillation(cfg, model, loaded=checked.teacher_runs)
    (intact,) = checked.teacher_runs.values()
    assert distillation.teacher.stages[0].teacher.entry.module is intact.value[0].policy
    model.attach_distillation(distillation)
    venv = model.get_env()
    venv.reset()
    for _ in range(3):
        venv.step(np.random.default_rng(0).uniform(-1, 1, (2, 12)).astype(np.float32))
    raw = venv.get_original_obs()
    assert raw.shape == (2, 57 + 2 * 42)
    targets = distillation.teacher.targets(torch.as_tensor(venv.normalize_obs(raw)), torch.as_tensor(raw))
    teacher_obs = torch_normalize_obs(teacher.get_env(), torch.as_tensor(raw[:, :57]))  # its first 57 entries
    expected = policy_entry(teacher).distribution(teacher_obs)
    assert torch.equal(targets.dist.mean, expected.mean) and torch.equal(targets.dist.log_std, expected.log_std)
    model.set_logger(configure(str(tmp_path), ["csv"]))
    model.learn(128)
    model.logger.dump(model.num_timesteps)
    kl = "distill/action_kl" if agent == "sac" else "distill/kl"  # SAC's squashed term (distill.squashed)
    rows = [row for row in csv.DictReader((tmp_path / "progress.csv").open()) if row.get(kl)]
    assert rows and all(math.isfinite(float(row[kl])) and float(row["distill/coverage"]) == 1.0 for row in rows)
