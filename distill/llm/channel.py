"""The unified key channel to an OpenAI-compatible LLM endpoint.

* :class:`ChannelConfig` — the ``llm`` config group (``configs/llm/*.yaml``), validated.
* :func:`resolve_api_key` — the API key comes ONLY from the environment variable named by
  ``api_key_env``; it is never read from, or written to, a file.
* :class:`LLMChannel` — one ``openai.OpenAI`` client with our own retry/backoff, a bound on
  in-flight requests, call/token budgets and thread-safe statistics.
* :class:`ChannelError` — every failure, with a ``kind`` (and for some a ``detail``) and a message that
  says what to fix.

Deadline: every HTTP request (each attempt of a chat call, the models list) must be over within
``llm.timeout_s`` s, from connecting to the body's last byte, however slowly the server trickles its
headers or body (:mod:`distill.llm.deadline`; httpx's own timeouts bound each socket read only). A
timeout names where it struck (``detail``: ``connect``, ``headers`` or ``body``). A connection closed
mid-answer is ``connection`` with ``detail="dropped"`` (retried), not "cannot connect". No response body
over :data:`MAX_RESPONSE_BYTES` bytes is read (``bad_response``, ``detail="too_large"``).

Secrets rule: the key never appears in a message, log line, exception or record; anything built
from server text goes through :meth:`LLMChannel.redact`.

Structured output: :meth:`LLMChannel.chat` takes an OpenAI ``response_format`` (a JSON schema or
``json_object``). When the server rejects a request that carries one (a 4xx the plain request does
not get) the call is repeated without it, and that model is asked in plain text for the rest of the
run (``stats()["structured_fallbacks"]`` counts it, ``plain_models`` names them).

Circuit breaker: after ``breaker_failures`` consecutive logical calls that failed with a retryable
kind (timeout, connection, 5xx, 429), the channel stops sending for ``breaker_cooldown_s`` (doubled
each time a trial call after the pause fails too, up to 10 minutes): calls fail at once with kind
``unavailable`` (counted as failed, ``stats()["breaker_refused"]``), and the first call after the pause
tries the server again (success closes it). ``stats()``: ``queries == ok + failed``.

Budget semantics: ``max_calls`` counts *logical* calls (one :meth:`LLMChannel.chat` call, however
many HTTP attempts its retries take; ``stats()["attempts"]`` counts the attempts).
``max_tokens_budget`` is checked before each call against the tokens used so far, so calls already
in flight when it runs out may overshoot it by their own usage.
"""

from __future__ import annotations

import dataclasses
import os
import threading
import time
import uuid
from collections import Counter, deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import openai

from distill.llm.deadline import Attempt, BodyTooLarge, install, request_deadline
from distill.llm.server import HintServer, start_server
from distill.proposals import latency_percentiles

ENV_BASE_URL = "OPENCLAW_LLM_BASE_URL"
ENV_HINT_MODEL = "OPENCLAW_HINT_MODEL"
ENV_JUDGE_MODEL = "OPENCLAW_JUDGE_MODEL"
NO_KEY = "no-key"  # placeholder sent when no key is required (the bundled server)
PROXY_VARS = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy")
ERROR_KINDS = frozenset(
    {"key_missing", "auth", "not_found", "bad_url", "connection", "proxy", "timeout",
     "rate_limit", "server", "bad_response", "budget", "client", "unavailable"}
)
RETRYABLE_KINDS = frozenset({"timeout", "connection", "proxy", "rate_limit", "server"})
_LOOPBACK_HOSTS = {"localhost", "::1"}
STRUCTURED_OUTPUT = ("json_schema", "json_object", "off")
MAX_BREAKER_PAUSE_S = 600.0
MAX_RESPONSE_BYTES = 1024 * 1024  # the most bytes of one response body the channel reads (a hint answer is < 1 KiB)
MODELS_TIMEOUT_S = 5.0  # the models list's deadline, s, when llm.timeout_s is longer (it only helps a diagnosis)


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
    api_key_env: str | None = "OPENCLAW_LLM_API_KEY"
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


