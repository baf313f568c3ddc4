"""The config a run directory made by ``train.py`` holds (``config.yaml``, resolved), and the one check that a path is one.

Used wherever a command is handed a run directory (``resume=``, ``run=``, ``distill.teacher=``); the
error names the option and its value. Its checkpoints are :mod:`agents.checkpoint`'s business.
"""

from __future__ import annotations

from pathlib import Path

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from agents.errors import ConfigError

CONFIG = "config.yaml"


def path(run_dir: str | Path, option: str) -> Path:
    """``<run_dir>/config.yaml``; :class:`ConfigError` naming ``option=run_dir`` when it is not a run directory."""
    run = Path(run_dir)
    if not run.is_dir():
        raise ConfigError(
            f"{option}={run_dir}: not found (no such directory); "
            "pass a run directory made by train.py (runs/<env>-<agent>/<date>)"
        )
    file = run / CONFIG
    if not file.is_file():
        raise ConfigError(f"{option}={run_dir}: not a run directory made by train.py ({file} not found)")
    return file


def load(run_dir: str | Path, option: str) -> DictConfig:
    """The resolved config the run was made with; :class:`ConfigError` as :func:`path`, or when it is damaged."""
    file = path(run_dir, option)
    try:
        saved = OmegaConf.load(file)
    except (OmegaConfBaseException, ValueError, OSError) as err:
        raise ConfigError(f"{file} cannot be read ({type(err).__name__}: {err}); the run directory is damaged") from None
    if OmegaConf.select(saved, "env.id") is None or OmegaConf.select(saved, "agent.name") is None:
        raise ConfigError(f"{file} lacks env.id or agent.name; it was not written by train.py")
    return saved
