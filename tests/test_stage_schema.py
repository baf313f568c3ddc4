"""The config side of teachers in sequence and of renamed teachers (issue 77, items 1, 2, 3a, 3d).

Every documented old name runs ``train.py`` end to end with one deprecation line; a stage is typed
(:class:`agents.config.schema.StageConfig`: a wrong type or an unknown key is one line naming the stage's key, on the
command line and in a saved ``config.yaml``); a stage ends at its last env step whatever float the learner's
progress is; a resume refuses a ``distill`` override that no teacher would read and a stage's key, naming it.
"""

from __future__ import annotations

import re
import shutil

import pytest
import yaml
from omegaconf import OmegaConf

from agents import saved_config
from agents.config.teacher_kinds import RENAMED_TEACHERS
from agents.errors import ConfigError
from distill.schedules import make_schedule
from distill.sequence import TeacherSequence, TeachingStage
from distill.teachers import RecordedActionTeacher
from test_run_safety import snapshot
from test_train import ROOT, cli_here, compose_train, run_train
from test_user_errors import refused

SMOKE = ("train=smoke", "train.progress_bar=false")
SEQUENCE = ("distill=sequence", "distill.stages.0.steps=1024")  # the trot for 1024 steps, then an EMA anchor


def deprecation_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("warning:") and "the old name of" in line]


# ------------------------------------------------------------------------------ 1. old names
def test_every_old_name_the_docs_give_is_a_renamed_teacher_and_no_config_keeps_it():
    """The names the README and docs/ call old (``formerly `llm_hint```) are those :data:`RENAMED_TEACHERS` knows, so
    that the test below runs each; no ``configs/distill`` option is one of them (one name per concept)."""
    text = "\n".join(p.read_text() for p in [ROOT / "README.md", *(ROOT / "docs").glob("*.md")])
    documented = set(re.findall(r"formerly `(?:distill=)?(\w+)`", text))
    assert documented == set(RENAMED_TEACHERS), documented
    assert not {p.stem for p in (ROOT / "configs" / "distill").glob("*.yaml")} & set(RENAMED_TEACHERS)


@pytest.mark.parametrize("old, new", sorted(RENAMED_TEACHERS.items()))
def test_an_old_name_is_refused_on_a_command_line_and_read_from_a_saved_run_with_one_line(old, new, tmp_path):
    run_dir = tmp_path / "run"
    for given in (f"distill={old}", f"distill.name={old}"):  # the option, and the key under another recipe
        result = cli_here("train.py", *SMOKE, given, f"hydra.run.dir={run_dir}")
        refused(result, f"{given} is the old name of distill={new}", f"use distill={new}")
        assert not run_dir.exists()  # refused before anything is written
    result = run_train(*SMOKE, f"distill={new}", f"hydra.run.dir={run_dir}")
    assert result.returncode == 0, result.stderr[-3000:]
    config = run_dir / saved_config.CONFIG
    config.write_text(config.read_text().replace(f"name: {new}", f"name: {old}"))  # a run saved before the rename
    finished = run_train(f"resume={run_dir}")  # read by the check, then by the run: said once
    assert "the run is finished" in refused(finished)
    assert deprecation_lines(finished.stderr) == [
        f"warning: {config.resolve()} names distill={old}, the old name of distill={new} (the same teacher; "
        f"distill.proposer says whether an LLM proposes): read as distill={new}"], finished.stderr


# ------------------------------------------------------------------------------ 2. a typed stage
@pytest.mark.parametrize("override, named", [
    ("distill.stages=[{name: ema, alpha: high}]", "distill.stages.0.alpha takes a number, not 'high'"),
    ("distill.stages=[{name: scripted, steps: 1024}, {name: ema, schedule_steps: abc}]",
     "distill.stages.1.schedule_steps takes a whole number, not 'abc'"),
    ("distill.stages.1.ema_decay=high", "distill.stages.1.ema_decay takes a number, not 'high'"),
    ("distill.stages.0.teacher_std=wide", "distill.stages.0.teacher_std takes a number, not 'wide'"),
    ("distill.stages.0.steps=true", "distill.stages.0.steps takes a whole number, not 'True'"),
    ("distill.stages=[{name: scripted, steps: true}, {name: ema}]", "distill.stages.0.steps takes a whole number"),
    ("distill.stages=[{name: ema, alpa: 1}]", "Key 'alpa' not in 'StageConfig'; valid keys of distill.stages.0: alpha"),
])
def test_a_stage_value_of_the_wrong_type_is_one_line_naming_the_stages_key(override, named, tmp_path):
    result = cli_here("train.py", *SMOKE, *SEQUENCE, override, f"hydra.run.dir={tmp_path}")
    refused(result, named)
    assert not any(tmp_path.iterdir())


