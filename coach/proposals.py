"""Proposed controller parameters, checked in simulation, asked for in the background: one path for every proposer.

A *proposer* (:class:`Proposer`) reads a request (the context's current parameters, a summary of a segment
the teacher acted in, the parameter schema) and proposes parameters for the scripted controller:
the LLM channel (:class:`coach.llm.proposer.LLMProposer`, also the bundled coach), uniform random
search and CMA-ES (:mod:`coach.search`), or both in turn (:class:`coach.search.HybridProposer`).
:class:`ProposalService` runs any of them the same way:

* **asynchronously**: :meth:`ProposalService.submit` and :meth:`ProposalService.poll` never block
  training; the proposals run on a small thread pool, at most one per *key* (the task context: one
  parameter set per context, see :mod:`coach.contexts`) at a time; a submit for a key still in flight is
  skipped and counted;
* **verified**: with a ``verifier`` (built by the caller, which knows envs and controllers) an accepted
  proposal that changes something is checked before it is handed back: ``verifier(current, proposed,
  start) -> Verification`` (``start``: the reset options of the episode to replay); one that does not win
  keeps the current parameters (outcome ``accepted`` with ``params == {}``). The last
  :data:`RECENT_CHECKS` verdicts go with every later request as ``simulator_checks`` (a coach can learn from
  them); the proposer is told every verdict (:meth:`Proposer.tell`: CMA-ES takes its fitness from it);
* **under one budget**: the verifier's CPU time is bounded by ``verify_budget_s_per_min`` (CPU seconds per
  minute of wall time, a token bucket; over it the current parameters are kept unchecked) and the number
  of verified proposals by ``max_verified`` (then nothing more is asked for: every proposer gets the same
  number of checks);
* **recorded**: one JSON line per proposal in ``records_path``: its key, the proposer's name and its own
  record fields (an LLM's answers and votes), the request, the outcome and the verification (with its
  ``confirmation``: null, or the held-out check's seeds, metrics and ``passed``).

Counters (:meth:`ProposalService.stats`, logged under ``hints/``): queries, accepted, rejected, skipped,
cancelled, internal_errors, errors (internal_errors plus the proposer's), latency_p50_s / latency_p95_s (per proposal), with a
verifier verified, adopted, not_adopted, not_confirmed (of not_adopted: passed the first check, failed the held-out
confirmation), unchanged, adoption_rate, verify_over_budget, verify_errors, verify_cpu_s (a confirmation included:
it runs inside the verifier's call), verify_cpu_s_per_hint, verify_cpu_share (of this process's CPU time since the
service started), over_max_verified (submits refused once ``max_verified`` proposals were checked); and the
proposer's own counters (:meth:`Proposer.stats`).
"""

from __future__ import annotations

import dataclasses
import json
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

RECENT_CHECKS = 8  # verifier verdicts sent along with each request (``simulator_checks``)


@dataclass(frozen=True)
class ParameterSchema:
    """The tunable parameters of one env's controller: what every proposer proposes (the LLM's request and the
    check of its answers, the search proposers' box).

    Args:
        task: task name sent to the proposer (``"quadruped"``, ``"claw"``).
        bounds: parameter name -> (low, high), for the parameters that act on the env (the caller leaves out
            the others, e.g. the trot's height-scan fields on an env without a scan); a parameter whose value is
            a list (e.g. an (x, y) offset) has the same bounds for every component.
        integers: names whose values are whole numbers (rounded after clipping).
    """

    task: str
    bounds: dict[str, tuple[float, float]]
    integers: frozenset[str] = frozenset()

    def as_json(self) -> dict[str, list[float]]:
        return {name: [float(lo), float(hi)] for name, (lo, hi) in self.bounds.items()}


@dataclass
class Proposal:
    """What a proposer proposes for one request.

    Args:
        accepted: True: teach with ``params``; False: no teacher for this context now (an LLM's vote
            failed, or it said the student needs none).
        params: the proposed parameters (every schema name the proposer sets).
        reason: why, in a few words.
        advice: the proposal's short text (an LLM's hint), kept with the simulator's verdict on it.
        record: the proposer's own fields for the records line (an LLM's answers and votes).
    """

    accepted: bool
    params: dict[str, Any]
    reason: str
    advice: str = ""
    record: dict[str, Any] = field(default_factory=dict)


@dataclass
class Confirmation:
    """The held-out second check of a proposal that passed the first one: task metrics of both parameter sets on
    ``seeds`` (never the first check's), and whether the proposal also won there by the margin."""

    seeds: list[int]
    current: dict[str, float]
    proposed: dict[str, float]
    passed: bool


