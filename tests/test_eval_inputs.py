"""What ``evaluate.py`` and a checkpoint teacher are handed (issue 36): damaged, renamed or foreign files, and
command-line values Hydra's grammar refuses, give one line and a way on, or fall back and say so.

Through the CLIs on a finished PPO smoke run (``test_run_safety.finished_run``, copied before each change).
"""

from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path

import pytest

from test_train import cli_here, run_cli
from test_user_errors import SMOKE, refused
from test_run_safety import finished_run, run_copy  # noqa: F401  (pytest fixtures)

SHORT = ("+env_kwargs.max_episode_steps=20", "width=64", "height=64", "envs=1")  # a quick evaluation


def _truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


# ------------------------------------------------------------------------------ a damaged checkpoint teacher
def test_checkpoint_teacher_falls_back_to_the_newest_intact_checkpoint(run_copy, tmp_path):
    root = run_copy / "checkpoints"
    _truncate(root / "best" / "model.zip")
    latest = root / (root / "latest").read_text().strip()
    student = tmp_path / "student"
    result = run_cli("train.py", *SMOKE, "distill=checkpoint", f"distill.teacher={run_copy}",
                     f"hydra.run.dir={student}", timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Traceback" not in result.stderr
    notes = [line for line in result.stderr.splitlines() if "best/model.zip" in line]
    assert len(notes) == 1 and notes[0].startswith("warning: distill.teacher=") and f"teaching with {latest}" in notes[0], (
        result.stderr[-2000:])
    assert json.loads((student / "summary.json").read_text())["distill"] == "checkpoint"


def test_checkpoint_teacher_without_an_intact_checkpoint_is_refused_before_anything_is_written(run_copy, tmp_path):
    for model in (run_copy / "checkpoints").glob("*/model.zip"):
        _truncate(model)
    student = tmp_path / "student"
    result = cli_here("train.py", *SMOKE, "distill=checkpoint", f"distill.teacher={run_copy}", f"hydra.run.dir={student}")
    refused(result, f"distill.teacher={run_copy}", "no intact checkpoint", "best/model.zip")
    assert not student.exists()


def test_a_checkpoint_teacher_trained_at_another_gait_clock_frequency_is_refused_naming_the_fix(run_copy, tmp_path):
    """Its run recorded its gait clock's frequency (a scripted trot retimes it to its own); a student whose clock runs
    at another would feed it phases it never saw (the Go2 stairs specialist, trained at 2.88 Hz, stands at 2.5 Hz)."""
    import yaml

    config = yaml.safe_load((run_copy / "config.yaml").read_text())
    config["env"]["kwargs"]["gait_frequency_hz"] = 3.25
    (run_copy / "config.yaml").write_text(yaml.safe_dump(config))
    student = tmp_path / "student"
    result = cli_here("train.py", *SMOKE, "distill=checkpoint", f"distill.teacher={run_copy}", f"hydra.run.dir={student}")
    refused(result, f"distill.teacher={run_copy}", "gait clock at 3.25 Hz", "+env.kwargs.gait_frequency_hz=3.25")
    assert not student.exists()


# ------------------------------------------------------------------------------ non-ASCII paths
@pytest.mark.parametrize("script, key, value", [("evaluate.py", "run", "runs/démo"),
                                                ("train.py", "hydra.run.dir", "{tmp}/é"),
                                                ("evaluate.py", "out_dir", "{tmp}/résultats")])
def test_an_unquoted_non_ascii_value_says_to_quote_it(script, key, value, tmp_path):
    value = value.format(tmp=tmp_path)
    line = refused(cli_here(script, f"{key}={value}", "policy=trot" if key == "out_dir" else "train=smoke"),
                   f"{key}={value}", f"\"{key}='{value}'\"")
    assert "LexerNoViableAltException" not in line
    assert not any(tmp_path.iterdir())


# ------------------------------------------------------------------------------ an ONNX policy on another env
@pytest.fixture
def exported(run_copy) -> Path:
    result = cli_here("export.py", f"run={run_copy}")
    assert result.returncode == 0, result.stderr[-3000:]
    return run_copy / "export" / "policy.onnx"


@pytest.mark.parametrize("env_id, named", [("OpenClaw/Claw-v0", "does not take"),
                                           ("OpenClaw/Quadruped-v0", "48 observation values")])
def test_an_onnx_policy_on_another_env_names_the_env_it_was_trained_on(exported, env_id, named, tmp_path):
    out = tmp_path / "eval"
    result = cli_here("evaluate.py", f"checkpoint={exported}", f"env_id={env_id}", "episodes=1", "videos=0",
                      f"out_dir={out}")
    line = refused(result, f"env_id={env_id}", "trained on OpenClaw/Quadruped-v1", "57 observation values", named)
    assert "command_vx" not in line and "valid arguments" not in line, line
    assert not out.exists()


# ------------------------------------------------------------------------------ videos and episodes
def test_videos_default_to_at_most_the_episodes(run_copy, tmp_path):
    result = cli_here("evaluate.py", f"run={run_copy}", "episodes=1", *SHORT, f"out_dir={tmp_path / 'a'}")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "videos" not in result.stderr, result.stderr  # not asked for: nothing to say
    assert len(json.loads((tmp_path / "a" / "metrics.json").read_text())["videos"]) == 1
    result = cli_here("evaluate.py", f"run={run_copy}", "episodes=1", "videos=3", *SHORT, f"out_dir={tmp_path / 'b'}")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "warning: videos=3 is more than episodes=1: recording 1" in result.stderr, result.stderr
    assert len(json.loads((tmp_path / "b" / "metrics.json").read_text())["videos"]) == 1


# ------------------------------------------------------------------------------ a renamed checkpoint zip
def test_a_model_zip_under_another_name_is_evaluated(run_copy, tmp_path):
    mine = run_copy / "checkpoints" / "mine"
    shutil.copytree(run_copy / "checkpoints" / "best", mine)
    (mine / "model.zip").rename(mine / "renamed.zip")
    result = cli_here("evaluate.py", f"checkpoint={mine / 'renamed.zip'}", "episodes=1", "videos=0", *SHORT)
    assert result.returncode == 0, result.stderr[-3000:]
    assert json.loads((run_copy / "eval" / "metrics.json").read_text())["checkpoint"] == str(mine / "renamed.zip")
    elsewhere = tmp_path / "kept"  # away from its run: run= says where the env and agent come from
    elsewhere.mkdir()
    shutil.copy(mine / "renamed.zip", elsewhere / "policy_v2.zip")
    shutil.copy(mine / "vecnormalize.pkl", elsewhere / "vecnormalize.pkl")
    result = cli_here("evaluate.py", f"run={run_copy}", f"checkpoint={elsewhere / 'policy_v2.zip'}", "episodes=1",
                      "videos=0", *SHORT, f"out_dir={tmp_path / 'eval'}")
    assert result.returncode == 0, result.stderr[-3000:]
    refused(cli_here("evaluate.py", f"checkpoint={elsewhere / 'policy_v2.zip'}", "videos=0"),
            f"checkpoint={elsewhere / 'policy_v2.zip'}", "pass run=")


def test_a_checkpoint_is_named_within_its_run_and_a_missing_one_lists_what_the_run_holds(run_copy, tmp_path):
    steps = sorted(p.name for p in (run_copy / "checkpoints").glob("step_*"))
    result = cli_here("evaluate.py", f"run={run_copy}", f"checkpoint={steps[0]}", "episodes=1", "videos=0", *SHORT,
                      f"out_dir={tmp_path / 'eval'}")
    assert result.returncode == 0, result.stderr[-3000:]
    assert json.loads((tmp_path / "eval" / "metrics.json").read_text())["checkpoint"] == str(run_copy / "checkpoints" / steps[0])
    line = refused(cli_here("export.py", f"run={run_copy}", "checkpoint=step_000000000001", f"out_dir={tmp_path / 'x'}"),
                   "checkpoint=step_000000000001: no such file or directory", f"nor a checkpoint of run={run_copy}")
    assert f"it holds: best, {', '.join(steps)})" in line, line
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize("content, named", [(b"not a zip file", "not a Stable-Baselines3 model zip"),
                                            ("other zip", "not a Stable-Baselines3 model zip"),
                                            ("truncated", "cannot be loaded")])
def test_an_invalid_model_file_is_one_line(run_copy, tmp_path, content, named):
    path = run_copy / "checkpoints" / "best" / "other.zip"
    if content == "other zip":
        with zipfile.ZipFile(path, "w") as z:
            z.writestr("readme.txt", "hello")
    elif content == "truncated":
        data = (path.parent / "model.zip").read_bytes()
        path.write_bytes(data[: len(data) // 2])
    else:
        path.write_bytes(content)
    refused(cli_here("evaluate.py", f"checkpoint={path}", "videos=0", "episodes=1"), str(path), named)
