"""The hint protocol: what the adaptive teacher asks an LLM, and how its answers are checked and voted on.

A *hint* is a small structured object, never an action stream: the LLM reads a compact JSON summary
of a recent episode segment and proposes parameters for a scripted controller. The request (the last
user message) is one JSON object::

    {"task": "quadruped", "schema": {"frequency_hz": [1.0, 4.0], ...}, "params": {...current...},
     "summary": {...segment statistics...}, "outcome": {...}}

and every answer must be exactly one JSON object::

    {"decision": 1 | -1, "hint": "<short reason>", "params": {<name>: <number>, ...}, "confidence": 0..1}

``decision = +1`` means "teach with these parameters", ``-1`` means "no useful guidance for this
segment" (the student needs no teacher, or the coach does not know). Each of the ``m`` answers is
validated (:func:`parse_answer`): unknown parameter names or non-numbers reject the answer,
out-of-bound numbers are clipped and flagged. :func:`vote` accepts a hint only when a strict majority
of all ``m`` answers are valid and say ``+1``; the accepted parameters are the per-parameter median of
those answers. Anything else leaves the segment without a teacher (masked, never guessed).
"""

from __future__ import annotations

import hashlib
import json
import math
import statistics
from dataclasses import dataclass, field
from typing import Any

from coach.proposals import ParameterSchema

SYSTEM_PROMPT = (
    "You coach a robot-learning student by tuning the parameters of a scripted controller that serves as "
    "its teacher. The user message is a JSON object: task, schema (parameter name -> [low, high]), params "
    "(current values), summary (statistics of the student's last episode segment) and outcome. Reply with "
    "ONLY one JSON object, no prose, no code fences: "
    '{"decision": 1 or -1, "hint": "<one short sentence>", "params": {"<name>": <number>, ...}, '
    '"confidence": <number in [0, 1]>}. decision 1 = the teacher should demonstrate with these params; '
    "-1 = no guidance needed or possible for this segment. Only use names from schema and stay within bounds."
)


def build_request(schema: ParameterSchema, params: dict[str, Any], summary: dict[str, Any],
                  outcome: dict[str, Any]) -> dict[str, Any]:
    """The JSON object sent as the user message (compact statistics only, no per-step arrays)."""
    return {"task": schema.task, "schema": schema.as_json(), "params": _jsonable(params),
            "summary": _jsonable(summary), "outcome": _jsonable(outcome)}


def build_messages(request: dict[str, Any]) -> list[dict[str, str]]:
    """Chat messages for a request: the protocol as the system message, the request as compact JSON."""
    return [{"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": json.dumps(request, sort_keys=True, separators=(",", ":"))}]


def response_format(request: dict[str, Any], mode: str) -> dict[str, Any] | None:
    """The OpenAI ``response_format`` asking for an answer to ``request`` (``llm.structured_output``).

    ``json_schema``: the answer object's JSON schema, with each parameter's bounds (and, for a list
    value, its length taken from the current parameters); ``json_object``: any JSON object; ``off``: None.
    """
    if mode == "off":
        return None
    if mode == "json_object":
        return {"type": "json_object"}
    params = {}
    for name, (lo, hi) in request["schema"].items():
        number = {"type": "number", "minimum": lo, "maximum": hi}
        current = request["params"].get(name)
        params[name] = ({"type": "array", "items": number, "minItems": len(current), "maxItems": len(current)}
                        if isinstance(current, list) else number)
    schema = {
        "type": "object",
        "properties": {
            "decision": {"type": "integer", "enum": [1, -1]},
            "hint": {"type": "string"},
            "params": {"type": "object", "properties": params, "additionalProperties": False},
            "confidence": {"type": "number", "minimum": 0, "maximum": 1},
        },
        "required": ["decision", "hint", "params", "confidence"],
        "additionalProperties": False,
    }
    return {"type": "json_schema", "json_schema": {"name": "hint_answer", "schema": schema}}


