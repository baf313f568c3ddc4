"""The LLM channel's one error type: :class:`ChannelError`, with a ``kind`` and a message that says what to fix.

Which failure gets which kind (and its message) is decided by :mod:`coach.llm.diagnosis`; the kinds a
retry may cure are :data:`RETRYABLE_KINDS`.
"""

from __future__ import annotations

ERROR_KINDS = frozenset(
    {"key_missing", "auth", "not_found", "bad_url", "connection", "proxy", "timeout",
     "rate_limit", "server", "bad_response", "budget", "client", "unavailable"}
)
RETRYABLE_KINDS = frozenset({"timeout", "connection", "proxy", "rate_limit", "server"})
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

