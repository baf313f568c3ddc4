"""Search proposers: uniform random search, CMA-ES, and an LLM-seeded CMA-ES (:class:`coach.proposals.Proposer`).

They search the controller's parameter box (:class:`ParameterBox`: every schema parameter, list values
component-wise, normalised to [0, 1]) and know nothing of the task but the verifier's verdicts:

* :class:`RandomProposer` (``random``): every proposal uniform within the schema's bounds, from a seeded generator;
* :class:`CMAProposer` (``cma``): one CMA-ES per key (context), from the maintained ``cma`` package, started at
  the key's current parameters with step size ``sigma`` (of the normalised range); it hands out one
  candidate of the current generation per proposal and tells the generation's fitness (minus the
  verifier's score of each candidate) once every candidate is scored. A candidate that was not scored
  (over the verification budget) is proposed again later;
* :class:`HybridProposer` (``llm_cma``): a key's first proposal comes from the LLM; CMA-ES then starts from
  whichever of the LLM's proposal and the current parameters the verifier scored higher.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from coach.proposals import ParameterSchema, Proposal, Proposer, Verification


class ParameterBox:
    """The schema's parameters as a point of [0, 1]^n: scalars one coordinate each, lists one per component
    (their length from a template, the current parameters)."""

    def __init__(self, schema: ParameterSchema, template: dict[str, Any]) -> None:
        self.schema = schema
        self.names = list(schema.bounds)
        self.lengths = {n: len(template[n]) if isinstance(template.get(n), (list, tuple)) else None for n in self.names}
        self.low = np.array([schema.bounds[n][0] for n in self.names for _ in range(self.lengths[n] or 1)], float)
        self.high = np.array([schema.bounds[n][1] for n in self.names for _ in range(self.lengths[n] or 1)], float)

    @property
    def dim(self) -> int:
        return len(self.low)

    def to_unit(self, params: dict[str, Any]) -> np.ndarray:
        """``params`` (every schema name) as a point of the unit box (clipped into it)."""
        values = []
        for n in self.names:
            values += list(params[n]) if self.lengths[n] is not None else [params[n]]
        return np.clip((np.asarray(values, float) - self.low) / (self.high - self.low), 0.0, 1.0)

    def from_unit(self, x: np.ndarray) -> dict[str, Any]:
        """The parameters at ``x`` (clipped into the box; whole-number parameters rounded)."""
        values = self.low + np.clip(np.asarray(x, float), 0.0, 1.0) * (self.high - self.low)
        out, i = {}, 0
        for n in self.names:
            k = self.lengths[n] or 1
            part = [round(float(v)) if n in self.schema.integers else round(float(v), 5) for v in values[i:i + k]]
            out[n] = part if self.lengths[n] is not None else part[0]
            i += k
        return out


class _LocalProposer:
    """A proposer that calls no server: nothing to warn about, and a proposal in flight at the end of training
    needs only its check's time (a few CPU seconds)."""

    patience_s = 5.0

    def warning(self) -> str | None:
        return None


class RandomProposer(_LocalProposer):
    """Uniform random parameters within the schema's bounds (module docstring); ``seed`` seeds the draws."""

    name = "random"
    workers = 1

    def __init__(self, schema: ParameterSchema, seed: int = 0) -> None:
        self.schema = schema
        self._rng = np.random.default_rng(seed)
        self._lock = threading.Lock()
        self._proposed = 0

    def propose(self, key: str, request: dict[str, Any]) -> Proposal:
        box = ParameterBox(self.schema, request["params"])
        with self._lock:
            x = self._rng.uniform(0.0, 1.0, box.dim)
            self._proposed += 1
        return Proposal(True, box.from_unit(x), "uniform random within the bounds", "random search")

    def tell(self, key: str, proposal: Proposal, verification: Verification | None) -> None:
        """Nothing: every draw is independent of the verdicts."""

    def stats(self) -> dict[str, float]:
        return {"search_proposed": float(self._proposed)}


@dataclass
class _Search:
    """One key's CMA-ES and the candidates of its current generation."""

    es: Any
    box: ParameterBox
    generation: int = 0
    candidates: list[np.ndarray] = field(default_factory=list)
    fitness: dict[int, float] = field(default_factory=dict)
    queue: list[int] = field(default_factory=list)  # candidates not yet handed out (or to hand out again)


