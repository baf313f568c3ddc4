"""Teachers in sequence (``distill/sequence.py``, ``distill=sequence``: ``agents/teachers/stages.py``): which stage
teaches when and with which alpha, a single teacher as a sequence of one (the same floats), an EMA stage starting
from the student as it is then, per-stage statistics, the config's checks, and a run killed in the middle of the
second teacher resuming there."""

from __future__ import annotations

import csv
import json
import signal
import subprocess
import sys
import time

import pytest
import torch
from omegaconf import OmegaConf

from agents.errors import ConfigError
from agents.teachers.stages import stage_spans, teaching_stages
from agents.training.checks import validate
from distill.opd import OnlinePolicyDistillation
from distill.policy import DiagGaussian, PolicyEntry
from distill.schedules import SCHEDULES, make_schedule
from distill.sequence import TeacherSequence, TeachingStage
from distill.teachers import EMATeacher, RecordedActionTeacher, TeacherActions
from test_train import ROOT, cli_here, compose_train, train_here
from test_user_errors import refused


def gaussian(module: torch.nn.Module, obs: torch.Tensor) -> DiagGaussian:
    mean = module(obs)
    return DiagGaussian(mean, torch.zeros_like(mean))


def two_stages() -> tuple[PolicyEntry, TeacherSequence]:
    """A recorded-action teacher over progress [0, 0.25) (alpha 0.5 -> 0), then an EMA of the student to the end."""
    torch.manual_seed(0)
    student = PolicyEntry(torch.nn.Linear(3, 2), gaussian)
    return student, TeacherSequence([
        TeachingStage("trot", RecordedActionTeacher(0.3), make_schedule("linear", 0.5), 0.0, 0.25),
        TeachingStage("ema", EMATeacher(student, decay=0.5), make_schedule("constant", 0.1), 0.25, 1.0),
    ])


@pytest.mark.parametrize("kind", SCHEDULES)
def test_a_single_teacher_is_a_sequence_of_one_with_the_same_floats(kind):
    schedule = make_schedule(kind, 0.7, 0.05, 3.0, end=0.3)
    sequence = TeacherSequence.alone(RecordedActionTeacher(0.3), schedule)
    for progress in (-0.1, 0.0, 0.1, 0.2999, 0.3, 0.77, 1.0, 1.2):
        assert sequence.alpha(progress) == schedule(progress)
        assert sequence.finished(progress) == (schedule(progress) == 0.0 and schedule(1.0) == 0.0)


def test_the_stage_of_the_progress_teaches_with_its_own_schedule():
    _, sequence = two_stages()
    assert [sequence.index_at(p) for p in (-0.1, 0.0, 0.2, 0.25, 0.9, 1.0, 1.1)] == [0, 0, 0, 1, 1, 1, 1]
    assert [sequence.alpha(p) for p in (0.0, 0.125, 0.25, 0.6, 1.0)] == [0.5, 0.25, 0.1, 0.1, 0.1]
    assert not sequence.finished(0.2, "trot") and sequence.finished(0.25, "trot") and sequence.finished(0.9, "trot")
    assert not sequence.finished(0.25) and not sequence.finished(0.1, "ema")
    assert sequence.needs_teacher_actions and not sequence.needs_raw_obs
    ended = TeacherSequence([TeachingStage("only", RecordedActionTeacher(0.3), make_schedule("constant", 0.2), 0.0, 0.5)])
    assert ended.alpha(0.49) == 0.2 and ended.alpha(0.5) == 0.0 and ended.index_at(0.7) is None
    assert ended.finished(0.5) and not ended.finished(0.4)


def test_the_distillation_says_when_a_teacher_stops_teaching():
    """``OnlinePolicyDistillation.finished`` is what retires the controller teacher (its callback only asks): a stage
    whose alpha stays 0 to the end is finished while training goes on, and no teacher is at the run's end (it taught
    to the end, even where its schedule reaches 0 there)."""
    student, sequence = two_stages()
    opd = OnlinePolicyDistillation(student, sequence)
    assert not opd.finished(0.2, "trot") and opd.finished(0.25, "trot") and opd.finished(0.999, "trot")
    assert sequence.finished(1.0, "trot") and not opd.finished(1.0, "trot") and not opd.finished(1.2, "trot")
    falling = OnlinePolicyDistillation(student, TeacherSequence.alone(RecordedActionTeacher(0.3), make_schedule("linear", 0.5)))
    assert falling.teacher.finished(1.0) and not falling.finished(0.999) and not falling.finished(1.0)


def test_each_stage_weighs_the_rl_actor_loss_and_rl_is_whole_after_the_last():
    teacher = RecordedActionTeacher(0.3)
    sequence = TeacherSequence([
        TeachingStage("pure", teacher, make_schedule("constant", 1.0), 0.0, 0.25, rl_weight=0.0),
        TeachingStage("opd", teacher, make_schedule("linear", 1.0), 0.25, 0.5, rl_weight=0.5)])
    assert [sequence.rl_weight(p) for p in (0.0, 0.2, 0.25, 0.49, 0.5, 1.0)] == [0.0, 0.0, 0.5, 0.5, 1.0, 1.0]
    opd = OnlinePolicyDistillation(None, TeacherSequence.alone(teacher, make_schedule("constant", 1.0), rl_weight=0.0))
    assert opd.rl_weight(0.0) == opd.rl_weight(1.0) == 0.0


