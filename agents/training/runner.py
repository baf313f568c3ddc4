"""One training run, start to finish: envs, learner, callbacks, interruption handling, artefacts.

``train.py`` composes the config and calls :func:`train`; everything here is usable from Python too::

    from omegaconf import OmegaConf
    from agents.training.runner import train
    summary = train(cfg)   # cfg: the composed TrainConfig with cfg.run_dir set
"""

from __future__ import annotations

import signal
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch
from omegaconf import DictConfig, OmegaConf
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.off_policy_algorithm import OffPolicyAlgorithm
from stable_baselines3.common.vec_env import VecEnv, VecNormalize

from agents import checkpoint, saved_config
from agents.training import report, run_dir as run_dirs
from agents.training.callbacks import EvalAndCheckpoint, InfoTermLogger, ProgressBar
from agents.training.tracking import add_trackers
from agents.errors import ConfigError
from agents.teachers.distillation import build_distillation
from agents.factory import build_agent, check_observation_space, load_agent
from agents.teachers.controller import ControllerTargets, HintStatsLogger, RetireTeacher, controller_targets
from agents.vec_env import env_kwargs, eval_normalization, make_vec_env, wrap_normalization
from agents.evaluation.video import recordable
from distill.opd import NonFiniteLoss

EXIT_INTERRUPTED = 130
EVAL_SEED_OFFSET = 1_000_003


class TrainingFailed(Exception):
    """Training stopped on a non-finite loss or ended with too little teacher coverage (the message says why)."""


class TrainingInterrupted(Exception):
    """Raised when training stopped on Ctrl-C or SIGTERM after saving a checkpoint."""

    def __init__(self, run_dir: Path, step: int) -> None:
        super().__init__(f"interrupted at step {step}; checkpoint saved. Resume with: python train.py resume={run_dir}")
        self.run_dir, self.step = run_dir, step


@contextmanager
def _sigterm_as_keyboard_interrupt():
    """Treat SIGTERM (e.g. a cluster pre-emption) like Ctrl-C so the same save path runs."""

    def handler(signum, frame):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _train_envs(cfg: DictConfig) -> tuple[VecEnv, ControllerTargets | None]:
    """The training envs (not normalised yet), and the controller-teacher wrapper inside them (``distill=scripted|llm_hint``)."""
    venv = make_vec_env(cfg.env.id, env_kwargs(cfg), cfg.train.num_envs, cfg.train.vec_mode)
    targets = None
    if cfg.distill.name in ("scripted", "llm_hint"):
        run_name = f"{cfg.env.name}-{cfg.agent.name}-{Path(cfg.run_dir).name}"
        try:
            venv = targets = controller_targets(venv, cfg.distill, cfg.llm, run_name)
        except ConfigError:
            venv.close()
            raise
    return venv, targets


def _resume(cfg: DictConfig, venv: VecEnv) -> tuple[checkpoint.Checkpoint, VecEnv, BaseAlgorithm]:
    """The newest intact checkpoint of run ``cfg.resume`` on ``venv``: (checkpoint, ``venv`` in its
    normalisation, learner with this config's ``agent.learning_rate``). Damaged ones are skipped and named."""
    damaged = []
    for found in checkpoint.candidates(cfg.resume):
        check_observation_space(str(found.model), venv)  # a mismatch is not damage: stop, do not skip
        try:
            env = VecNormalize.load(str(found.normalization), venv) if found.normalization is not None else venv
            model = load_agent(cfg.agent.name, str(found.model), env, cfg.train.device)
            if found.replay_buffer is not None and isinstance(model, OffPolicyAlgorithm):
                model.load_replay_buffer(found.replay_buffer)
        except Exception as err:  # a truncated zip or pickle reports damage as many exception types
            damaged.append(f"{found.path.name} ({type(err).__name__}: {err})")
            continue
        bad = checkpoint.non_finite(model, env)
        if bad is not None:
            damaged.append(f"{found.path.name} ({bad} is not finite)")
            continue
        model.learning_rate = cfg.agent.learning_rate  # a resume may change it
        model._setup_lr_schedule()
        skipped = f"; skipped damaged checkpoint(s): {'; '.join(damaged)}" if damaged else ""
        print(f"resuming from {found.path} (step {model.num_timesteps}){skipped}", file=sys.stderr)
        return found, env, model
    raise ConfigError(f"resume={cfg.resume}: no intact checkpoint under {Path(cfg.resume) / 'checkpoints'}"
                      + (f": {'; '.join(damaged)}" if damaged else ""))


