"""Command-line override handling shared by ``train.py``, ``evaluate.py`` and ``export.py``.

Hydra reports a misspelt key as "Key 'x' is not in struct" without saying which keys exist.
:func:`check_overrides` composes the config once before the real run and turns every composition or
validation failure into one line that names the problem and lists what is valid.

Hydra also writes every override to ``.hydra/`` as soon as a job starts, so a secret (an API key, a
token, a password) given on the command line or in a config is refused first, without repeating it:
:func:`command_line_secret` on the raw arguments, :func:`config_secret` on the composed config.
"""

from __future__ import annotations

import math
import re
import sys
from dataclasses import fields, is_dataclass
from pathlib import Path
from collections.abc import Callable, Sequence

import yaml
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.errors import HydraException
from omegaconf import DictConfig, ListConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from agents import saved_config
from agents.config.teacher_kinds import old_name_refusal
from agents.config.tree import config_leaves
from agents.errors import ConfigError

_KEY_RE = re.compile(r"full_key: ([\w.\[\]]+)")  # a list entry as [i]: distill.stages[0].steps
_GRAMMAR = "https://hydra.cc/docs/advanced/override_grammar/basic/"

# ---------------------------------------------------------------------------------------- secrets
# A key is read only from the environment variable that ``llm.api_key_env`` names. A secret given as a
# value would be written in plain text to the run directory (Hydra's .hydra/overrides.yaml, config.yaml
# and hydra.yaml), so one is refused before Hydra starts, and the message never repeats it.
KEY_ENV = "api_key_env"
# the variable configs/llm/default.yaml names (written there once; coach.llm.settings reads the same file)
_LLM_DEFAULTS = Path(__file__).resolve().parents[1] / "configs" / "llm" / "default.yaml"
DEFAULT_KEY_ENV = yaml.safe_load(_LLM_DEFAULTS.read_text())[KEY_ENV]
ENV_VAR_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
HIDDEN = "<hidden>"
SECRET_FIX = (
    f"a key is read only from the environment variable named by llm.{KEY_ENV}: "
    f"export {DEFAULT_KEY_ENV}=... and pass llm.{KEY_ENV}={DEFAULT_KEY_ENV} (the default)"
)
# a key whose name says it holds a secret (``api_key``, ``access_token``, ``client_secret``, ``password`` ...);
# ``api_key_env`` (a variable's name) and ``max_tokens`` (a count) are not
_SECRET_NAME = re.compile(
    r"(?:^|_)(?:api_?key|access_?key|secret(?:_?key)?|token|auth_?token|password|passwd|passphrase|"
    r"credentials?|private_?key|authorization)(?:$|_)"
)
_SECRET_VALUES = (
    (re.compile(r"(?<![A-Za-z0-9])sk-[A-Za-z0-9_\-]{6,}"), "an API key (sk-...)"),
    (re.compile(r"(?i)(?<![A-Za-z0-9])bearer\s+\S"), "a bearer token (Bearer ...)"),
    (re.compile(r"(?<![A-Za-z0-9])(?:gh[pousr]_|github_pat_|glpat-|xox[abprs]-|hf_|[sr]k_(?:live|test)_)"
                r"[A-Za-z0-9_\-]{10,}"), "an access token"),
    (re.compile(r"(?<![A-Za-z0-9])(?:AKIA|ASIA)[0-9A-Z]{16}(?![A-Za-z0-9])"), "an AWS access key"),
    (re.compile(r"(?<![A-Za-z0-9])AIza[0-9A-Za-z_\-]{30,}"), "a Google API key"),
    (re.compile(r"eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}"), "a JSON web token"),
    (re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY"), "a private key"),
)
_WORD = re.compile(r"[A-Za-z0-9_\-+]{32,}")


def _random_looking(word: str) -> bool:
    """A long token of letters and digits mixed the way random keys are, not the way names are.

    Base62/base64 keys mix upper case, lower case and digits throughout; hex keys mix digits and
    a-f throughout. Names, dates and paths (``quadruped_rough_v1``, ``2026-11-29_14-00-00``) do not.
    """
    alnum = [c for c in word if c.isalnum()]
    digits = sum(c.isdigit() for c in alnum)
    digit_runs = len(re.findall(r"[0-9]+", word))
    counts = [alnum.count(c) for c in set(alnum)]
    entropy = -sum(n / len(alnum) * math.log2(n / len(alnum)) for n in counts) if alnum else 0.0
    if len(alnum) < 32 or entropy < 3.4:
        return False
    if re.fullmatch(r"[0-9a-fA-F]+", "".join(alnum)):
        return digit_runs >= 4 and 0.25 <= digits / len(alnum) <= 0.9
    upper, lower = sum(c.isupper() for c in alnum), sum(c.islower() for c in alnum)
    return upper >= 2 and lower >= 2 and digits >= 3 and digit_runs >= 3


def secret_kind(value: str) -> str | None:
    """What kind of secret ``value`` looks like (``"an API key (sk-...)"``), or None."""
    for pattern, kind in _SECRET_VALUES:
        if pattern.search(value):
            return kind
    words = _WORD.findall(value)
    if any(_random_looking(w) for w in words + [p for w in words for p in re.split(r"[_\-+]", w)]):
        return "a long random token (an API key?)"
    return None


def secret_name(key: str) -> bool:
    """True when a dotted key names a secret (a part like ``api_key``, ``token``, ``password``; not ``api_key_env``)."""
    return any(part != KEY_ENV and _SECRET_NAME.search(part.lower()) for part in re.split(r"[.\[\]@/]", key) if part)


def _secret_problem(key: str, value: object, shown_key: str, written: str) -> str | None:
    """The refusal of one ``key=value``, named ``shown_key=<hidden>`` (the value is never shown), or None.

    ``written``: why the value would reach the disk (the message's reason).
    """
    shown = f"{shown_key}={HIDDEN}"
    if key.rsplit(".", 1)[-1] == KEY_ENV:
        if value is None or value == "null":
            return None
        kind = secret_kind(value) if isinstance(value, str) else None
        if isinstance(value, str) and ENV_VAR_NAME.fullmatch(value) and kind is None:
            return None
        why = f"it looks like {kind}" if kind else "it is not an environment variable's name ([A-Za-z_][A-Za-z0-9_]*)"
        return f"{shown}: {why}; llm.{KEY_ENV} names the variable that holds the key, never the key itself; {SECRET_FIX}"
    if secret_name(key):
        if value is None or value in ("", "null"):
            return None  # nothing to leak
        return f"{shown}: {key} would hold a secret, and {written}; {SECRET_FIX}"
    kind = secret_kind(value) if isinstance(value, str) else None
    if kind:
        return f"{shown}: the value looks like {kind}, and {written}; {SECRET_FIX}"
    return None


def command_line_secret(argv: Sequence[str]) -> str | None:
    """The refusal of the first raw command-line argument that holds or names a secret, or None.

    Read before Hydra parses anything: a parse error would echo the argument, and Hydra writes the
    overrides to ``.hydra/overrides.yaml`` as soon as the job starts.
    """
    written = "command-line values are written in plain text to the run directory (.hydra/, config.yaml)"
    for arg in argv:
        if arg.startswith("-") and "=" not in arg:
            continue  # a flag (-m, --help, --cfg ...)
        typed, eq, value = arg.partition("=")
        if typed.startswith("~"):
            continue  # a deletion holds no value
        key = typed.lstrip("+").strip()
        if not eq:  # a flag's value (--config-dir <dir>): only the value can hold a secret
            typed, key, value = "an argument", "", arg
        problem = _secret_problem(key, value, typed, written)
        if problem:
            return problem
    return None


def config_secret(cfg: DictConfig, source: str) -> str | None:
    """The refusal of the first key of a composed config that holds or names a secret, or None.

    ``source`` says where the config came from (``configs/``, a run's ``config.yaml``) for the message.
    """
    try:
        tree = OmegaConf.to_container(cfg, resolve=True)
    except OmegaConfBaseException:
        tree = OmegaConf.to_container(cfg, resolve=False)
    written = f"the config ({source}) is written in plain text to the run directory (.hydra/, config.yaml)"
    for path, _, value in config_leaves(tree, descend=lambda key: not (isinstance(key, str) and secret_name(key))):
        found = _secret_problem(path, value, path, written)
        if found:
            return found
    return None


def resume_argv(argv: Sequence[str]) -> list[str]:
    """With ``resume=<run dir>``, write Hydra's outputs into that run directory instead of a new one."""
    argv = list(argv)
    resume = next((a.split("=", 1)[1] for a in argv if a.startswith("resume=")), None)
    if resume and not any(a.startswith("hydra.run.dir=") for a in argv):
        argv.append(f"hydra.run.dir={resume}")
    return argv


def grammar_problem(argv: Sequence[str]) -> str | None:
    """The first ``key=value`` argument Hydra's override grammar cannot parse, as one line, or None. Its lexer
    takes characters outside ASCII (``runs/démo``) only in a quoted value: then the line says how to quote it."""
    parser = OverridesParser.create()
    for arg in argv:
        if arg.startswith("-") or "=" not in arg:
            continue  # a flag (-m, --help ...) or a flag's value
        try:
            parser.parse_override(arg)
        except HydraException as err:
            key, eq, value = arg.partition("=")
            if eq and key.isascii() and not value.isascii():
                odd = "".join(dict.fromkeys(c for c in value if not c.isascii()))
                quote = '"' if "'" in value else "'"
                return (f"{arg}: Hydra reads characters outside ASCII ({odd}) only inside a quoted value; quote it "
                        f"for Hydra as well as for the shell: \"{key}={quote}{value}{quote}\"")
            return f"{arg}: {' '.join(str(err).split())} (Hydra's override grammar: {_GRAMMAR})"
    return None


_TYPE_RE = re.compile(r"Error merging override (.+?) \(Value '(.*?)' (?:of type '\w+' could not be converted to "
                      r"(Integer|Float)|is not a valid (bool)).*?full_key: ([\w.\[\]]+)")
_TYPE_NAMES = {"Integer": "a whole number", "Float": "a number", "bool": "true or false"}


def _list_element_key(given: str, key: str, value: str | None = None) -> str:
    """The full key of ``key`` (a field of a list's element, as Hydra's error names it) inside the override ``given``
    (``distill.stages=[{name: ema, alpha: high}]``, ``alpha``: ``distill.stages.0.alpha``): the first element that
    sets it (to ``value``, Hydra's text of the value, when given); ``key`` itself when it is ``given``'s key or lies
    under it."""
    override = OverridesParser.create().parse_override(given.lstrip("+~"))
    items = override.value()
    if key == override.key_or_group or key.startswith(f"{override.key_or_group}.") or not isinstance(items, list):
        return key
    index = next((i for i, item in enumerate(items) if isinstance(item, dict) and key in item
                  and (value is None or str(item[key]) == value)), 0)
    return f"{override.key_or_group}.{index}.{key}"


def _wrong_type_message(text: str) -> str | None:
    """One line for an override whose value the schema's type refuses (``train.total_timesteps=1e6``: YAML reads
    1e6 as a float; ``distill.stages=[{name: ema, alpha: high}]``: a stage's field), naming the key and its type and,
    for a whole number written as a float, the spelling that works; None for any other error ``text``."""
    match = _TYPE_RE.search(text)
    if match is None:
        return None
    given, value, number_kind, bool_kind, full_key = match.groups()
    kind = number_kind or bool_kind
    key = _list_element_key(given, re.sub(r"\[(\d+)\]", r".\1", full_key), value)
    problem = f"{given} is invalid: {key} takes {_TYPE_NAMES[kind]}"
    try:
        number = float(value)
    except ValueError:
        return f"{problem}, not {value!r}"
    written = given.split("=", 1)[1]
    if kind == "Integer" and math.isfinite(number) and number.is_integer() and given == f"{key}={written}":
        return f"{problem}, and {written} is read as the float {value}; write it as {key}={int(number)}"
    return f"{problem}, not {value}"


def _unknown_key_message(config_dir: str, config_name: str, argv: Sequence[str], full_key: str, text: str) -> str:
    """Hydra's ``text`` about ``full_key`` followed by 'valid keys of <parent>: a, b, c' (the config composed from
    the group choices alone; an element of a typed list past its composed end: the element's schema); for a key of
    an open mapping (``env.kwargs``: any argument of the env), instead the fix, which is to add it with
    ``+<key>=<value>``, and the keys the config sets."""
    groups = {p.name for p in Path(config_dir).iterdir() if p.is_dir()}
    choices = [a for a in argv if a.split("=", 1)[0] in groups]
    try:
        cfg = compose(config_name, overrides=choices)
    except (HydraException, OmegaConfBaseException):
        return text
    parent = full_key.rsplit(".", 1)[0] if "." in full_key else ""
    node = OmegaConf.select(cfg, parent) if parent else cfg
    owner = OmegaConf.select(cfg, parent.rsplit(".", 1)[0]) if "." in parent else None
    if node is None and isinstance(owner, ListConfig) and is_dataclass(owner._metadata.element_type):
        node = OmegaConf.structured(owner._metadata.element_type)
    if not isinstance(node, DictConfig):
        return text
    where = parent or "the top level"
    keys = ", ".join(sorted(str(k) for k in node.keys()))
    if OmegaConf.get_type(node) is dict:
        given = next((a for a in argv if a.split("=", 1)[0] == full_key), f"{full_key}=<value>")
        return (f"{given}: the config does not set {full_key}, and Hydra adds a key only with +: "
                f"use +{given} ({where} set now: {keys})")
    return f"{text}; valid keys of {where}: {keys}"


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
        schema = OmegaConf.get_type(node) if isinstance(node, DictConfig) else None
        if is_dataclass(schema) and leaf not in {f.name for f in fields(schema)}:  # a key the schema declares: read
            where = parent or "the top level"
            valid = ", ".join(sorted(str(k) for k in node.keys() if k != leaf))
            return f"{override.input_line}: {where} has no key {leaf!r}, so nothing would read it; valid keys of {where}: {valid}"
    return None


def _resume_problem(config_name: str, argv: Sequence[str], overrides: Sequence[str], text: str,
                    prepare: Callable[[DictConfig, list[str]], DictConfig] | None) -> str | None:
    """With ``resume=``, the refusal of an override that Hydra could not apply to the config composed from the
    command line (its error ``text`` names it) but that names a setting of the resumed run, as a resume judges every
    override against the run's config (``prepare``: ``distill.stages.1.alpha=0.3`` on a sequence run: it cannot
    change when resuming, where the command line's config has no stage 1); else None."""
    failing = next((a for a in overrides if f"override {a} (" in text
                    or f"override '{a.split('=', 1)[0].lstrip('+~')}'" in text), None)
    if prepare is None or failing is None or not any(a.startswith("resume=") for a in overrides):
        return None
    try:
        prepare(compose(config_name, overrides=[a for a in overrides if a != failing]), list(argv))
    except (HydraException, OmegaConfBaseException):
        return None
    except ConfigError as err:
        return str(err)
    return None


def _old_option(overrides: Sequence[str]) -> str | None:
    """The refusal of ``distill=<old name>`` (:data:`agents.config.teacher_kinds.RENAMED_TEACHERS`), a config option that
    is no longer there under that name, naming the new one (Hydra would list the options only); else None."""
    for override in OverridesParser.create().parse_overrides(list(overrides)):
        if override.key_or_group == "distill" and not override.is_sweep_override():
            problem = old_name_refusal("distill", str(override.value()))
            if problem:
                return problem
    return None


def check_overrides(
    config_dir: str,
    config_name: str,
    argv: Sequence[str],
    validate: Callable[[DictConfig], object] | None = None,
    prepare: Callable[[DictConfig, list[str]], DictConfig] | None = None,
) -> str | None:
    """Compose ``config_name`` with ``argv``; return a one-line problem description, or ``None`` if it is fine.

    ``prepare(cfg, argv)`` turns the composed config into the one that will run (``train.py``: the
    resumed run's config) before ``validate`` checks it. With ``-m`` / ``--multirun`` every job of the
    sweep is checked before the first one starts. Other Hydra flags (``--help``, ``--cfg`` ...) are left to Hydra.
    """
    problem = command_line_secret(argv) or grammar_problem(argv)
    if problem:
        return problem
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
    problem = _old_option(overrides)
    if problem:
        return problem
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
            if cause_text and cause_text not in text:
                text = f"{text} ({cause_text})"
            problem = _resume_problem(config_name, argv, overrides, text, prepare)
            if problem:
                return problem
            if unknown_key:
                full_key = re.sub(r"\[(\d+)\]", r".\1", match.group(1))  # as the command line writes it
                given = next((a for a in overrides if f"override '{a.split('=', 1)[0].lstrip('+')}'" in text), None)
                element_key = full_key if given is None else _list_element_key(given, full_key)
                if element_key != full_key:  # a key of a list's element: Hydra names it without the list
                    full_key, text = element_key, f"{given}: {cause_text.split(' full_key:')[0]}"
                return _unknown_key_message(config_dir, config_name, overrides, full_key, text)
            return _wrong_type_message(text) or text
        finally:
            GlobalHydra.instance().clear()
    problem = _ignored_added_key(config_dir, cfg, overrides) or config_secret(cfg, f"composed from {config_dir}")
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
            problem = config_secret(cfg, f"{saved_config.CONFIG} of resume={resume}") if resume else None
            if problem:
                return problem
        if validate is not None:
            validate(cfg)
    except ConfigError as err:
        return str(err)
    return None


def exit_if_invalid(
    config_dir: str,
    config_name: str,
    argv: Sequence[str],
    validate: Callable[[DictConfig], object] | None = None,
    prepare: Callable[[DictConfig, list[str]], DictConfig] | None = None,
) -> None:
    """A command's first step: :func:`check_overrides`; on a problem print ``error: <problem>`` to stderr
    and exit with status 2 before Hydra starts."""
    problem = check_overrides(config_dir, config_name, argv, validate, prepare)
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        raise SystemExit(2)
