"""The LLM as a proposer: hints asked of the unified key channel (also the bundled offline coach).

:class:`LLMProposer` is a :class:`coach.proposals.Proposer`: :class:`coach.proposals.ProposalService`
runs it in the background, verifies what it proposes and records it. One proposal asks ``m`` answers of
the hint model (``llm.num_answers``) and takes their vote (:func:`coach.llm.hints.vote`; with a
``judge_model`` the judge votes on the hint model's first proposal). Answers are cached by
:func:`coach.llm.hints.prompt_hash` of (model, messages, sampling), so a repeated prompt makes no
request. Its record fields (the service's records file) are the answers (redacted by the channel, so no key
can leak; an answer over :data:`RECORD_TEXT_BYTES` bytes is cut there and marked ``…[truncated, N bytes]``,
with ``"truncated": true`` and its length in ``text_bytes``), votes and clipped names;
:meth:`LLMProposer.load_records` pre-fills the cache from such a file: a run's hints can be replayed with
no LLM at all (``channel=None``; a truncated answer is not replayed).

Counters (:meth:`LLMProposer.stats`): cache_hits, parse_errors, timeouts, errors, budget_exhausted,
circuit_open (answers refused while the channel's circuit breaker is open; also as breaker_refused), calls
(answers asked of the channel) = calls_ok + calls_failed (every failed call: timeouts, errors,
budget_exhausted and circuit_open together), requests (HTTP requests, retries included), tokens,
structured_fallbacks (models asked in plain text after rejecting ``response_format``).
"""

from __future__ import annotations

import json
import math
import threading
from collections import Counter
from pathlib import Path
from typing import Any

from coach.llm.client import LLMChannel
from coach.llm.errors import ChannelError
from coach.llm.hints import (HintParseError, ParsedHint, build_messages, parse_answer, prompt_hash,
                               response_format, vote)
from coach.llm.settings import ChannelConfig
from coach.proposals import ParameterSchema, Proposal, Verification

RECORD_TEXT_BYTES = 4096  # the most bytes of one answer's text written to the records (UTF-8)


def capped_text(text: str, limit: int = RECORD_TEXT_BYTES) -> tuple[str, int | None]:
    """``(text, None)`` when ``text`` is at most ``limit`` bytes (UTF-8), else its first ``limit`` bytes (whole
    characters) followed by ``…[truncated, N bytes]`` and ``N``, its length in bytes."""
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text, None
    return f"{data[:limit].decode('utf-8', 'ignore')}…[truncated, {len(data)} bytes]", len(data)


