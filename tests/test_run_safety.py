"""Runs never lose, mix or poison data, and bad values fail before anything is written (issue 12).

Small real runs (``train=smoke``) through ``train.py`` / ``evaluate.py``, and the checkpoint and
resume helpers on real learners. Most ``train.py`` runs are its ``__main__`` in this process (``train_here``); those about
another process (a lock it holds, a full disk) start one.
"""

from __future__ import annotations

import csv
import fcntl
import json
import shutil
import subprocess
import sys

import numpy as np
import pytest
import torch
from hydra import compose, initialize_config_dir
from omegaconf import open_dict
from stable_baselines3 import PPO

from agents import checkpoint
from agents.config.schema import register_configs
from agents.training.runner import TrainingFailed, train
from agents.vec_env import make_vec_env, wrap_normalization
from test_train import ROOT, run_train, train_here

SMOKE = ("train=smoke", "train.progress_bar=false")


def column(path, name: str) -> list[str]:
    with path.open(newline="") as f:
        return [row[name] for row in csv.DictReader(f)]


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    """A finished 4096-step PPO smoke run (copy it before changing it)."""
    run_dir = tmp_path_factory.mktemp("runs") / "run"
    result = train_here(*SMOKE, f"hydra.run.dir={run_dir}")
    assert result.returncode == 0, result.stderr[-3000:]
    return run_dir


@pytest.fixture
def run_copy(finished_run, tmp_path):
    run_dir = tmp_path / "run"
    shutil.copytree(finished_run, run_dir)
    (run_dir / "config.yaml").write_text((finished_run / "config.yaml").read_text().replace(str(finished_run), str(run_dir)))
    return run_dir


# ------------------------------------------------------------------------------ 1. one run per directory
def test_new_run_refuses_a_directory_holding_another_run(run_copy):
    before = {p.name: p.read_bytes() for p in run_copy.glob("*.csv")}
    result = train_here(*SMOKE, f"hydra.run.dir={run_copy}")
    assert result.returncode == 2
    assert "already holds another run" in result.stderr and f"resume={run_copy}" in result.stderr
    assert "hydra.run.dir=<new dir>" in result.stderr
    assert {p.name: p.read_bytes() for p in run_copy.glob("*.csv")} == before, "the refused run wrote into the directory"


def test_a_resume_goes_on_from_the_adapted_learning_rate_unless_it_sets_one(tmp_path):
    """With agent.desired_kl the rate adapts per minibatch (agents/students/ppo.py): a resume starts from the rate
    the checkpoint saved, and one that sets agent.learning_rate restarts the adaptation from that."""
    run_dir = tmp_path / "run"
    result = train_here(*SMOKE, "agent.desired_kl=0.01", "train.total_timesteps=2048", f"hydra.run.dir={run_dir}")
    assert result.returncode == 0, result.stderr[-3000:]
    saved = PPO.load(checkpoint.latest(run_dir).model, device="cpu").policy.optimizer.param_groups[0]["lr"]
    assert saved != 3e-4, "the first leg's rate did not adapt"
    for total, override in ((3072, ()), (5120, ("agent.learning_rate=1e-6",))):
        result = train_here(f"resume={run_dir}", f"train.total_timesteps={total}", "train.progress_bar=false", *override)
        assert result.returncode == 0, result.stderr[-3000:]
    # each update's starting rate, logged with the rows after it (a resume first logs the update its checkpoint
    # left pending, then the final row of each leg the update made after the resume)
    started = [(int(step), float(rate)) for step, rate in zip(column(run_dir / "progress.csv", "time/total_timesteps"),
                                                              column(run_dir / "progress.csv", "train/learning_rate")) if rate]
    assert started[0] == (2048, 3e-4) and (3072, saved) in started and (5120, 1e-6) in started, (saved, started)


def test_lock_stops_a_second_process(run_copy):
    with open(run_copy / ".lock", "w") as held:  # the lock a training process holds while it writes
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        held.write("4242")
        held.flush()
        result = run_train(f"resume={run_copy}", "train.total_timesteps=8192", timeout=120)
    assert result.returncode == 2
    assert "in use by another training process (pid 4242)" in result.stderr