@dataclass
class Verification:
    """A simulator check of one proposal: task metrics of the current and the proposed parameters (the first check:
    the ones every proposal gets, CMA-ES's fitness), and the held-out ``confirmation`` when one ran (None: the
    first check failed, or the verifier confirms nothing)."""

    adopted: bool
    reason: str
    current: dict[str, float]
    proposed: dict[str, float]
    confirmation: Confirmation | None = None

    @property
    def scored(self) -> bool:
        """Whether both parameter sets were rolled out (not over budget, not failed)."""
        return bool(self.current and self.proposed)

    @property
    def not_confirmed(self) -> bool:
        """Whether the proposal passed the first check but failed its held-out confirmation."""
        return self.confirmation is not None and not self.confirmation.passed


# (current params, proposed params, reset options of the episode to replay or None) -> Verification
Verifier = Callable[[dict[str, Any], dict[str, Any], "dict[str, Any] | None"], Verification]


class Proposer(Protocol):
    """Proposes controller parameters (module docstring). ``propose`` runs on the service's threads and may block
    (an LLM call); it must not raise for a bad answer (return ``Proposal(False, ...)``)."""

    name: str
    workers: int  # threads the service runs it on
    patience_s: float  # s a proposal in flight may still need when training ends (ProposalService.finish)

    def propose(self, key: str, request: dict[str, Any]) -> Proposal: ...

    def tell(self, key: str, proposal: Proposal, verification: Verification | None) -> None: ...

    def stats(self) -> dict[str, float]: ...

    def warning(self) -> str | None: ...


@dataclass
class ProposalOutcome:
    """What one proposal decided for one key (``params == {}`` with ``accepted``: keep the current ones).
    ``version`` is the one :meth:`ProposalService.submit` was given (the context table's version the request
    was made against)."""

    key: str
    version: int
    accepted: bool
    params: dict[str, Any]
    reason: str
    proposer: str
    verification: Verification | None = None


def latency_percentiles(latencies: Sequence[float]) -> dict[str, float]:
    """``latency_p50_s`` and ``latency_p95_s``: percentiles (linear interpolation) of ``latencies`` in
    seconds; empty when there are none."""
    if not latencies:
        return {}
    p50, p95 = np.percentile(latencies, [50, 95])
    return {"latency_p50_s": float(p50), "latency_p95_s": float(p95)}