class LLMProposer:
    """Proposals from the hint model's voted answers (module docstring).

    Args:
        channel: the LLM channel, or None to answer only from the cache (replay).
        cfg: channel settings (models, sampling, ``num_answers`` = m, ``max_concurrency``).
        schema: the env's parameter schema (validation and clipping of the answers).
        name: the proposer's name in the records (``llm``; ``coach`` for the bundled coach).
    """

    def __init__(self, channel: LLMChannel | None, cfg: ChannelConfig, schema: ParameterSchema,
                 name: str = "llm") -> None:
        self.channel, self.cfg, self.schema, self.name = channel, cfg, schema, name
        self.workers = cfg.max_concurrency
        self._lock = threading.Lock()
        self._cache: dict[str, str] = {}
        self._counts: Counter[str] = Counter()

    @property
    def patience_s(self) -> float:
        """One attempt's time, retries included: ``llm.timeout_s * (llm.max_retries + 1)``."""
        return self.cfg.timeout_s * (self.cfg.max_retries + 1)

    def propose(self, key: str, request: dict[str, Any]) -> Proposal:
        messages = build_messages(request)
        m = self.cfg.num_answers
        structured = response_format(request, self.cfg.structured_output)
        answers = [self._answer(self.cfg.hint_model, messages, i, structured) for i in range(m)]
        parsed = [self._parse(text) for text, _ in answers]
        if self.cfg.judge != self.cfg.hint_model:  # the judge votes on the hint model's first proposal
            proposal = next((p for p in parsed if p is not None and p.decision == 1), None)
            if proposal is None:
                result = vote([None] * m, m)
            else:
                judge_messages = build_messages({**request, "proposal": proposal.params})
                answers += [self._answer(self.cfg.judge, judge_messages, i, structured) for i in range(m)]
                verdicts = [self._parse(text) for text, _ in answers[m:]]
                result = vote([_with_params(v, proposal) for v in verdicts], m, self.schema.integers)
        else:
            result = vote(parsed, m, self.schema.integers)
        advice = next((p.hint for p in parsed if p is not None and p.decision == 1), "")
        record = {"model": self.cfg.hint_model, "judge": self.cfg.judge, "prompt_hash": answers[0][1]["hash"],
                  "answers": [entry for _, entry in answers], "votes": result.votes,
                  "clipped": sorted({name for p in parsed if p is not None for name in p.clipped})}
        return Proposal(result.accepted, result.params, result.reason, advice, record)

    def tell(self, key: str, proposal: Proposal, verification: Verification | None) -> None:
        """Nothing: the model hears the simulator's verdicts in the next requests (``simulator_checks``)."""

    def stats(self) -> dict[str, float]:
        with self._lock:
            counts = dict(self._counts)
        out = {k: float(counts.get(k, 0)) for k in (
            "cache_hits", "parse_errors", "timeouts", "errors", "budget_exhausted", "circuit_open",
            "calls", "calls_ok", "calls_failed")}
        out["breaker_refused"] = out["circuit_open"]
        channel = self.channel.stats() if self.channel is not None else {}
        out["structured_fallbacks"] = float(channel.get("structured_fallbacks", 0))
        out["requests"] = float(channel.get("attempts", 0))  # HTTP requests, retries included
        out["tokens"] = float(channel.get("total_tokens", 0))
        return out

    def warning(self) -> str | None:
        """When most answers asked of the LLM timed out: how many, the latency measured and the setting to raise."""
        if self.channel is None:
            return None
        channel = self.channel.stats()
        with self._lock:
            timeouts = self._counts["timeouts"]
        calls = channel["calls"]
        if calls < 4 or 2 * timeouts <= calls:
            return None
        limit, p50, p95 = self.cfg.timeout_s, channel.get("latency_p50_s"), channel.get("latency_p95_s")
        measured = (f"the answers that came took p50 {p50:.1f} s, p95 {p95:.1f} s" if p50 is not None
                    else f"no answer came within {limit:g} s")
        suggest = math.ceil(max(2 * limit, 2 * (p95 or 0.0)))
        return (f"{timeouts} of {calls} LLM calls timed out ({measured}; llm.timeout_s={limit:g}): raise "
                f"llm.timeout_s (e.g. llm.timeout_s={suggest}) or use a faster server")

    def load_records(self, path: Path) -> int:
        """Pre-fill the cache with the answers recorded in ``path`` (truncated ones are not the answers: skipped);
        returns how many were loaded."""
        loaded = 0
        for line in path.read_text().splitlines():
            for answer in json.loads(line).get("answers", []):
                if answer.get("text") is not None and not answer.get("truncated"):
                    self._cache[answer["hash"]] = answer["text"]
                    loaded += 1
        return loaded

    def _answer(self, model: str, messages: list[dict[str, str]], index: int,
                structured: dict[str, Any] | None) -> tuple[str | None, dict[str, Any]]:
        """(text or None, record entry) for the ``index``-th sampled answer; errors are counted, never raised."""
        sampling = {"temperature": self.cfg.temperature, "max_tokens": self.cfg.max_tokens, "seed": index}
        key = prompt_hash(model, messages, sampling)
        entry: dict[str, Any] = {"model": model, "hash": key}
        with self._lock:
            cached = self._cache.get(key)
            if cached is not None:
                self._counts["cache_hits"] += 1
        if cached is not None:
            return cached, {**entry, **_recorded(cached), "cached": True}
        if self.channel is None:
            return None, {**entry, "text": None, "error": "replay: not in the records"}
        with self._lock:
            self._counts["calls"] += 1
        try:
            result = self.channel.chat(model, messages, n_tokens=self.cfg.max_tokens,
                                       temperature=self.cfg.temperature, seed=index, response_format=structured)
        except ChannelError as err:
            kind = {"timeout": "timeouts", "budget": "budget_exhausted", "unavailable": "circuit_open"}.get(
                err.kind, "errors")
            with self._lock:
                self._counts[kind] += 1
                self._counts["calls_failed"] += 1
            return None, {**entry, "text": None, "error": err.kind}
        with self._lock:
            self._counts["calls_ok"] += 1
            self._cache[key] = result.text
        return result.text, {**entry, **_recorded(self.channel.redact(result.text)),
                             "latency_s": round(result.latency_s, 4)}

    def _parse(self, text: str | None) -> ParsedHint | None:
        if text is None:
            return None
        try:
            return parse_answer(text, self.schema)
        except HintParseError:
            with self._lock:
                self._counts["parse_errors"] += 1
            return None


def _recorded(text: str) -> dict[str, Any]:
    """The records fields of one answer's ``text``: ``text``, capped (:func:`capped_text`), and when it was cut
    ``truncated`` and ``text_bytes`` (its length, bytes)."""
    shown, size = capped_text(text)
    return {"text": shown} if size is None else {"text": shown, "truncated": True, "text_bytes": size}


def _with_params(verdict: ParsedHint | None, proposal: ParsedHint) -> ParsedHint | None:
    """A judge's verdict carries the proposal's parameters (the judge votes, it does not tune)."""
    if verdict is None:
        return None
    return ParsedHint(verdict.decision, proposal.params, verdict.confidence, verdict.hint, proposal.clipped)
