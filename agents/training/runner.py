"""One training run, start to finish: envs, learner, callbacks, interruption handling, artefacts.

``train.py`` composes the config and calls :func:`train`; everything here is usable from Python too::

    from omegaconf import OmegaConf
    from agents.training.runner import train
    summary = train(cfg)   # cfg: the composed TrainConfig with cfg.run_dir set
"""

from __future__ import annotations

import errno
import functools
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from omegaconf import DictConfig, OmegaConf, open_dict
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.vec_env import VecEnv

from agents import checkpoint, saved_config
from agents.signals import signals_deferred, sigterm_as_keyboard_interrupt
from agents.training import report, run_dir as run_dirs
from agents.training.checks import Checked
from agents.training.callbacks import (CurriculumLogger, EvalAndCheckpoint, InfoTermLogger, ProgressBar, WholeUpdate,
                                       record_pending)
from agents.training.tracking import add_trackers
from agents.errors import ConfigError
from agents.teachers.context_mask import ContextMask
from agents.teachers.stages import controller_stage, masked_stages
from agents.teachers.builders import build_distillation, controller_teacher
from agents.teachers.controller import ControllerTeacher, ControllerTeacherCallback
from agents.factory import build_agent, check_observation_space, load_checkpoint
from agents.vec_env import env_kwargs, eval_normalization, make_vec_env, wrap_normalization
from agents.evaluation.video import recordable
from distill.opd import NonFiniteLoss

EXIT_INTERRUPTED = 130
EVAL_SEED_OFFSET = 1_000_003


class TrainingFailed(Exception):
    """Training stopped on a non-finite loss or ended with too little teacher coverage (the message says why)."""


class DiskFull(ConfigError):
    """The disk filled up while training wrote its files; the message names the last good checkpoint (exit 2)."""


class TrainingInterrupted(Exception):
    """Raised when training stopped on Ctrl-C or SIGTERM after saving a checkpoint."""

    def __init__(self, run_dir: Path, step: int, during_final_evaluation: bool = False,
                 saved_step: int | None = None) -> None:
        if during_final_evaluation:
            message = (f"interrupted during the final evaluation at step {step}; training is finished and its "
                       f"checkpoint saved (summary.json has no final evaluation). Evaluate it with: "
                       f"python evaluate.py run={run_dir}")
        else:
            at = f" at step {saved_step} (the last whole update)" if saved_step not in (None, step) else ""
            message = (f"interrupted at step {step}; checkpoint saved{at}. Resume with: "
                       f"python train.py resume={run_dir}")
        super().__init__(message)
        self.run_dir, self.step = run_dir, step


def _is_disk_full(err: BaseException) -> bool:
    return isinstance(err, OSError) and err.errno in (errno.ENOSPC, errno.EDQUOT)


def _disk_full(run_dir: Path, step: int, err: OSError) -> DiskFull:
    kept = checkpoint.latest(run_dir)
    where = f"the last good checkpoint is {kept.path} (step {kept.meta.get('num_timesteps')})" if kept else \
        "no checkpoint was saved"
    return DiskFull(f"the disk is full ({err.strerror}: {err.filename or run_dir}) at step {step}; {where}. "
                    f"Free space, then continue with: python train.py resume={run_dir}")


def _train_envs(cfg: DictConfig) -> tuple[VecEnv, ControllerTeacher | ContextMask | None]:
    """The training envs (not normalised yet) and the teacher that acts while the samples are collected: a
    controller teacher (``distill=scripted|adaptive``), or the context mask of a checkpoint teacher with
    ``teach_contexts``. It wraps the raw envs, so it is the env returned too."""
    venv = make_vec_env(cfg.env.id, env_kwargs(cfg), cfg.train.num_envs, cfg.train.vec_mode)
    masked = masked_stages(cfg.distill)  # one at most (checked before training)
    if masked:
        mask = ContextMask(venv, list(masked[0].distill.teach_contexts))
        return mask, mask
    if controller_stage(cfg.distill) is None:  # distill=sequence: its scripted stage's (controller_params: the section's)
        return venv, None
    try:
        teacher = controller_teacher(venv, cfg)
    except ConfigError:
        venv.close()
        raise
    _add_controller_env_kwargs(cfg, teacher)
    return teacher, teacher


