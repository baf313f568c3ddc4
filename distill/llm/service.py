"""Asynchronous hint queries: never in the training loop's way.

:class:`HintService` runs each query (``m`` answers, a vote) on a small thread pool and hands back
the outcome when it is ready; training only ever calls the non-blocking :meth:`HintService.submit`
and :meth:`HintService.poll`. At most one query per env is in flight (a new segment whose env still
waits is skipped and counted). Answers are cached by :func:`distill.llm.hints.prompt_hash` of (model,
messages, sampling), so a repeated prompt makes no request. Every query is written as one JSON line
to the records file (answers redacted by the channel, so no key can leak; an answer over
:data:`RECORD_TEXT_BYTES` bytes is cut there and marked ``…[truncated, N bytes]``, with ``"truncated": true``
and its length in ``text_bytes``), and :meth:`HintService.load_records` pre-fills the cache from such a
file: a run's hints can be replayed with no LLM at all (``channel=None``; a truncated answer is not
replayed).

Verification: with a ``verifier`` (a callable built by the caller, which knows envs and
controllers), a hint the vote accepted is checked before it is handed back: ``verifier(current
params, proposed params, start_obs)`` returns a :class:`Verification`; when it does not adopt the
proposal the outcome keeps the current parameters (``params == {}``) and says why; a proposal that
changes nothing is not checked (``unchanged``). The last :data:`RECENT_CHECKS` verdicts (hint text,
changes, adopted, score gain) go with every later request as ``simulator_checks``, so that the model
can learn what the simulator accepts. It runs on the
hint thread; its CPU time is measured and bounded by ``verify_budget_s_per_min`` (CPU seconds per
minute of wall time, a token bucket): over budget, the current parameters are kept unchecked.

Counters (:meth:`HintService.stats`, logged under ``hints/``): queries, requests, cache_hits,
parse_errors, timeouts, errors, budget_exhausted, circuit_open (answers refused while the channel's
circuit breaker is open; also as breaker_refused), calls (answers asked of the channel) = calls_ok +
calls_failed (every failed call: timeouts, errors, budget_exhausted and circuit_open together), skipped, cancelled (in flight when training ended, see :meth:`HintService.finish`), accepted, rejected, acceptance_rate, latency_p50_s / latency_p95_s
(per query), tokens, structured_fallbacks (models asked in plain text after rejecting
``response_format``); with a verifier also verified, adopted,
not_adopted, unchanged, adoption_rate, verify_over_budget, verify_errors, verify_cpu_s (total),
verify_cpu_s_per_hint and verify_cpu_share (of this process's CPU time since the service started).
"""

from __future__ import annotations

import dataclasses
import json
import math
import threading
import time
from collections import Counter, deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from distill.llm.channel import ChannelConfig, ChannelError, LLMChannel, latency_percentiles
from distill.llm.hints import (HintParseError, HintSchema, ParsedHint, Vote, build_messages, parse_answer, prompt_hash,
                               response_format, vote)


RECENT_CHECKS = 8  # verifier verdicts sent along with each request (``simulator_checks``)
RECORD_TEXT_BYTES = 4096  # the most bytes of one answer's text written to the records (UTF-8)


def capped_text(text: str, limit: int = RECORD_TEXT_BYTES) -> tuple[str, int | None]:
    """``(text, None)`` when ``text`` is at most ``limit`` bytes (UTF-8), else its first ``limit`` bytes (whole
    characters) followed by ``…[truncated, N bytes]`` and ``N``, its length in bytes."""
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text, None
    return f"{data[:limit].decode('utf-8', 'ignore')}…[truncated, {len(data)} bytes]", len(data)


@dataclass
class Verification:
    """A simulator check of one accepted hint: task metrics of the current and the proposed parameters."""

    adopted: bool
    reason: str
    current: dict[str, float]
    proposed: dict[str, float]


# (current params, proposed params, first observation of the segment's episode or None) -> Verification
Verifier = Callable[[dict[str, Any], dict[str, Any], Any], Verification]


@dataclass
class HintOutcome:
    """What one query decided for one env's segment (``params == {}`` with ``accepted``: keep the current ones)."""

    env_index: int
    segment: int
    accepted: bool
    params: dict[str, Any]
    reason: str
    verification: Verification | None = None