class CMAProposer(_LocalProposer):
    """CMA-ES per key over the parameter box (module docstring).

    Args:
        schema: the parameters and their bounds.
        sigma: initial step size, of the normalised range (0.2: a fifth of every bound's width).
        popsize: candidates per generation (None: CMA-ES's default, 4 + 3 ln n).
        seed: seeds every key's search (the same for all keys: a key's search depends only on its verdicts).
    """

    name = "cma"
    workers = 1

    def __init__(self, schema: ParameterSchema, sigma: float = 0.2, popsize: int | None = None, seed: int = 0) -> None:
        import cma  # a core dependency, loaded only by the proposers that search with it

        self._cma = cma
        self.schema, self.sigma, self.popsize, self.seed = schema, sigma, popsize, seed
        self._lock = threading.Lock()
        self._searches: dict[str, _Search] = {}
        self._starts: dict[str, dict[str, Any]] = {}  # see start_at
        self._counts = {"search_proposed": 0, "search_generations": 0, "search_requeued": 0}

    def start_at(self, key: str, params: dict[str, Any]) -> None:
        """Start ``key``'s search at ``params`` instead of the parameters of its first request."""
        with self._lock:
            self._starts.setdefault(key, dict(params))

    def propose(self, key: str, request: dict[str, Any]) -> Proposal:
        with self._lock:
            search = self._searches.get(key)
            if search is None:
                start = {**request["params"], **self._starts.get(key, {})}
                box = ParameterBox(self.schema, start)
                options = {"bounds": [0.0, 1.0], "seed": self.seed + 1, "verbose": -9}
                if self.popsize is not None:
                    options["popsize"] = self.popsize
                search = self._searches[key] = _Search(self._cma.CMAEvolutionStrategy(box.to_unit(start), self.sigma,
                                                                                        options), box)
            if not search.queue:
                search.candidates = [np.asarray(x) for x in search.es.ask()]
                search.fitness, search.queue = {}, list(range(len(search.candidates)))
                search.generation += 1
            k = search.queue.pop(0)
            self._counts["search_proposed"] += 1
            x, generation, size = search.candidates[k], search.generation, len(search.candidates)
        return Proposal(True, search.box.from_unit(x), f"CMA-ES generation {generation}, candidate {k + 1} of {size}",
                        "cma search", {"search": {"generation": generation, "candidate": k}})

    def tell(self, key: str, proposal: Proposal, verification: Verification | None) -> None:
        """The candidate's fitness is minus the verifier's score of it; an unscored one is queued again. A
        generation whose candidates are all scored is told to CMA-ES."""
        where = proposal.record.get("search")
        with self._lock:
            search = self._searches.get(key)
            if where is None or search is None or where["generation"] != search.generation:
                return
            k = where["candidate"]
            if verification is None or not verification.scored:
                search.queue.append(k)
                self._counts["search_requeued"] += 1
                return
            search.fitness[k] = -float(verification.proposed["score"])
            if len(search.fitness) == len(search.candidates):
                search.es.tell(search.candidates, [search.fitness[i] for i in range(len(search.candidates))])
                search.queue = []
                self._counts["search_generations"] += 1

    def stats(self) -> dict[str, float]:
        with self._lock:
            return {k: float(v) for k, v in self._counts.items()}


class HybridProposer:
    """The LLM proposes first for each key, then CMA-ES searches from the better of its proposal and the current
    parameters (module docstring)."""

    name = "llm_cma"

    def __init__(self, llm: Proposer, search: CMAProposer) -> None:
        self.llm, self.search = llm, search
        self.workers = llm.workers
        self.patience_s = max(llm.patience_s, search.patience_s)
        self._lock = threading.Lock()
        self._asked: dict[str, dict[str, Any]] = {}  # key -> the current parameters its LLM proposal was asked with

    def propose(self, key: str, request: dict[str, Any]) -> Proposal:
        with self._lock:
            first = key not in self._asked
            if first:
                self._asked[key] = dict(request["params"])
        if not first:
            return self.search.propose(key, request)
        proposal = self.llm.propose(key, request)
        proposal.record = {**proposal.record, "by": self.llm.name}
        if not proposal.accepted:  # nothing to seed with: search from the current parameters
            self.search.start_at(key, request["params"])
        return proposal

    def tell(self, key: str, proposal: Proposal, verification: Verification | None) -> None:
        if proposal.record.get("by") != self.llm.name:
            self.search.tell(key, proposal, verification)
            return
        self.llm.tell(key, proposal, verification)
        if proposal.accepted:
            better = verification is None or verification.adopted
            self.search.start_at(key, {**self._asked[key], **proposal.params} if better else self._asked[key])

    def stats(self) -> dict[str, float]:
        return {**self.llm.stats(), **self.search.stats()}

    def warning(self) -> str | None:
        return self.llm.warning()