# --------------------------------------------------------------------------------------- errors
_DEFAULT_MESSAGES = {
    "budget": "the LLM call budget is exhausted; raise llm.max_calls / llm.max_tokens_budget",
}


class ChannelError(Exception):
    """A channel failure. ``kind`` is one of :data:`ERROR_KINDS`; the message says what to fix.

    ``detail`` narrows some kinds down: ``timeout`` -> ``connect`` / ``headers`` (waiting for the response
    headers) / ``body`` (mid-body); ``connection`` -> ``refused`` / ``dropped`` (the server closed an open
    connection before the answer was complete); ``bad_response`` -> ``too_large``; else None.
    """

    def __init__(self, kind: str, message: str = "", *, status: int | None = None,
                 detail: str | None = None) -> None:
        if kind not in ERROR_KINDS:
            raise ValueError(f"unknown ChannelError kind {kind!r}; valid: {sorted(ERROR_KINDS)}")
        message = message or _DEFAULT_MESSAGES.get(kind, f"LLM channel error ({kind})")
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.status = status
        self.detail = detail


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


# --------------------------------------------------------------------------------------- channel
@dataclass
class ChatResult:
    """One successful chat call. ``text`` is the first choice; ``texts`` holds all ``n``."""

    text: str
    model: str
    latency_s: float
    prompt_tokens: int
    completion_tokens: int
    attempts: int
    texts: list[str] = field(default_factory=list)
    finish_reasons: list[str | None] = field(default_factory=list)


def _get(obj: Any, name: str) -> Any:
    """Attribute or key ``name`` of ``obj`` (response objects may be models or plain dicts)."""
    if isinstance(obj, Mapping):
        return obj.get(name)
    return getattr(obj, name, None)


def _chain_text(exc: BaseException) -> str:
    """Messages of ``exc`` and its causes/contexts, lower-cased."""
    seen: list[str] = []
    cur: BaseException | None = exc
    while cur is not None and len(seen) < 10:
        seen.append(f"{type(cur).__name__}: {cur}")
        cur = cur.__cause__ or cur.__context__
    return " | ".join(seen).lower()


