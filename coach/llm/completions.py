"""The chat-completion protocol of the bundled hint server: which models it has and what each answers.

No HTTP here (:mod:`coach.llm.server` serves this): :func:`checked_request` validates a
``POST /v1/chat/completions`` body, :func:`completion` builds the OpenAI ``chat.completion`` answer
(supports ``n``, ``seed``, ``temperature``; ``max_tokens`` is accepted and ignored), :func:`models_list` the
``GET /v1/models`` answer. A request the server refuses raises :class:`ChatError`, an OpenAI error body.

Models: ``openclaw-coach`` (deterministic scripted coach: the last user message is a JSON hint
request answered by :func:`coach.llm.coaches.coach_answer`; a non-JSON message gets ``"pong"``) and
the fault models used by tests (see :data:`FAULT_MODELS`; ``fault-random`` is the adversarial coach
:func:`coach.llm.coaches.random_answer`: valid, in-bound, random parameters, always +1). Token counts are rough:
``len(text) // 4 + 1``. Answer faults: ``fault-malformed`` answers unparsable text, ``fault-refuse`` a refusal,
``fault-500`` / ``fault-429`` an error status, ``fault-nochoices`` a body without ``choices``, ``fault-huge``
:data:`HUGE_BYTES` and ``fault-long`` :data:`LONG_BYTES` bytes of text; the transport faults (``fault-slow``,
``fault-trickle``, ``fault-slow-headers``, ``fault-drop``, and how ``fault-huge`` is sent) are the server's.

:class:`ServerQuirks` make the server behave like third-party servers (see :mod:`coach.llm.server`).
"""

from __future__ import annotations

import hashlib
import json
import random
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from coach.llm.coaches import coach_answer, random_answer

COACH_MODEL = "openclaw-coach"
FAULT_MODELS = ("fault-malformed", "fault-slow", "fault-500", "fault-429", "fault-refuse",
                "fault-nochoices", "fault-random", "fault-trickle", "fault-slow-headers", "fault-drop",
                "fault-huge", "fault-long")
MODELS = (COACH_MODEL, *FAULT_MODELS)
PONG = "pong"
HUGE_BYTES = 5 * 1024 * 1024  # fault-huge: size of its answer (bytes)
LONG_BYTES = 64 * 1024  # fault-long: size of its answer (bytes)
MALFORMED_TEXT = "Sure! {decision: maybe"
REFUSAL_TEXT = "I'm sorry, but I can't help with that."
_CREATED = 1_700_000_000


def count_tokens(text: str) -> int:
    """Rough token count: ``len(text) // 4 + 1``."""
    return len(text) // 4 + 1


def _text(content: Any) -> str:
    """Message content as text (string content or OpenAI content parts)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


def _last_user(messages: list[dict]) -> str:
    """Text of the last user message ("" when there is none)."""
    return next((_text(m.get("content")) for m in reversed(messages)
                 if isinstance(m, dict) and m.get("role") == "user"), "")


def coach_reply(messages: list[dict], seed: int | None, temperature: float, index: int,
                answer: Any = coach_answer) -> str:
    """The coach's content for choice ``index``: JSON ``answer(request, rng)`` to a JSON request, else ``pong``.

    The rng is seeded from ``seed`` (or a hash of the request); with ``temperature > 0`` each
    choice adds its index, so the ``n`` choices may differ. Raises ValueError on a bad request.
    """
    user = _last_user(messages)
    try:
        request = json.loads(user)
    except ValueError:
        return PONG
    if not isinstance(request, dict):
        return PONG
    base = seed if seed is not None else int(hashlib.sha256(user.encode()).hexdigest()[:12], 16)
    rng = random.Random(base + index if temperature > 0 else base)
    try:
        reply = answer(request, rng)
    except Exception as exc:  # noqa: BLE001 - reported to the client as a 400
        raise ValueError(f"invalid hint request: {type(exc).__name__}: {exc}") from exc
    return json.dumps(reply, sort_keys=True)


@dataclass(frozen=True)
class ServerQuirks:
    """How far the server departs from OpenAI's API (:mod:`coach.llm.server`); the defaults do not."""

    response_format: bool = True  # accept requests with a response_format (False: 400 for them)
    echo: bool = False  # answer with the last user message
    any_model: bool = False  # answer unknown model ids with the coach
    without_v1: bool = False  # also serve the API without the /v1 prefix


