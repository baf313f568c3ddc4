"""The ``llm`` settings and the key's safety: what the channel is told, and what it may never show.

* :class:`ChannelConfig` — the ``llm`` config group (``configs/llm/*.yaml``), validated; :func:`load_config`
  reads a YAML file and ``train.py``-style overrides into one; ``OPENCLAW_*`` environment overrides.
* :func:`resolve_api_key` — the API key comes ONLY from the environment variable named by
  ``api_key_env``; it is never read from, or written to, a file. :class:`Redactor` takes it out of any text.
* :func:`validate_base_url` says what is wrong with a base URL before any request; :func:`safe_url` is the
  form of a URL any message may show (no user-info, query or fragment: they may carry credentials);
  :func:`is_loopback` says whether proxies are bypassed.

Secrets rule: the key never appears in a message, log line, exception or record; anything built
from server text goes through the channel's :class:`Redactor` (``LLMChannel.redact``).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import yaml

from coach.llm.errors import ChannelError

ENV_BASE_URL = "OPENCLAW_LLM_BASE_URL"
ENV_HINT_MODEL = "OPENCLAW_HINT_MODEL"
ENV_JUDGE_MODEL = "OPENCLAW_JUDGE_MODEL"
NO_KEY = "no-key"  # placeholder sent when no key is required (the bundled server)
_LOOPBACK_HOSTS = {"localhost", "::1"}
STRUCTURED_OUTPUT = ("json_schema", "json_object", "off")
DEFAULT_LLM_CONFIG = Path(__file__).resolve().parents[2] / "configs" / "llm" / "default.yaml"
# the key's variable as configs/llm/default.yaml names it (written there once)
DEFAULT_KEY_ENV = yaml.safe_load(DEFAULT_LLM_CONFIG.read_text())["api_key_env"]


# --------------------------------------------------------------------------------------- config
def _num(name: str, value: Any, *, integer: bool, lo: float | None = None, strict: bool = False,
         hi: float | None = None, optional: bool = False) -> Any:
    """Validate one numeric field; returns it normalised (float fields accept ints)."""
    if value is None:
        if optional:
            return None
        raise ValueError(f"llm.{name} must be set, got null")
    allowed = (int,) if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, allowed):
        what = "an integer" if integer else "a number"
        raise ValueError(f"llm.{name} must be {what}, got {type(value).__name__} {value!r}")
    value = int(value) if integer else float(value)
    if lo is not None and (value <= lo if strict else value < lo):
        raise ValueError(f"llm.{name} must be {'>' if strict else '>='} {lo}, got {value!r}")
    if hi is not None and value > hi:
        raise ValueError(f"llm.{name} must be <= {hi}, got {value!r}")
    return value


def _str(name: str, value: Any, *, optional: bool = False) -> str | None:
    """Validate one string field (non-empty after stripping)."""
    if value is None and optional:
        return None
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"llm.{name} must be a non-empty string, got {value!r}")
    return value.strip()


@dataclass(frozen=True)
class ChannelConfig:
    """The ``llm`` config group; see ``configs/llm/default.yaml`` for every field's meaning."""

    base_url: str | None = None
    api_key_env: str | None = DEFAULT_KEY_ENV
    hint_model: str = "openclaw-coach"
    judge_model: str | None = None
    timeout_s: float = 5.0
    max_retries: int = 2
    backoff_s: float = 0.25
    max_concurrency: int = 4
    max_calls: int | None = None
    max_tokens_budget: int | None = None
    temperature: float = 0.7
    max_tokens: int = 300
    num_answers: int = 3
    structured_output: str = "json_schema"
    breaker_failures: int = 5
    breaker_cooldown_s: float = 30.0

    def __post_init__(self) -> None:
        if self.structured_output is False:  # YAML 1.1 reads a bare `off` as false (OmegaConf; Hydra overrides do not)
            object.__setattr__(self, "structured_output", "off")
        if self.structured_output not in STRUCTURED_OUTPUT:
            raise ValueError(f"llm.structured_output must be one of {', '.join(STRUCTURED_OUTPUT)}, "
                             f"got {self.structured_output!r}")
        checked = {
            "base_url": _str("base_url", self.base_url, optional=True),
            "api_key_env": _str("api_key_env", self.api_key_env, optional=True),
            "hint_model": _str("hint_model", self.hint_model),
            "judge_model": _str("judge_model", self.judge_model, optional=True),
            "timeout_s": _num("timeout_s", self.timeout_s, integer=False, lo=0, strict=True),
            "max_retries": _num("max_retries", self.max_retries, integer=True, lo=0),
            "backoff_s": _num("backoff_s", self.backoff_s, integer=False, lo=0),
            "max_concurrency": _num("max_concurrency", self.max_concurrency, integer=True, lo=1),
            "max_calls": _num("max_calls", self.max_calls, integer=True, lo=0, optional=True),
            "max_tokens_budget": _num("max_tokens_budget", self.max_tokens_budget, integer=True,
                                      lo=0, optional=True),
            "temperature": _num("temperature", self.temperature, integer=False, lo=0, hi=2),
            "max_tokens": _num("max_tokens", self.max_tokens, integer=True, lo=1),
            "num_answers": _num("num_answers", self.num_answers, integer=True, lo=1),
            "breaker_failures": _num("breaker_failures", self.breaker_failures, integer=True, lo=1),
            "breaker_cooldown_s": _num("breaker_cooldown_s", self.breaker_cooldown_s, integer=False, lo=0,
                                       strict=True),
        }
        for name, value in checked.items():
            object.__setattr__(self, name, value)

    @classmethod
    def field_names(cls) -> list[str]:
        """The valid keys, in declaration order."""
        return [f.name for f in dataclasses.fields(cls)]

    @classmethod
    def from_mapping(cls, d: Mapping[str, Any]) -> ChannelConfig:
        """Build from a dict / OmegaConf ``DictConfig``; unknown keys fail, listing valid ones."""
        if not isinstance(d, Mapping):
            raise ValueError(f"llm config must be a mapping, got {type(d).__name__}")
        valid = cls.field_names()
        unknown = sorted(str(k) for k in d if k not in valid)
        if unknown:
            raise ValueError(f"unknown llm config key(s) {', '.join(map(repr, unknown))}; "
                             f"valid keys: {', '.join(valid)}")
        return cls(**{str(k): d[k] for k in d})

    def with_env_overrides(self, environ: Mapping[str, str] = os.environ) -> ChannelConfig:
        """Apply OPENCLAW_LLM_BASE_URL / OPENCLAW_HINT_MODEL / OPENCLAW_JUDGE_MODEL when set."""
        changes: dict[str, str] = {}
        for var, name in ((ENV_BASE_URL, "base_url"), (ENV_HINT_MODEL, "hint_model"),
                          (ENV_JUDGE_MODEL, "judge_model")):
            value = environ.get(var)
            if value is not None and value.strip():
                changes[name] = value.strip()
        return dataclasses.replace(self, **changes) if changes else self

    @property
    def judge(self) -> str:
        """The judge model: ``judge_model`` or, when null, ``hint_model``."""
        return self.judge_model or self.hint_model


