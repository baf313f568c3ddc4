"""The adopted controller parameters per task context: :class:`ContextTable`.

An adaptive teacher (``distill=adaptive``, any ``distill.proposer``) keeps one parameter set per *context*:
the class of task an episode belongs to (``env.task_context()``: the robot; on the terrain env its tile type
and level; on the claw the object class). Every env copy in a context teaches with the context's entry;
a proposal asked for in a context changes that context's entry only, whenever it comes back:

* ``adopted``: accepted and verified (or not checked): its parameters replace the entry's, whose ``version``
  (adoptions so far) goes up by one; the context teaches;
* ``kept``: accepted, but the verifier kept the current parameters (or the proposal changes nothing); the context
  teaches with them;
* ``masked``: not accepted (a failed vote or call, or "no teacher needed"): the context's samples are
  masked until a later proposal is accepted;
* ``stale``: asked for against a version of the entry that ``max_age`` or more adoptions have replaced since:
  dropped (a late answer counts as long as the context has not moved on without it).

A context nothing was decided for yet does not teach (its samples are masked), with the starting
parameters.

``per_context=False`` (``distill.per_context=false``) pools every context into one entry, :data:`ALL`: one parameter
set for the whole run, for a student that cannot tell the contexts apart from its observations (the claw's object
mass and friction), to which per-context parameters give different targets for the same observation.
:meth:`ContextTable.key` maps an episode's context name to its entry's key.

The table is JSON (:meth:`ContextTable.to_json`): saved in every checkpoint, restored on resume and written next to
an exported policy; each entry keeps the history of its adoptions (env step, version, proposer, parameters, the
verifier's score), from which a benchmark can replay the teacher's course.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from coach.proposals import ProposalOutcome

DECISIONS = ("adopted", "kept", "masked", "stale")
ALL = "all"  # the one key of a pooled table (per_context=False)


@dataclass
class ContextEntry:
    """One context's parameters (module docstring)."""

    params: dict[str, Any]
    version: int = 0
    teaching: bool = False
    proposer: str | None = None  # who proposed ``params`` (None: the starting parameters)
    history: list[dict[str, Any]] = field(default_factory=list)


class ContextTable:
    """Key -> :class:`ContextEntry`; new entries start from ``start``. The key of a context is its name, or
    :data:`ALL` for every context with ``per_context=False`` (module docstring)."""

    def __init__(self, start: dict[str, Any], per_context: bool = True) -> None:
        self.start = _plain(start)
        self.per_context = per_context
        self.entries: dict[str, ContextEntry] = {}

    def key(self, context: str) -> str:
        """The key of the entry an episode of the context named ``context`` teaches with."""
        return context if self.per_context else ALL

    def params_for(self, context: str) -> dict[str, Any]:
        """The parameters an episode of the context named ``context`` teaches with."""
        return self.entry(self.key(context)).params

    def entry(self, key: str) -> ContextEntry:
        if key not in self.entries:
            self.entries[key] = ContextEntry(_plain(self.start))
        return self.entries[key]

    def apply(self, outcome: ProposalOutcome, step: int, max_age: int) -> str:
        """Apply ``outcome`` to its context's entry at env step ``step``; returns the decision (:data:`DECISIONS`).
        The outcome's parameters must already be valid for the controller."""
        entry = self.entry(outcome.key)
        if entry.version - outcome.version >= max_age:
            return "stale"
        if not outcome.accepted:
            entry.teaching = False
            return "masked"
        entry.teaching = True
        params = _plain({**entry.params, **outcome.params})
        if params == entry.params:
            return "kept"
        entry.params = params
        entry.version += 1
        entry.proposer = outcome.proposer
        score = outcome.verification.proposed.get("score") if outcome.verification is not None else None
        entry.history.append({"step": step, "version": entry.version, "proposer": outcome.proposer,
                              "params": _plain(entry.params), "score": score})
        return "adopted"

    def to_json(self) -> dict[str, Any]:
        return {"start": self.start, "per_context": self.per_context,
                "contexts": {k: asdict(e) for k, e in sorted(self.entries.items())}}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ContextTable:
        table = cls(data["start"], data.get("per_context", True))  # tables saved before pooling were per context
        table.entries = {k: ContextEntry(**e) for k, e in data["contexts"].items()}
        return table


def _plain(params: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``params`` as JSON has it (tuples as lists), so that equal parameters compare equal."""
    return json.loads(json.dumps(params))