class LLMChannel:
    """Thread-safe chat client for one OpenAI-compatible endpoint (see module docstring)."""

    def __init__(self, cfg: ChannelConfig, api_key: str) -> None:
        self.cfg = cfg
        self.base_url = validate_base_url(cfg.base_url)
        self._secrets = [s for s in {api_key, api_key.strip()} if s and s != NO_KEY]
        # proxies from the environment unless the server is on this machine; every request gets a deadline
        http_client = install(openai.DefaultHttpxClient(trust_env=not is_loopback(self.base_url)))
        self._client = openai.OpenAI(base_url=self.base_url, api_key=api_key or NO_KEY,
                                     timeout=cfg.timeout_s, max_retries=0,
                                     http_client=http_client)
        self._sem = threading.BoundedSemaphore(cfg.max_concurrency)
        self._lock = threading.Lock()
        self._queries = 0  # chat() calls, refused ones included
        self._calls = 0
        self._ok = 0
        self._attempts = 0
        self._errors: Counter[str] = Counter()
        self._prompt_tokens = 0
        self._completion_tokens = 0
        self._latencies: deque[float] = deque(maxlen=10_000)
        self._plain_models: set[str] = set()  # models whose server rejected response_format
        self._fallbacks = 0
        self._failures_in_row = 0  # circuit breaker: consecutive calls that failed retryably
        self._pause_s = cfg.breaker_cooldown_s
        self._closed_at = 0.0  # monotonic time until which the breaker is open
        self._breaker_opened = 0

    # -- secrets
    def redact(self, text: str) -> str:
        """``text`` with the API key replaced by ``***``."""
        for secret in self._secrets:
            text = text.replace(secret, "***")
        return text

    # -- calls
    def chat(self, model: str, messages: Sequence[Mapping[str, Any]], *,
             n_tokens: int | None = None, temperature: float | None = None,
             seed: int | None = None, n: int = 1,
             response_format: Mapping[str, Any] | None = None) -> ChatResult:
        """One logical chat call (retried on timeout/connection/429/5xx, never on other 4xx).

        Raises :class:`ChannelError`. ``n`` asks for that many choices (all in ``texts``);
        ``response_format`` asks for structured output (plain-text fallback: module docstring).
        """
        with self._lock:
            self._queries += 1
        self._check_breaker()
        self._reserve()
        kwargs: dict[str, Any] = {
            "model": model,
            "messages": [dict(m) for m in messages],
            "max_tokens": self.cfg.max_tokens if n_tokens is None else int(n_tokens),
            "temperature": self.cfg.temperature if temperature is None else float(temperature),
        }
        if seed is not None:
            kwargs["seed"] = int(seed)
        if n != 1:
            kwargs["n"] = int(n)
        try:
            with self._lock:
                structured = response_format is not None and model not in self._plain_models
            try:
                if structured:
                    try:
                        return self._call({**kwargs, "response_format": dict(response_format)}, model)
                    except ChannelError as err:
                        if err.kind != "client":
                            raise
                    result = self._call(kwargs, model)  # rejected response_format: ask in plain text
                    with self._lock:
                        self._plain_models.add(model)
                        self._fallbacks += 1
                    return result
                return self._call(kwargs, model)
            except ChannelError as err:
                self._note_failure(err)
                raise
        except ChannelError as err:
            with self._lock:
                self._errors[err.kind] += 1
            raise

    def _check_breaker(self) -> None:
        """Raise ``unavailable`` (a failed query, ``breaker_refused``; not a call of the budget) while the circuit
        breaker is open."""
        with self._lock:
            left = self._closed_at - time.monotonic()
            failures = self._failures_in_row
            if left > 0:
                self._errors["unavailable"] += 1
        if left > 0:
            raise ChannelError("unavailable", f"{safe_url(self.base_url)} failed {failures} calls in a row; "
                               f"not calling it for another {left:.0f} s (circuit breaker, "
                               f"llm.breaker_failures={self.cfg.breaker_failures}, "
                               f"llm.breaker_cooldown_s={self.cfg.breaker_cooldown_s:g}); check the server")

    def _note_failure(self, err: ChannelError) -> None:
        """Count a failed call; open the breaker after ``breaker_failures`` retryable ones in a row."""
        if err.kind not in RETRYABLE_KINDS:
            return
        with self._lock:
            self._failures_in_row += 1
            if self._failures_in_row >= self.cfg.breaker_failures:
                self._closed_at = time.monotonic() + self._pause_s
                self._pause_s = min(2 * self._pause_s, MAX_BREAKER_PAUSE_S)
                self._breaker_opened += 1

    def _call(self, kwargs: dict[str, Any], model: str) -> ChatResult:
        """One request with retries (the body of :meth:`chat`), each attempt within ``llm.timeout_s`` s;
        raises ChannelError."""
        t0 = time.monotonic()
        attempts = 0
        for k in range(self.cfg.max_retries + 1):
            attempts += 1
            failure: Exception | None = None
            with self._sem:
                with self._lock:
                    self._attempts += 1
                with request_deadline(self.cfg.timeout_s, MAX_RESPONSE_BYTES) as attempt:
                    try:
                        response = self._client.chat.completions.create(**kwargs)
                    except Exception as exc:  # noqa: BLE001 - classified below, outside the semaphore
                        failure = exc
            if failure is not None:
                err = self._attempt_error(failure, attempt, model, attempts)
                if err.kind not in RETRYABLE_KINDS or k == self.cfg.max_retries:
                    raise err from None
                time.sleep(self._delay(failure, k))
                continue
            result = self._finish(response, model, attempts, time.monotonic() - t0)
            with self._lock:  # the server answers: close the circuit breaker
                self._failures_in_row, self._pause_s = 0, self.cfg.breaker_cooldown_s
            return result
        raise AssertionError("unreachable")

    def list_models(self) -> list[str]:
        """Model ids the endpoint lists at ``/models``, within ``min(llm.timeout_s, MODELS_TIMEOUT_S)`` s (raises
        ChannelError on failure)."""
        limit = min(self.cfg.timeout_s, MODELS_TIMEOUT_S)
        failure: Exception | None = None
        with request_deadline(limit, MAX_RESPONSE_BYTES) as attempt:
            try:
                page = self._client.models.list(timeout=limit)
            except Exception as exc:  # noqa: BLE001 - classified below
                failure = exc
        if failure is not None:
            raise self._attempt_error(failure, attempt, "<models>", 1, limit) from None
        return sorted(str(_get(m, "id")) for m in (_get(page, "data") or []))

    # -- internals
    def _reserve(self) -> None:
        """Count one logical call, or raise ``budget`` without making any request."""
        cfg = self.cfg
        with self._lock:
            used = self._prompt_tokens + self._completion_tokens
            message = None
            if cfg.max_calls is not None and self._calls >= cfg.max_calls:
                message = (f"LLM call budget exhausted: llm.max_calls={cfg.max_calls} calls made; "
                           "raise llm.max_calls (or set it to null for unlimited)")
            elif cfg.max_tokens_budget is not None and used >= cfg.max_tokens_budget:
                message = (f"LLM token budget exhausted: {used} tokens used of "
                           f"llm.max_tokens_budget={cfg.max_tokens_budget}; raise it "
                           "(or set it to null for unlimited)")
            if message is not None:
                self._errors["budget"] += 1
                raise ChannelError("budget", message)
            self._calls += 1

    def _delay(self, exc: BaseException, k: int) -> float:
        """Backoff before retry ``k``: ``backoff_s * 2**k``, at least a short Retry-After."""
        delay = self.cfg.backoff_s * 2 ** k
        response = getattr(exc, "response", None)
        try:
            retry_after = float(response.headers.get("retry-after"))  # type: ignore[union-attr]
        except (AttributeError, TypeError, ValueError):
            retry_after = 0.0
        return max(delay, min(retry_after, 60.0))

    def _finish(self, response: Any, model: str, attempts: int, latency: float) -> ChatResult:
        """Turn a 200 response into a ChatResult, or raise ``bad_response``."""
        url = safe_url(self.base_url)
        choices = _get(response, "choices")
        if not isinstance(choices, list) or not choices:
            raise ChannelError("bad_response", f"200 from {url} for model '{model}' has no "
                               "'choices' (not an OpenAI chat.completion body); check that "
                               "llm.base_url points at an OpenAI-compatible API root")
        texts: list[str] = []
        reasons: list[str | None] = []
        for choice in choices:
            content = _get(_get(choice, "message"), "content")
            if not isinstance(content, str):
                raise ChannelError("bad_response", f"200 from {url} for model '{model}' has a "
                                   "choice without message content")
            texts.append(content)
            reasons.append(_get(choice, "finish_reason"))
        usage = _get(response, "usage")
        prompt = int(_get(usage, "prompt_tokens") or 0)
        completion = int(_get(usage, "completion_tokens") or 0)
        with self._lock:
            self._ok += 1
            self._prompt_tokens += prompt
            self._completion_tokens += completion
            self._latencies.append(latency)
        return ChatResult(text=texts[0], model=str(_get(response, "model") or model),
                          latency_s=latency, prompt_tokens=prompt, completion_tokens=completion,
                          attempts=attempts, texts=texts, finish_reasons=reasons)

    def _server_detail(self, exc: openai.APIStatusError) -> str:
        """The server's error message, redacted and truncated."""
        body = exc.body
        message = _get(body, "message") if isinstance(body, Mapping) else body
        text = str(message if message else exc.message)
        return self.redact(" ".join(text.split()))[:200]

    def _attempt_error(self, exc: Exception, attempt: Attempt, model: str, attempts: int,
                       limit_s: float | None = None) -> ChannelError:
        """The ChannelError for one failed request (``attempt``: its progress; ``limit_s``: its deadline, s)."""
        too_large = attempt.too_large
        if too_large is None and isinstance(exc, BodyTooLarge):
            too_large = exc
        if too_large is not None:
            size = (f"{too_large.size} bytes (its Content-Length; not read)" if too_large.declared
                    else f"more than {too_large.limit} bytes (reading stopped after {too_large.size})")
            return ChannelError("bad_response", f"the response from {safe_url(self.base_url)} for model "
                                f"'{model}' is {size}, over the channel's limit of {too_large.limit} bytes "
                                "(MAX_RESPONSE_BYTES; a hint answer is well under 1 KiB); not retried: check that "
                                f"the server honours max_tokens (llm.max_tokens={self.cfg.max_tokens}) and that "
                                "llm.base_url is an OpenAI-compatible API",
                                detail="too_large")
        if isinstance(exc, openai.OpenAIError):
            return self._classify(exc, model, attempts, attempt, limit_s)
        return ChannelError("bad_response", self.redact(
            f"unreadable response from {safe_url(self.base_url)} for model "
            f"'{model}': {type(exc).__name__}: {str(exc)[:200]}"))

    def _timeout(self, model: str, tries: str, attempt: Attempt | None, limit_s: float) -> ChannelError:
        """A ``timeout`` saying where the deadline struck (connecting, waiting for headers, mid-body)."""
        url = safe_url(self.base_url)
        setting = f"llm.timeout_s={self.cfg.timeout_s:g}"
        if limit_s != self.cfg.timeout_s:
            setting += f", at most {limit_s:g} s for the models list"
        phase = attempt.phase if attempt is not None else "headers"
        took = attempt.elapsed() if attempt is not None else limit_s
        if phase == "body":
            assert attempt is not None and attempt.headers_at is not None
            of = f" of {attempt.declared_bytes}" if attempt.declared_bytes is not None else ""
            return ChannelError("timeout", f"timed out mid-body after {took:.1f} s (the server sent headers, "
                                f"then the body trickled: {attempt.body_bytes}{of} bytes in "
                                f"{attempt.started + took - attempt.headers_at:.1f} s) from {url} for model "
                                f"'{model}' ({setting} s for the whole request, {tries}); the server is slow, "
                                "overloaded or stalling: raise llm.timeout_s or check the server",
                                detail="body")
        if phase == "connect":
            return ChannelError("timeout", f"timed out connecting to {url} after {took:.1f} s ({setting} s, "
                                f"{tries}); check the host name, port and network, or raise llm.timeout_s",
                                detail="connect")
        return ChannelError("timeout", f"timed out waiting for response headers from {url} for model "
                            f"'{model}' after {took:.1f} s ({setting} s for the whole request, {tries}); the "
                            "server is slow or overloaded: raise llm.timeout_s or check the server",
                            detail="headers")

    def _classify(self, exc: openai.OpenAIError, model: str, attempts: int, attempt: Attempt | None = None,
                  limit_s: float | None = None) -> ChannelError:
        """Map an openai exception to a ChannelError with a what-to-fix message (``attempt``: the failed
        request's progress, when known; ``limit_s``: its deadline, s, default ``llm.timeout_s``)."""
        url = safe_url(self.base_url)
        var = self.cfg.api_key_env
        key = "no key (llm.api_key_env=null)" if var is None else f"the key in ${var}"
        tries = f"after {attempts} attempt{'s' if attempts != 1 else ''}"
        if isinstance(exc, openai.APITimeoutError):
            return self._timeout(model, tries, attempt, self.cfg.timeout_s if limit_s is None else limit_s)
        if isinstance(exc, openai.APIConnectionError):
            chain = _chain_text(exc)
            proxies = [] if is_loopback(self.base_url) else [v for v in PROXY_VARS
                                                             if os.environ.get(v)]
            retried = (f"retried up to llm.max_retries={self.cfg.max_retries} times, each within "
                       f"llm.timeout_s={self.cfg.timeout_s:g} s")
            via = f" (or the proxy named by {', '.join(proxies)})" if proxies else ""
            if attempt is not None and attempt.headers_at is not None:
                of = f" of {attempt.declared_bytes}" if attempt.declared_bytes is not None else ""
                return ChannelError("connection", f"connection dropped mid-body by {url}{via} for model "
                                    f"'{model}' after the headers and {attempt.body_bytes}{of} bytes of the "
                                    f"body ({tries}; {retried}); the server (or a proxy/load balancer) closed "
                                    "it before the answer was complete: check the server's logs and limits",
                                    detail="dropped")
            if proxies:
                return ChannelError("proxy", f"cannot connect to {url} ({tries}) while proxy "
                                    f"variable(s) {', '.join(proxies)} are set; check the proxy, "
                                    "or add the host to NO_PROXY / unset them")
            if "refused" in chain:
                return ChannelError("connection", f"connection refused at {url}: is the server "
                                    "running? (start one with `python -m distill.llm.server`, or "
                                    "set llm.base_url: null for the bundled server)", detail="refused")
            detail = self.redact(chain.split(" | ")[-1])[:160]
            if attempt is not None and attempt.connected:
                return ChannelError("connection", f"connection dropped by {url} for model '{model}' before "
                                    f"the response headers ({tries}; {retried}): {detail}; the server closed "
                                    "it without answering: check the server's logs", detail="dropped")
            return ChannelError("connection", f"cannot connect to {url} ({tries}): {detail}; "
                                "check the host name, port and network")
        if isinstance(exc, openai.APIStatusError):
            status = exc.status_code
            detail = self._server_detail(exc)
            if status == 401:
                return ChannelError("auth", f"401 from {url}: {key} was rejected; "
                                    "check it (a server started with a key needs llm.api_key_env)", status=status)
            if status == 403:
                return ChannelError("auth", f"403 from {url}: {key} may not use "
                                    f"model '{model}' ({detail}); check its permissions",
                                    status=status)
            if status == 404:
                low = detail.lower()
                if exc.code == "model_not_found" or ("model" in low and any(
                        w in low for w in ("not found", "does not exist", "unknown"))):
                    return ChannelError("not_found", f"model '{model}' is unknown to {url}; "
                                        f"available: {self._available()} (set llm.hint_model / "
                                        "llm.judge_model or OPENCLAW_HINT_MODEL)", status=status)
                return ChannelError("bad_url", f"404 from {url}/chat/completions ({detail}): no "
                                    "chat endpoint there; llm.base_url must be the "
                                    "OpenAI-compatible API root, usually ending in /v1",
                                    status=status)
            if status == 429:
                return ChannelError("rate_limit", f"429 from {url} for model '{model}' ({tries}):"
                                    f" rate limited ({detail}); lower llm.max_concurrency, raise "
                                    "llm.backoff_s / llm.max_retries, or check your quota",
                                    status=status)
            if status >= 500:
                return ChannelError("server", f"{status} from {url} for model '{model}' ({tries}):"
                                    f" server error ({detail}); check the server", status=status)
            return ChannelError("client", f"{status} from {url} for model '{model}': {detail}; "
                                "the request was rejected (not retried): check the request "
                                "parameters", status=status)
        return ChannelError("client", self.redact(f"{type(exc).__name__}: {str(exc)[:200]}"))

    def _available(self) -> str:
        """Comma-separated model list from /models, or why it could not be listed."""
        try:
            models = self.list_models()
        except ChannelError as err:
            return f"<could not list /models: {err.kind}>"
        return ", ".join(models) if models else "<none listed>"

    # -- stats / lifetime
    def stats(self) -> dict[str, Any]:
        """Counters: queries (every :meth:`chat` call, refused ones too) = ok + failed; failed = the sum of
        errors_by_kind (budget and circuit-breaker refusals included); breaker_refused (calls refused while
        the circuit breaker was open, no request made); calls (logical calls sent, the ``max_calls`` budget);
        attempts (HTTP requests); tokens, structured_fallbacks, plain_models, breaker_opened (times the
        circuit breaker opened), latency p50/p95 of the successful calls (s; absent before the first)."""
        with self._lock:
            lat = list(self._latencies)
            out = {
                "queries": self._queries,
                "failed": sum(self._errors.values()),
                "breaker_refused": self._errors["unavailable"],
                "calls": self._calls,
                "ok": self._ok,
                "attempts": self._attempts,
                "errors_by_kind": dict(self._errors),
                "prompt_tokens": self._prompt_tokens,
                "completion_tokens": self._completion_tokens,
                "total_tokens": self._prompt_tokens + self._completion_tokens,
                "structured_fallbacks": self._fallbacks,
                "plain_models": sorted(self._plain_models),
                "breaker_opened": self._breaker_opened,
            }

        out.update(latency_percentiles(lat))
        return out

    def close(self) -> None:
        """Close the HTTP client."""
        self._client.close()

    def __enter__(self) -> LLMChannel:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"LLMChannel(base_url={safe_url(self.base_url)!r}, key=***)"


