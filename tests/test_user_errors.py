"""A user mistake is one line ``error: ...`` naming the value and the fix, exit status 2, before anything is written.

Through the CLIs (``train.py``, ``evaluate.py``, ``export.py``) as a user runs them, most as their ``__main__`` in
this process (``test_train.cli_here``), the secrets and one refusal per script in a process of their own: a secret on
the command line or in a config (never written, never echoed), a damaged run ``config.yaml``, an out-of-range seed,
an output directory that cannot be made, a scripted controller on the wrong env family, an unknown env argument, and
the ``agent`` choices offered.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
import yaml

from test_train import cli_here, run_cli

ROOT = Path(__file__).resolve().parent.parent
SMOKE = ("train=smoke", "train.progress_bar=false", "train.video=false")
KEY = "sk-proj-" + "Zq7Rk2Lm9Xw4Tb6Yc1Vn8Hd3"  # a fake key, the shape of an OpenAI project key


def refused(result: subprocess.CompletedProcess, *names: str) -> str:
    """Exit 2, no traceback, exactly one ``error:`` line on stderr naming each of ``names``; the line."""
    assert "Traceback" not in result.stderr + result.stdout, result.stderr[-3000:]
    lines = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert result.returncode == 2, (result.returncode, result.stderr[-3000:])
    assert len(lines) == 1, result.stderr[-3000:]
    for name in names:
        assert name in lines[0], (name, lines[0])
    return lines[0]


# finished_run: a PPO smoke run; run_copy: a copy of it to damage; snapshot: a directory's files and bytes
from test_run_safety import finished_run, run_copy, snapshot  # noqa: E402,F401  (pytest fixtures)


# ------------------------------------------------------------------------------ 1. a key never reaches the disk
FIX = "export OPENCLAW_LLM_API_KEY=... and pass llm.api_key_env=OPENCLAW_LLM_API_KEY"


def assert_secret_refused(result: subprocess.CompletedProcess, secret: str, key: str) -> None:
    line = refused(result, key, FIX)
    assert secret not in result.stderr and secret not in result.stdout, line


@pytest.mark.parametrize(
    "override, key",
    [
        (f"+llm.api_key={KEY}", "+llm.api_key=<hidden>"),  # the default job: no adaptive teacher reads llm
        (f"llm.api_key_env={KEY}", "llm.api_key_env=<hidden>"),  # the key pasted in place of the variable's name
        ("llm.api_key_env=my-openai-key", "llm.api_key_env=<hidden>"),  # not a variable's name: may be a key
        (f"llm.hint_model=Bearer {KEY[8:]}", "llm.hint_model=<hidden>"),
        ("llm.base_url=http://127.0.0.1:8765/v1?key=9d707eb18bf5b780025ebfee4362bafaccda9e9f", "llm.base_url=<hidden>"),
        ("llm.hint_model=token_Qm4Xb7Rt2Kp9Lw3Nz6Vc8Hj1Df5Gs0Ay", "llm.hint_model=<hidden>"),
        ("+llm.password=hunter2hunter2", "+llm.password=<hidden>"),
        ("+llm.access_token=abc123abc123", "+llm.access_token=<hidden>"),
        ("hydra.job.env_set.OPENAI_API_KEY=plainkey123", "hydra.job.env_set.OPENAI_API_KEY=<hidden>"),
    ],
)
def test_train_refuses_a_secret_before_hydra_writes(override, key, tmp_path):
    run_dir = tmp_path / "run"
    secret = override.split("=", 1)[1]
    result = run_cli("train.py", *SMOKE, override, f"hydra.run.dir={run_dir}")
    assert_secret_refused(result, secret, key)
    assert not run_dir.exists(), "the refused run wrote its directory (.hydra/overrides.yaml holds the key)"


@pytest.mark.parametrize("script", ["evaluate.py", "export.py"])
def test_evaluate_and_export_refuse_a_secret_without_echoing_it(script, finished_run, tmp_path):
    out = tmp_path / "out"
    result = run_cli(script, f"run={finished_run}", f"+env_kwargs.api_key={KEY}", f"out_dir={out}")
    assert_secret_refused(result, KEY, "+env_kwargs.api_key=<hidden>")
    assert not out.exists()


def test_resume_refuses_a_key_in_the_runs_config(run_copy):
    config = yaml.safe_load((run_copy / "config.yaml").read_text())
    config["llm"]["api_key"] = KEY
    (run_copy / "config.yaml").write_text(yaml.safe_dump(config))
    before = snapshot(run_copy)
    result = run_cli("train.py", f"resume={run_copy}", "train.total_timesteps=8192")
    assert_secret_refused(result, KEY, "llm.api_key=<hidden>")
    assert snapshot(run_copy) == before


def test_secret_checks_pass_every_shipped_config_and_ordinary_values():
    """No key or value of the configs in configs/ (every group option) looks like a secret, nor do paths,
    dates, ids and the like; random keys of the usual shapes do."""
    from hydra import compose, initialize_config_dir

    from agents.evaluation.run import register_config as register_evaluate
    from agents.export.run import register_config as register_export
    from agents.overrides import command_line_secret, config_secret, secret_kind
    from agents.config.schema import register_configs

    register_configs(), register_evaluate(), register_export()
    choices = [[]] + [[f"{group}={p.stem}"] for group in ("env", "agent", "distill", "llm", "train")
                      for p in sorted((ROOT / "configs" / group).glob("*.yaml"))]
    with initialize_config_dir(config_dir=str(ROOT / "configs"), version_base="1.3"):
        for overrides in choices:
            assert config_secret(compose("train", overrides=overrides), "configs") is None, overrides
        for name in ("evaluate", "export"):
            assert config_secret(compose(name), "configs") is None, name
    ordinary = ["hydra.run.dir=/tmp/pytest-of-root/pytest-3/test_seed_out_of_range_4294967296_0/run",
                "run=runs/quadruped-ppo/2026-11-29_14-00-00", "env_id=OpenClaw/QuadrupedRough-v1",
                "checkpoint=runs/x/checkpoints/step_000100000", "llm.max_tokens=300", "llm.max_tokens_budget=2000",
                "llm.api_key_env=OPENAI_API_KEY", "llm.api_key_env=null", "x=ThisIsAVeryLongCamelCaseIdentifier123",
                "distill.hint_replay=records/opd/run-2026-01-01_00-00-00.jsonl", "~llm.api_key", "-m", "seed=0,1,2"]
    for arg in ordinary:
        assert command_line_secret([arg]) is None, arg
    for key in (KEY, "ghp_" + "a1B2" * 9, "AKIA" + "ABCDEFGH12345678", "Bearer x", "f27f689d6668edfea069e58e5a268b726f404c8a"):
        assert secret_kind(key) is not None, key


# ------------------------------------------------------------------------------ 2. a damaged run config.yaml
def _damage(config: Path, how: str) -> None:
    text = config.read_text()
    if how == "truncated":
        config.write_text(text[: text.index("learning_rate") + 8])  # in the middle of a key
    elif how == "a list":
        config.write_text("- env\n- agent\n")
    elif how in ("no env", "no train"):
        data = yaml.safe_load(text)
        del data[how.split()[1]]
        config.write_text(yaml.safe_dump(data))
    elif how == "seed: abc":
        config.write_text(text.replace("\nseed: 0\n", "\nseed: abc\n"))


@pytest.mark.parametrize("how, named", [("truncated", "not valid YAML at line"), ("a list", "a YAML list"), ("no env", "'env'"),
                                        ("seed: abc", "seed='abc' is not an integer")])
@pytest.mark.parametrize("script, option", [("train.py", "resume"), ("evaluate.py", "run"), ("export.py", "run")])
def test_damaged_run_config_is_one_line(script, option, how, named, run_copy):
    _damage(run_copy / "config.yaml", how)
    before = snapshot(run_copy)
    args = ["train.total_timesteps=8192"] if script == "train.py" else ["videos=0", "episodes=1"] if script == "evaluate.py" else []
    result = cli_here(script, f"{option}={run_copy}", *args)
    refused(result, f"{option}={run_copy}", "config.yaml", named, f"{option}=<run dir>")
    assert snapshot(run_copy) == before, "the refused command wrote into the run directory"


def test_resume_of_a_config_without_a_section_is_one_line(run_copy):
    _damage(run_copy / "config.yaml", "no train")
    before = snapshot(run_copy)
    refused(cli_here("train.py", f"resume={run_copy}", "train.total_timesteps=8192"), "'train' section", "resume=<run dir>")
    assert snapshot(run_copy) == before


# ------------------------------------------------------------------------------ 3. seeds
@pytest.mark.parametrize("seed", ["-1", str(2**32), str(2**40)])
def test_train_refuses_an_out_of_range_seed(seed, tmp_path):
    run_dir = tmp_path / "run"
    refused(cli_here("train.py", *SMOKE, f"seed={seed}", f"hydra.run.dir={run_dir}"), f"seed={seed}", "[0, 2**32 - 1")
    assert not run_dir.exists()


def test_evaluate_refuses_a_negative_seed(tmp_path):
    out = tmp_path / "eval"
    refused(run_cli("evaluate.py", "policy=trot", "seed=-1", "episodes=1", "videos=0", f"out_dir={out}"), "seed=-1")
    assert not out.exists()


# ------------------------------------------------------------------------------ 4. output directories
def _unwritable(tmp_path: Path, kind: str) -> tuple[Path, Path | None]:
    """(an output path of ``kind``, the existing path of ours that must stay unchanged, or None)."""
    if kind == "proc":
        return Path("/proc/openclaw-test/x"), None
    if kind == "under a file":
        file = tmp_path / "a_file"
        file.write_text("not a directory\n")
        return file / "out", file
    if os.geteuid() == 0:  # permissions do not stop root: a directory of a filesystem that takes no new ones
        return Path("/sys/openclaw-test/out"), None
    read_only = tmp_path / "read_only"
    read_only.mkdir()
    read_only.chmod(0o555)
    return read_only / "out", read_only


def _state(path: Path | None) -> object:
    return None if path is None else sorted(os.listdir(path)) if path.is_dir() else path.read_bytes()


KINDS = ["proc", "under a file", "read-only"]


@pytest.mark.parametrize("kind", KINDS)
def test_train_refuses_an_impossible_run_directory(kind, tmp_path):
    out, parent = _unwritable(tmp_path, kind)
    before = _state(parent)
    refused(cli_here("train.py", *SMOKE, f"hydra.run.dir={out}"), f"hydra.run.dir={out}", "hydra.run.dir=<dir>")
    assert not out.exists()
    assert _state(parent) == before


@pytest.mark.parametrize("also", [[], ["hydra.run.dir=given"]])
def test_train_refuses_run_dir_which_hydra_sets(also, tmp_path):
    """``run_dir`` is a field of the schema that train.py fills from Hydra's output directory: ``run_dir=<dir>`` would
    be taken and then ignored (the run written to runs/<env>-<agent>/<date>), so it is refused, naming the option to
    use, before anything is written."""
    refused(cli_here("train.py", *SMOKE, "run_dir=mine", *also, cwd=tmp_path), "run_dir", "hydra.run.dir=<dir>")
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("script", ["evaluate.py", "export.py"])
def test_evaluate_and_export_refuse_an_impossible_out_dir(script, kind, finished_run, tmp_path):
    out, parent = _unwritable(tmp_path, kind)
    before = _state(parent)
    args = ["policy=trot", "episodes=1", "videos=0"] if script == "evaluate.py" else [f"run={finished_run}"]
    refused(cli_here(script, *args, f"out_dir={out}"), f"out_dir={out}", "out_dir=<dir>")
    assert not out.exists()
    assert _state(parent) == before


def test_export_refuses_an_out_dir_that_is_a_file(finished_run, tmp_path):
    file = tmp_path / "policy_dir"
    file.write_text("a file\n")
    refused(run_cli("export.py", f"run={finished_run}", f"out_dir={file}"), f"out_dir={file}", "is a file")
    assert file.read_text() == "a file\n"
    assert not (finished_run / "export").exists()


# ------------------------------------------------------------------------------ 5. scripted controllers, env arguments
@pytest.mark.parametrize("policy, env_id, other", [("trot", "OpenClaw/Claw-v0", "policy=grasp"),
                                                   ("grasp", "OpenClaw/Quadruped-v1", "policy=trot")])
def test_scripted_policy_on_the_other_family(policy, env_id, other, tmp_path):
    out = tmp_path / "eval"
    result = cli_here("evaluate.py", f"policy={policy}", f"env_id={env_id}", "episodes=1", "videos=0", f"out_dir={out}")
    refused(result, f"policy={policy}", f"env_id={env_id}", other)
    assert not out.exists()


@pytest.mark.parametrize("script, args", [
    ("evaluate.py", ("policy=trot", "+env_kwargs.bogus=1", "episodes=1", "videos=1")),
    ("evaluate.py", ("policy=grasp", "+env_kwargs.bogus=1", "episodes=1", "videos=0")),
    ("train.py", (*SMOKE, "+env.kwargs.bogus=1")),
])
def test_unknown_env_argument_lists_each_valid_one_once(script, args, tmp_path):
    out = tmp_path / "out"
    where = f"out_dir={out}" if script == "evaluate.py" else f"hydra.run.dir={out}"
    line = refused(cli_here(script, *args, where), "['bogus']", "valid arguments are:")
    valid = line.split("valid arguments are: ", 1)[1].split(", ")
    assert len(valid) == len(set(valid)), f"listed twice: {sorted(v for v in set(valid) if valid.count(v) > 1)}"
    for name in ("camera", "height", "render_mode", "width"):
        assert valid.count(name) == 1, (name, valid)
    assert "was raised from the environment creator" not in line, "Gymnasium's tail repeats every argument's value"
    assert not out.exists()


# ------------------------------------------------------------------------------ 6. the agent choices
def test_agent_choices_offer_no_schemas(tmp_path):
    result = run_cli("train.py", "--help")
    assert result.returncode == 0, result.stderr[-2000:]
    assert "agent: ppo, sac\n" in result.stdout, result.stdout[:600]
    assert "schema" not in result.stdout.split("== Config ==")[0]
    run_dir = tmp_path / "run"
    line = refused(cli_here("train.py", "agent=ppo_schema", f"hydra.run.dir={run_dir}"), "agent/ppo_schema")
    assert line.endswith("Available options in 'agent': ppo sac"), line
    assert not run_dir.exists()