def _add_controller_env_kwargs(cfg: DictConfig, teacher: ControllerTeacher) -> None:
    """Add to ``env.kwargs`` what the teacher's controllers set on the training envs (``env_kwargs()``: the
    trot's gait frequency, tuned per robot), unless the config sets it: the evaluation envs, the saved
    config and ``evaluate.py run=`` then run the gait clock the student learns with."""
    wanted = teacher.policy.controllers[0].env_kwargs()
    with open_dict(cfg):
        for key, value in wanted.items():
            if key not in cfg.env.kwargs:
                cfg.env.kwargs[key] = value
            elif cfg.env.kwargs[key] != value:
                print(f"env.kwargs.{key}={cfg.env.kwargs[key]} differs from the teacher's {value}: the training envs "
                      f"run the teacher's, the evaluation envs yours", file=sys.stderr)


def _resume(cfg: DictConfig, venv: VecEnv) -> tuple[checkpoint.Checkpoint, VecEnv, BaseAlgorithm]:
    """The newest intact checkpoint of run ``cfg.resume`` on ``venv``: (checkpoint, ``venv`` in its
    normalisation, learner with this config's ``agent.learning_rate``; with ``agent.desired_kl`` the adapted rate
    goes on unless the resume changes ``agent.learning_rate``). Damaged ones are skipped and named."""
    def load(found: checkpoint.Checkpoint) -> tuple[BaseAlgorithm, VecEnv]:
        check_observation_space(str(found.model), venv)  # a mismatch is not damage: stop, do not skip
        return load_checkpoint(found, cfg.agent.name, venv, cfg.train.device, replay=True,
                               vec_mode=cfg.train.vec_mode)

    try:
        intact = checkpoint.first_intact(checkpoint.candidates(cfg.resume), load)
    except checkpoint.NoneIntact as err:
        raise ConfigError(f"resume={cfg.resume}: no intact checkpoint under {Path(cfg.resume) / 'checkpoints'}"
                          + (f": {err}" if err.damaged else "")) from None
    model, env = intact.value
    if getattr(model, "desired_kl", None) is not None and cfg.agent.learning_rate != model.learning_rate:
        model.set_adaptive_learning_rate(cfg.agent.learning_rate)  # a new one restarts the adaptive rate from it
    model.learning_rate = cfg.agent.learning_rate  # a resume may change it
    model._setup_lr_schedule()
    skipped = f"; skipped damaged checkpoint(s): {'; '.join(intact.skipped)}" if intact.skipped else ""
    print(f"resuming from {intact.checkpoint.path} (step {model.num_timesteps}){skipped}", file=sys.stderr)
    return intact.checkpoint, env, model


def _final_save(run_dir: Path, model: BaseAlgorithm, venv: VecEnv, keep: int, clock: dict[str, float],
                whole: WholeUpdate | None = None) -> tuple[checkpoint.Checkpoint | None, OSError | None, bool]:
    """Save where training stopped, as of its last whole update ``whole`` (a resume collects again what came after;
    None before training started: as it is), unless a parameter or statistic is not finite or the disk is full
    (then keep the last good one); Ctrl-C / SIGTERM wait until the save is whole. (checkpoint, disk-full error, whether a Ctrl-C / SIGTERM
    arrived meanwhile)."""
    whole = whole or WholeUpdate(int(model.num_timesteps))
    with signals_deferred() as arrived:
        try:
            saved, full = checkpoint.save(run_dir, model, venv, keep=keep, step=whole.step, **clock, **whole.meta), None
        except checkpoint.NonFinite as err:
            saved, full = checkpoint.latest(run_dir), None
            print(f"warning: no checkpoint saved: {err}; the last good one is kept: {saved.path if saved else 'none'}",
                  file=sys.stderr)
        except OSError as err:
            if not _is_disk_full(err):
                raise
            saved, full = checkpoint.latest(run_dir), err
    return saved, full, bool(arrived)


def _teacher_state(teacher: ControllerTeacher | None, before: dict[str, Any]) -> dict[str, Any]:
    """What a checkpoint records of a retired controller teacher (``{}`` otherwise): its report, with the step it
    retired at (:data:`checkpoint.RETIRED_KEY`); ``before``: that of the checkpoint a resume retired it from."""
    return {**teacher.report(), **before} if teacher is not None and teacher.retired else {}


