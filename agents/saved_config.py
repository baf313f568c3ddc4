"""The config a run directory made by ``train.py`` holds (``config.yaml``, resolved), the check that a path is
one, and the check that a directory can take a command's outputs.

Used wherever a command is handed a run directory (``resume=``, ``run=``, ``distill.teacher=``) or an
output directory (``hydra.run.dir=``, ``out_dir=``); the error names the option and its value. Its
checkpoints are :mod:`agents.checkpoint`'s business.
"""

from __future__ import annotations

import os
import sys
import tempfile
from dataclasses import is_dataclass
from pathlib import Path
from typing import Any

import yaml
from omegaconf import DictConfig, ListConfig, OmegaConf, open_dict
from omegaconf.errors import OmegaConfBaseException

from agents.config.schema import PPOConfig, SACConfig, TrainConfig
from agents.errors import ConfigError
from agents.config.teacher_kinds import renamed_teacher

CONFIG = "config.yaml"

# sections a resume reads (train.py writes them all); ``run=`` / ``distill.teacher=`` read only env and agent
_SECTIONS = ("env", "agent")
_RESUME_SECTIONS = ("env", "agent", "distill", "train", "seed")


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


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def load(run_dir: str | Path, option: str) -> DictConfig:
    """The resolved config the run was made with; :class:`ConfigError` as :func:`path`, or when it is damaged.

    Damaged: not YAML (truncated), not a mapping, a section or ``env.id`` / ``agent.name`` missing, or a
    value of the wrong type for its key (``seed: abc``). A resume (``option="resume"``) needs every
    section train.py writes (env, agent, distill, train, seed). A teacher saved under its old name
    (``distill.name: llm_hint``) takes its new one, with a message. Keys added to the schema since the run
    was made (``train.vec_mode``, ``env.eval_kwargs`` ...) take their defaults, named in one line on stderr.
    """
    file = path(run_dir, option)
    fix = f"restore it from a copy of the run, or pass another run directory ({option}=<run dir>)"
    where = f"{option}={run_dir}: {file}"
    try:
        saved = OmegaConf.load(file)
    except (yaml.YAMLError, OmegaConfBaseException, ValueError, OSError) as err:
        problem = getattr(err, "problem", None) or _one_line(err).split(" in ")[0]
        mark = getattr(err, "problem_mark", None)
        at = f" at line {mark.line + 1}" if mark is not None else ""
        raise ConfigError(f"{where} cannot be read (not valid YAML{at}: {problem}; truncated or hand-edited?); {fix}") from None
    if not isinstance(saved, DictConfig):
        kind = "a YAML list" if OmegaConf.is_list(saved) else f"{type(saved).__name__}"
        raise ConfigError(f"{where} holds {kind}, not the mapping of settings train.py writes; {fix}")
    sections = _RESUME_SECTIONS if option == "resume" else _SECTIONS
    for key in sections:
        if key not in saved:
            raise ConfigError(f"{where} has no {key!r} section, which train.py always writes; {fix}")
    for key in ("env", "agent"):
        if not isinstance(saved[key], DictConfig):
            raise ConfigError(f"{where}: {key} must be a mapping (train.py writes one), found {_describe(saved, key)}; {fix}")
    for key in ("env.id", "agent.name"):
        if not OmegaConf.select(saved, key, default=None, throw_on_missing=False):
            raise ConfigError(f"{where} lacks {key}, which train.py always writes; {fix}")
    problem = _type_problem(saved)
    if problem:
        raise ConfigError(f"{where}: {problem} (hand-edited or damaged?); correct that value, or {fix}")
    if isinstance(saved.get("distill"), DictConfig):
        renamed_teacher(saved.distill, str(file.resolve()))
    _fill_added(saved, where, file)
    return saved


# the config files whose added keys were reported: a command loads a run's config more than once, and by more than
# one spelling of its directory (relative on the command line, absolute once resolved)
_told: set[Path] = set()


def _fill_added(saved: DictConfig, where: str, file: Path) -> None:
    """Give the keys added to the schema since the run was made (absent from its ``config.yaml``) their
    defaults, and say which, once per config file and process, on stderr."""
    agent = {"ppo": PPOConfig, "sac": SACConfig}[saved.agent.name]
    added = _added(OmegaConf.structured(TrainConfig), saved, "") + _added(OmegaConf.structured(agent), saved.agent, "agent.")
    told = file.resolve()
    if added and told not in _told:
        _told.add(told)
        print(f"{where} predates settings added since the run was made; they take their defaults: {', '.join(added)}",
              file=sys.stderr)