def test_a_stage_sets_its_keys_without_plus_and_with_it():
    """Every stage has every key of :class:`~agents.config.schema.TeacherSettings` (null: the section's), so the
    documented ``+distill.stages.0.schedule_steps=...`` and the plain form set the same value."""
    for given in ("distill.stages.0.schedule_steps=1500", "+distill.stages.0.schedule_steps=1500"):
        assert compose_train(*SEQUENCE, given).distill.stages[0].schedule_steps == 1500


def test_a_saved_stage_of_the_wrong_type_is_named(tmp_path):
    config = OmegaConf.to_container(compose_train(*SEQUENCE), resolve=True)
    config["distill"]["stages"][0]["steps"] = True
    (tmp_path / saved_config.CONFIG).write_text(yaml.safe_dump(config))
    with pytest.raises(ConfigError, match=r"distill.stages.0.steps=True is not an integer"):
        saved_config.load(tmp_path, "resume")


# ------------------------------------------------------------------------------ 3a. stage boundaries
def test_a_stage_ends_at_its_last_env_step_whatever_float_the_progress_is():
    """The trot teaches env steps [0, 2048) of 6144; at step 2048 PPO's progress is ``1 - (1 - 2048/6144)`` =
    0.33333333333333326, under ``2048/6144``: the EMA stage teaches there, and the trot is finished."""
    trot, anchor = make_schedule("linear", 0.5), make_schedule("constant", 0.1)
    sequence = TeacherSequence([TeachingStage("trot", RecordedActionTeacher(0.3), trot, 0, 2048),
                                TeachingStage("ema", RecordedActionTeacher(0.3), anchor, 2048, 6144)], total_steps=6144)
    for step in (2047, 2048, 4096, 6144):
        for progress in (1 - (1 - step / 6144), step / 6144):  # SB3's students, the controller teacher's callback
            assert sequence.index_at(progress) == int(step >= 2048), (step, progress)
    at_end = 1 - (1 - 2048 / 6144)
    assert sequence.alpha(at_end) == 0.1 and sequence.finished(at_end, "trot")
    assert sequence.alpha(1 - (1 - 1024 / 6144)) == 0.25 and not sequence.finished(2047 / 6144, "trot")
    with pytest.raises(ValueError, match="whole env steps"):
        TeacherSequence([TeachingStage("trot", RecordedActionTeacher(0.3), trot, 0, 0.5)], total_steps=6144)


# ------------------------------------------------------------------------------ 3d. a resume's overrides
@pytest.fixture(scope="module")
def sequence_run(tmp_path_factory):
    """A finished 4096-step smoke run of the trot for 1024 steps, then an EMA anchor (each stage has its own alpha
    and schedule)."""
    run_dir = tmp_path_factory.mktemp("runs") / "run"
    result = run_train(*SMOKE, *SEQUENCE, f"hydra.run.dir={run_dir}")
    assert result.returncode == 0, result.stderr[-3000:]
    return run_dir


@pytest.mark.parametrize("override, named", [
    ("distill.alpha=0.3", "distill.alpha=0.3: cannot change when resuming: every stage of distill=sequence sets its "
                          "own alpha, so no teacher would read it"),
    ("distill.schedule=cosine", "distill.schedule=cosine: cannot change when resuming: every stage"),
    ("distill.stages.1.alpha=0.3", "distill.stages.1.alpha=0.3: cannot change when resuming (the run was made with "
                                   "distill.stages.1.alpha=0.1)"),
    ("distill.stages.0.steps=2048", "distill.stages.0.steps=2048: cannot change when resuming"),
])
def test_a_resume_refuses_a_distill_override_it_would_ignore_or_cannot_apply(sequence_run, override, named, tmp_path):
    run_dir = tmp_path / "run"
    shutil.copytree(sequence_run, run_dir)
    before = snapshot(run_dir)
    result = cli_here("train.py", f"resume={run_dir}", "train.total_timesteps=8192", override)
    refused(result, named)
    assert snapshot(run_dir) == before


def test_a_resume_applies_a_distill_override_a_stage_reads(sequence_run, tmp_path):
    """A stage that leaves its alpha to the section reads ``distill.alpha``: the resume takes it."""
    import train

    from agents.overrides import check_overrides

    run_dir = tmp_path / "run"
    shutil.copytree(sequence_run, run_dir)
    config = OmegaConf.load(run_dir / saved_config.CONFIG)
    config.distill.stages[1].alpha = None
    OmegaConf.save(config, run_dir / saved_config.CONFIG)
    argv = [f"resume={run_dir}", "train.total_timesteps=8192", "distill.alpha=0.3"]
    assert check_overrides(str(ROOT / "configs"), "train", argv, train.validate, train.prepare) is None
    resumed = train.prepare(compose_train(*argv), argv)
    assert resumed.distill.alpha == 0.3
