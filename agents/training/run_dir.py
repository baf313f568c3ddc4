"""A run directory belongs to one run: who may write into it, what a resume may change, logs that append.

* :func:`check_new` refuses to start a new run in a directory that already holds another run's data
  (checkpoints or logs) or that another process trains in; :func:`claimed` also holds ``<run>/.lock``
  while training so that a second process cannot write into the same directory. Both checks run before
  Hydra writes ``.hydra/`` into the directory (``train.py`` calls them first).
* :func:`resumed_config` is the saved config of the run being resumed with this command's overrides:
  an override of a setting in :data:`RESUMABLE` is applied, any other one that changes a value is
  refused with a message naming it; a finished run (its checkpoint at ``train.total_timesteps``, its
  ``summary.json`` written) is refused unless the command raises ``train.total_timesteps``; one killed in its
  final evaluation (no ``summary.json``) runs that evaluation (:func:`final_evaluation_pending`).
* :func:`logger` appends to ``progress.csv`` (SB3's CSV writer truncates it) and :func:`truncate_logs`
  drops the rows logged after the checkpoint a run resumes from (write, then rename), so the curve
  covers the whole run once.
"""

from __future__ import annotations

import csv
import errno
import fcntl
import fnmatch
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from hydra.core.override_parser.overrides_parser import OverridesParser
from omegaconf import DictConfig, OmegaConf, open_dict
from stable_baselines3.common.logger import CSVOutputFormat, Logger, make_output_format

from agents import saved_config
from agents.errors import ConfigError
from agents.teachers.stages import teaching_stages

LOCK = ".lock"
SUMMARY = "summary.json"
PROGRESS = "progress.csv"
EVAL = "eval.csv"
RUN_FILES = (PROGRESS, EVAL, "checkpoints/latest", "checkpoints/best")

# Settings that may change when a run is resumed (docs/reliability.md).
RESUMABLE = (
    "train.*",
    "agent.learning_rate",
    "distill.alpha",
    "distill.final_alpha",
    "distill.schedule",
    "distill.decay_rate",
    "distill.min_coverage",
    "distill.require_coverage",
    "llm",
    "llm.*",
)
NOT_RESUMABLE = {"train.num_envs": "the rollout and replay buffers are sized by it"}


def holds_run(run_dir: str | Path) -> bool:
    """True when ``run_dir`` holds a run's logs or checkpoints."""
    root = Path(run_dir)
    return any((root / name).exists() for name in RUN_FILES) or any(root.glob("checkpoints/step_*"))


def check_new(run_dir: str | Path) -> None:
    """Raise :class:`ConfigError` when a new run would write into another run's directory."""
    check_not_in_use(run_dir)
    if holds_run(run_dir):
        raise ConfigError(
            f"{run_dir} already holds another run (checkpoints or logs); a new run there would mix with it. "
            f"Pick another directory (hydra.run.dir=<new dir>) or continue that run with resume={run_dir}"
        )


def check_not_in_use(run_dir: str | Path) -> None:
    """Raise :class:`ConfigError` when another process trains in ``run_dir`` (holds its lock); writes nothing."""
    path = Path(run_dir) / LOCK
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:  # no lock file: nobody trains there
        return
    try:
        _lock(fd, Path(run_dir))
    finally:
        os.close(fd)  # releases the probe's lock at once


def _lock(fd: int, root: Path) -> None:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as err:
        if err.errno not in (errno.EAGAIN, errno.EACCES):
            raise
        holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
        raise ConfigError(
            f"{root} is in use by another training process (pid {holder}); wait for it to finish, stop it, "
            "or pick another directory (hydra.run.dir=<new dir>)"
        ) from None