def _added(schema: DictConfig, node: DictConfig, prefix: str) -> list[str]:
    """Set each key of ``schema`` (a structured config) that ``node`` lacks to its default (keys without one are
    left out); ``key=default`` for each, nested sections included."""
    added = []
    for key in schema:
        want = schema._get_node(key)
        section = (OmegaConf.get_type(want) or want._metadata.ref_type) if isinstance(want, DictConfig) else None
        if key in node:
            if is_dataclass(section) and isinstance(node[key], DictConfig):  # a schema section
                added += _added(OmegaConf.structured(section), node[key], f"{prefix}{key}.")
        elif not OmegaConf.is_missing(schema, key):
            with open_dict(node):
                node[key] = OmegaConf.to_container(want) if OmegaConf.is_config(want) else want._value()
            added.append(f"{prefix}{key}={_describe(node, str(key))}")
    return added


def _describe(cfg: DictConfig, key: str) -> str:
    value = OmegaConf.select(cfg, key, default=None, throw_on_missing=False)
    text = repr(OmegaConf.to_container(value) if OmegaConf.is_config(value) else value)
    return text if len(text) <= 40 else text[:37] + "..."


def _type_problem(saved: DictConfig) -> str | None:
    """``<key>=<value> is not <what it must be>`` for the first value the schema of its key rejects, or None.

    Keys the schema does not know (a config from another version) are left alone.
    """
    agents = {"ppo": PPOConfig, "sac": SACConfig}
    name = saved.agent.name
    if name not in agents:
        return f"agent.name={name!r} is not a known agent (choose one of: {', '.join(agents)})"
    return _mismatch(OmegaConf.structured(TrainConfig), saved, "") or _mismatch(
        OmegaConf.structured(agents[name]), saved.agent, "agent."
    )


# what a value of a schema node must be, by the node's class (and a list's element type)
_KINDS = {"IntegerNode": "an integer", "FloatNode": "a number", "BooleanNode": "true or false",
          "StringNode": "a string", "ListConfig": "a list", "DictConfig": "a mapping"}
_ELEMENTS = {int: "integers", float: "numbers", str: "strings", bool: "booleans"}


def _mismatch(schema: DictConfig, node: DictConfig, prefix: str) -> str | None:
    """The first key of ``node`` whose value ``schema`` (a structured config) rejects, described; or None."""
    for key in node:
        want = schema._get_node(key, validate_access=False)
        if want is None:  # a key this version does not know
            continue
        full = f"{prefix}{key}"
        kind = _KINDS.get(type(want).__name__)
        element = want._metadata.element_type if isinstance(want, ListConfig) else None
        if element in _ELEMENTS:
            kind = f"a list of {_ELEMENTS[element]}"
        value = node._get_node(key)
        if value is None or value._is_none():
            if not want._is_optional():
                return f"{full} is null, but it must be {kind or 'set'}"
            continue
        section = (OmegaConf.get_type(want) or want._metadata.ref_type) if isinstance(want, DictConfig) else None
        if is_dataclass(element) and isinstance(value, ListConfig):  # a list of schema sections (distill.stages)
            problem = next(filter(None, (_mismatch(OmegaConf.structured(element), item, f"{full}.{i}.")
                                         if isinstance(item, DictConfig) else f"{full}.{i}={item!r} is not a mapping"
                                         for i, item in enumerate(value))), None)
            if problem:
                return problem
            continue
        if section not in (dict, None):  # a schema section (a dataclass)
            if not isinstance(value, DictConfig):
                return f"{full}={_describe(node, str(key))} is not a mapping (train.py writes the {full} section as one)"
            problem = _mismatch(OmegaConf.structured(section), value, f"{full}.")
            if problem:
                return problem
            continue
        try:
            with open_dict(schema):
                schema[key] = OmegaConf.to_container(value) if OmegaConf.is_config(value) else value._value()
        except OmegaConfBaseException:
            return f"{full}={_describe(node, str(key))} is not {kind or 'of the type train.py writes'}"
    return None


# ---------------------------------------------------------------------------------------- outputs
def check_output_dir(option: str, directory: str | Path, shown: Any = None) -> None:
    """:class:`ConfigError` naming ``option=<directory>`` when the directory cannot be created or written.

    Nothing is left behind: a probe directory (or file) is made in the nearest existing directory and
    removed at once. ``shown`` is the value printed (default: ``directory``).
    """
    target = Path(directory)
    shown = directory if shown is None else shown
    fix = f"pick a writable directory ({option}=<dir>)"
    existing = target
    while not os.path.exists(existing) and existing != existing.parent:
        existing = existing.parent
    if not os.path.isdir(existing):
        what = "is a file, not a directory" if existing == target else f"is under the file {existing}"
        raise ConfigError(f"{option}={shown}: {what}; {fix}")
    try:
        if existing == target:
            fd, probe = tempfile.mkstemp(dir=existing, prefix=".openclaw-probe-")
            os.close(fd)
            os.unlink(probe)
        else:
            os.rmdir(tempfile.mkdtemp(dir=existing, prefix=".openclaw-probe-"))
    except OSError as err:
        reason = err.strerror or type(err).__name__
        what = "cannot be written" if existing == target else f"cannot be created: {existing} takes no new directories"
        raise ConfigError(f"{option}={shown}: {what} ({reason}); {fix}") from None