def _final_save(run_dir: Path, model: BaseAlgorithm, venv: VecEnv, keep: int,
                clock: dict[str, float]) -> checkpoint.Checkpoint | None:
    """Save where training stopped unless a parameter or statistic is not finite; then keep the last good one."""
    try:
        return checkpoint.save(run_dir, model, venv, keep=keep, **clock)
    except checkpoint.NonFinite as err:
        kept = checkpoint.latest(run_dir)
        print(f"warning: no checkpoint saved: {err}; the last good one is kept: {kept.path if kept else 'none'}",
              file=sys.stderr)
        return kept


def _teacher_report(cfg: DictConfig, targets: ControllerTargets | None) -> tuple[dict[str, Any], str | None]:
    """What the controller teacher did over the run (summary keys ``teacher_*``) and, when it gave
    targets for fewer than ``distill.min_coverage`` of the samples, why (else None)."""
    if targets is None:  # no teacher, or one (EMA, checkpoint) that gives a target for every sample
        return {}, None
    did = {"teacher_coverage": round(targets.run_coverage(), 4)}
    if targets.retired:
        did["teacher_retired_at_step"] = targets.retired_at_step
    stats = targets.service.stats() if targets.service is not None else None
    if stats is not None:
        errors = int(stats["errors"] + stats["timeouts"])
        did.update(teacher_hint_queries=int(stats["queries"]), teacher_hints_accepted=int(stats["accepted"]),
                   teacher_hints_rejected=int(stats["rejected"]), teacher_malformed_answers=int(stats["parse_errors"]),
                   teacher_errors=errors)
        if "verified" in stats:  # distill.verify_hints: what the checks cost and let through
            did.update(teacher_hints_verified=int(stats["verified"]), teacher_hints_adopted=int(stats["adopted"]),
                       teacher_verify_cpu_s_per_hint=round(stats["verify_cpu_s_per_hint"], 4),
                       teacher_verify_cpu_share=round(stats["verify_cpu_share"], 4))
        timeouts = targets.service.timeout_warning()
        if timeouts is not None:
            did["teacher_hint_warning"] = timeouts
    minimum = cfg.distill.min_coverage
    if did["teacher_coverage"] >= minimum:
        return did, None
    why = f"the teacher gave targets for {did['teacher_coverage']:.0%} of the samples (distill.min_coverage={minimum})"
    if stats is None:
        return did, why
    if not stats["queries"]:
        cause = f"no hint was asked for: no segment ended (lower distill.segment_steps={cfg.distill.segment_steps} or train longer)"
    elif not stats["accepted"]:
        cause = (f"none of {int(stats['queries'])} hint queries was accepted ({int(stats['rejected'])} rejected, "
                 f"{int(stats['parse_errors'])} malformed or refused answers, {errors} failed calls); "
                 "python -m distill.llm.check diagnoses the channel")
    else:
        cause = (f"{int(stats['accepted'])} of {int(stats['queries'])} hint queries were accepted and each teaches "
                 f"for distill.hint_max_age={cfg.distill.hint_max_age} segments")
    return did, f"{why}: {cause}"


def _eval_envs(cfg: DictConfig, train_venv: VecEnv) -> VecEnv | None:
    if cfg.train.eval_freq == 0:
        return None
    kwargs, wrapper = env_kwargs(cfg, evaluation=True), None
    if cfg.train.video:  # renderable eval envs; they render only the episodes being recorded
        t = cfg.train
        kwargs, wrapper = recordable(kwargs, t.video_width, t.video_height, shadows=t.video_shadows)
    eval_venv = make_vec_env(cfg.env.id, kwargs, cfg.train.eval_envs, wrapper=wrapper)
    eval_venv.seed(cfg.seed + EVAL_SEED_OFFSET)  # evaluations are reproducible and differ from training episodes
    return eval_normalization(eval_venv, train_venv)


def train(cfg: DictConfig) -> dict[str, Any]:
    """Train as configured, write checkpoints/logs/curve/summary into ``cfg.run_dir``; return the summary.

    Raises :class:`ConfigError` when ``cfg.run_dir`` holds another run (unless resuming it) or another
    process trains there, :class:`TrainingInterrupted` after saving a checkpoint on Ctrl-C or SIGTERM
    and :class:`TrainingFailed` on a non-finite loss or (``distill.require_coverage``) too little coverage.
    """
    same_dir = bool(cfg.resume) and Path(cfg.resume).resolve() == Path(cfg.run_dir).resolve()
    with run_dirs.claimed(cfg.run_dir, resume=same_dir):
        return _train(cfg, Path(cfg.run_dir), same_dir)


