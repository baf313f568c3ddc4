"""Refusals that say what is wrong and lead to what works (issue 77, items 5-7): a checkpoint teacher whose
observation differs from its student's names the env kwargs that make the difference and only those; a model zip
outside its run says what it needs, and following the message evaluates it; an empty ``tile_levels`` and a
controller parameter file of another robot are refused; every ``reset(options=...)`` is checked against its
declared kind (:class:`envs.base.ResetOption`)."""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import envs  # noqa: F401  (registers the OpenClaw ids)
from agents import checkpoint
from agents.errors import ConfigError
from agents.evaluation.run import run
from agents.teachers.builders import teacher_checkpoint, teacher_observation_index
from agents.vec_env import env_kwargs
from envs.controllers.params_file import read_params
from envs.controllers.trot import PARAMS_DIR
from envs.quadruped import QuadrupedTerrainEnv
from test_evaluate import _config, run_dir  # noqa: F401  (run_dir: the smoke-trained run fixture)
from test_privileged_teacher import learner, saved_teacher
from test_train import cli_here

TERRAIN = "OpenClaw/QuadrupedTerrain-v1"


def _refusal(teacher_run: Path, tmp_path: Path, *student: str) -> str:
    """The refusal of the teacher of ``teacher_run`` for the student ``student`` composes ('' when it teaches)."""
    cfg, model = learner(tmp_path, *student)
    teacher = teacher_checkpoint(str(teacher_run), "best").value[0]
    try:
        teacher_observation_index(str(teacher_run), teacher, (model.observation_space, model.action_space),
                                  (cfg.env.id, env_kwargs(cfg)))
    except ConfigError as err:
        return str(err)
    return ""


@pytest.fixture(scope="module")
def stairs_teacher(tmp_path_factory) -> Path:
    """A stairs specialist's run (untrained) whose height scan is 13 points long and whose gait runs at 2 Hz."""
    path = tmp_path_factory.mktemp("teacher")
    return saved_teacher(path, "env=quadruped_terrain_stairs", "+env.kwargs.scan_grid=[13,7]",
                         "+env.kwargs.gait_frequency_hz=2.0")[0]


def test_a_teacher_with_another_scan_grid_names_scan_grid_and_only_it(stairs_teacher, tmp_path):
    student = ("env=quadruped_terrain_perceptive", "env.kwargs.history_steps=3")
    message = _refusal(stairs_teacher, tmp_path / "a", *student)
    assert "height_scan (91)" in message and "scan_grid (teacher [13, 7], student None)" in message, message
    assert "env.kwargs.scan_grid=[13,7]" in message, message
    for unrelated in ("history_steps", "terrain_types", "gait_frequency_hz", "scan_spacing"):
        assert unrelated not in message, message
    assert _refusal(stairs_teacher, tmp_path / "b", *student, "+env.kwargs.scan_grid=[13,7]") == ""  # the fix works


def test_a_student_with_another_scan_spacing_is_told_to_copy_scan_spacing_only(stairs_teacher, tmp_path):
    student = ("env=quadruped_terrain_perceptive", "+env.kwargs.scan_grid=[13,7]", "+env.kwargs.scan_spacing=0.1")
    message = _refusal(stairs_teacher, tmp_path / "a", *student)
    assert "height_scan samples the world at other points" in message, message
    assert "scan_spacing (teacher None, student 0.1)" in message and "drop env.kwargs.scan_spacing" in message, message
    for unrelated in ("terrain_types", "gait_frequency_hz", "history_steps", "scan_grid"):
        assert unrelated not in message, message


def test_a_terrain_teacher_for_a_flat_student_keeps_the_history_hint(stairs_teacher, tmp_path):
    """No env kwarg of the flat env carries a height scan: the refusal names the env to train on instead."""
    message = _refusal(stairs_teacher, tmp_path, "env.kwargs.history_steps=3")
    assert "height_scan (91)" in message and "env.kwargs.history_steps=k" in message, message
    assert "scan_grid (" not in message, message


# ------------------------------------------------------------------------------------------ a bare model zip
def test_a_model_zip_outside_its_run_says_what_it_needs_and_following_it_evaluates(run_dir, tmp_path):  # noqa: F811
    best = checkpoint.best(run_dir)
    (tmp_path / "mine").mkdir()
    zipped = tmp_path / "mine" / "my_policy.zip"
    shutil.copy(best.model, zipped)
    common = dict(episodes=1, envs=1, videos=0, tile_episodes=0, env_kwargs={"max_episode_steps": 20})
    with pytest.raises(ConfigError) as err:
        run(_config(**common, checkpoint=str(zipped), out_dir=str(tmp_path / "a")))
    message = str(err.value)
    for named in ("run=<the run directory that trained it>", "config.yaml", checkpoint.NORMALIZATION,
                  f"beside {zipped}"):
        assert named in message, message
    with pytest.raises(ConfigError) as err:  # run= alone: the normalisation is still missing, and said so
        run(_config(**common, run=str(run_dir), checkpoint=str(zipped), out_dir=str(tmp_path / "b")))
    assert f"copy {checkpoint.NORMALIZATION}" in str(err.value) and "damaged" not in str(err.value), str(err.value)
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()
    shutil.copy(best.normalization, zipped.parent / checkpoint.NORMALIZATION)  # as the messages say
    metrics = run(_config(**common, run=str(run_dir), checkpoint=str(zipped), out_dir=str(tmp_path / "c")))
    assert metrics["episodes"] == 1 and metrics["checkpoint"] == str(zipped)