def test_resume_appends_logs_and_applies_resumable_overrides(run_copy):
    result = train_here(f"resume={run_copy}", "train.total_timesteps=8192", "agent.learning_rate=1e-5", "train.progress_bar=false")
    assert result.returncode == 0, result.stderr[-3000:]
    steps = [int(float(s)) for s in column(run_copy / "progress.csv", "time/total_timesteps")]
    assert steps == [1024 * k for k in range(1, 9)], "progress.csv lost the first leg or repeats steps"
    rates = [r for r in column(run_copy / "progress.csv", "train/learning_rate") if r]
    assert float(rates[0]) == 3e-4 and float(rates[-1]) == 1e-5, rates
    assert [int(s) for s in column(run_copy / "eval.csv", "step")] == [2048, 4096, 6144, 8192]
    clock = [float(s) for s in column(run_copy / "eval.csv", checkpoint.WALL_KEY)]
    assert clock == sorted(clock) and clock[0] > 0, f"the run's wall clock restarted on the resume: {clock}"
    last = checkpoint.latest(run_copy)
    assert last.meta["num_timesteps"] == 8192 and last.meta[checkpoint.WALL_KEY] >= clock[-1]


@pytest.mark.parametrize("override, named", [("seed=5", "seed=5"), ("env=claw", "env=claw"),
                                             ("agent=sac", "agent=sac"), ("train.num_envs=8", "train.num_envs=8")])
def test_resume_refuses_an_override_it_cannot_apply(run_copy, override, named):
    result = train_here(f"resume={run_copy}", override)
    assert result.returncode == 2
    assert f"{named}: cannot change when resuming" in result.stderr, result.stderr[-2000:]


# ------------------------------------------------------------------------------ 2. no poisoned checkpoints
def damage_latest(run_dir):
    latest = run_dir / "checkpoints" / (run_dir / "checkpoints" / "latest").read_text().strip()
    (latest / "model.zip").write_bytes(b"not a zip")
    return latest


def test_resume_and_evaluate_fall_back_to_the_newest_intact_checkpoint(run_copy):
    damaged = damage_latest(run_copy)
    intact = sorted((run_copy / "checkpoints").glob("step_*"))[0]
    assert intact != damaged
    evaluated = subprocess.run(
        [sys.executable, str(ROOT / "evaluate.py"), f"run={run_copy}", "checkpoint=latest", "episodes=1", "envs=1", "videos=0"],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )
    assert evaluated.returncode == 0, evaluated.stderr[-2000:]
    assert f"evaluating {intact} instead" in evaluated.stderr and "try checkpoint=latest" not in evaluated.stderr
    assert json.loads((run_copy / "eval" / "metrics.json").read_text())["checkpoint"] == str(intact)
    resumed = train_here(f"resume={run_copy}", "train.total_timesteps=6144", "train.progress_bar=false")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert f"resuming from {intact}" in resumed.stderr and damaged.name in resumed.stderr
    assert json.loads((run_copy / "summary.json").read_text())["steps"] == 6144


def test_save_refuses_non_finite_parameters_and_statistics_and_keeps_the_last_good_one(tmp_path):
    venv = wrap_normalization(make_vec_env("OpenClaw/Claw-v0", {}, 1), True, False, 0.99)
    model = PPO("MultiInputPolicy", venv, n_steps=64, batch_size=64, device="cpu")
    good = checkpoint.save(tmp_path, model, venv)
    model.num_timesteps = 128
    with torch.no_grad():
        next(model.policy.parameters())[0] = float("nan")
    with pytest.raises(checkpoint.NonFinite, match="parameter .* is not finite at step 128"):
        checkpoint.save(tmp_path, model, venv)
    assert checkpoint.latest(tmp_path).path == good.path and not (tmp_path / "checkpoints" / "step_000000000128").exists()
    fresh = PPO("MultiInputPolicy", venv, n_steps=64, batch_size=64, device="cpu")
    venv.obs_rms["observation"].mean[0] = np.inf
    with pytest.raises(checkpoint.NonFinite, match="normalisation statistic obs_rms.observation"):
        checkpoint.save_best(tmp_path, fresh, venv)
    assert checkpoint.best(tmp_path) is None