PING = "Reply with the word: pong"


@dataclass
class CheckResult:
    """The outcome for one model."""

    model: str
    ok: bool
    latency_s: float | None
    answer: str
    error_kind: str | None
    message: str


def open_channel(cfg: ChannelConfig, environ: Mapping[str, str] = os.environ
                 ) -> tuple[LLMChannel, HintServer | None]:
    """A channel for ``cfg``; when ``base_url`` is null, also the bundled server it talks to.

    Diagnoses before any request: a bad/doubled base_url (``bad_url``) and, for an explicit
    base_url, a missing key (``key_missing``). The caller closes both (server may be None).
    """
    if cfg.base_url is None:
        server = start_server()
        try:
            key = resolve_api_key(cfg, environ, required=False)
            return LLMChannel(dataclasses.replace(cfg, base_url=server.url), key), server
        except BaseException:
            server.close()
            raise
    validate_base_url(cfg.base_url)
    return LLMChannel(cfg, resolve_api_key(cfg, environ, required=True)), None


def models_of(cfg: ChannelConfig) -> list[str]:
    """Hint and judge model, deduplicated, in that order."""
    return list(dict.fromkeys([cfg.hint_model, cfg.judge]))


def check_models(channel: LLMChannel, models: list[str]) -> list[CheckResult]:
    """One minimal chat call per model on an open ``channel``; never raises ChannelError.

    An answer that repeats the prompt is an echo, not an answer: that model fails the check.
    """
    results: list[CheckResult] = []
    for model in models:
        try:
            res = channel.chat(model, [{"role": "user", "content": PING}], n_tokens=16, temperature=0.0)
        except ChannelError as err:
            results.append(CheckResult(model, False, None, "", err.kind, channel.redact(err.message)))
            continue
        answer = channel.redact(res.text.strip())
        if PING.lower() in answer.lower():
            results.append(CheckResult(model, False, res.latency_s, answer, "bad_response", (
                f"model '{model}' echoed the prompt instead of answering it (a base model without a chat template, "
                "or a server that returns the prompt); use an instruction-tuned model or a server that applies "
                "its chat template")))
            continue
        results.append(CheckResult(model, True, res.latency_s, answer, None, "ok"))
    return results


def ignores_model_names(channel: LLMChannel) -> str | None:
    """Probe once with a model id no server has: a warning when it answers anyway (else None).

    llama.cpp's server answers any name with the one model it loaded, so a typo in llm.hint_model
    would go unnoticed.
    """
    bogus = f"openclaw-no-such-model-{uuid.uuid4().hex[:8]}"
    try:
        channel.chat(bogus, [{"role": "user", "content": PING}], n_tokens=1, temperature=0.0)
    except ChannelError:
        return None
    return (f"the server at {safe_url(channel.base_url)} answered the made-up model id '{bogus}': it ignores model "
            "names (llama.cpp does), so llm.hint_model / llm.judge_model are not checked; make sure it serves the "
            "model you mean")