class ProposalService:
    """Background proposals for any number of keys (module docstring).

    Args:
        proposer: where proposals come from.
        records_path: JSONL file that gets one line per proposal (None: no records).
        verifier: checks accepted proposals in simulation; None adopts them as proposed.
        verify_budget_s_per_min: CPU seconds of verification allowed per minute (None: unbounded).
        max_verified: proposals checked in simulation at most, over the service's life (None: unbounded).
    """

    def __init__(self, proposer: Proposer, records_path: Path | None = None, verifier: Verifier | None = None,
                 verify_budget_s_per_min: float | None = None, max_verified: int | None = None) -> None:
        self.proposer = proposer
        self.verifier, self.verify_budget, self.max_verified = verifier, verify_budget_s_per_min, max_verified
        self._verify_allowance = verify_budget_s_per_min or 0.0  # token bucket, CPU seconds
        self._verify_refilled = time.monotonic()
        self._cpu_start = time.process_time()
        self._verify_cpu = 0.0
        self._checks: deque[dict[str, Any]] = deque(maxlen=RECENT_CHECKS)  # verdicts sent with the next requests
        self.records_path = records_path
        if records_path is not None:
            records_path.parent.mkdir(parents=True, exist_ok=True)
        self._pool = ThreadPoolExecutor(max_workers=proposer.workers, thread_name_prefix="proposal")
        self._lock = threading.Lock()
        self._in_flight: dict[str, tuple[int, dict[str, Any]]] = {}  # key -> (version, request)
        self._cancelled: set[str] = set()  # keys whose proposal was recorded as cancelled by finish()
        self._finished = False
        self._done: dict[str, ProposalOutcome] = {}
        self._counts: Counter[str] = Counter()
        self._latencies: list[float] = []

    # ------------------------------------------------------------------ training-side API (non-blocking)

    def submit(self, key: str, version: int, request: dict[str, Any], start: dict[str, Any] | None = None) -> bool:
        """Queue a proposal for ``key``; False when one is still in flight for it (counted as skipped), when the
        service has finished, or when ``max_verified`` proposals were checked or may still be (those in flight).

        ``start`` (reset options that replay the segment's episode) goes to the verifier only.
        """
        with self._lock:
            if self._finished:
                return False
            # proposals in flight may still be checked: they count, so that no more than max_verified ever are
            if self.max_verified is not None and self._counts["verified"] + len(self._in_flight) >= self.max_verified:
                self._counts["over_max_verified"] += 1
                return False
            if key in self._in_flight:
                self._counts["skipped"] += 1
                return False
            self._in_flight[key] = (version, request)
        self._pool.submit(self._run_guarded, key, version, request, start)
        return True

    def poll(self) -> list[ProposalOutcome]:
        """The finished outcomes not yet collected (any keys), oldest first."""
        with self._lock:
            done, self._done = list(self._done.values()), {}
        return done

    def wait_idle(self, timeout: float) -> bool:
        """Block until no proposal is in flight (tests, shutdown); False on timeout."""
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
        out = {k: float(counts.get(k, 0)) for k in ("queries", "skipped", "accepted", "rejected", "cancelled")}
        for key, value in self.proposer.stats().items():
            out[key] = out.get(key, 0.0) + value
        out["internal_errors"] = float(counts.get("internal_errors", 0))
        out["errors"] = out.get("errors", 0.0) + out["internal_errors"]
        decided = counts.get("accepted", 0) + counts.get("rejected", 0)
        out["acceptance_rate"] = counts.get("accepted", 0) / decided if decided else 0.0
        if self.verifier is not None:
            for key in ("verified", "adopted", "not_adopted", "not_confirmed", "unchanged", "verify_over_budget",
                        "verify_errors", "over_max_verified"):
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

    def finish(self, timeout: float) -> int:
        """Training ended: wait up to ``timeout`` s for the proposals in flight, record the ones still running as
        cancelled (one records line each, ``"cancelled": true``; counter ``cancelled``; their late answers are
        dropped) and take no more work. Returns how many were cancelled."""
        self.wait_idle(timeout)
        with self._lock:
            left = {} if self._finished else dict(self._in_flight)
            self._finished = True
            self._cancelled.update(left)
            self._in_flight.clear()
            self._counts["cancelled"] += len(left)
            for key, (version, request) in sorted(left.items()):
                self._write({"time": round(time.time(), 3), "key": key, "version": version,
                             "proposer": self.proposer.name, "request": request, "cancelled": True,
                             "reason": f"training ended before the proposal came (waited {timeout:g} s)"})
        self._pool.shutdown(wait=False, cancel_futures=True)
        return len(left)

    def close(self) -> None:
        """Stop taking work; proposals still in flight are recorded as cancelled (see :meth:`finish`)."""
        self.finish(0.0)

    # ------------------------------------------------------------------ worker side

    def _run_guarded(self, key: str, version: int, request: dict[str, Any], start: dict[str, Any] | None) -> None:
        try:
            outcome = self._run(key, version, request, start)
        except Exception as err:  # never let a proposal problem reach training: mask and count
            with self._lock:
                self._counts["internal_errors"] += 1
            outcome = ProposalOutcome(key, version, False, {}, f"internal error: {type(err).__name__}",
                                      self.proposer.name)
        with self._lock:
            if key not in self._cancelled:
                self._done[key] = outcome
                self._in_flight.pop(key, None)

    def _run(self, key: str, version: int, request: dict[str, Any], start: dict[str, Any] | None) -> ProposalOutcome:
        t0 = time.monotonic()
        with self._lock:
            checks = list(self._checks)
        if checks:  # what the simulator said about recent proposals: a coach can learn from it
            request = {**request, "simulator_checks": checks}
        proposal = self.proposer.propose(key, request)
        latency = time.monotonic() - t0
        verification = (self._verify(request["params"], proposal.params, proposal.advice, start)
                        if proposal.accepted else None)
        self.proposer.tell(key, proposal, verification)
        line = {"time": round(time.time(), 3), "key": key, "version": version, "proposer": self.proposer.name,
                **proposal.record, "request": request, "accepted": proposal.accepted, "params": proposal.params,
                "reason": proposal.reason, "latency_s": round(latency, 4)}
        if verification is not None:
            line["verification"] = dataclasses.asdict(verification)
        with self._lock:
            if key in self._cancelled:  # already recorded as cancelled: counted once, there
                return ProposalOutcome(key, version, False, {}, "cancelled", self.proposer.name)
            self._counts["queries"] += 1
            self._counts["accepted" if proposal.accepted else "rejected"] += 1
            self._latencies.append(latency)
            self._write(line)
        if verification is not None and not verification.adopted:
            return ProposalOutcome(key, version, True, {}, verification.reason, self.proposer.name, verification)
        return ProposalOutcome(key, version, proposal.accepted, proposal.params if proposal.accepted else {},
                               proposal.reason, self.proposer.name, verification)

    def _verify(self, current: dict[str, Any], proposed: dict[str, Any], advice: str,
                start: dict[str, Any] | None) -> Verification | None:
        """Run the verifier within its CPU budget and remember its verdict on ``advice``; None without a
        verifier or when nothing changes. Never raises."""
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
                                "CPU s; kept the current parameters (raise the budget to check more proposals)", {}, {})
        t0 = time.thread_time()
        try:
            verification = self.verifier(current, proposed, start)
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
            self._counts["not_confirmed"] += int(verification.not_confirmed)
            self._verify_cpu += cost
            if verification.scored:
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

    def _write(self, line: dict[str, Any]) -> None:
        """Append ``line`` to the records file (callers hold the lock)."""
        if self.records_path is not None:
            with self.records_path.open("a") as f:
                f.write(json.dumps(line, sort_keys=True) + "\n")