def test_non_finite_loss_stops_training_naming_the_term(tmp_path):
    """distill.alpha=nan (validation refuses it; the Python API does not validate) stops at the first update."""
    register_configs()
    with initialize_config_dir(config_dir=str(ROOT / "configs"), version_base="1.3"):
        cfg = compose("train", overrides=[*SMOKE, "distill=ema", "train.eval_freq=0", "train.tensorboard=false"])
    with open_dict(cfg):
        cfg.distill.alpha = float("nan")
        cfg.run_dir = str(tmp_path / "run")
    with pytest.raises(TrainingFailed, match="the alpha is nan") as failed:
        train(cfg)
    assert "resume=" in str(failed.value)
    saved = checkpoint.latest(cfg.run_dir)  # of the last whole update, before the poisoned one: finite, resumable
    assert saved is not None and saved.meta["num_timesteps"] == 0  # the first update was the poisoned one
    model = PPO.load(saved.model, device="cpu")
    assert all(torch.isfinite(p).all() for p in model.policy.parameters())


# ------------------------------------------------------------------------------ 3. validation up front
@pytest.mark.parametrize(
    "overrides, expected",
    [
        (("distill=ema", "distill.alpha=nan"), "distill.alpha=nan is invalid: it must be a finite number"),
        (("agent.learning_rate=-1",), "agent.learning_rate=-1.0 is invalid"),
        (("agent=sac", "agent.tau=2"), "agent.tau=2.0 is invalid: it must be in (0, 1]"),
        (("env=claw", "agent=sac", "agent.buffer_size=10"), "agent.buffer_size=10 holds fewer transitions than one batch"),
        (("train.torch_threads=0",), "train.torch_threads=0 is invalid"),
        (("train.total_timesteps=1e6",), "1e6 is read as the float 1000000.0; write it as train.total_timesteps=1000000"),
        (("train.num_envs=four",), "train.num_envs=four is invalid: train.num_envs takes a whole number, not 'four'"),
        (("agent.n_steps=256.5",), "agent.n_steps takes a whole number, not 256.5"),
        (("train.video=maybe",), "train.video takes true or false, not 'maybe'"),
        (("train.log_interval=0",), "train.log_interval=0 is invalid"),
        (("distill.decay_rate=-1",), "distill.decay_rate=-1.0 is invalid"),
        (("train.device=tpu",), "train.device='tpu' is not a device"),
        (("train.video=true", "train.video_width=4000"), "offscreen buffer of 1280x1280"),
        (("+env.kwargs.terrain=lava",), "env.kwargs: OpenClaw/Quadruped-v1 cannot be made: terrain='lava'"),
        (("+distil=ema",), "+distil=ema: the top level has no key 'distil'"),
        (("env=claw", "agent=sac", "agent.her=true", "distill=scripted"), "HER relabels them: add agent.her=false"),
        (("-m", "seed=0,1", "agent.learning_rate=1e-3,-1"), "sweep job seed=0 agent.learning_rate=-1"),
    ],
)
def test_bad_values_fail_before_anything_is_written(tmp_path, overrides, expected):
    result = train_here(*overrides, f"hydra.run.dir={tmp_path / 'run'}", f"hydra.sweep.dir={tmp_path / 'sweep'}")
    assert result.returncode == 2, result.stderr[-2000:]
    assert expected in result.stderr, result.stderr[-2000:]
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "run").exists() and not (tmp_path / "sweep").exists()


