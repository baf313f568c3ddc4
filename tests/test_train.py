"""End-to-end checks of ``train.py``: smoke runs, artefacts, resume and bad overrides."""

from __future__ import annotations

import io
import json
import logging
import os
import runpy
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# SAC's gradient steps start 512 steps before a smoke run's end: tests of the plumbing (resume, checkpoints,
# distillation terms) need some, not the 1,000+ that the claw's tuned learning_starts=2000 gives (most of a run's time)
SAC_SHORT = ("agent.learning_starts=3584",)


def run_cli(script: str, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    """``python <script> <args>`` in a process of its own, from the checkout."""
    env = {**os.environ, "HYDRA_FULL_ERROR": "0"}
    return subprocess.run([sys.executable, str(ROOT / script), *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout, env=env)


def run_train(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    """``python train.py args`` in a process of its own (:func:`run_cli`)."""
    return run_cli("train.py", *args, timeout=timeout)


def cli_here(script: str, *args: str, cwd: Path = ROOT, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """``python <script> <args>`` run from ``cwd`` with ``env``'s variables set, in this process: its ``__main__`` block
    as the command runs it (``runpy``), its streams captured, and the process state it changes (arguments, working
    directory, variables, the root logger Hydra configures) put back. The same code and messages without a Python
    start and torch's import (~2.5 s a command); :func:`run_cli` keeps the real process where its exit status,
    signals or locks are the point. An exception that escapes is raised here, as its traceback would end the process."""
    out, err, code = io.StringIO(), io.StringIO(), 0
    variables = {"HYDRA_FULL_ERROR": "0", **(env or {})}
    saved, argv, before = {name: os.environ.get(name) for name in variables}, sys.argv, os.getcwd()
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    os.environ.update(variables)
    sys.argv = [str(ROOT / script), *args]
    try:
        os.chdir(cwd)
        with redirect_stdout(out), redirect_stderr(err):
            runpy.run_path(str(ROOT / script), run_name="__main__")
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else int(stop.code is not None)
        if isinstance(stop.code, str):  # sys.exit(message) prints it, as the interpreter would
            err.write(f"{stop.code}\n")
    finally:
        sys.argv = argv
        os.chdir(before)
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name)
            else:
                os.environ[name] = value
        for handler in set(root.handlers) - set(handlers):
            handler.close()
        root.handlers[:], root.level = handlers, level
    return subprocess.CompletedProcess([script, *args], code, out.getvalue(), err.getvalue())


def train_here(*args: str) -> subprocess.CompletedProcess:
    """``python train.py args`` in this process (:func:`cli_here`)."""
    return cli_here("train.py", *args)


def assert_run_artifacts(run_dir: Path) -> dict:
    for name in ("config.yaml", "progress.csv", "eval.csv", "learning_curve.png", "summary.json"):
        assert (run_dir / name).is_file(), f"{name} missing in {run_dir}"
    latest = (run_dir / "checkpoints" / "latest").read_text().strip()
    assert (run_dir / "checkpoints" / latest / "model.zip").is_file()
    assert (run_dir / "checkpoints" / "best" / "model.zip").is_file()
    assert list(run_dir.glob("events.out.tfevents.*")), "no TensorBoard event file"
    return json.loads((run_dir / "summary.json").read_text())


@pytest.mark.parametrize("env", ["quadruped", "claw"])
@pytest.mark.parametrize("agent", ["ppo", "sac"])
def test_smoke_training_end_to_end(tmp_path, env, agent):
    run_dir = tmp_path / "run"
    result = train_here(f"env={env}", f"agent={agent}", "train=smoke", f"hydra.run.dir={run_dir}")
    assert result.returncode == 0, result.stderr[-3000:]
    summary = assert_run_artifacts(run_dir)
    assert summary["steps"] >= 4096
    assert summary["fps"] > 0
    assert summary["final_eval_episodes"] == 2
    if env == "quadruped":
        assert "final_tracking_error" in summary and "final_fall_rate" in summary
        # the trot teaches for 200 k steps: a 4,096-step run ends with it teaching, not retired at its last step
        assert "teacher_retired_at_step" not in summary and "alpha is 0" not in result.stderr
    else:
        assert 0.0 <= summary["final_success_rate"] <= 1.0
    header = (run_dir / "progress.csv").read_text().splitlines()[0]
    assert "env/reward_" in header, "per-term reward means are not logged"
    assert "summary" in result.stdout


@pytest.mark.parametrize("agent", ["ppo", "sac"])
def test_training_without_observation_normalisation(tmp_path, agent):
    """``env.normalize_obs=false`` (SB3 then keeps no ``obs_rms``): evaluation and checkpoints still work."""
    run_dir = tmp_path / "run"
    short = SAC_SHORT if agent == "sac" else ()
    result = train_here(f"agent={agent}", "train=smoke", "env.normalize_obs=false", *short, f"hydra.run.dir={run_dir}")
    assert result.returncode == 0, result.stderr[-3000:]
    assert assert_run_artifacts(run_dir)["final_eval_episodes"] == 2


def test_resume_continues_step_count(tmp_path):
    run_dir = tmp_path / "run"
    first = train_here("train=smoke", f"hydra.run.dir={run_dir}")
    assert first.returncode == 0, first.stderr[-3000:]
    assert json.loads((run_dir / "summary.json").read_text())["steps"] == 4096
    second = train_here(f"resume={run_dir}", "train.total_timesteps=8192")
    assert second.returncode == 0, second.stderr[-3000:]
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["steps"] == 8192
    assert summary["fps"] > 0
    # The second leg trained only the missing steps (4096 more), not 8192 from scratch.
    steps = [int(float(line.split(",")[0])) for line in (run_dir / "eval.csv").read_text().splitlines()[1:]]
    assert steps == sorted(steps) and steps[-1] == 8192


def test_resume_sac_restores_replay_buffer(tmp_path):
    run_dir = tmp_path / "run"
    first = train_here("env=claw", "agent=sac", "train=smoke", *SAC_SHORT, f"hydra.run.dir={run_dir}")
    assert first.returncode == 0, first.stderr[-3000:]
    latest = (run_dir / "checkpoints" / "latest").read_text().strip()
    assert (run_dir / "checkpoints" / latest / "replay_buffer.pkl").stat().st_size > 0
    second = train_here(f"resume={run_dir}", "train.total_timesteps=4608")
    assert second.returncode == 0, second.stderr[-3000:]
    assert json.loads((run_dir / "summary.json").read_text())["steps"] == 4608


def test_interrupt_saves_resumable_checkpoint(tmp_path):
    run_dir = tmp_path / "run"
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "train.py"), "train=smoke", "train.total_timesteps=10000000",
         "train.checkpoint_freq=10000000", f"hydra.run.dir={run_dir}"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    progress = run_dir / "progress.csv"
    deadline = 120
    import time

    start = time.time()
    while time.time() - start < deadline and not (progress.is_file() and len(progress.read_text().splitlines()) > 2):
        time.sleep(0.5)
    proc.terminate()  # SIGTERM, as a cluster scheduler would send
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err[-2000:]
    assert "resume=" in err
    latest = (run_dir / "checkpoints" / "latest").read_text().strip()
    meta = json.loads((run_dir / "checkpoints" / latest / "meta.json").read_text())
    assert meta["num_timesteps"] > 0


@pytest.mark.parametrize(
    "override, expected",
    [
        ("env=nosuchenv", "Available options in 'env'"),
        ("train.total_timesteps=-5", "train.total_timesteps=-5 is invalid"),
        ("train.num_envs=0", "train.num_envs=0 is invalid"),
        ("agent.lerning_rate=0.1", "valid keys of agent: activation"),
        ("train.vec_mode=threads", "choose one of: dummy, subproc"),
        ("resume=/nonexistent/run", "not found"),
    ],
)
def test_bad_overrides_fail_clearly(override, expected, tmp_path):
    result = run_train(override, f"hydra.run.dir={tmp_path / 'run'}", timeout=120)
    assert result.returncode != 0
    assert expected in result.stderr, result.stderr[-2000:]


@pytest.mark.parametrize(
    "overrides, teacher",
    [((), "scripted"), (("env=quadruped_rough",), "scripted"), (("agent=sac",), "scripted"),
     (("distill=none",), "none"), (("env=claw",), "none"), (("env=claw", "distill=scripted"), "scripted")],
)
def test_default_teacher_follows_the_env(overrides, teacher):
    """The quadruped's config picks the trot teacher (handing over to RL after 200 k steps); other envs
    default to no teacher, and distill=... on the command line wins."""
    cfg = compose_train(*overrides)
    assert cfg.distill.name == teacher
    if teacher == "scripted":
        assert (cfg.distill.alpha, cfg.distill.final_alpha, cfg.distill.schedule_steps) == (0.5, 0.0, 200_000)


@pytest.mark.parametrize("env", ["claw", "claw_panda", "claw_hard"])
def test_scripted_sac_preset_is_the_three_override_recipe(env):
    """distill=scripted_sac (configs/distill/scripted_sac.yaml) resolves to exactly the config the claw recipe
    spells out: distill=scripted distill.alpha=20 distill.schedule=constant (issue 40: the SAC student's term has
    no teacher_std)."""
    from omegaconf import OmegaConf

    preset = compose_train(f"env={env}", "agent=sac", "distill=scripted_sac")
    spelt_out = compose_train(f"env={env}", "agent=sac", "distill=scripted", "distill.alpha=20",
                              "distill.schedule=constant")
    assert OmegaConf.to_container(preset, resolve=True) == OmegaConf.to_container(spelt_out, resolve=True)
    assert preset.distill.name == "scripted"


def compose_train(*overrides: str):
    """``configs/train.yaml`` composed with ``overrides`` as ``train.py`` composes it (schema registered)."""
    from hydra import compose, initialize_config_dir

    from agents.config.schema import register_configs

    register_configs()
    with initialize_config_dir(config_dir=str(ROOT / "configs"), version_base="1.3"):
        return compose("train", overrides=list(overrides))


def test_keys_added_since_a_run_are_named_once_however_its_directory_is_spelt(tmp_path, monkeypatch, capsys):
    """A command that reads a run's config by a relative and an absolute path (the teacher: on the command line, then
    resolved) says once which keys took their defaults."""
    from omegaconf import OmegaConf

    from agents import saved_config

    old = OmegaConf.to_container(compose_train(), resolve=True)
    del old["train"]["vec_mode"]
    (tmp_path / "teacher").mkdir()
    OmegaConf.save(old, tmp_path / "teacher" / saved_config.CONFIG)
    monkeypatch.chdir(tmp_path)
    for run_dir in ("teacher", tmp_path / "teacher", "./teacher"):
        assert saved_config.load(run_dir, "distill.teacher").train.vec_mode == "batched"
    said = capsys.readouterr().err.splitlines()
    assert len(said) == 1 and "train.vec_mode='batched'" in said[0], said


def test_help_lists_groups():
    result = run_train("--help", timeout=120)
    assert result.returncode == 0
    for group in ("env:", "agent:", "distill:", "train:"):
        assert group in result.stdout


def test_same_seed_reproduces_training_and_evaluation(tmp_path):
    def eval_rows(run_dir: Path) -> list[list[str]]:
        lines = (run_dir / "eval.csv").read_text().splitlines()[1:]
        return [line.split(",")[:1] + line.split(",")[2:] for line in lines]  # all but wall time

    dirs = [tmp_path / "a", tmp_path / "b"]
    for run, run_dir in zip((run_train, train_here), dirs):  # a fresh process, and one that has trained before
        result = run("train=smoke", "seed=5", f"hydra.run.dir={run_dir}")
        assert result.returncode == 0, result.stderr[-3000:]
    assert eval_rows(dirs[0]) == eval_rows(dirs[1])
    assert json.loads((dirs[0] / "summary.json").read_text())["final_eval_return"] == json.loads(
        (dirs[1] / "summary.json").read_text()
    )["final_eval_return"]


def run_loading(script: str, argv: list[str], prefixes: tuple[str, ...]) -> tuple[subprocess.CompletedProcess, str]:
    """Run ``script`` (train.py, evaluate.py) with ``argv`` in a fresh interpreter; (the process, the line
    listing the modules starting with ``prefixes`` it had loaded at the end)."""
    probe = (
        "import runpy, sys\n"
        f"sys.argv = {[script, *argv]!r}\n"
        f"runpy.run_path({script!r}, run_name='__main__')\n"
        f"print('LOADED', sorted(m for m in sys.modules if m.startswith({prefixes!r})))"
    )
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=300)
    return out, next((line for line in out.stdout.splitlines() if line.startswith("LOADED")), "")


def test_the_default_job_loads_no_llm_code(tmp_path):
    """The default job (the scripted trot teaching) trains without importing coach.llm or openai."""
    out, loaded = run_loading("train.py", ["train=smoke", "train.progress_bar=false", "train.video=false",
                                           f"hydra.run.dir={tmp_path}"], ("coach.llm", "openai"))
    assert out.returncode == 0, out.stderr
    assert json.loads((tmp_path / "summary.json").read_text())["distill"] == "scripted"
    assert loaded == "LOADED []", out.stdout
