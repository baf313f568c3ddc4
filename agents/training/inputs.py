"""The files a run reads or writes outside its run directory, pinned when it starts, so that a resume from
any working directory uses what the run used.

:func:`pin` (``train.py``, a new run): a relative path of :data:`PATHS` becomes absolute (``config.yaml``
records it so) and a controller parameter file's SHA-256 is recorded as ``distill.controller_params_sha256``.
:func:`check_pinned` (every check of the config, a resume's before anything is written): that file still
exists and holds the same bytes; a resume is refused otherwise (restore the file, or start a new run).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from omegaconf import DictConfig, open_dict

from agents.teachers.stages import controller_stage
from agents.errors import ConfigError

# distill keys that hold a path (null or empty: unused); controller_params also names a parameter set (tuned, untuned)
PATHS = ("controller_params", "teacher", "hint_replay", "records_dir")
DIGEST = "controller_params_sha256"


def _params_file(distill: DictConfig) -> str | None:
    """The controller parameter file the teacher starts from, or None (no controller teacher, or a named set)."""
    from agents.teachers.controller import CONTROLLER_PARAMS

    if controller_stage(distill) is None or distill.controller_params in CONTROLLER_PARAMS:
        return None
    return distill.controller_params


def digest(path: str | Path) -> str:
    """The first 16 hex digits (64 bits) of the SHA-256 of the file at ``path``: enough to tell a changed file, and
    short of the 32 characters from which the secret check of the saved config takes a random-looking word for a key."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]


def pin(cfg: DictConfig) -> None:
    """Make ``cfg.distill``'s relative paths absolute (against the working directory) and record the controller
    parameter file's SHA-256; the config must have passed :func:`agents.training.checks.validate`."""
    d = cfg.distill
    with open_dict(d):
        for key in PATHS:
            if d.get(key) and (key != "controller_params" or _params_file(d)):
                d[key] = str(Path(d[key]).absolute())
        for stage in d.get("stages") or []:  # distill=sequence: a checkpoint stage's teacher run
            if stage.get("teacher"):
                stage.teacher = str(Path(stage.teacher).absolute())
        file = _params_file(d)
        d[DIGEST] = digest(file) if file else None


def check_pinned(cfg: DictConfig) -> None:
    """:class:`ConfigError` when the controller parameter file recorded with the run is gone or changed."""
    d = cfg.distill
    recorded, file = d.get(DIGEST), _params_file(d)
    if recorded is None or file is None:
        return
    where = f"distill.controller_params={file}"
    if not Path(file).is_file():
        raise ConfigError(f"{where}: the parameter file the run started from no longer exists; restore it (SHA-256 "
                          f"{recorded}...) to resume the run, or start a new run")
    now = digest(file)
    if now != recorded:
        raise ConfigError(f"{where}: the file changed since the run started (SHA-256 {now}..., the run's "
                          f"{recorded}...); restore the run's version to resume it, or start a new run with "
                          "the new file")