def test_evaluate_refuses_a_frame_larger_than_the_offscreen_buffer_before_writing(tmp_path):
    out = tmp_path / "eval"
    result = subprocess.run([sys.executable, str(ROOT / "evaluate.py"), "policy=trot", "width=2000", "height=480",
                             "episodes=1", "videos=1", f"out_dir={out}"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 2 and "offscreen buffer of 1280x1280" in result.stderr and "offwidth" in result.stderr
    assert not out.exists()


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a GPU")
def test_cuda_without_a_gpu_is_an_error(tmp_path):
    result = train_here("train.device=cuda", f"hydra.run.dir={tmp_path / 'run'}")
    assert result.returncode == 2 and "no usable CUDA GPU" in result.stderr and "train.device=cpu" in result.stderr


# ------------------------------------------------------------------------------ 4. what the teacher did
def test_a_teacher_that_never_teaches_is_reported(tmp_path):
    common = (*SMOKE, "distill=adaptive", "llm.hint_model=fault-malformed", "train.eval_freq=0", "train.total_timesteps=2048",
              f"distill.records_dir={tmp_path / 'records'}")
    warned = train_here(*common, f"hydra.run.dir={tmp_path / 'warn'}")
    assert warned.returncode == 0, warned.stderr[-3000:]
    summary = json.loads((tmp_path / "warn" / "summary.json").read_text())
    assert summary["teacher_hint_queries"] > 0 and summary["teacher_hints_accepted"] == 0
    assert summary["teacher_coverage"] == 0 and summary["teacher_malformed_answers"] > 0
    assert "teacher_hint_queries" in warned.stdout
    last = warned.stderr.strip().splitlines()[-1]
    assert last.startswith("warning: the teacher gave actions for 0% of the samples") and "none of" in last
    failed = train_here(*common, "distill.require_coverage=true", f"hydra.run.dir={tmp_path / 'fail'}")
    assert failed.returncode == 1 and "distill.require_coverage=true" in failed.stderr
    assert (tmp_path / "fail" / "summary.json").is_file()


# ------------------------------------------------------------------------------ 4. a finished run stays finished (issue 23)
def snapshot(run_dir) -> dict[str, bytes]:
    """Every file of a run directory (but its lock) and its content."""
    return {str(p.relative_to(run_dir)): p.read_bytes() for p in sorted(run_dir.rglob("*"))
            if p.is_file() and p.name != ".lock"}


def test_resuming_a_finished_run_changes_nothing_and_a_larger_budget_continues_it(run_copy):
    before = snapshot(run_copy)
    result = train_here(f"resume={run_copy}")
    assert result.returncode == 2, result.stderr[-2000:]
    assert result.stderr.count("error:") == 1 and "the run is finished" in result.stderr
    assert "train.total_timesteps=8192" in result.stderr and "Traceback" not in result.stderr
    assert snapshot(run_copy) == before, "a refused resume wrote into the finished run"
    more = train_here(f"resume={run_copy}", "train.total_timesteps=6144", *SMOKE[1:])
    assert more.returncode == 0, more.stderr[-3000:]
    assert json.loads((run_copy / "summary.json").read_text())["steps"] == 6144
    steps = [int(s) for s in column(run_copy / "eval.csv", "step")]
    assert steps == sorted(set(steps)), f"eval.csv repeats a step: {steps}"


def test_a_process_refused_for_a_directory_in_use_writes_nothing_into_it(run_copy):
    before = snapshot(run_copy)
    with open(run_copy / ".lock", "w") as held:  # the lock a training process holds while it writes
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        held.write("4242")
        held.flush()
        new = run_train(*SMOKE, f"hydra.run.dir={run_copy}", "seed=7", timeout=120)
        resumed = run_train(f"resume={run_copy}", "train.total_timesteps=8192", timeout=120)
    for result in (new, resumed):
        assert result.returncode == 2 and "in use by another training process (pid 4242)" in result.stderr
    assert snapshot(run_copy) == before, "the refused process wrote (.hydra/ or logs) into the running run's directory"


def test_the_step_budget_holds_when_it_is_not_a_whole_number_of_rollouts(tmp_path):
    # train=smoke with 64 envs: one PPO rollout is 256 x 64 = 16384 steps, four times the 4096 asked for
    result = train_here(*SMOKE, "train.num_envs=64", "train.eval_freq=0", f"hydra.run.dir={tmp_path / 'run'}")
    assert result.returncode == 0, result.stderr[-3000:]
    assert json.loads((tmp_path / "run" / "summary.json").read_text())["steps"] == 4096
    odd = train_here(*SMOKE, "train.total_timesteps=5000", "train.eval_freq=0", f"hydra.run.dir={tmp_path / 'odd'}")
    assert odd.returncode == 0, odd.stderr[-3000:]
    assert json.loads((tmp_path / "odd" / "summary.json").read_text())["steps"] == 5000  # 4 envs divide it


def test_resume_from_an_earlier_checkpoint_sets_aside_a_later_best_and_removes_partial_saves(run_copy):
    root = run_copy / "checkpoints"
    damaged = damage_latest(run_copy)  # the resume falls back to step 2048 ...
    shutil.rmtree(root / "best")
    shutil.copytree(sorted(root.glob("step_*"))[-1], root / "best")  # ... while best is from step 4096
    (root / "best" / "model.zip").write_bytes((sorted(root.glob("step_*"))[0] / "model.zip").read_bytes())
    partial = root / ".tmp-step_000000009999-12345"  # left by a process killed while saving
    partial.mkdir()
    (partial / "model.zip").write_bytes(b"half")
    result = train_here(f"resume={run_copy}", "train.total_timesteps=6144", *SMOKE[1:])
    assert result.returncode == 0, result.stderr[-3000:]
    assert not partial.exists() and "removed the partial checkpoint" in result.stderr
    assert (root / f"best-discarded-step_{4096:012d}").is_dir() and damaged.name in result.stderr
    best = checkpoint.best(run_copy)
    assert best is None or best.meta["num_timesteps"] > 2048  # a best of the resumed timeline only


def in_the_final_evaluation(run_dir, **popen) -> subprocess.Popen:
    """``train.py`` (smoke) into ``run_dir``, returned about a second into its final evaluation: one long one (60
    episodes x 1000 steps) after 4096 training steps; the only checkpoint is the final save, whose meta.json
    appears just before that evaluation starts. ``popen``: ``subprocess.Popen``'s options."""
    import time

    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "train.py"), *SMOKE, "train.eval_freq=1000000", "train.eval_episodes=60",
         "train.checkpoint_freq=1000000", f"hydra.run.dir={run_dir}"], cwd=ROOT, **popen)
    final = run_dir / "checkpoints" / f"step_{4096:012d}"
    start = time.time()
    while time.time() - start < 240 and not (final / "meta.json").is_file():
        time.sleep(0.2)
    time.sleep(1.0)  # into the evaluation
    return proc


