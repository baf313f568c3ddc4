"""One training run, start to finish: envs, learner, callbacks, interruption handling, artefacts.

``train.py`` composes the config and calls :func:`train`; everything here is usable from Python too::

    from omegaconf import OmegaConf
    from agents.training.runner import train
    summary = train(cfg)   # cfg: the composed TrainConfig with cfg.run_dir set
"""

from __future__ import annotations

import signal
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch
from omegaconf import DictConfig, OmegaConf
from stable_baselines3.common.logger import configure
from stable_baselines3.common.off_policy_algorithm import OffPolicyAlgorithm
from stable_baselines3.common.vec_env import VecEnv, VecNormalize

from agents import checkpoint
from agents.training import report
from agents.training.callbacks import EvalAndCheckpoint, InfoTermLogger, ProgressBar
from agents.errors import ConfigError
from agents.distillation import build_distillation
from agents.factory import build_agent, load_agent
from agents.controller_teacher import ControllerTargets, HintStatsLogger, controller_targets
from agents.vec_env import env_kwargs, eval_normalization, make_vec_env, wrap_normalization
from agents.evaluation.video import recordable

EXIT_INTERRUPTED = 130
EVAL_SEED_OFFSET = 1_000_003


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


def _train_envs(cfg: DictConfig, resume: checkpoint.Checkpoint | None) -> tuple[VecEnv, ControllerTargets | None]:
    """The training envs, and the controller-teacher wrapper inside them (``distill=scripted|llm_hint``)."""
    venv = make_vec_env(cfg.env.id, env_kwargs(cfg), cfg.train.num_envs, cfg.train.vec_mode)
    targets = None
    if cfg.distill.name in ("scripted", "llm_hint"):
        run_name = f"{cfg.env.name}-{cfg.agent.name}-{Path(cfg.run_dir).name}"
        try:
            venv = targets = controller_targets(venv, cfg.distill, cfg.llm, run_name)
        except ConfigError:
            venv.close()
            raise
    if resume is not None and resume.normalization is not None:
        return VecNormalize.load(str(resume.normalization), venv), targets
    normalize_reward = cfg.env.normalize_reward and cfg.agent.name == "ppo"
    return wrap_normalization(venv, cfg.env.normalize_obs, normalize_reward, cfg.agent.gamma), targets


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

    Raises :class:`TrainingInterrupted` after saving a checkpoint on Ctrl-C or SIGTERM.
    """
    run_dir = Path(cfg.run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(cfg.train.torch_threads)
    resume = None
    if cfg.resume:
        resume = checkpoint.latest(cfg.resume)
        if resume is None:
            raise ConfigError(f"resume={cfg.resume}: no checkpoint found under {Path(cfg.resume) / 'checkpoints'}")
    OmegaConf.save(cfg, run_dir / "config.yaml", resolve=True)

    venv, targets = _train_envs(cfg, resume)
    eval_venv = _eval_envs(cfg, venv)
    if resume is None:
        model = build_agent(cfg, venv, tensorboard_dir=None)
    else:
        model = load_agent(cfg.agent.name, str(resume.model), venv, cfg.train.device)
        if resume.replay_buffer is not None and isinstance(model, OffPolicyAlgorithm):
            model.load_replay_buffer(resume.replay_buffer)
    formats = ["csv", "tensorboard"] if cfg.train.tensorboard else ["csv"]
    model.set_logger(configure(str(run_dir), formats))

    start_step = model.num_timesteps
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
    )
    hint_logger = HintStatsLogger(targets) if targets is not None else None
    callbacks = [cb for cb in (progress, InfoTermLogger(), hint_logger, evaluator) if cb is not None]
    distillation = build_distillation(cfg, model, ema_condition=evaluator.not_worse)
    if distillation is not None:
        model.attach_distillation(distillation)
        if resume is not None and resume.teacher is not None:
            distillation.teacher.load_state_dict(torch.load(resume.teacher, weights_only=True))

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
    finally:
        saved = checkpoint.save(run_dir, model, venv, keep=cfg.train.keep_checkpoints)
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
        "checkpoint": str(saved.path),
    }
    if final is not None:
        summary.update(
            final_eval_return=final.mean_return,
            final_eval_return_std=final.std_return,
            final_eval_episodes=final.episodes,
            best_eval_return=float(evaluator.best_return),
        )
        for key in ("success_rate", "tracking_error", "fall_rate"):
            if getattr(final, key) is not None:
                summary[f"final_{key}"] = getattr(final, key)
    report.write_summary(run_dir, summary)
    report.plot_learning_curve(run_dir, title=f"{cfg.agent.name.upper()} on {cfg.env.id}")
    venv.close()
    if eval_venv is not None:
        eval_venv.close()
    return summary
