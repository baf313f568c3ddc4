"""Command-line override handling shared by ``train.py`` and ``evaluate.py``.

Hydra reports a misspelt key as "Key 'x' is not in struct" without saying which keys exist.
:func:`check_overrides` composes the config once before the real run and turns every composition or
validation failure into one line that names the problem and lists what is valid.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from collections.abc import Callable, Sequence

from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.errors import HydraException
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from agents import saved_config
from agents.errors import ConfigError

_KEY_RE = re.compile(r"full_key: ([\w.]+)")


def resume_argv(argv: Sequence[str]) -> list[str]:
    """With ``resume=<run dir>``, write Hydra's outputs into that run directory instead of a new one."""
    argv = list(argv)
    resume = next((a.split("=", 1)[1] for a in argv if a.startswith("resume=")), None)
    if resume and not any(a.startswith("hydra.run.dir=") for a in argv):
        argv.append(f"hydra.run.dir={resume}")
    return argv


def _valid_keys_message(config_dir: str, config_name: str, argv: Sequence[str], full_key: str) -> str:
    """'valid keys of <parent>: a, b, c' for the config composed from the group choices alone."""
    groups = {p.name for p in Path(config_dir).iterdir() if p.is_dir()}
    choices = [a for a in argv if a.split("=", 1)[0] in groups]
    try:
        cfg = compose(config_name, overrides=choices)
    except (HydraException, OmegaConfBaseException):
        return ""
    parent = full_key.rsplit(".", 1)[0] if "." in full_key else ""
    node = OmegaConf.select(cfg, parent) if parent else cfg
    if not isinstance(node, DictConfig):
        return ""
    where = parent or "the top level"
    return f"; valid keys of {where}: {', '.join(sorted(str(k) for k in node.keys()))}"


def _ignored_added_key(config_dir: str, cfg: DictConfig, overrides: Sequence[str]) -> str | None:
    """The problem with a ``+key=value`` that adds a key no code reads (``+distil=ema``), or None.

    Adding is meant for open mappings (``+env.kwargs.<argument>=...``); a key added to a schema node
    (the top level, ``train``, ``agent`` ...) would be ignored.
    """
    groups = {p.name for p in Path(config_dir).iterdir() if p.is_dir()}
    for override in OverridesParser.create().parse_overrides(list(overrides)):
        key = override.key_or_group
        if not (override.is_add() or override.is_force_add()) or ("." not in key and key.split("@")[0] in groups):
            continue
        parent, _, leaf = key.rpartition(".")
        node = OmegaConf.select(cfg, parent) if parent else cfg
        if isinstance(node, DictConfig) and OmegaConf.get_type(node) not in (dict, None):
            where = parent or "the top level"
            valid = ", ".join(sorted(str(k) for k in node.keys() if k != leaf))
            return f"{override.input_line}: {where} has no key {leaf!r}, so nothing would read it; valid keys of {where}: {valid}"
    return None


def check_overrides(
    config_dir: str,
    config_name: str,
    argv: Sequence[str],
    validate: Callable[[DictConfig], None] | None = None,
    prepare: Callable[[DictConfig, list[str]], DictConfig] | None = None,
) -> str | None:
    """Compose ``config_name`` with ``argv``; return a one-line problem description, or ``None`` if it is fine.

    ``prepare(cfg, argv)`` turns the composed config into the one that will run (``train.py``: the
    resumed run's config) before ``validate`` checks it. With ``-m`` / ``--multirun`` every job of the
    sweep is checked before the first one starts. Other Hydra flags (``--help``, ``--cfg`` ...) are left to Hydra.
    """
    flags = {a for a in argv if a.startswith("-")}
    if flags and flags <= {"-m", "--multirun"}:
        overrides = OverridesParser.create().parse_overrides([a for a in argv if a not in flags])
        for job in BasicSweeper.split_arguments(overrides, None)[0]:
            problem = check_overrides(config_dir, config_name, job, validate, prepare)
            if problem:
                return f"sweep job {' '.join(job)}: {problem}"
        return None
    if flags:
        return None
    overrides = [a for a in argv if not a.startswith("hydra.")]
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=config_dir, version_base="1.3"):
        try:
            cfg = compose(config_name, overrides=overrides)
        except (HydraException, OmegaConfBaseException) as err:
            text = " ".join(str(err).split())
            text = re.sub(r" ?To append to your config use \S+", "", text)
            text = text.split(" Config search path:")[0]
            cause = err.__cause__
            cause_text = " ".join(str(cause).split()) if cause is not None else ""
            match = _KEY_RE.search(cause_text) or _KEY_RE.search(text)
            unknown_key = match is not None and "not in" in cause_text + text
            hint = _valid_keys_message(config_dir, config_name, overrides, match.group(1)) if unknown_key else ""
            if cause_text and cause_text not in text:
                text = f"{text} ({cause_text})"
            return text + hint
        finally:
            GlobalHydra.instance().clear()
    problem = _ignored_added_key(config_dir, cfg, overrides)
    if problem:
        return problem
    resume = cfg.get("resume")
    if resume:
        try:
            saved_config.path(resume, "resume")
        except ConfigError as err:
            return str(err)
    try:
        if prepare is not None:
            cfg = prepare(cfg, list(argv))
        if validate is not None:
            validate(cfg)
    except ConfigError as err:
        return str(err)
    return None


def exit_if_invalid(
    config_dir: str,
    config_name: str,
    argv: Sequence[str],
    validate: Callable[[DictConfig], None] | None = None,
    prepare: Callable[[DictConfig, list[str]], DictConfig] | None = None,
) -> None:
    """A command's first step: :func:`check_overrides`; on a problem print ``error: <problem>`` to stderr
    and exit with status 2 before Hydra starts."""
    problem = check_overrides(config_dir, config_name, argv, validate, prepare)
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        raise SystemExit(2)