def test_pure_distillation_leaves_the_actor_to_the_teacher_and_trains_the_critic():
    """rl_weight 0: an EMA teacher that starts as the student has nothing to teach (KL 0, no gradient), so the
    actor's weights stay as they were, bit for bit, while the critic learns; rl_weight 1 moves the actor."""
    from stable_baselines3.common.env_util import make_vec_env

    from agents.students import PPOStudent, policy_entry

    torch.set_num_threads(1)
    moved = {}
    for weight in (0.0, 1.0):
        model = PPOStudent("MlpPolicy", make_vec_env("OpenClaw/Quadruped-v0", n_envs=2, seed=0), n_steps=64,
                           batch_size=32, n_epochs=2, seed=0, device="cpu", policy_kwargs=dict(net_arch=[16]))
        student = policy_entry(model)
        model.attach_distillation(OnlinePolicyDistillation(student, TeacherSequence.alone(
            EMATeacher(student, decay=0.5), make_schedule("constant", 1.0), rl_weight=weight)))
        policy = model.policy
        actor = [policy.mlp_extractor.policy_net, policy.action_net]
        before = [[p.detach().clone() for p in m.parameters()] for m in (*actor, policy.value_net)]
        before_std = policy.log_std.detach().clone()
        model.learn(128)
        after = [list(m.parameters()) for m in (*actor, policy.value_net)]
        changed = [any(not torch.equal(a, b) for a, b in zip(old, new)) for old, new in zip(before, after)]
        moved[weight] = (changed, not torch.equal(before_std, policy.log_std))
    assert moved[0.0] == ([False, False, True], False)
    assert moved[1.0] == ([True, True, True], True)


def test_the_ema_stage_starts_from_the_student_as_it_is_then_and_resumes_as_saved():
    entry, sequence = two_stages()
    student, ema = entry.module, sequence.stages[1].teacher
    sequence.select(0.1)
    with torch.no_grad():
        student.weight.add_(1.0)  # the first stage taught it
    sequence.after_optimizer_step()
    assert ema.steps == 0  # the EMA stage has not begun: no optimiser steps for it
    assert not torch.equal(ema.entry.module.weight, student.weight)
    assert sequence.select(0.3) is sequence.stages[1] and sequence.begun == 1
    assert torch.equal(ema.entry.module.weight, student.weight)
    sequence.after_optimizer_step()
    assert ema.steps == ema.updates == 1
    saved = sequence.state_dict()
    assert saved["begun"] == 1 and set(saved["stages"]) == {"ema"}

    _, resumed = two_stages()  # a new process: the student as restored, the EMA teacher a copy of it
    resumed.load_state_dict(saved)
    resumed.select(0.5)
    resumed_ema = resumed.stages[1].teacher
    assert torch.equal(resumed_ema.entry.module.weight, ema.entry.module.weight) and resumed_ema.updates == 1


def test_each_stage_logs_its_statistics():
    student, sequence = two_stages()
    opd = OnlinePolicyDistillation(student, sequence)
    obs = torch.zeros(4, 3)
    taught = TeacherActions(torch.zeros(4, 2), torch.ones(4))
    opd.distill_loss(obs, 0.1, teacher_actions=taught)
    opd.distill_loss(obs, 0.5, teacher_actions=taught)
    stats = opd.pop_stats()
    assert stats["trot/alpha"] == 0.3 and stats["ema/alpha"] == 0.1 and stats["alpha"] == pytest.approx(0.2)
    assert {"trot/kl", "ema/kl", "kl", "ema/coverage"} <= set(stats)
    single = OnlinePolicyDistillation(student, TeacherSequence.alone(RecordedActionTeacher(0.3), make_schedule("constant", 0.4)))
    single.distill_loss(obs, 0.1, teacher_actions=taught)
    assert not any("/" in key for key in single.pop_stats())
    with pytest.raises(TypeError, match="TeacherSequence"):
        OnlinePolicyDistillation(student, RecordedActionTeacher(0.3))


@pytest.mark.parametrize("stages, named", [
    ([{"name": "adaptive", "steps": 10}], "use one of: ema, checkpoint, scripted"),
    ([{"name": "ema", "steps": 10, "alpa": 1}], "unknown key(s) ['alpa']"),
    ([{"name": "scripted"}, {"name": "ema"}], "distill.stages[0]: steps=None is invalid"),
    ([{"name": "scripted", "steps": 10}, {"name": "scripted", "label": "again"}], "one controller teacher"),
    ([{"name": "ema", "steps": 10}, {"name": "ema"}], "give each a label"),
    ([], "needs distill.stages"),
])
def test_stages_that_cannot_run_are_named(stages, named):
    with pytest.raises(ValueError) as err:
        teaching_stages(OmegaConf.create({"name": "sequence", "alpha": 1.0, "stages": stages}))
    assert named in str(err.value)