# --------------------------------------------------------------------------------------- the URL and the key
def safe_url(url: str | None) -> str:
    """``url`` without user-info, query or fragment (they may carry credentials)."""
    if not url:
        return repr(url)
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        if ":" in host:
            host = f"[{host}]"
        netloc = host + (f":{parts.port}" if parts.port else "")
        return urlunsplit((parts.scheme, netloc, parts.path, "", ""))
    except ValueError:
        return "<unparsable url>"


def validate_base_url(url: str | None) -> str:
    """Return ``url`` (trailing '/' stripped) or raise ChannelError ``bad_url`` (what to fix)."""
    example = "e.g. http://127.0.0.1:8765/v1 or https://api.openai.com/v1"
    if url is None or not url.strip():
        raise ChannelError("bad_url", "llm.base_url is missing: set it to the OpenAI-compatible "
                           f"API root ({example}), or to null to start the bundled server")
    url = url.strip().rstrip("/")
    try:
        parts = urlsplit(url)
        ok = parts.scheme in ("http", "https") and bool(parts.hostname)
        _ = parts.port
    except ValueError:
        ok = False
    if not ok:
        raise ChannelError("bad_url", f"llm.base_url {safe_url(url)} is not an http(s) URL with "
                           f"a host ({example})")
    path = parts.path
    if "/v1/v1" in path:
        fixed = safe_url(url).replace("/v1/v1", "/v1")
        while "/v1/v1" in fixed:
            fixed = fixed.replace("/v1/v1", "/v1")
        raise ChannelError("bad_url", f"llm.base_url {safe_url(url)} doubles '/v1'; "
                           f"use {fixed} (the client appends /chat/completions itself)")
    if path.endswith("/chat/completions"):
        root = safe_url(url)[: -len("/chat/completions")]
        raise ChannelError("bad_url", f"llm.base_url {safe_url(url)} is the chat path, not the "
                           f"API root; use {root}")
    return url


