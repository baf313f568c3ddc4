"""Whole-request deadlines and a body cap for the channel's HTTP client.

httpx's timeouts (and those of httpx2, which recent ``openai`` releases use) bound each socket
operation, not a request: a server that sends one byte a second never trips a 5 s read timeout, in
its headers or its body, so one request could last for ever. :func:`install` makes every request of
one ``openai.DefaultHttpxClient`` honour a deadline instead:

* its connection pools (the direct one and each proxy's) get a network back end whose streams clamp
  every connect, TLS handshake, read and write to the time left before the deadline of the request
  running in that thread (:func:`request_deadline`), and fail it with the HTTP core's own
  ``ConnectTimeout`` / ``ReadTimeout`` / ``WriteTimeout`` once none is left. The openai client turns
  these into ``APITimeoutError`` as for any timeout. The call returns in the calling thread at the
  deadline: no worker thread, nothing left running, and the HTTP core closes the cut connection.
* a response hook notes when the headers came, refuses a body whose ``Content-Length`` is over the
  limit before reading it, and counts the body's bytes as they are read (:class:`BodyTooLarge` past
  the limit), so the channel never holds more than ``max_bytes`` of one answer. Requests ask for
  ``Accept-Encoding: identity``, so the limit also bounds the decoded body.

:class:`Attempt` keeps the request's progress (connected, headers, body bytes) so that the channel can
say what happened: timed out connecting, waiting for the headers, or mid-body; or the connection
dropped mid-body. Without an active :func:`request_deadline` (a request made outside the channel) the
client behaves as before.

The pools' back end is a private attribute of the HTTP core (``ConnectionPool._network_backend``,
httpcore >= 0.17 and httpcore2); :func:`install` raises RuntimeError when it is missing rather than run
without a deadline.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

_local = threading.local()


class BodyTooLarge(Exception):
    """A response body over the request's ``max_bytes`` (its size, or the bytes read so far, in ``size``)."""

    def __init__(self, size: int, limit: int, declared: bool) -> None:
        super().__init__(f"response body of {'' if declared else 'more than '}{size} bytes is over the limit "
                         f"of {limit} bytes")
        self.size, self.limit, self.declared = size, limit, declared


@dataclass
class Attempt:
    """The deadline and progress of one HTTP request: times in s (``time.monotonic``), sizes in bytes."""

    timeout_s: float  # the whole request, connect to last body byte
    max_bytes: int  # the most body bytes read
    started: float = field(default_factory=time.monotonic)
    connected: bool = False  # a connection was opened or used (a write or read happened)
    headers_at: float | None = None  # when the response headers had come
    declared_bytes: int | None = None  # the response's Content-Length, if any
    body_bytes: int = 0  # body bytes read so far (as sent, before decoding)
    too_large: BodyTooLarge | None = None  # set when the body went over ``max_bytes``

    def remaining(self) -> float:
        """Seconds left before the deadline (<= 0 once it passed)."""
        return self.started + self.timeout_s - time.monotonic()

    def elapsed(self) -> float:
        """Seconds since the request started."""
        return time.monotonic() - self.started

    @property
    def phase(self) -> str:
        """``connect`` (no connection yet), ``headers`` (waiting for them) or ``body``."""
        if self.headers_at is not None:
            return "body"
        return "headers" if self.connected else "connect"


def current() -> Attempt | None:
    """The request running in this thread under :func:`request_deadline`, or None."""
    return getattr(_local, "attempt", None)


@contextmanager
def request_deadline(timeout_s: float, max_bytes: int) -> Iterator[Attempt]:
    """Run one request of an installed client in this block with a deadline of ``timeout_s`` s from now and a
    body limit of ``max_bytes`` bytes; yields its :class:`Attempt` (read it after the block)."""
    state = Attempt(float(timeout_s), int(max_bytes))
    previous = current()
    _local.attempt = state
    try:
        yield state
    finally:
        _local.attempt = previous


def _clamp(timeout: float | None, error: type[Exception], what: str) -> float | None:
    """``timeout`` cut to the time left of this thread's request; raise ``error`` when none is left."""
    state = current()
    if state is None:
        return timeout
    left = state.remaining()
    if left <= 0.0:
        raise error(f"whole-request deadline of {state.timeout_s:g} s passed while {what}")
    return left if timeout is None else min(timeout, left)