def test_stages_take_the_sections_values_and_their_own_and_must_start_before_the_end():
    d = OmegaConf.create({"name": "sequence", "alpha": 1.0, "schedule": "linear", "teacher": None, "stages": [
        {"name": "scripted", "steps": 100, "alpha": 0.5}, {"name": "checkpoint", "label": "perceptive", "steps": 300,
                                                           "teacher": "runs/t"}, {"name": "ema", "schedule": "constant"}]})
    stages = teaching_stages(d)
    assert [(s.label, s.steps, s.distill.name, s.distill.alpha, s.distill.schedule) for s in stages] == [
        ("scripted", 100, "scripted", 0.5, "linear"), ("perceptive", 300, "checkpoint", 1.0, "linear"),
        ("ema", None, "ema", 1.0, "constant")]
    assert stages[1].distill.teacher == "runs/t" and "stages" not in stages[0].distill
    assert stage_spans(stages, 1000) == [(0, 100), (100, 400), (400, 1000)]
    with pytest.raises(ValueError, match=r"stage 'ema' starts at env step 400, at or past the run's end .*"
                                         r"\(distill.stages.0.steps=<N> or distill.stages.1.steps=<N>\)"):
        stage_spans(stages, 400)


@pytest.mark.parametrize("overrides, named", [
    (("distill=sequence",), "distill=sequence has no teacher to read it (none of its stages is a checkpoint)"),
    (("distill=ema",), "distill=ema has no teacher to read it (it does not read a run)"),
    (("distill=scripted",), "distill=scripted has no teacher to read it"),
])
def test_a_teacher_run_that_no_teacher_reads_is_refused(overrides, named):
    """``distill.teacher`` beside a teacher kind that does not read it would train without it: refused, named."""
    with pytest.raises(ConfigError) as err:
        validate(compose_train(*overrides, "distill.teacher=runs/perceptive"))
    assert named in str(err.value) and "distill.teacher=runs/perceptive is set" in str(err.value)
    validate(compose_train("distill=sequence", "distill.stages.0.steps=1024", "train=smoke"))  # no teacher named: fine


@pytest.mark.parametrize("override, named", [
    ("distill.stages.1.ema_decay=1.5", ("distill.stages[1] (ema)", "distill.ema_decay=1.5")),
    ("+distill.stages.1.rl_weight=2", ("distill.stages[1] (ema)", "distill.rl_weight=2", "in [0, 1]")),
])
def test_a_bad_stage_is_refused_before_anything_is_written(tmp_path, override, named):
    result = cli_here("train.py", "train=smoke", "distill=sequence", "distill.stages.0.steps=1024", override,
                      f"hydra.run.dir={tmp_path}")
    refused(result, *named)
    assert not any(tmp_path.iterdir())


def test_a_run_killed_in_the_middle_of_the_second_teacher_resumes_there(tmp_path):
    run_dir = tmp_path / "run"
    stages = "distill.stages=[{name: scripted, steps: 1024, alpha: 0.5}, {name: ema, alpha: 0.1, schedule: constant}]"
    proc = subprocess.Popen([sys.executable, str(ROOT / "train.py"), "train=smoke", "train.progress_bar=false",
                             "train.total_timesteps=8192", "train.eval_freq=0", "distill=sequence", stages,
                             f"hydra.run.dir={run_dir}"], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    saved = run_dir / "checkpoints" / f"step_{4096:012d}"
    start = time.time()
    while time.time() - start < 240 and not (saved / "meta.json").is_file():
        time.sleep(0.2)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=60)
    before = torch.load(saved / "teacher.pt", weights_only=True)
    assert before["begun"] == 1 and before["stages"]["ema"]["updates"] > 0
    assert not (run_dir / "summary.json").exists()

    result = train_here(f"resume={run_dir}", "train.progress_bar=false")
    assert result.returncode == 0, result.stderr[-3000:]
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["steps"] == 8192 and summary["teacher_retired_at_step"] == 1024  # where it retired before the kill
    rows = list(csv.DictReader((run_dir / "progress.csv").open()))
    taught = {int(row["time/total_timesteps"]): row for row in rows if row.get("distill/alpha")}
    assert all(taught[step].get("distill/scripted/kl") for step in taught if step <= 1024)
    after = [row for step, row in taught.items() if step > 4096]
    assert after and all(row["distill/ema/alpha"] == "0.1" and not row.get("distill/scripted/kl") for row in after)
    final = torch.load(run_dir / "checkpoints" / f"step_{8192:012d}" / "teacher.pt", weights_only=True)
    assert final["begun"] == 1 and final["stages"]["ema"]["updates"] > before["stages"]["ema"]["updates"]
