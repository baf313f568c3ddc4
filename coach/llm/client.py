"""The LLM channel's client: one ``openai.OpenAI`` client for an OpenAI-compatible endpoint, with our own
retry/backoff, a bound on in-flight requests, call/token budgets, a circuit breaker and thread-safe statistics.

:func:`open_channel` opens one for an ``llm`` config (:class:`coach.llm.settings.ChannelConfig`), starting
the bundled server (:mod:`coach.llm.server`) when ``base_url`` is null. Every failure is a
:class:`coach.llm.errors.ChannelError` whose message says what to fix (:mod:`coach.llm.diagnosis`).

Deadline: every HTTP request (each attempt of a chat call, the models list) must be over within
``llm.timeout_s`` s, from connecting to the body's last byte, however slowly the server trickles its
headers or body (:mod:`coach.llm.deadline`; httpx's own timeouts bound each socket read only). A
timeout names where it struck (``detail``: ``connect``, ``headers`` or ``body``). A connection closed
mid-answer is ``connection`` with ``detail="dropped"`` (retried), not "cannot connect". No response body
over :data:`MAX_RESPONSE_BYTES` bytes is read (``bad_response``, ``detail="too_large"``).

Secrets rule: the key never appears in a message, log line, exception or record; anything built
from server text goes through ``LLMChannel.redact`` (:class:`coach.llm.settings.Redactor`).

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
from collections import Counter, deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import openai

from coach.llm.deadline import install, request_deadline
from coach.llm.diagnosis import Diagnosis
from coach.llm.errors import RETRYABLE_KINDS, ChannelError
from coach.llm.server import HintServer, start_server
from coach.llm.settings import (NO_KEY, ChannelConfig, Redactor, check_settings, is_loopback, resolve_api_key,
                                  safe_url, validate_base_url)
from coach.proposals import latency_percentiles

MAX_BREAKER_PAUSE_S = 600.0
MAX_RESPONSE_BYTES = 1024 * 1024  # the most bytes of one response body the channel reads (a hint answer is < 1 KiB)
MODELS_TIMEOUT_S = 5.0  # the models list's deadline, s, when llm.timeout_s is longer (it only helps a diagnosis)


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


class LLMChannel:
    """Thread-safe chat client for one OpenAI-compatible endpoint (see module docstring)."""

    def __init__(self, cfg: ChannelConfig, api_key: str) -> None:
        self.cfg = cfg
        self.base_url = validate_base_url(cfg.base_url)
        self.redact = Redactor(api_key)  # ``redact(text)``: ``text`` with the API key replaced by ``***``
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
        self._diagnosis = Diagnosis(cfg, self.base_url, self.redact)

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
                err = self._diagnosis.of(failure, attempt, model, attempts, self.list_models)
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
            raise self._diagnosis.of(failure, attempt, "<models>", 1, self.list_models, limit) from None
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


def open_channel(cfg: ChannelConfig, environ: Mapping[str, str] = os.environ
                 ) -> tuple[LLMChannel, HintServer | None]:
    """A channel for ``cfg``; when ``base_url`` is null, also the bundled server it talks to.

    Diagnoses before any request (:func:`coach.llm.settings.check_settings`). The caller closes both (server
    may be None).
    """
    if cfg.base_url is None:
        server = start_server()
        try:
            key = resolve_api_key(cfg, environ, required=False)
            return LLMChannel(dataclasses.replace(cfg, base_url=server.url), key), server
        except BaseException:
            server.close()
            raise
    check_settings(cfg, environ)
    return LLMChannel(cfg, resolve_api_key(cfg, environ, required=True)), None