# ------------------------------------------------------------------------------------------ silently ignored
def test_an_empty_tile_levels_is_refused_with_the_fix(tmp_path):
    common = dict(policy="trot", env_id=TERRAIN, episodes=1, envs=1, videos=0, env_kwargs={"max_episode_steps": 5})
    with pytest.raises(ConfigError, match=r"tile_levels=\[\] names no level.*tile_episodes=0"):
        run(_config(**common, tile_levels=[], out_dir=str(tmp_path / "out")))
    assert not (tmp_path / "out").exists()
    metrics = run(_config(**common, tile_levels=[], tile_episodes=0, out_dir=str(tmp_path / "out")))
    assert "tiles" not in metrics and metrics["episodes"] == 1


def test_a_parameter_file_of_another_robot_is_refused_naming_both_robots_and_the_file():
    go1 = gym.make("OpenClaw/Quadruped-v1").unwrapped.controller_spec  # openclaw_go1
    path = PARAMS_DIR / "go2.json"
    with pytest.raises(ValueError) as err:
        read_params(path, go1)
    for named in (str(path), "'go2'", "'openclaw_go1'"):
        assert named in str(err.value), str(err.value)
    assert read_params(PARAMS_DIR / "openclaw_go1_terrain.json", go1)  # its own robot's
    assert read_params(path, gym.make("OpenClaw/Quadruped-v1", robot="go2").unwrapped.controller_spec)
    assert read_params(path) == read_params(path, None)  # no env: unchecked (the tuned defaults' own files)


def test_train_refuses_a_trot_file_of_another_robot_before_writing_anything(tmp_path):
    go2 = PARAMS_DIR / "go2.json"
    result = cli_here("train.py", "train=smoke", "distill=scripted", f"distill.controller_params={go2}",
                      f"hydra.run.dir={tmp_path / 'r'}")
    assert result.returncode == 2 and str(go2) in result.stderr, result.stderr[-2000:]
    assert "'go2'" in result.stderr and "'openclaw_go1'" in result.stderr and not (tmp_path / "r").exists()


# ------------------------------------------------------------------------------------------ reset options
@pytest.mark.parametrize("option, value, named", [
    ("terrain_level", True, "a whole number"),  # a bool is not a level
    ("terrain_level", 2.0, "a whole number"),
    ("terrain_level", 10, "[0, 9]"),
    ("terrain_type", ["stairs_up"], "one of 'rough', 'smooth_slope'"),
    ("terrain_type", "lava", "one of 'rough', 'smooth_slope'"),
    ("heading", "north", "a finite number"),
    ("heading", math.nan, "a finite number"),
    ("heading", math.inf, "a finite number"),
    ("command", (0.5, 0.0, True), "a list of 3 finite numbers"),
])
def test_reset_options_are_checked_against_their_declared_kind(option, value, named):
    env = QuadrupedTerrainEnv()
    with pytest.raises(ValueError) as err:
        env.reset(seed=0, options={option: value})
    message = str(err.value)
    assert message.startswith(f"options[{option!r}]={value!r}") and named in message, message
    assert "\n" not in message


def test_valid_reset_options_are_kept_as_their_kind():
    env = QuadrupedTerrainEnv()
    env.reset(seed=0, options={"terrain_level": np.int64(3), "terrain_type": "stairs_up", "heading": 1,
                               "command": np.array([0.5, 0.0, 0.0])})
    assert env.task_context().options == {"terrain_type": "stairs_up", "terrain_level": 3}
    assert env.state.heading.item() == 1.0  # the heading (rad, world) of the task state


def test_a_refused_reset_option_changes_nothing():
    """The options are checked before the reset: the episode that ended moves no curriculum level."""
    env = QuadrupedTerrainEnv()
    env.reset(seed=0, options={"terrain_type": "rough", "terrain_level": 5})
    env.data.qpos[0] += env.tiles.tile_size  # crossed the tile: the next reset would move the level up
    with pytest.raises(ValueError, match="terrain_level"):
        env.reset(options={"terrain_level": True})
    assert env.terrain_level == 5
    env.reset()
    assert env.terrain_level == 6