@contextmanager
def claimed(run_dir: str | Path, resume: bool) -> Iterator[Path]:
    """Create ``run_dir`` (refusing another run's directory unless resuming) and hold its lock file."""
    root = Path(run_dir)
    if not resume:
        check_new(root)
    root.mkdir(parents=True, exist_ok=True)
    fd = os.open(root / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        _lock(fd, root)
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        yield root
    finally:
        os.close(fd)  # releases the lock


def resumed_config(cfg: DictConfig, overrides: Sequence[str]) -> DictConfig:
    """The saved config of run ``cfg.resume`` with the values ``overrides`` set in ``cfg`` applied.

    An override that leaves a setting as saved is fine; one that changes a setting outside
    :data:`RESUMABLE`, or a ``distill`` setting no teaching stage reads (every stage of a sequence sets its own
    ``alpha``), raises :class:`ConfigError` naming it, and so does resuming a finished run
    (:func:`check_unfinished`) or one that another process trains.
    """
    check_not_in_use(cfg.resume)
    merged = saved_config.load(cfg.resume, "resume")
    saved_stages = teaching_stages(merged.distill)
    for override in OverridesParser.create().parse_overrides(list(overrides)):
        key = override.key_or_group
        if key in ("resume", "run_dir") or key.split(".")[0] == "hydra":
            continue
        value = OmegaConf.select(cfg, key)
        if value == OmegaConf.select(merged, key):
            continue
        if key in NOT_RESUMABLE or not any(fnmatch.fnmatchcase(key, pattern) for pattern in RESUMABLE):
            saved = OmegaConf.select(merged, key)
            made = f"{key}={saved}" if not isinstance(saved, DictConfig) else f"another {key}"
            why = NOT_RESUMABLE.get(key, f"the run was made with {made}")
            allowed = ", ".join(RESUMABLE) + f" (not {', '.join(NOT_RESUMABLE)})"
            raise ConfigError(
                f"{override.input_line}: cannot change when resuming ({why}); settings a resume may change: "
                f"{allowed}. Drop the override, or start a new run"
            )
        with open_dict(merged):
            OmegaConf.update(merged, key, value, merge=False)
        section, _, setting = key.partition(".")
        stages = teaching_stages(merged.distill) if section == "distill" else []
        if stages and all(old.distill.get(setting) == new.distill.get(setting) for old, new in zip(saved_stages, stages)):
            raise ConfigError(f"{override.input_line}: cannot change when resuming: every stage of distill="
                              f"{merged.distill.name} sets its own {setting}, so no teacher would read it (and a "
                              "stage's settings are the run's); drop the override, or start a new run")
    with open_dict(merged):
        merged.resume = cfg.resume
    check_unfinished(cfg.resume, merged.train.total_timesteps)
    return merged


def _newest_step(run: str | Path) -> int:
    """The step of run ``run``'s newest checkpoint (0 without one)."""
    from agents import checkpoint  # torch and SB3: only when a resume is checked

    newest = checkpoint.latest(run)
    return int(newest.meta.get("num_timesteps", 0)) if newest is not None else 0


def final_evaluation_pending(run: str | Path, total_timesteps: int) -> int | None:
    """The step of run ``run``'s newest checkpoint when it is at ``total_timesteps`` or beyond but the run has no
    ``summary.json`` (a kill during the final evaluation): a resume then runs that evaluation. Else None."""
    step = _newest_step(run)
    return step if step >= total_timesteps and not (Path(run) / SUMMARY).is_file() else None


def check_unfinished(run: str | Path, total_timesteps: int) -> None:
    """Raise :class:`ConfigError` when run ``run``'s newest checkpoint is at ``total_timesteps`` or beyond and its
    ``summary.json`` is written: a resume would train nothing and rewrite its results."""
    step = _newest_step(run)
    if step >= total_timesteps and (Path(run) / SUMMARY).is_file():
        raise ConfigError(
            f"resume={run}: the run is finished (its checkpoint is at step {step}, train.total_timesteps="
            f"{total_timesteps}); nothing was changed. To train it further raise the budget, e.g. "
            f"train.total_timesteps={2 * total_timesteps}; to evaluate it: python evaluate.py run={run}"
        )


class _AppendingCSV(CSVOutputFormat):
    """SB3's CSV writer, continuing an existing file (its header and rows) instead of truncating it."""

    def __init__(self, filename: str) -> None:
        if not os.path.isfile(filename):
            super().__init__(filename)
            return
        self.file = open(filename, "r+")
        header = self.file.readline().strip()
        self.keys = header.split(",") if header else []
        self.separator, self.quotechar = ",", '"'
        self.file.seek(0, os.SEEK_END)


def logger(run_dir: str | Path, tensorboard: bool) -> Logger:
    """SB3 logger writing ``progress.csv`` (appending) and, optionally, TensorBoard events into ``run_dir``."""
    formats = [_AppendingCSV(str(Path(run_dir) / PROGRESS))]
    if tensorboard:
        formats.append(make_output_format("tensorboard", str(run_dir)))
    return Logger(folder=str(run_dir), output_formats=formats)


def truncate_logs(run_dir: str | Path, step: int) -> None:
    """Drop the ``progress.csv`` / ``eval.csv`` rows logged after ``step`` (a resume restarts from there)."""
    for name, column in ((PROGRESS, "time/total_timesteps"), (EVAL, "step")):
        path = Path(run_dir) / name
        if not path.is_file():
            continue
        with path.open(newline="") as f:
            rows = list(csv.reader(f))
        if not rows or column not in rows[0]:
            continue
        i = rows[0].index(column)
        kept = [rows[0]] + [r for r in rows[1:] if not (len(r) > i and r[i] and float(r[i]) > step)]
        if len(kept) < len(rows):  # a kill mid-write leaves the old file whole
            tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
            with tmp.open("w", newline="") as f:
                csv.writer(f, lineterminator="\n").writerows(kept)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
