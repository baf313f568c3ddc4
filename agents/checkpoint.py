"""Atomic checkpoints of a run: learner, normalisation statistics and (off-policy) replay buffer.

Layout inside a run directory::

    checkpoints/step_000200000/   model.zip, vecnormalize.pkl, replay_buffer.pkl, teacher.pt, meta.json
    checkpoints/best/             same files, the best evaluation so far
    checkpoints/latest            text file naming the newest complete step_* directory

A checkpoint is written into a hidden temporary directory and renamed into place, and ``latest`` is
replaced atomically afterwards, so a run killed at any instant leaves the previous checkpoint intact.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.off_policy_algorithm import OffPolicyAlgorithm
from stable_baselines3.common.vec_env import VecEnv, VecNormalize

MODEL = "model.zip"
NORMALIZATION = "vecnormalize.pkl"
REPLAY = "replay_buffer.pkl"
TEACHER = "teacher.pt"
META = "meta.json"
COMMIT_KEY = "git_commit"  # meta.json: the commit of the code that trained the checkpoint ("unknown" outside git)


@functools.cache
def code_commit() -> str:
    """``git rev-parse HEAD`` of the repository this code runs from, or ``unknown``."""
    try:
        done = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=Path(__file__).resolve().parent, capture_output=True, text=True, timeout=10
        )
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return done.stdout.strip() if done.returncode == 0 else "unknown"


@dataclass(frozen=True)
class Checkpoint:
    """A complete checkpoint directory."""

    path: Path
    meta: dict[str, Any]

    @property
    def model(self) -> Path:
        return self.path / MODEL

    @property
    def normalization(self) -> Path | None:
        p = self.path / NORMALIZATION
        return p if p.is_file() else None

    @property
    def replay_buffer(self) -> Path | None:
        p = self.path / REPLAY
        return p if p.is_file() else None

    @property
    def teacher(self) -> Path | None:
        p = self.path / TEACHER
        return p if p.is_file() else None


def _write_text_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def _write_dir(target: Path, model: BaseAlgorithm, venv: VecEnv, meta: dict[str, Any], replay: bool) -> None:
    """Write a checkpoint into ``target`` via a temporary sibling directory and a rename."""
    tmp = target.with_name(f".tmp-{target.name}-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    model.save(tmp / MODEL)
    if isinstance(venv, VecNormalize):
        venv.save(str(tmp / NORMALIZATION))
    if replay and isinstance(model, OffPolicyAlgorithm):
        model.save_replay_buffer(tmp / REPLAY)
    teacher = getattr(getattr(model, "distillation", None), "teacher", None)
    if hasattr(teacher, "state_dict"):  # a teacher that learns (EMA) must survive a resume
        torch.save(teacher.state_dict(), tmp / TEACHER)
    (tmp / META).write_text(json.dumps(meta, indent=2))
    if target.exists():  # only "best" is overwritten: move the old one aside, then swap
        old = target.with_name(f".old-{target.name}-{os.getpid()}")
        os.replace(target, old)
        os.replace(tmp, target)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(tmp, target)


def save(run_dir: str | Path, model: BaseAlgorithm, venv: VecEnv, keep: int = 2, **meta: Any) -> Checkpoint:
    """Save a numbered checkpoint at ``model.num_timesteps``, point ``latest`` at it, prune old ones."""
    root = Path(run_dir) / "checkpoints"
    root.mkdir(parents=True, exist_ok=True)
    meta = {"num_timesteps": int(model.num_timesteps), "saved_at": time.time(), COMMIT_KEY: code_commit(), **meta}
    target = root / f"step_{model.num_timesteps:012d}"
    _write_dir(target, model, venv, meta, replay=True)
    _write_text_atomic(root / "latest", target.name)
    for old in sorted(root.glob("step_*"))[:-keep]:
        shutil.rmtree(old, ignore_errors=True)
    return Checkpoint(target, meta)


def save_best(run_dir: str | Path, model: BaseAlgorithm, venv: VecEnv, **meta: Any) -> Checkpoint:
    """Overwrite ``checkpoints/best`` (no replay buffer: it is for evaluation and deployment)."""
    root = Path(run_dir) / "checkpoints"
    root.mkdir(parents=True, exist_ok=True)
    meta = {"num_timesteps": int(model.num_timesteps), "saved_at": time.time(), COMMIT_KEY: code_commit(), **meta}
    target = root / "best"
    _write_dir(target, model, venv, meta, replay=False)
    return Checkpoint(target, meta)


def _read(path: Path) -> Checkpoint | None:
    if not (path / MODEL).is_file() or not (path / META).is_file():
        return None
    return Checkpoint(path, json.loads((path / META).read_text()))


def latest(run_dir: str | Path) -> Checkpoint | None:
    """The newest complete checkpoint of a run, or ``None``."""
    root = Path(run_dir) / "checkpoints"
    pointer = root / "latest"
    if pointer.is_file():
        found = _read(root / pointer.read_text().strip())
        if found is not None:
            return found
    for path in sorted(root.glob("step_*"), reverse=True):  # pointer lost: fall back to the newest dir
        found = _read(path)
        if found is not None:
            return found
    return None


def best(run_dir: str | Path) -> Checkpoint | None:
    """The best-evaluated checkpoint of a run, or ``None``."""
    return _read(Path(run_dir) / "checkpoints" / "best")