class ChatError(Exception):
    """A request the server refuses: the HTTP ``status`` and the OpenAI error body's message, type and code."""

    def __init__(self, status: int, message: str, type_: str, code: str | None,
                 headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.type, self.code, self.headers = status, message, type_, code, headers


@dataclass(frozen=True)
class ChatRequest:
    """A valid chat request: the model that answers it (``COACH_MODEL`` for an unknown one with ``any_model``)."""

    model: str
    messages: list = field(default_factory=list)
    n: int = 1
    seed: int | None = None
    temperature: float = 1.0


def models_list() -> dict[str, Any]:
    """The ``GET /v1/models`` answer: every model of :data:`MODELS`."""
    return {"object": "list", "data": [
        {"id": m, "object": "model", "created": _CREATED, "owned_by": "openclaw"}
        for m in MODELS]}


def checked_request(req: Any, model: Any, quirks: ServerQuirks) -> ChatRequest:
    """The request ``req`` (a parsed JSON body; ``model``: its ``model``) if the server answers it; else raises
    :class:`ChatError` (400: malformed, or a ``response_format`` the quirks refuse; 404: unknown model; the
    error statuses of ``fault-500`` and ``fault-429``)."""
    bad = "invalid_request_error"
    if not isinstance(req, dict) or not isinstance(model, str):
        raise ChatError(400, "body must be a JSON object with 'model' and 'messages'", bad, None)
    messages = req.get("messages")
    n = req.get("n") or 1
    seed = req.get("seed")
    temperature = req.get("temperature", 1.0)
    if (not isinstance(messages, list) or not isinstance(n, int) or not 1 <= n <= 16
            or not (seed is None or isinstance(seed, int))
            or not isinstance(temperature, (int, float))):
        raise ChatError(400, "'messages' must be a list, 'n' an integer in 1..16, 'seed' an "
                        "integer, 'temperature' a number", bad, None)
    if req.get("response_format") is not None and not quirks.response_format:
        raise ChatError(400, "Unrecognized request argument supplied: response_format", bad, None)
    if model not in MODELS and quirks.any_model:
        model = COACH_MODEL
    if model not in MODELS:
        raise ChatError(404, f"The model '{model}' does not exist or you do not have access "
                        "to it.", bad, "model_not_found")
    if model == "fault-500":
        raise ChatError(500, "The server had an error while processing your request.", "server_error", None)
    if model == "fault-429":
        raise ChatError(429, "Rate limit reached; retry later.", "requests", "rate_limit_exceeded",
                        headers={"Retry-After": "0"})
    return ChatRequest(model, messages, n, seed, temperature)


def completion(request: ChatRequest, echo: bool = False) -> dict[str, Any]:
    """The OpenAI ``chat.completion`` body answering ``request`` (``echo``: every choice is the last user
    message); raises :class:`ChatError` (400) for a hint request the coach cannot answer."""
    model, messages, n = request.model, request.messages, request.n
    try:
        if echo:
            contents = [_last_user(messages)] * n
        elif model == "fault-malformed":
            contents = [MALFORMED_TEXT] * n
        elif model == "fault-refuse":
            contents = [REFUSAL_TEXT] * n
        elif model in ("fault-huge", "fault-long"):
            size = HUGE_BYTES if model == "fault-huge" else LONG_BYTES
            contents = [("long answer " * (size // 12 + 1))[:size]] * n
        else:
            answer = random_answer if model == "fault-random" else coach_answer
            contents = [coach_reply(messages, request.seed, float(request.temperature), i, answer) for i in range(n)]
    except ValueError as exc:
        raise ChatError(400, str(exc), "invalid_request_error", None) from None
    prompt = count_tokens("".join(_text(m.get("content")) for m in messages
                                  if isinstance(m, dict)))
    answered = sum(count_tokens(c) for c in contents)
    body: dict[str, Any] = {
        "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "system_fingerprint": "openclaw-hint",
        "usage": {"prompt_tokens": prompt, "completion_tokens": answered,
                  "total_tokens": prompt + answered},
    }
    if model != "fault-nochoices":
        body["choices"] = [{"index": i, "message": {"role": "assistant", "content": c},
                            "finish_reason": "stop", "logprobs": None}
                           for i, c in enumerate(contents)]
    return body
