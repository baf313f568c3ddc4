"""A resume replays what the uninterrupted run does (issue 77, 3b and 3c): the update pending at the checkpoint, the
iteration count, the teacher's retirement step and an evaluation that an interruption cut short.

One small run with teachers in sequence (the scripted trot for its first 1,536 steps, then an EMA teacher) goes to
the end once; twice more it is stopped, by kill -9 right after the checkpoint at step 2,048 (after the stage switch),
and by Ctrl-C at the start of the evaluation at step 2,048, then resumed. What a resume cannot replay is the
rollouts' values (the envs restart their episodes), so the runs compare on what does not depend on them: the rows
of ``progress.csv`` and ``eval.csv``, the columns each row fills, the counters and the teachers' schedules.
"""

from __future__ import annotations

import csv
import json
import signal
import subprocess
import sys

import pytest

from test_train import ROOT, train_here

RUN = ("train=smoke", "train.progress_bar=false", "train.tensorboard=false", "distill=sequence",
       "distill.stages.0.steps=1536", "train.checkpoint_freq=1024", "train.eval_episodes=1", "train.eval_envs=1")
CLOCKS = ("time/fps", "time/time_elapsed", "time/fps_recent", "wall_time_s")  # the only columns allowed to differ
SCHEDULED = ("time/total_timesteps", "time/iterations", "train/n_updates", "alpha", "rl_weight", "train/learning_rate",
             "train/clip_range")  # their values too

# ``train.py`` in a process of its own that stops itself at step 2048: SIGKILL right after that step's checkpoint is
# written, or SIGINT (as Ctrl-C in a terminal) when that step's evaluation starts.
STOPPING = """
import os, runpy, signal, sys
import envs
from agents import checkpoint
from agents.training import callbacks
how, sys.argv = sys.argv[1], [sys.argv[0], *sys.argv[2:]]
signal.signal(signal.SIGINT, signal.default_int_handler)
save, evaluate = checkpoint.save, callbacks.evaluate

def saving(*args, **kwargs):
    saved = save(*args, **kwargs)
    if how == "kill" and saved.meta["num_timesteps"] == 2048:
        os.kill(os.getpid(), signal.SIGKILL)
    return saved

def evaluating(model, *args, **kwargs):
    if how == "ctrl-c" and model.num_timesteps == 2048:
        os.kill(os.getpid(), signal.SIGINT)
    return evaluate(model, *args, **kwargs)

checkpoint.save, callbacks.evaluate = saving, evaluating
runpy.run_path("train.py", run_name="__main__")
"""


def rows(path) -> list[dict[str, str]]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def comparable(row: dict[str, str]) -> dict[str, str]:
    """The columns a row fills, with the values of those set by the schedules and counters."""
    return {key: value if key.startswith(SCHEDULED) or key.endswith(SCHEDULED) else "filled"
            for key, value in row.items() if value != "" and key not in CLOCKS}


def assert_replayed(run_dir, uninterrupted) -> None:
    for name in ("progress.csv", "eval.csv"):
        got, want = rows(run_dir / name), rows(uninterrupted / name)
        steps = "time/total_timesteps" if name == "progress.csv" else "step"
        assert [r[steps] for r in got] == [r[steps] for r in want], f"{name}: other rows than the uninterrupted run's"
        for mine, theirs in zip(got, want):
            assert comparable(mine) == comparable(theirs), f"{name}, step {mine[steps]}: not the uninterrupted run's"
    summary, expected = (json.loads((d / "summary.json").read_text()) for d in (run_dir, uninterrupted))
    for key in ("steps", "teacher_retired_at_step"):
        assert summary.get(key) == expected.get(key), f"summary.json {key}: {summary.get(key)} != {expected.get(key)}"


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("runs") / "uninterrupted"
    result = train_here(*RUN, f"hydra.run.dir={run_dir}")
    assert result.returncode == 0, result.stderr[-3000:]
    return run_dir


def stopped_then_resumed(tmp_path, how: str) -> tuple[subprocess.CompletedProcess, subprocess.CompletedProcess]:
    run_dir = tmp_path / "run"
    stopped = subprocess.run([sys.executable, "-c", STOPPING, how, *RUN, f"hydra.run.dir={run_dir}"], cwd=ROOT,
                             capture_output=True, text=True, timeout=300)
    resumed = train_here(f"resume={run_dir}", "train.progress_bar=false")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    return stopped, resumed


def test_kill_9_after_a_stage_switch_then_resume_applies_the_pending_update(uninterrupted, tmp_path):
    stopped, resumed = stopped_then_resumed(tmp_path, "kill")
    assert stopped.returncode == -signal.SIGKILL, stopped.stderr[-3000:]
    assert f"step_{2048:012d}" in resumed.stderr, resumed.stderr[-3000:]  # it resumed after the stage switch
    assert_replayed(tmp_path / "run", uninterrupted)


def test_ctrl_c_during_an_evaluation_then_resume_runs_that_evaluation(uninterrupted, tmp_path):
    stopped, _ = stopped_then_resumed(tmp_path, "ctrl-c")
    assert stopped.returncode == 130, stopped.stderr[-3000:]
    assert "Resume with: python train.py resume=" in stopped.stderr and "Traceback" not in stopped.stderr
    assert_replayed(tmp_path / "run", uninterrupted)
