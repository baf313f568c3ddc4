"""A checkpoint teacher that teaches only in some task contexts (``teach_contexts``,
``agents/teachers/context_mask.py``): the weight recorded with each sample is whether its episode's context matches,
from the env's own ``task_context()`` before every step, updated when a copy starts a new episode; the teacher's
targets carry those weights; a run logs the coverage; bad settings are refused before anything is written."""

from __future__ import annotations

import csv
import json
import fnmatch

import numpy as np
import pytest
import torch
import yaml

import envs  # noqa: F401
from agents.errors import ConfigError
from agents.teachers.context_mask import ContextMask
from agents.training.checks import validate
from agents.vec_env import make_vec_env
from distill.policy import DiagGaussian, PolicyEntry
from distill.teachers import CheckpointTeacher, TeacherActions
from test_privileged_teacher import saved_teacher
from test_train import cli_here, compose_train, train_here
from test_user_errors import refused

TERRAIN = "OpenClaw/QuadrupedTerrain-v1"
PATTERNS = ["*/stairs_up/*", "*/rough/level0"]


def test_the_weights_are_whether_each_copys_episode_is_in_a_taught_context():
    """Random actions on stairs-up and rough copies: every step's weights are the contexts' matches as the envs tell
    them before the step; the copies fall and start new episodes (the rough copies change level, so the weight of
    ``*/rough/level0`` changes with them)."""
    venv = make_vec_env(TERRAIN, {"terrain_types": ["stairs_up", "rough"], "max_init_level": 3}, 6, "batched")
    mask = ContextMask(venv, PATTERNS)
    mask.seed(3)
    mask.reset()
    rng = np.random.default_rng(0)
    seen, dones, history = set(), 0, []
    for _ in range(400):
        contexts = [context.name for context in venv.env_method("task_context")]
        expected = [any(fnmatch.fnmatchcase(c, p) for p in PATTERNS) for c in contexts]
        _, _, done, _ = mask.step(rng.uniform(-1, 1, (6, 12)).astype(np.float32))
        np.testing.assert_array_equal(mask.teacher_actions.weights, np.asarray(expected, np.float32))
        assert not mask.teacher_actions.actions.any()
        seen.update(zip(contexts, expected))
        history.append(expected)
        dones += int(done.sum())
    mask.close()
    assert dones > 6, dones
    taught = {context.split("/")[1] for context, weight in seen if weight}
    assert taught >= {"stairs_up"} and {weight for _, weight in seen} == {True, False}, sorted(seen)
    changed = np.any(np.diff(np.asarray(history, int), axis=0) != 0, axis=0)  # per copy: its weight changed
    assert changed.any(), sorted(seen)


def test_a_masked_checkpoint_teacher_weighs_its_targets_by_the_recorded_weights():
    module = torch.nn.Linear(3, 2)
    teacher = CheckpointTeacher(PolicyEntry(module, lambda m, o: DiagGaussian(m(o), m(o) * 0)),
                                masked=True)
    assert teacher.needs_teacher_actions
    obs, weights = torch.randn(4, 3), torch.tensor([1.0, 0.0, 0.0, 1.0])
    targets = teacher.targets(obs, teacher_actions=TeacherActions(torch.zeros(4, 2), weights))
    assert torch.equal(targets.weight, weights) and targets.coverage == 0.5
    assert torch.equal(targets.dist.mean, module(obs).detach())
    with pytest.raises(ValueError, match="masked by the weights recorded with the samples"):
        teacher.targets(obs)


PERCEPTIVE = ("env=quadruped_terrain_perceptive", "train=smoke", "train.progress_bar=false", "train.video=false",
              "train.num_envs=4", "train.eval_freq=0", "distill.stages.0.steps=2048")


def test_a_student_run_logs_the_coverage_of_the_contexts_its_teacher_teaches(tmp_path):
    """``env=quadruped_terrain_perceptive`` taught on the stepped types only, PPO and SAC: the checkpoint stage's
    coverage is the share of stepped-type samples (12 of the 22 columns: neither 0 nor 1 over the run's 4 copies), and
    a pattern that matches no context gives coverage 0 with a warning naming the contexts."""
    teacher_dir = tmp_path / "teacher"
    teacher_dir.mkdir()
    saved_teacher(teacher_dir, "env=quadruped_terrain_stairs")
    coverage = {}
    for agent, name, patterns in (("ppo", "stepped", "[*/stairs_up/*,*/stairs_down/*]"), ("ppo", "typo", "[*/stairs-up/*]"),
                                  ("sac", "stepped", "[*/stairs_up/*,*/stairs_down/*]")):
        run_dir = tmp_path / f"{agent}_{name}"
        sac = ("agent.buffer_size=4096", "agent.learning_starts=512") if agent == "sac" else ()
        result = train_here(*PERCEPTIVE, f"agent={agent}", *sac, f"distill.teacher={teacher_dir}",
                           f"distill.stages.0.teach_contexts={patterns}", "train.total_timesteps=4096", "seed=1",
                           f"hydra.run.dir={run_dir}")
        assert result.returncode == 0, result.stderr[-3000:]
        with (run_dir / "progress.csv").open() as f:
            rows = [row for row in csv.DictReader(f) if row.get("distill/checkpoint/coverage")]
        coverage[agent, name] = [float(row["distill/checkpoint/coverage"]) for row in rows]
        assert ("matches none of the 4 training copies' task contexts" in result.stderr) == (name == "typo")
        recipe = yaml.safe_load((run_dir / "config.yaml").read_text())["distill"]["recipe"]  # the env's recipe, by name
        assert recipe == json.loads((run_dir / "summary.json").read_text())["distill"] == "perceptive_teacher"
    for agent in ("ppo", "sac"):
        assert coverage[agent, "stepped"] and all(0.0 < c < 1.0 for c in coverage[agent, "stepped"]), coverage
    assert coverage["ppo", "typo"] and not any(coverage["ppo", "typo"]), coverage


@pytest.mark.parametrize("overrides, named", [
    (("distill=sequence", "distill.stages.0.steps=1024", "+distill.stages.1.teach_contexts=[go1/*]"),
     "distill.stages (ema): teach_contexts is set on a ema teacher; only a checkpoint teacher takes it"),
    (("distill=checkpoint", "distill.teacher=runs/t", "distill.teach_contexts=[]"), "teach_contexts=[] is invalid"),
    (("distill=checkpoint", "distill.teacher=runs/t", "distill.teach_contexts=['']"), "is invalid: use a list of patterns"),
    (("distill=sequence", "distill.stages=[{name: scripted, steps: 100}, {name: checkpoint, teacher: runs/t, "
      "teach_contexts: ['*']}]"), "cannot be combined with a scripted teacher"),
    (("distill=sequence", "distill.stages=[{name: checkpoint, steps: 100, teacher: runs/t, teach_contexts: ['a']}, "
      "{name: checkpoint, label: again, teacher: runs/t, teach_contexts: ['b']}]"),
     "the stages 'checkpoint' and 'again' set teach_contexts"),
])
def test_teach_contexts_that_cannot_work_are_refused(overrides, named):
    with pytest.raises(ConfigError) as err:
        validate(compose_train("train=smoke", *overrides))
    assert named in str(err.value), str(err.value)


def test_a_bad_teach_contexts_is_refused_before_anything_is_written(tmp_path):
    result = cli_here("train.py", *PERCEPTIVE, "distill.teacher=runs/t", "distill.stages.0.teach_contexts=[]",
                      f"hydra.run.dir={tmp_path}")
    refused(result, "teach_contexts=[] is invalid")
    assert not any(tmp_path.iterdir())