def _train(cfg: DictConfig, run_dir: Path, same_dir: bool) -> dict[str, Any]:
    torch.set_num_threads(cfg.train.torch_threads)
    checkpoint.code_commit()  # the commit this process runs, before anything can be committed while it trains
    venv, targets = _train_envs(cfg)
    resume = None
    if cfg.resume:
        resume, venv, model = _resume(cfg, venv)
        if same_dir:  # rows logged after that checkpoint are trained again: drop them
            run_dirs.truncate_logs(run_dir, model.num_timesteps)
    else:
        normalize_reward = cfg.env.normalize_reward and cfg.agent.name == "ppo"
        venv = wrap_normalization(venv, cfg.env.normalize_obs, normalize_reward, cfg.agent.gamma)
    OmegaConf.save(cfg, run_dir / saved_config.CONFIG, resolve=True)
    eval_venv = _eval_envs(cfg, venv)
    if resume is None:
        model = build_agent(cfg, venv, tensorboard_dir=None)
    model.set_logger(run_dirs.logger(run_dir, cfg.train.tensorboard))
    add_trackers(model.logger, cfg)

    start_step = model.num_timesteps
    trained_before_s = float(resume.meta.get(checkpoint.WALL_KEY, 0.0)) if resume is not None else 0.0
    remaining = max(cfg.train.total_timesteps - start_step, 0)
    progress = ProgressBar(cfg.train.total_timesteps) if cfg.train.progress_bar else None
    evaluator = EvalAndCheckpoint(
        run_dir,
        eval_venv,
        eval_freq=cfg.train.eval_freq,
        eval_episodes=cfg.train.eval_episodes,
        checkpoint_freq=cfg.train.checkpoint_freq,
        keep_checkpoints=cfg.train.keep_checkpoints,
        progress=progress,
        video_episodes=cfg.train.video_episodes if cfg.train.video else 0,
        start_time=time.time() - trained_before_s,
    )
    hint_logger = HintStatsLogger(targets) if targets is not None else None
    callbacks = [cb for cb in (progress, InfoTermLogger(), hint_logger, evaluator) if cb is not None]
    distillation = build_distillation(cfg, model, ema_condition=evaluator.not_worse)
    if distillation is not None:
        model.attach_distillation(distillation)
        if resume is not None and resume.teacher is not None:
            distillation.teacher.load_state_dict(torch.load(resume.teacher, weights_only=True))
        if targets is not None:
            callbacks.append(RetireTeacher(targets, distillation.finished))

    t0 = time.time()
    interrupted = False
    try:
        with _sigterm_as_keyboard_interrupt():
            model.learn(
                total_timesteps=remaining,
                callback=callbacks,
                log_interval=cfg.train.log_interval,
                reset_num_timesteps=resume is None,
            )
    except KeyboardInterrupt:
        interrupted = True
    except (NonFiniteLoss, checkpoint.NonFinite) as err:
        raise TrainingFailed(
            f"training stopped at step {model.num_timesteps}: {err}. Lower agent.learning_rate or distill.alpha "
            f"and continue from the last good checkpoint: python train.py resume={run_dir} agent.learning_rate=..."
        ) from None
    finally:
        saved = _final_save(run_dir, model, venv, cfg.train.keep_checkpoints, evaluator.clock())
    wall = time.time() - t0
    if interrupted:  # no venv.close(): on Ctrl-C, subprocess workers got the signal too and are gone
        raise TrainingInterrupted(run_dir, int(model.num_timesteps))

    fresh = evaluator.last_eval_step != model.num_timesteps
    final = evaluator.run_evaluation()
    if fresh and final is not None:  # logged after SB3's last dump: write it (and its clip) out now
        model.logger.record("time/total_timesteps", model.num_timesteps)
        model.logger.dump(model.num_timesteps)
    trained = model.num_timesteps - start_step
    summary: dict[str, Any] = {
        "env": cfg.env.id,
        "agent": cfg.agent.name,
        "distill": cfg.distill.name,
        "seed": cfg.seed,
        "steps": int(model.num_timesteps),
        "wall_time_s": round(wall, 1),
        "fps": round(trained / wall, 1) if wall > 0 else None,
        "checkpoint": str(saved.path) if saved is not None else None,
    }
    teacher, coverage_problem = _teacher_report(cfg, targets)
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
    report.write_summary(run_dir, summary)
    report.plot_learning_curve(run_dir, final.declared if final is not None else (), f"{cfg.agent.name.upper()} on {cfg.env.id}")
    model.logger.close()  # event files, and a W&B run is finished
    venv.close()
    if eval_venv is not None:
        eval_venv.close()
    if coverage_problem is not None and cfg.distill.require_coverage:
        raise TrainingFailed(f"{coverage_problem} (distill.require_coverage=true; summary.json is written)")
    return summary