class HintService:
    """Background hint queries for ``num_envs`` envs.

    Args:
        channel: the LLM channel, or None to answer only from the cache (replay).
        cfg: channel settings (models, sampling, ``num_answers`` = m, ``max_concurrency``).
        schema: the task's parameter schema (validation and clipping).
        records_path: JSONL file that gets one line per query (None: no records).
        verifier: checks accepted hints in simulation (module docstring); None adopts them as voted.
        verify_budget_s_per_min: CPU seconds of verification allowed per minute (None: unbounded).
    """

    def __init__(self, channel: LLMChannel | None, cfg: ChannelConfig, schema: HintSchema,
                 records_path: Path | None = None, verifier: Verifier | None = None,
                 verify_budget_s_per_min: float | None = None) -> None:
        self.channel, self.cfg, self.schema = channel, cfg, schema
        self.verifier, self.verify_budget = verifier, verify_budget_s_per_min
        self._verify_allowance = verify_budget_s_per_min or 0.0  # token bucket, CPU seconds
        self._verify_refilled = time.monotonic()
        self._cpu_start = time.process_time()
        self._verify_cpu = 0.0
        self._checks: deque[dict[str, Any]] = deque(maxlen=RECENT_CHECKS)  # verdicts sent with the next requests
        self.records_path = records_path
        if records_path is not None:
            records_path.parent.mkdir(parents=True, exist_ok=True)
        self._pool = ThreadPoolExecutor(max_workers=cfg.max_concurrency, thread_name_prefix="hint")
        self._lock = threading.Lock()
        self._cache: dict[str, str] = {}
        self._in_flight: dict[int, tuple[int, dict[str, Any]]] = {}  # env -> (segment, request)
        self._cancelled: set[int] = set()  # envs whose query was recorded as cancelled by finish()
        self._finished = False
        self._done: dict[int, HintOutcome] = {}
        self._counts: Counter[str] = Counter()
        self._latencies: list[float] = []

    # ------------------------------------------------------------------ training-side API (non-blocking)

    def submit(self, env_index: int, segment: int, request: dict[str, Any], start_obs: Any = None) -> bool:
        """Queue a query for ``env_index``; False (and counted as skipped) when one is still in flight.

        ``start_obs`` (the first observation of the segment's episode) goes to the verifier only.
        """
        with self._lock:
            if self._finished:
                return False
            if env_index in self._in_flight:
                self._counts["skipped"] += 1
                return False
            self._in_flight[env_index] = (segment, request)
        self._pool.submit(self._run_guarded, env_index, segment, request, start_obs)
        return True

    def poll(self, env_index: int) -> HintOutcome | None:
        """The finished outcome for ``env_index`` not yet collected, or None."""
        with self._lock:
            return self._done.pop(env_index, None)

    def wait_idle(self, timeout: float) -> bool:
        """Block until no query is in flight (tests, shutdown); False on timeout."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                if not self._in_flight:
                    return True
            time.sleep(0.01)
        return False

    def stats(self) -> dict[str, float]:
        with self._lock:
            counts = dict(self._counts)
            latencies = list(self._latencies)
        decided = counts.get("accepted", 0) + counts.get("rejected", 0)
        out = {k: float(counts.get(k, 0)) for k in (
            "queries", "cache_hits", "parse_errors", "timeouts", "errors", "budget_exhausted", "circuit_open",
            "skipped", "accepted", "rejected", "cancelled", "calls", "calls_ok", "calls_failed")}
        out["breaker_refused"] = out["circuit_open"]
        channel = self.channel.stats() if self.channel is not None else {}
        out["structured_fallbacks"] = float(channel.get("structured_fallbacks", 0))
        out["requests"] = float(channel.get("attempts", 0))  # HTTP requests, retries included
        out["tokens"] = float(channel.get("total_tokens", 0))
        out["acceptance_rate"] = counts.get("accepted", 0) / decided if decided else 0.0
        if self.verifier is not None:
            for key in ("verified", "adopted", "not_adopted", "unchanged", "verify_over_budget", "verify_errors"):
                out[key] = float(counts.get(key, 0))
            verified = counts.get("verified", 0)
            out["adoption_rate"] = counts.get("adopted", 0) / verified if verified else 0.0
            with self._lock:
                out["verify_cpu_s"] = self._verify_cpu
            out["verify_cpu_s_per_hint"] = out["verify_cpu_s"] / verified if verified else 0.0
            used = time.process_time() - self._cpu_start
            out["verify_cpu_share"] = out["verify_cpu_s"] / used if used > 0 else 0.0
        out.update(latency_percentiles(latencies))
        return out

    def timeout_warning(self) -> str | None:
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

    def finish(self, timeout: float) -> int:
        """Training ended: wait up to ``timeout`` s for the queries in flight, record the ones still
        running as cancelled (one records line each, ``"cancelled": true``; counter ``cancelled``; their
        late answers are dropped) and take no more work. Returns how many were cancelled."""
        self.wait_idle(timeout)
        with self._lock:
            left = {} if self._finished else dict(self._in_flight)
            self._finished = True
            self._cancelled.update(left)
            self._in_flight.clear()
            self._counts["cancelled"] += len(left)
            for env_index, (segment, request) in sorted(left.items()):
                self._write({"time": round(time.time(), 3), "env": env_index, "segment": segment,
                             "model": self.cfg.hint_model, "request": request, "cancelled": True,
                             "reason": f"training ended before the answers came (waited {timeout:g} s)"})
        self._pool.shutdown(wait=False, cancel_futures=True)
        return len(left)

    def close(self) -> None:
        """Stop taking work; queries still in flight are recorded as cancelled (see :meth:`finish`)."""
        self.finish(0.0)

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

    # ------------------------------------------------------------------ worker side

    def _run_guarded(self, env_index: int, segment: int, request: dict[str, Any], start_obs: Any) -> None:
        try:
            outcome = self._query(env_index, segment, request, start_obs)
        except Exception as err:  # never let a hint problem reach training: mask and count
            with self._lock:
                self._counts["errors"] += 1
            outcome = HintOutcome(env_index, segment, False, {}, f"internal error: {type(err).__name__}")
        with self._lock:
            if env_index not in self._cancelled:
                self._done[env_index] = outcome
                self._in_flight.pop(env_index, None)

    def _query(self, env_index: int, segment: int, request: dict[str, Any], start_obs: Any) -> HintOutcome:
        t0 = time.monotonic()
        with self._lock:
            checks = list(self._checks)
        if checks:  # what the simulator said about recent proposals: a coach can learn from it
            request = {**request, "simulator_checks": checks}
        messages = build_messages(request)
        m = self.cfg.num_answers
        structured = response_format(request, self.cfg.structured_output)
        answers = [self._answer(self.cfg.hint_model, messages, i, structured) for i in range(m)]
        parsed = [self._parse(text) for text, _ in answers]
        judged = self.cfg.judge != self.cfg.hint_model
        if judged:  # the judge votes on the hint model's first proposal
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
        latency = time.monotonic() - t0
        advice = next((p.hint for p in parsed if p is not None and p.decision == 1), "")
        verification = self._verify(request["params"], result.params, advice, start_obs) if result.accepted else None
        line = self._record(env_index, segment, request, answers, parsed, result, latency, verification)
        with self._lock:
            if env_index in self._cancelled:  # already recorded as cancelled: counted once, there
                return HintOutcome(env_index, segment, False, {}, "cancelled")
            self._counts["queries"] += 1
            self._counts["accepted" if result.accepted else "rejected"] += 1
            self._latencies.append(latency)
            self._write(line)
        if verification is not None and not verification.adopted:
            return HintOutcome(env_index, segment, True, {}, verification.reason, verification)
        return HintOutcome(env_index, segment, result.accepted, result.params, result.reason, verification)

    def _verify(self, current: dict[str, Any], proposed: dict[str, Any], advice: str,
                start_obs: Any) -> Verification | None:
        """Run the verifier within its CPU budget and remember its verdict on ``advice`` (the hint text);
        None without a verifier or when nothing changes. Never raises."""
        if self.verifier is None:
            return None
        changes = {k: v for k, v in proposed.items() if current.get(k) != v}
        if not changes:
            with self._lock:
                self._counts["unchanged"] += 1
            return None
        if not self._take_verify_budget():
            with self._lock:
                self._counts["verify_over_budget"] += 1
            return Verification(False, f"not verified: over distill.verify_budget_s_per_min={self.verify_budget:g} "
                                "CPU s; kept the current parameters (raise the budget to check more hints)", {}, {})
        t0 = time.thread_time()
        try:
            verification = self.verifier(current, proposed, start_obs)
        except Exception as err:  # a broken check keeps the current parameters; training goes on
            verification = Verification(False, f"verification failed: {type(err).__name__}: {err}; kept the "
                                        "current parameters", {}, {})
            with self._lock:
                self._counts["verify_errors"] += 1
        cost = time.thread_time() - t0
        with self._lock:
            self._verify_allowance -= cost
            self._counts["verified"] += 1
            self._counts["adopted" if verification.adopted else "not_adopted"] += 1
            self._verify_cpu += cost
            if verification.current and verification.proposed:
                gain = verification.proposed["score"] - verification.current["score"]
                self._checks.append({"hint": advice, "changes": changes, "adopted": verification.adopted,
                                     "score_gain": round(gain, 4)})
        return verification

    def _take_verify_budget(self) -> bool:
        """Refill the token bucket (``verify_budget_s_per_min`` per minute, at most one minute's worth)."""
        if self.verify_budget is None:
            return True
        with self._lock:
            now = time.monotonic()
            rate = self.verify_budget / 60.0
            self._verify_allowance = min(self.verify_budget,
                                         self._verify_allowance + rate * (now - self._verify_refilled))
            self._verify_refilled = now
            return self._verify_allowance > 0.0

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

    def _record(self, env_index: int, segment: int, request: dict[str, Any], answers, parsed, result: Vote,
                latency: float, verification: Verification | None) -> dict[str, Any]:
        """The records line of one query."""
        line = {
            "time": round(time.time(), 3), "env": env_index, "segment": segment,
            "model": self.cfg.hint_model, "judge": self.cfg.judge,
            "prompt_hash": answers[0][1]["hash"], "request": request,
            "answers": [entry for _, entry in answers], "votes": result.votes,
            "clipped": sorted({name for p in parsed if p is not None for name in p.clipped}),
            "accepted": result.accepted, "params": result.params, "reason": result.reason,
            "latency_s": round(latency, 4),
        }
        if verification is not None:
            line["verification"] = dataclasses.asdict(verification)
        return line

    def _write(self, line: dict[str, Any]) -> None:
        """Append ``line`` to the records file (callers hold the lock)."""
        if self.records_path is not None:
            with self.records_path.open("a") as f:
                f.write(json.dumps(line, sort_keys=True) + "\n")


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