def test_ctrl_c_during_the_final_evaluation_writes_the_summary_and_says_what_to_do(tmp_path):
    import signal

    run_dir = tmp_path / "run"
    proc = in_the_final_evaluation(  # Ctrl-C as in a terminal (CI ignores it)
        run_dir, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err[-2000:]
    assert "interrupted during the final evaluation" in err and f"python evaluate.py run={run_dir}" in err
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["steps"] == 4096 and summary["final_eval"].startswith("interrupted")
    assert (run_dir / "learning_curve.png").is_file() and "Traceback" not in err


def test_a_full_disk_mid_run_is_one_line_naming_the_last_good_checkpoint(tmp_path):
    disk = tmp_path / "disk"
    disk.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2500k", "tmpfs", str(disk)], capture_output=True).returncode:
        pytest.skip("a small tmpfs cannot be mounted here (needs root)")
    try:
        result = run_train(*SMOKE, "train.total_timesteps=20480", "train.checkpoint_freq=1024", "train.keep_checkpoints=50",
                           "train.tensorboard=false", f"hydra.run.dir={disk / 'run'}")
    finally:
        subprocess.run(["umount", "-l", str(disk)], capture_output=True)
    assert result.returncode == 2, result.stderr[-3000:]
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "the disk is full" in errors[0], result.stderr[-3000:]
    assert "the last good checkpoint is" in errors[0] and "resume=" in errors[0]
    assert "Traceback" not in result.stderr


def test_ctrl_c_and_sigterm_wait_while_a_checkpoint_is_written(tmp_path):
    """A second Ctrl-C (or a SIGTERM) during the interrupt save is held until the save is whole."""
    import os
    import signal

    from agents.training.runner import _final_save

    venv = wrap_normalization(make_vec_env("OpenClaw/Quadruped-v1", {}, 1), True, False, 0.99)
    model = PPO("MlpPolicy", venv, n_steps=16, batch_size=16, seed=0, device="cpu", policy_kwargs=dict(net_arch=[8]))
    original, fired = checkpoint._write_dir, []

    def write_then_signal(*args, **kwargs):  # the signals arrive while the files are being written
        os.kill(os.getpid(), signal.SIGINT)
        os.kill(os.getpid(), signal.SIGTERM)
        fired.append(True)
        return original(*args, **kwargs)

    checkpoint._write_dir = write_then_signal
    before = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        saved, full, stopped = _final_save(tmp_path, model, venv, keep=2, clock={})
    finally:
        checkpoint._write_dir = original
    assert fired and stopped and full is None and checkpoint.latest(tmp_path).path == saved.path
    assert {sig: signal.getsignal(sig) for sig in before} == before  # Ctrl-C and SIGTERM act as before afterwards
