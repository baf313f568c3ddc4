"""The checkpoint a command is pointed at (``run=``, ``checkpoint=``) and its loading, intact: ``evaluate.py``'s and
``export.py``'s one way to find a run's config, its checkpoint and the normalisation saved with it.

A damaged ``best``/``latest`` checkpoint falls back to the run's newest intact one (:func:`agents.checkpoint.first_intact`).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from omegaconf import DictConfig
from stable_baselines3.common.vec_env import VecEnv, VecNormalize

from agents import checkpoint, saved_config
from agents.errors import ConfigError
from agents.factory import check_observation_space, load_checkpoint


def run_config(run_dir: Path) -> DictConfig:
    """The resolved ``config.yaml`` of the run directory given as ``run=``; :class:`ConfigError` with the fix if it is not one."""
    return saved_config.load(run_dir, "run")


def find_checkpoint(cfg: DictConfig) -> checkpoint.Checkpoint:
    """The checkpoint named by ``cfg.checkpoint``: ``best``/``latest`` of ``cfg.run`` (the first
    :func:`agents.checkpoint.in_order` tries), a checkpoint directory, a model zip under any name, or with
    ``run=`` the name of one of that run's checkpoints (``step_000100000``)."""
    if cfg.checkpoint in ("best", "latest"):
        run_dir = Path(cfg.run)
        tried = checkpoint.in_order(run_dir, cfg.checkpoint)  # no evaluation yet: best falls back to the newest
        if not tried:
            raise ConfigError(
                f"run={run_dir}: no complete checkpoint under {run_dir / 'checkpoints'} (model.zip + meta.json); "
                "train longer (see train.checkpoint_freq) or pass checkpoint=<a checkpoint directory>"
            )
        return tried[0]
    path = Path(cfg.checkpoint)
    held = Path(cfg.run) / "checkpoints" if cfg.run else None
    if held is not None and not path.exists() and (held / path).exists():
        path = held / path
    fix = "pass a checkpoint directory or a model zip saved by train.py"
    if path.is_dir():
        directory, name = path, checkpoint.MODEL
        if not (path / name).is_file():
            raise ConfigError(f"checkpoint={path}: {path / name} not found; {fix}")
    elif path.is_file():
        problem = checkpoint.model_file(path)
        if problem is not None:
            raise ConfigError(f"checkpoint={path} is not a Stable-Baselines3 model zip ({problem}); {fix}, or a "
                              "policy.onnx written by export.py")
        directory, name = path.parent, path.name
    else:
        within = ""
        if held is not None:
            names = sorted(p.name for p in held.glob("*") if (p / checkpoint.MODEL).is_file())
            within = f", nor a checkpoint of run={cfg.run} (it holds: {', '.join(names) or 'none'})"
        raise ConfigError(f"checkpoint={path}: no such file or directory{within}; {fix}")
    meta_path = directory / checkpoint.META
    meta = json.loads(meta_path.read_text()) if meta_path.is_file() else {}
    return checkpoint.Checkpoint(directory, meta, name)


def checkpoint_run(cfg: DictConfig, ckpt: checkpoint.Checkpoint) -> Path:
    """The run directory of ``cfg`` (``run=``, else the one ``ckpt`` lies in: ``<run>/checkpoints/<name>/``)."""
    if cfg.run:
        return Path(cfg.run)
    run_dir = ckpt.path.parent.parent
    if not _in_run(ckpt):
        also = "" if ckpt.normalization is not None else (
            f", and if that run normalised observations (env.normalize_obs, the default) {_copy_normalization(ckpt)}")
        raise ConfigError(f"checkpoint={cfg.checkpoint} does not lie in a run directory's checkpoints/<name>/, so "
                          "the env and agent it was trained with are unknown: pass "
                          f"run=<the run directory that trained it> (its {saved_config.CONFIG} says them){also}")
    return run_dir


def _in_run(ckpt: checkpoint.Checkpoint) -> bool:
    """Whether ``ckpt`` lies in a run directory (``<run>/checkpoints/<name>/`` beside the run's config)."""
    return (ckpt.path.parent.parent / saved_config.CONFIG).is_file()


def _copy_normalization(ckpt: checkpoint.Checkpoint) -> str:
    """How to give ``ckpt`` (a model zip without its normalisation statistics beside it) the ones it was saved with."""
    return (f"copy {checkpoint.NORMALIZATION} of the checkpoint it was saved with (<run>/checkpoints/<name>/) beside "
            f"{ckpt.model}, or pass checkpoint=<that checkpoint directory>")


def _check_copied_normalization(saved: DictConfig, ckpt: checkpoint.Checkpoint) -> None:
    """:class:`ConfigError` when ``ckpt``, a model zip or checkpoint copied out of its run directory, lacks the
    normalisation statistics its run (``saved``: its config) trained with (in a run, a checkpoint without them is
    damaged: :func:`load_intact`)."""
    if not _in_run(ckpt) and ckpt.normalization is None and saved.env.get("normalize_obs", False):
        raise ConfigError(f"checkpoint={ckpt.named}: its run normalised observations, and there is no "
                          f"{checkpoint.NORMALIZATION} beside {ckpt.model}; {_copy_normalization(ckpt)}")


def load_policy(saved: DictConfig, ckpt: checkpoint.Checkpoint, venv: VecEnv, device: str) -> tuple[Any, VecEnv]:
    """The learner and ``venv`` wrapped in the checkpoint's frozen normalisation statistics;
    :class:`agents.checkpoint.Damaged` when a file cannot be loaded or holds non-finite values."""
    if ckpt.normalization is None and saved.env.get("normalize_obs", False):
        raise checkpoint.Damaged(f"{ckpt.path}: {checkpoint.NORMALIZATION} is missing (beside {ckpt.model_name}) but "
                                 "the run normalised observations")
    model, venv = load_checkpoint(ckpt, saved.agent.name, venv, device)
    if isinstance(venv, VecNormalize):
        venv.training, venv.norm_reward = False, False
    return model, venv


def load_intact(saved: DictConfig, which: str, ckpt: checkpoint.Checkpoint, venv: VecEnv,
                device: str) -> tuple[Any, VecEnv, checkpoint.Checkpoint]:
    """:func:`load_policy` of ``ckpt``; for ``which`` (the ``checkpoint=`` option) ``best|latest`` a damaged one
    falls back to the run's newest intact checkpoint, named on stderr. Returns (policy, wrapped venv, the
    checkpoint used). :class:`ConfigError` for a checkpoint copied out of its run without its normalisation
    statistics (what to copy beside it) or one whose observation space is not ``venv``'s."""
    _check_copied_normalization(saved, ckpt)  # a copy's missing file is not damage either
    check_observation_space(str(ckpt.model), venv)  # a mismatch is not damage: no fallback
    run_dir = ckpt.path.parent.parent
    tried = checkpoint.in_order(run_dir, which) if which in ("best", "latest") else [ckpt]
    try:
        found = checkpoint.first_intact(tried, lambda c: load_policy(saved, c, venv, device))
    except checkpoint.NoneIntact as err:
        advice = ("no intact checkpoint is left in the run; pass checkpoint=<a checkpoint directory> from a copy"
                  if which in ("best", "latest") else "try checkpoint=latest or another checkpoint directory")
        raise ConfigError(f"{err}; the checkpoint is damaged; {advice}") from None
    note = found.instead("evaluating")
    if note:
        print(f"warning: {note}", file=sys.stderr)
    return *found.value, found.checkpoint