class _Stream:
    """A network stream of the HTTP core whose operations end at the request's deadline."""

    def __init__(self, inner: Any, core: Any) -> None:
        self._inner, self._core = inner, core

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        timeout = _clamp(timeout, self._core.ReadTimeout, "reading")
        _mark_connected()
        return self._inner.read(max_bytes, timeout)

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        timeout = _clamp(timeout, self._core.WriteTimeout, "writing")
        _mark_connected()
        self._inner.write(buffer, timeout)

    def close(self) -> None:
        self._inner.close()

    def start_tls(self, ssl_context: Any, server_hostname: str | None = None,
                  timeout: float | None = None) -> _Stream:
        timeout = _clamp(timeout, self._core.ConnectTimeout, "in the TLS handshake")
        return _Stream(self._inner.start_tls(ssl_context, server_hostname, timeout), self._core)

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class _Backend:
    """The HTTP core's network back end with :class:`_Stream` streams (connects end at the deadline too)."""

    def __init__(self, inner: Any, core: Any) -> None:
        self._inner, self._core = inner, core

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, **kwargs: Any) -> _Stream:
        timeout = _clamp(timeout, self._core.ConnectTimeout, "connecting")
        return _Stream(self._inner.connect_tcp(host, port, timeout=timeout, **kwargs), self._core)

    def connect_unix_socket(self, path: str, timeout: float | None = None, **kwargs: Any) -> _Stream:
        timeout = _clamp(timeout, self._core.ConnectTimeout, "connecting")
        return _Stream(self._inner.connect_unix_socket(path, timeout=timeout, **kwargs), self._core)

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def _mark_connected() -> None:
    state = current()
    if state is not None:
        state.connected = True


_CAPPED: dict[type, type] = {}


def _capped_stream(stream: Any, state: Attempt) -> Any:
    """``stream`` (an httpx ``SyncByteStream``) counting its bytes into ``state`` and stopping past the limit."""
    base = next((c for c in type(stream).__mro__ if c.__name__ == "SyncByteStream"), None)
    if base is None:
        raise RuntimeError(f"cannot cap the response body: {type(stream).__name__} is not a SyncByteStream")
    cls = _CAPPED.get(base)
    if cls is None:
        def __init__(self: Any, inner: Any, attempt: Attempt) -> None:
            self._inner, self._attempt = inner, attempt

        def __iter__(self: Any) -> Iterator[bytes]:
            attempt = self._attempt
            for chunk in self._inner:
                attempt.body_bytes += len(chunk)
                if attempt.body_bytes > attempt.max_bytes:
                    attempt.too_large = BodyTooLarge(attempt.body_bytes, attempt.max_bytes, declared=False)
                    raise attempt.too_large
                yield chunk

        def close(self: Any) -> None:
            self._inner.close()

        cls = _CAPPED[base] = type("CappedStream", (base,), {"__init__": __init__, "__iter__": __iter__,
                                                             "close": close})
    return cls(stream, state)


def _on_request(request: Any) -> None:
    """Ask for the body as it is (no compression), so that the byte limit bounds what is decoded."""
    if current() is not None:
        request.headers["Accept-Encoding"] = "identity"


def _on_response(response: Any) -> None:
    """Note the headers' arrival; refuse or cap the body (:class:`BodyTooLarge`)."""
    state = current()
    if state is None:
        return
    state.headers_at = time.monotonic()
    state.body_bytes = 0
    try:
        state.declared_bytes = int(response.headers.get("content-length"))
    except (TypeError, ValueError):
        state.declared_bytes = None
    if state.declared_bytes is not None and state.declared_bytes > state.max_bytes:
        state.too_large = BodyTooLarge(state.declared_bytes, state.max_bytes, declared=True)
        raise state.too_large
    response.stream = _capped_stream(response.stream, state)


def install(client: Any) -> Any:
    """Give every connection pool of the httpx ``client`` (direct and proxies) the deadline back end, and
    add the request/response hooks; returns ``client``. Raises RuntimeError when the client's HTTP core
    has no pluggable network back end."""
    transports = [client._transport, *(t for t in client._mounts.values() if t is not None)]
    for transport in transports:
        pool = getattr(transport, "_pool", None)
        backend = getattr(pool, "_network_backend", None)
        if backend is None:
            raise RuntimeError(f"cannot bound LLM requests by llm.timeout_s: {type(transport).__name__} has no "
                               "connection pool with a network back end (an httpx/httpcore this channel does "
                               "not know)")
        if not isinstance(backend, _Backend):
            core = sys.modules[type(pool).__module__.split(".")[0]]
            pool._network_backend = _Backend(backend, core)
    hooks = client.event_hooks
    client.event_hooks = {"request": [*hooks.get("request", []), _on_request],
                          "response": [*hooks.get("response", []), _on_response]}
    return client