def prompt_hash(model: str, messages: list[dict[str, str]], sampling: dict[str, Any]) -> str:
    """Cache key: SHA-256 of (model, messages, sampling parameters), hex."""
    blob = json.dumps([model, messages, sampling], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()


@dataclass
class ParsedHint:
    """One validated answer. ``clipped`` names the parameters that were out of bounds and clipped."""

    decision: int
    params: dict[str, Any]
    confidence: float
    hint: str
    clipped: list[str] = field(default_factory=list)


class HintParseError(ValueError):
    """An answer that does not follow the protocol (the reason is the message)."""


def parse_answer(text: str, schema: ParameterSchema) -> ParsedHint:
    """Validate one raw answer against the protocol and ``schema``; raise :class:`HintParseError`."""
    try:
        obj = json.loads(text)
    except (TypeError, json.JSONDecodeError) as err:
        raise HintParseError(f"not a JSON object: {err}") from None
    if not isinstance(obj, dict):
        raise HintParseError("not a JSON object")
    missing = {"decision", "params", "confidence"} - set(obj)
    if missing:
        raise HintParseError(f"missing key(s) {sorted(missing)}")
    decision = obj["decision"]
    if isinstance(decision, bool) or decision not in (1, -1):
        raise HintParseError(f"decision={decision!r} must be 1 or -1")
    confidence = obj["confidence"]
    if not _is_number(confidence) or not 0.0 <= confidence <= 1.0:
        raise HintParseError(f"confidence={confidence!r} must be a number in [0, 1]")
    if not isinstance(obj["params"], dict):
        raise HintParseError("params must be an object")
    unknown = sorted(set(obj["params"]) - set(schema.bounds))
    if unknown:
        raise HintParseError(f"unknown parameter(s) {unknown}")
    params, clipped = {}, []
    for name, value in obj["params"].items():
        params[name], was_clipped = _clip(name, value, schema)
        if was_clipped:
            clipped.append(name)
    return ParsedHint(int(decision), params, float(confidence), str(obj.get("hint", ""))[:200], clipped)


def _clip(name: str, value: Any, schema: ParameterSchema) -> tuple[Any, bool]:
    lo, hi = schema.bounds[name]
    values = value if isinstance(value, list) else [value]
    if not values or not all(_is_number(v) for v in values):
        raise HintParseError(f"{name}={value!r} must be a finite number (or a list of them)")
    out = [min(max(float(v), lo), hi) for v in values]
    if name in schema.integers:
        out = [float(round(v)) for v in out]
    clipped = any(o != float(v) for o, v in zip(out, values))
    if name in schema.integers:
        out = [int(v) for v in out]
    return (out if isinstance(value, list) else out[0]), clipped


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


@dataclass
class Vote:
    """The outcome of ``m`` answers: ``accepted`` hints carry the merged ``params``."""

    accepted: bool
    params: dict[str, Any]
    votes: list[int | None]  # per answer: +1, -1, or None when the answer was invalid
    reason: str


def vote(answers: list[ParsedHint | None], m: int, integers: frozenset[str] = frozenset()) -> Vote:
    """Accept when more than half of all ``m`` answers are valid and say +1; merge by per-key median.

    Names in ``integers`` (whole-number parameters) take the lower median, a value one answer gave: the median
    of an even count (3 and 20 -> 11.5) would be no valid parameter."""
    votes = [a.decision if a is not None else None for a in answers]
    yes = [a for a in answers if a is not None and a.decision == 1]
    if 2 * len(yes) <= m:
        return Vote(False, {}, votes, f"{len(yes)} of {m} answers accepted (need > {m // 2})")
    merged: dict[str, Any] = {}
    for name in sorted({k for a in yes for k in a.params}):
        values = [a.params[name] for a in yes if name in a.params]
        median = statistics.median_low if name in integers else statistics.median
        if isinstance(values[0], list):
            merged[name] = [median(v[i] for v in values) for i in range(len(values[0]))]
        else:
            merged[name] = median(values)
    return Vote(True, merged, votes, f"{len(yes)} of {m} answers accepted")


def _jsonable(value: Any) -> Any:
    """Numbers rounded to 4 significant digits, tuples/arrays to lists: short, stable prompts."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if hasattr(value, "tolist"):
        return _jsonable(value.tolist())
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, (int, float)):
        return float(f"{value:.4g}") if isinstance(value, float) else value
    return str(value)
