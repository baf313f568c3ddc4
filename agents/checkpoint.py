"""Atomic checkpoints of a run: learner, normalisation statistics and (off-policy) replay buffer.

Layout inside a run directory::

    checkpoints/step_000200000/   model.zip, vecnormalize.pkl, replay_buffer.pkl, teacher.pt, meta.json
                                  (replay_buffer.pkl: the filled slots only, :mod:`agents.replay_file`)
    checkpoints/best/             same files, the best evaluation so far
    checkpoints/latest            text file naming the newest complete step_* directory

A loader tries a run's checkpoints in :func:`in_order` through :func:`first_intact`, which skips damaged ones
(:class:`Damaged`) and says which it skipped: ``resume=``, ``evaluate.py``, ``export.py`` and a checkpoint
teacher (``distill=checkpoint``) all do.

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
import zipfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

import numpy as np
import torch
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.off_policy_algorithm import OffPolicyAlgorithm
from stable_baselines3.common.vec_env import VecEnv, VecNormalize

from agents.replay_file import save_replay_buffer

MODEL = "model.zip"
NORMALIZATION = "vecnormalize.pkl"
REPLAY = "replay_buffer.pkl"
TEACHER = "teacher.pt"
CURRICULUM = "curriculum.json"  # an env with a curriculum (envs.declarations.Curriculum): each copy's curriculum_state()
CONTEXT_PARAMS = "context_params.json"  # an adaptive teacher's parameters per task context (its context_state())
META = "meta.json"
COMMIT_KEY = "git_commit"  # meta.json: the commit of the code that trained the checkpoint ("unknown" outside git)
WALL_KEY = "wall_time_s"  # meta.json (training saves): s of training wall clock up to the save, over all resumes
PENDING_LOG_KEY = "pending_log"  # meta.json (training saves): {key: [value, excluded formats]} logged for the next row
RETIRED_KEY = "teacher_retired_at_step"  # meta.json (training saves): the env step the controller teacher retired at


@functools.cache
def code_commit() -> str:
    """``git rev-parse HEAD`` of the repository this code runs from, or ``unknown``; read once per process
    (training reads it when it starts, so a commit made while it runs is not credited with its checkpoints)."""
    try:
        done = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=Path(__file__).resolve().parent, capture_output=True, text=True, timeout=10
        )
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return done.stdout.strip() if done.returncode == 0 else "unknown"


@dataclass(frozen=True)
class Checkpoint:
    """A complete checkpoint directory (``model_name``: its learner's zip, ``model.zip`` unless renamed)."""

    path: Path
    meta: dict[str, Any]
    model_name: str = MODEL

    @property
    def model(self) -> Path:
        return self.path / self.model_name

    @property
    def named(self) -> Path:
        """How messages and ``metrics.json`` name it: the directory, or the model zip when it is renamed."""
        return self.path if self.model_name == MODEL else self.model

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

    def restore_curriculum(self, venv: VecEnv) -> bool:
        """Put each env copy of ``venv`` back where this checkpoint's copies were in their curriculum (their next
        reset continues there); False when the checkpoint has no curriculum or ``venv`` another number of copies."""
        p = self.path / CURRICULUM
        if not p.is_file() or not venv.has_attr("set_curriculum_state"):
            return False
        states = json.loads(p.read_text())
        if len(states) != venv.num_envs:
            return False
        for i, state in enumerate(states):
            venv.env_method("set_curriculum_state", state, indices=[i])
        return True

    @property
    def context_params(self) -> Path | None:
        """The adaptive teacher's table of parameters per task context (``distill=adaptive``), if it has one."""
        p = self.path / CONTEXT_PARAMS
        return p if p.is_file() else None


def _write_text_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def _write_dir(destination: Path, model: BaseAlgorithm, venv: VecEnv, meta: dict[str, Any], replay: bool) -> None:
    """Write a checkpoint into ``destination`` via a temporary sibling directory and a rename."""
    tmp = destination.with_name(f".tmp-{destination.name}-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    model.save(tmp / MODEL)
    if isinstance(venv, VecNormalize):
        venv.save(str(tmp / NORMALIZATION))
    if replay and isinstance(model, OffPolicyAlgorithm):
        save_replay_buffer(model.replay_buffer, tmp / REPLAY)
    if venv.has_attr("curriculum_state"):  # each env copy's level must survive a resume
        (tmp / CURRICULUM).write_text(json.dumps(venv.env_method("curriculum_state")))
    context_state = getattr(venv, "context_state", None)  # the adaptive teacher wraps the raw envs
    if context_state is not None:
        (tmp / CONTEXT_PARAMS).write_text(json.dumps(context_state(), indent=1))
    teacher = getattr(getattr(model, "distillation", None), "teacher", None)
    if teacher is not None:  # the teachers' sequence: the stages begun, an EMA teacher's weights, for a resume
        torch.save(teacher.state_dict(), tmp / TEACHER)
    (tmp / META).write_text(json.dumps(meta, indent=2))
    if destination.exists():  # only "best" is overwritten: move the old one aside, then swap
        old = destination.with_name(f".old-{destination.name}-{os.getpid()}")
        os.replace(destination, old)
        os.replace(tmp, destination)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(tmp, destination)


class NonFinite(ValueError):
    """A parameter or normalisation statistic is NaN or infinite, so the learner is not saved."""


def non_finite(model: BaseAlgorithm, venv: VecEnv) -> str | None:
    """The first NaN or infinite learner parameter or normalisation statistic of ``venv``, named; or None."""
    tensors = dict(model.policy.state_dict())
    if getattr(model, "log_ent_coef", None) is not None:  # SAC's learned entropy coefficient
        tensors["log_ent_coef"] = model.log_ent_coef
    for name, tensor in tensors.items():
        if tensor.is_floating_point() and not bool(torch.isfinite(tensor).all()):
            return f"parameter {name}"
    if isinstance(venv, VecNormalize):
        stats = [("ret_rms", venv.ret_rms)]
        if venv.norm_obs:  # SB3 makes ``obs_rms`` only when it normalises observations
            obs = venv.obs_rms if isinstance(venv.obs_rms, dict) else {"": venv.obs_rms}
            stats += [(f"obs_rms{'.' + k if k else ''}", r) for k, r in obs.items()]
        for key, rms in stats:
            if not (np.isfinite(rms.mean).all() and np.isfinite(rms.var).all()):
                return f"normalisation statistic {key}"
    return None


def _require_finite(model: BaseAlgorithm, venv: VecEnv) -> None:
    bad = non_finite(model, venv)
    if bad is not None:
        raise NonFinite(f"{bad} is not finite at step {model.num_timesteps}")


def save(run_dir: str | Path, model: BaseAlgorithm, venv: VecEnv, keep: int = 2, step: int | None = None,
         **meta: Any) -> Checkpoint:
    """Save a numbered checkpoint at ``model.num_timesteps``, point ``latest`` at it, prune old ones.

    ``step`` (env steps, at most ``model.num_timesteps``): save the learner as of that step instead, its last whole
    update; the steps collected since are dropped (a resume collects them again). Raises :class:`NonFinite`
    (writing nothing) when a parameter or statistic is NaN or infinite.
    """
    _require_finite(model, venv)
    root = Path(run_dir) / "checkpoints"
    root.mkdir(parents=True, exist_ok=True)
    stopped_at = model.num_timesteps
    model.num_timesteps = stopped_at if step is None else step
    try:
        meta = {"num_timesteps": int(model.num_timesteps), "saved_at": time.time(), COMMIT_KEY: code_commit(), **meta}
        destination = root / f"step_{model.num_timesteps:012d}"
        _write_dir(destination, model, venv, meta, replay=True)
    finally:
        model.num_timesteps = stopped_at
    _write_text_atomic(root / "latest", destination.name)
    for old in sorted(root.glob("step_*"))[:-keep]:
        shutil.rmtree(old, ignore_errors=True)
    return Checkpoint(destination, meta)


def save_best(run_dir: str | Path, model: BaseAlgorithm, venv: VecEnv, **meta: Any) -> Checkpoint:
    """Overwrite ``checkpoints/best`` (no replay buffer: it is for evaluation and deployment); :class:`NonFinite` as :func:`save`."""
    _require_finite(model, venv)
    root = Path(run_dir) / "checkpoints"
    root.mkdir(parents=True, exist_ok=True)
    meta = {"num_timesteps": int(model.num_timesteps), "saved_at": time.time(), COMMIT_KEY: code_commit(), **meta}
    destination = root / "best"
    _write_dir(destination, model, venv, meta, replay=False)
    return Checkpoint(destination, meta)


def _read(path: Path) -> Checkpoint | None:
    if not (path / MODEL).is_file() or not (path / META).is_file():
        return None
    try:
        return Checkpoint(path, json.loads((path / META).read_text()))
    except (ValueError, OSError):  # a damaged meta.json: not a complete checkpoint
        return None


def candidates(run_dir: str | Path) -> list[Checkpoint]:
    """The complete numbered checkpoints of a run, newest first (the one ``latest`` names leads).

    A loader tries them in order and takes the first that loads (:func:`non_finite` included).
    """
    root = Path(run_dir) / "checkpoints"
    paths = sorted(root.glob("step_*"), reverse=True)
    pointer = root / "latest"
    named = root / pointer.read_text().strip() if pointer.is_file() else None
    if named in paths:
        paths.remove(named)
        paths.insert(0, named)
    return [found for found in map(_read, paths) if found is not None]


def latest(run_dir: str | Path) -> Checkpoint | None:
    """The newest complete checkpoint of a run, or ``None``."""
    found = candidates(run_dir)
    return found[0] if found else None


def best(run_dir: str | Path) -> Checkpoint | None:
    """The best-evaluated checkpoint of a run, or ``None``."""
    return _read(Path(run_dir) / "checkpoints" / "best")


def in_order(run_dir: str | Path, which: str = "latest") -> list[Checkpoint]:
    """The checkpoints a loader tries for ``which`` (``best`` | ``latest``): ``best`` first when asked for and
    complete, then :func:`candidates`, newest first."""
    first = best(run_dir) if which == "best" else None
    return ([first] if first is not None else []) + candidates(run_dir)


class Damaged(Exception):
    """A checkpoint file that cannot be loaded, or loads with non-finite values; the message names it and why."""


T = TypeVar("T")


def loaded(path: Path, load: Callable[[], T]) -> T:
    """``load()`` of the file ``path``; any failure (a truncated zip or pickle reports damage as many exception
    types) raised as :class:`Damaged` naming the file."""
    try:
        return load()
    except Exception as err:
        raise Damaged(f"{path} cannot be loaded ({type(err).__name__}: {err})") from None


def finite_or_damaged(found: Checkpoint, model: BaseAlgorithm, venv: VecEnv | VecNormalize) -> None:
    """:class:`Damaged` when a parameter of the learner loaded from ``found`` or a normalisation statistic of
    ``venv`` (a ``VecNormalize``, wrapping envs or unpickled alone) is not finite."""
    bad = non_finite(model, venv)
    if bad is not None:
        raise Damaged(f"{found.path}: {bad} is not finite")


@dataclass(frozen=True)
class Intact(Generic[T]):
    """What :func:`first_intact` loaded: the checkpoint, the loader's result, and why each tried before was damaged."""

    checkpoint: Checkpoint
    value: T
    skipped: list[str] = field(default_factory=list)

    def instead(self, doing: str) -> str | None:
        """``'<why each was damaged>; <doing> <path> instead'`` when damaged ones were skipped, else None."""
        return f"{'; '.join(self.skipped)}; {doing} {self.checkpoint.path} instead" if self.skipped else None


class NoneIntact(Damaged):
    """Every checkpoint tried was damaged (or there was none); ``damaged`` says why each was."""

    def __init__(self, damaged: list[str]) -> None:
        super().__init__("; ".join(damaged) or "no complete checkpoint (model.zip + meta.json)")
        self.damaged = damaged


def first_intact(tried: Iterable[Checkpoint], load: Callable[[Checkpoint], T]) -> Intact[T]:
    """``load`` of the first checkpoint of ``tried`` that it loads without :class:`Damaged`; :class:`NoneIntact`
    when none does. Other errors of ``load`` (a checkpoint of another env is not damage) stop the search."""
    damaged = []
    for found in tried:
        try:
            return Intact(found, load(found), damaged)
        except Damaged as err:
            damaged.append(str(err))
    raise NoneIntact(damaged)


def model_file(path: Path) -> str | None:
    """Why ``path`` is not a Stable-Baselines3 model zip (saved by ``model.save``, under any name), or None. A
    file that starts as a zip but cannot be read as one (truncated) is left for the load to call damaged."""
    if not zipfile.is_zipfile(path):
        with path.open("rb") as f:
            started = f.read(4) == b"PK\x03\x04"
        return None if started else "not a zip file"
    with zipfile.ZipFile(path) as z:
        return None if "data" in z.namelist() else "a zip file without the 'data' entry every saved model has"


def remove_partial(run_dir: str | Path) -> list[str]:
    """Clean up after a process killed while saving (call it holding the run's lock): remove the hidden
    temporary checkpoint directories (``.tmp-*``), and of a ``best`` swap cut between its two renames keep
    the complete old one. Returns the names removed."""
    root = Path(run_dir) / "checkpoints"
    removed = []
    for old in sorted(root.glob(".old-best-*")):
        if not (root / "best").exists() and _read(old) is not None:
            os.replace(old, root / "best")
        else:
            shutil.rmtree(old, ignore_errors=True)
            removed.append(old.name)
    for partial in sorted(root.glob(".tmp-*")):
        shutil.rmtree(partial, ignore_errors=True) if partial.is_dir() else partial.unlink(missing_ok=True)
        removed.append(partial.name)
    return removed


def set_aside_best_after(run_dir: str | Path, step: int) -> Path | None:
    """When ``best`` was saved after ``step`` (a resume from an earlier checkpoint discards that part of the
    run), rename it to ``best-discarded-step_<n>`` so that ``best`` never points past the resumed timeline;
    returns the new path, or None."""
    found = best(run_dir)
    if found is None or int(found.meta.get("num_timesteps", 0)) <= step:
        return None
    aside = found.path.with_name(f"best-discarded-step_{int(found.meta['num_timesteps']):012d}")
    shutil.rmtree(aside, ignore_errors=True)
    os.replace(found.path, aside)
    return aside