def _teacher_report(cfg: DictConfig, teacher: ControllerTeacher | None,
                    before: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
    """What the controller teacher did over the run (summary keys ``teacher_*``; ``before``: a retired teacher's
    report from the checkpoint a resume retired it from) and, when it gave actions for fewer than
    ``distill.min_coverage`` of the samples, why (else None)."""
    if teacher is None:  # no teacher, or one (EMA, checkpoint) that gives a target for every sample
        return {}, None
    did = {**teacher.report(), **before}
    minimum = cfg.distill.min_coverage
    if did["teacher_coverage"] >= minimum:
        return did, None
    why = f"the teacher gave actions for {did['teacher_coverage']:.0%} of the samples (distill.min_coverage={minimum})"
    cause = teacher.coverage_cause()
    return did, why if cause is None else f"{why}: {cause}"


def _eval_envs(cfg: DictConfig, train_venv: VecEnv) -> VecEnv | None:
    if cfg.train.eval_freq == 0:
        return None
    kwargs, wrapper = env_kwargs(cfg, evaluation=True), None
    if cfg.train.video:  # renderable eval envs; they render only the episodes being recorded
        t = cfg.train
        kwargs, wrapper = recordable(kwargs, t.video_width, t.video_height, shadows=t.video_shadows)
    eval_venv = make_vec_env(cfg.env.id, kwargs, cfg.train.eval_envs, wrapper=wrapper)
    return eval_normalization(eval_venv, train_venv)


def train(cfg: DictConfig, checked: Checked | None = None) -> dict[str, Any]:
    """Train as configured, write checkpoints/logs/curve/summary into ``cfg.run_dir``; return the summary.
    ``checked``: what :func:`~agents.training.checks.validate` loaded checking ``cfg`` (not loaded again).

    Raises :class:`ConfigError` when ``cfg.run_dir`` holds another run (unless resuming it) or another
    process trains there, :class:`TrainingInterrupted` after saving a checkpoint on Ctrl-C or SIGTERM
    and :class:`TrainingFailed` on a non-finite loss or (``distill.require_coverage``) too little coverage.
    """
    same_dir = bool(cfg.resume) and Path(cfg.resume).resolve() == Path(cfg.run_dir).resolve()
    with run_dirs.claimed(cfg.run_dir, resume=same_dir):
        return _train(cfg, Path(cfg.run_dir), same_dir, checked or Checked())


@dataclass
class _Run:
    """What :func:`_build` makes and :func:`_learn` / :func:`_summarise` use."""

    cfg: DictConfig
    dir: Path
    venv: VecEnv
    eval_venv: VecEnv | None
    model: BaseAlgorithm
    teacher: ControllerTeacher | None
    teacher_before: dict[str, Any]  # a retired teacher's report from the checkpoint resumed (_teacher_state)
    evaluator: EvalAndCheckpoint
    callbacks: list[BaseCallback]
    start_step: int
    saved: checkpoint.Checkpoint | None = None  # where training stopped (set by _learn)
    stopped: bool = False  # Ctrl-C / SIGTERM after the last training step (set by _learn)


def _train(cfg: DictConfig, run_dir: Path, same_dir: bool, checked: Checked) -> dict[str, Any]:
    run = _build(cfg, run_dir, same_dir, checked)
    wall = _learn(run)
    return _summarise(run, wall)


def _build(cfg: DictConfig, run_dir: Path, same_dir: bool, checked: Checked) -> _Run:
    """Envs, learner (new or resumed), logger, callbacks and distillation, in this order (it fixes the seeds' use)."""
    torch.set_num_threads(cfg.train.torch_threads)
    checkpoint.code_commit()  # the commit this process runs, before anything can be committed while it trains
    if cfg.resume:
        run_dirs.check_unfinished(cfg.resume, cfg.train.total_timesteps)
        pending = run_dirs.final_evaluation_pending(cfg.resume, cfg.train.total_timesteps)
        if pending is not None:
            print(f"resume={cfg.resume}: training finished at step {pending} but its final evaluation did not (no "
                  f"{run_dirs.SUMMARY}): running it now", file=sys.stderr)
    for name in checkpoint.remove_partial(run_dir):  # left by a process killed while saving
        print(f"removed the partial checkpoint {run_dir / 'checkpoints' / name}", file=sys.stderr)
    venv, acting = _train_envs(cfg)
    teacher = acting if isinstance(acting, ControllerTeacher) else None  # a controller teacher: it reports and retires
    resume, teacher_before = None, {}
    if cfg.resume:
        resume, venv, model = _resume(cfg, venv)
        if teacher is not None and resume.meta.get(checkpoint.RETIRED_KEY) is not None:  # where the run retired it
            teacher_before = {key: value for key, value in resume.meta.items() if key.startswith("teacher_")}
            teacher.retire(teacher_before[checkpoint.RETIRED_KEY])
        if not resume.restore_curriculum(venv) and venv.has_attr("set_curriculum_state"):
            print(f"{resume.path} has no curriculum state for {venv.num_envs} env copies: they start the "
                  "curriculum again", file=sys.stderr)
        if resume.context_params is not None and hasattr(teacher, "restore_context_state"):
            teacher.restore_context_state(json.loads(resume.context_params.read_text()))
        if same_dir:  # rows logged after that checkpoint are trained again: drop them, and a best saved after it
            run_dirs.truncate_logs(run_dir, model.num_timesteps)
            aside = checkpoint.set_aside_best_after(run_dir, model.num_timesteps)
            if aside is not None:
                print(f"the best checkpoint was saved after step {model.num_timesteps}, in the part of the run a "
                      f"resume discards: moved to {aside}", file=sys.stderr)
    else:
        normalize_reward = cfg.env.normalize_reward and cfg.agent.name == "ppo"
        venv = wrap_normalization(venv, cfg.env.normalize_obs, normalize_reward, cfg.agent.gamma)
    OmegaConf.save(cfg, run_dir / saved_config.CONFIG, resolve=True)
    eval_venv = _eval_envs(cfg, venv)
    if resume is None:
        model = build_agent(cfg, venv, tensorboard_dir=None)
    model.set_logger(run_dirs.logger(run_dir, cfg.train.tensorboard))
    add_trackers(model.logger, cfg)
    if resume is not None:  # what the run logged after its checkpoint's update, for the row it had still to write
        record_pending(model.logger, resume.meta.get(checkpoint.PENDING_LOG_KEY, {}))
    trained_before_s = float(resume.meta.get(checkpoint.WALL_KEY, 0.0)) if resume is not None else 0.0
    t = cfg.train
    progress = ProgressBar(t.total_timesteps) if t.progress_bar else None
    evaluator = EvalAndCheckpoint(
        run_dir, eval_venv, eval_freq=t.eval_freq, eval_episodes=t.eval_episodes, checkpoint_freq=t.checkpoint_freq,
        keep_checkpoints=t.keep_checkpoints, progress=progress, video_episodes=t.video_episodes if t.video else 0,
        start_time=time.time() - trained_before_s,
        eval_seed=cfg.seed + EVAL_SEED_OFFSET,  # every evaluation the same episodes, not the training ones
        run_state=functools.partial(_teacher_state, teacher, teacher_before),
    )
    callbacks: list[BaseCallback] = [cb for cb in (progress, InfoTermLogger(), CurriculumLogger()) if cb is not None]
    distillation = build_distillation(cfg, model, ema_condition=evaluator.not_worse, loaded=checked.teacher_runs)
    if distillation is not None:
        model.attach_distillation(distillation, acting_teacher=acting)
        if resume is not None and resume.teacher is not None:
            distillation.teacher.load_state_dict(torch.load(resume.teacher, weights_only=True))
        if teacher is not None:  # it retires when its stage's alpha is 0 for the rest of the run
            finished = functools.partial(distillation.finished, stage=controller_stage(cfg.distill).label)
            callbacks.append(ControllerTeacherCallback(teacher, finished))
    callbacks.append(evaluator)
    return _Run(cfg, run_dir, venv, eval_venv, model, teacher, teacher_before, evaluator, callbacks,
                model.num_timesteps)


def _learn(run: _Run) -> float:
    """Train to ``train.total_timesteps`` and save where training stopped; the wall time (s). Raises
    :class:`TrainingInterrupted` on Ctrl-C / SIGTERM and :class:`TrainingFailed` on a non-finite loss."""
    cfg, model = run.cfg, run.model
    t0 = time.time()
    interrupted, full = False, None
    try:
        with sigterm_as_keyboard_interrupt():
            model.learn(
                total_timesteps=max(cfg.train.total_timesteps - run.start_step, 0),
                callback=run.callbacks,
                log_interval=cfg.train.log_interval,
                reset_num_timesteps=not cfg.resume,
            )
    except KeyboardInterrupt:
        interrupted = True
    except (NonFiniteLoss, checkpoint.NonFinite) as err:
        raise TrainingFailed(
            f"training stopped at step {model.num_timesteps}: {err}. Lower agent.learning_rate or distill.alpha "
            f"and continue from the last good checkpoint: python train.py resume={run.dir} agent.learning_rate=..."
        ) from None
    except OSError as err:
        if not _is_disk_full(err):
            raise
        full = err
    finally:
        run.evaluator.release(interrupt=False)  # an exception ended training between a rollout's end and the update
        run.saved, full_at_save, stopped = _final_save(run.dir, model, run.venv, cfg.train.keep_checkpoints,
                                                       run.evaluator.clock(), run.evaluator.whole)
    full = full or full_at_save
    if full is not None:
        raise _disk_full(run.dir, int(model.num_timesteps), full) from None
    if interrupted:  # no venv.close(): on Ctrl-C, subprocess workers got the signal too and are gone
        saved_step = int(run.saved.meta["num_timesteps"]) if run.saved is not None else None
        raise TrainingInterrupted(run.dir, int(model.num_timesteps), saved_step=saved_step)
    run.stopped = stopped  # a Ctrl-C / SIGTERM while the finished run's checkpoint was written: no final evaluation
    return time.time() - t0


def _summarise(run: _Run, wall: float) -> dict[str, Any]:
    """The final evaluation, ``summary.json``, the learning curve; closes the envs and the logger."""
    cfg, model, evaluator = run.cfg, run.model, run.evaluator
    fresh = evaluator.last_eval_step != model.num_timesteps
    final, interrupted = None, run.stopped
    try:
        with sigterm_as_keyboard_interrupt():
            if not interrupted:
                final = evaluator.run_evaluation()
    except KeyboardInterrupt:  # training is done and saved: write what is known, then say so
        interrupted = True
    with signals_deferred() as arrived:
        try:
            summary = _write_summary(run, final, fresh, wall, interrupted)
        except OSError as err:
            if not _is_disk_full(err):
                raise
            raise _disk_full(run.dir, int(model.num_timesteps), err) from None
    if interrupted or arrived:
        raise TrainingInterrupted(run.dir, int(model.num_timesteps), during_final_evaluation=True)
    if summary.get("teacher_warning") is not None and cfg.distill.require_coverage:
        raise TrainingFailed(f"{summary['teacher_warning']} (distill.require_coverage=true; summary.json is written)")
    return summary


def _write_summary(run: _Run, final: Any, fresh: bool, wall: float, interrupted: bool) -> dict[str, Any]:
    """``summary.json`` and the learning curve; closes the envs and the logger."""
    cfg, model, evaluator = run.cfg, run.model, run.evaluator
    if fresh and final is not None:  # logged after SB3's last dump: write it (and its clip) out now
        model.logger.record("time/total_timesteps", model.num_timesteps)
        model.logger.dump(model.num_timesteps)
    trained = model.num_timesteps - run.start_step
    summary: dict[str, Any] = {
        "env": cfg.env.id,
        "agent": cfg.agent.name,
        "distill": cfg.distill.recipe or cfg.distill.name,  # the recipe (scripted_sac), or a resumed old run's teacher
        "seed": cfg.seed,
        "steps": int(model.num_timesteps),
        "wall_time_s": round(wall, 1),
        "fps": round(trained / wall, 1) if wall > 0 else None,
        "checkpoint": str(run.saved.path) if run.saved is not None else None,
    }
    teacher, coverage_problem = _teacher_report(cfg, run.teacher, run.teacher_before)
    summary.update(teacher)
    if coverage_problem is not None:
        summary["teacher_warning"] = coverage_problem
    if final is not None:
        summary.update(
            final_eval_return=final.mean_return,
            final_eval_return_std=final.std_return,
            final_eval_episodes=final.episodes,
            best_eval_return=float(evaluator.best_return),
        )
        summary.update({f"final_{name}": value for name, value in final.metrics.items() if value is not None})
    elif interrupted:
        summary["final_eval"] = "interrupted (Ctrl-C or SIGTERM)"
    report.write_summary(run.dir, summary)
    report.plot_learning_curve(run.dir, final.declared if final is not None else (), f"{cfg.agent.name.upper()} on {cfg.env.id}")
    model.logger.close()  # event files, and a W&B run is finished
    if not interrupted:  # on Ctrl-C, subprocess workers got the signal too and are gone
        run.venv.close()
        if run.eval_venv is not None:
            run.eval_venv.close()
    return summary