def is_loopback(url: str | None) -> bool:
    """True when ``url`` points at this machine (proxies are bypassed for it)."""
    try:
        host = urlsplit(url or "").hostname or ""
    except ValueError:
        return False
    return host in _LOOPBACK_HOSTS or host.startswith("127.")


class Redactor:
    """``redactor(text)``: ``text`` with the API key replaced by ``***`` (the secrets rule, module docstring)."""

    def __init__(self, api_key: str) -> None:
        self._secrets = [s for s in {api_key, api_key.strip()} if s and s != NO_KEY]

    def __call__(self, text: str) -> str:
        for secret in self._secrets:
            text = text.replace(secret, "***")
        return text


def resolve_api_key(cfg: ChannelConfig, environ: Mapping[str, str] = os.environ,
                    required: bool = True) -> str:
    """The key from ``environ[cfg.api_key_env]`` (stripped); :data:`NO_KEY` when ``api_key_env`` is
    None (a server that needs no key, e.g. a local llama-server started without ``--api-key``).

    Raises ChannelError ``key_missing`` naming the variable when it is unset/empty/whitespace and
    ``required``; returns :data:`NO_KEY` instead when not required.
    """
    var = cfg.api_key_env
    if var is None:
        return NO_KEY
    raw = environ.get(var)
    if raw is not None and raw.strip():
        return raw.strip()
    if not required:
        return NO_KEY
    state = "not set" if raw is None else ("empty" if raw == "" else "whitespace only")
    raise ChannelError("key_missing", f"environment variable {var} is not set (or "
                       f"empty/whitespace; it is {state}); export it: export {var}=... "
                       "(keys are read from the environment only, never from config files), or set "
                       "llm.api_key_env=null for a server that needs no key")


# --------------------------------------------------------------------------------------- reading a config file
def load_config(path: str | os.PathLike[str] | None, overrides: list[str] = ()) -> ChannelConfig:
    """Read an ``llm`` config YAML (OmegaConf) and ``train.py``-style overrides into a validated ChannelConfig.

    ``overrides``: ``llm=NAME`` (use ``configs/llm/NAME.yaml``) and ``llm.KEY=VALUE`` items.
    """
    from omegaconf import OmegaConf

    dotlist = []
    for item in overrides:
        key, eq, value = item.partition("=")
        if key == "llm" and eq:
            path = DEFAULT_LLM_CONFIG.with_name(f"{value}.yaml")
            if not path.is_file():
                names = sorted(p.stem for p in DEFAULT_LLM_CONFIG.parent.glob("*.yaml"))
                raise ValueError(f"llm={value}: no {path}; choose one of: {', '.join(names)}")
        elif key.startswith("llm.") and eq:
            dotlist.append(f"{key[len('llm.'):]}={value}")
        else:
            raise ValueError(f"override {item!r} is not llm=NAME or llm.KEY=VALUE (e.g. llm.api_key_env=MY_KEY)")
    file = Path(path) if path else DEFAULT_LLM_CONFIG
    repo_root = DEFAULT_LLM_CONFIG.parents[2]
    if not file.exists() and not file.is_absolute() and (repo_root / file).exists():
        file = repo_root / file  # a repo-relative path given from another directory
    merged = OmegaConf.merge(OmegaConf.load(file), OmegaConf.from_dotlist(dotlist))
    data = OmegaConf.to_container(merged, resolve=True)
    if not isinstance(data, dict):
        raise ValueError(f"{file}: expected a mapping of llm settings")
    return ChannelConfig.from_mapping(data)


def check_settings(cfg: ChannelConfig, environ: Mapping[str, str] = os.environ) -> None:
    """The diagnoses made before any request, opening nothing: for an explicit ``base_url``, a bad/doubled one
    (``bad_url``) and a missing key (``key_missing``), as :class:`ChannelError`. A null ``base_url`` (the
    bundled server) needs no key."""
    if cfg.base_url is not None:
        validate_base_url(cfg.base_url)
        resolve_api_key(cfg, environ, required=True)
