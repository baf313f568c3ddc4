"""The adaptive controller teacher (``distill=adaptive``): a controller teacher whose parameters are proposed, checked
and kept per context. Whether an LLM is involved is the proposer's business (``distill.proposer``).

:class:`AdaptiveControllerTeacher` is a :class:`~agents.teachers.controller.ControllerTeacher` that cuts each
env's stream into segments (an episode, or ``segment_steps`` steps). When a segment ends its compact
summary goes to :class:`coach.proposals.ProposalService` (asynchronous), which asks the run's proposer
(``distill.proposer``: the LLM channel, the bundled coach, random search, CMA-ES or the LLM-seeded CMA-ES)
for parameters and, with ``distill.verify_hints`` (the default), checks them in simulation
(:mod:`coach.verifier`) on its own threads. Training never waits for a proposal.

Parameters are kept **per task context** (``env.task_context()``: the robot; the terrain's tile type and level;
the claw's object class) in a :class:`coach.contexts.ContextTable`: every env copy teaches with its
episode's context's entry, a proposal asked for in a context changes that context only, whenever it
comes back (``distill.hint_max_age``: adoptions in the context since the request, at which an answer is
dropped as stale), and samples of a context whose last proposal was not accepted (or that has none yet)
are masked (weight 0). With ``distill.per_context=false`` every context shares one entry (one parameter set for
the run, checked on episodes of every context: :func:`teaching_context`). The table is saved with every checkpoint
(``context_params.json``), restored on resume and written next to an exported policy.

This module is the only module of ``agents/`` that imports :mod:`coach.llm` (and with it ``openai``) when
loaded; :func:`agents.teachers.builders.controller_teacher` loads this one only for ``distill=adaptive``.
"""

from __future__ import annotations

import copy
import sys
import time
from collections import Counter
from pathlib import Path
from operator import itemgetter
from typing import Any

import numpy as np
from omegaconf import OmegaConf
from stable_baselines3.common.vec_env import VecEnv

from agents.errors import ConfigError
from agents.teachers.controller import ControllerTeacher
from coach.contexts import ContextTable
from coach.llm.check import check_models, models_of
from coach.llm.client import open_channel
from coach.llm.errors import ChannelError
from coach.llm.hints import build_request
from coach.llm.proposer import LLMProposer
from coach.llm.settings import ChannelConfig
from coach.proposals import ParameterSchema, Proposer, ProposalService
from coach.search import CMAProposer, HybridProposer, RandomProposer
from coach.verifier import ShadowVerifier
from distill.policy import per_entry
from envs.controllers import ControllerFamily
from envs.declarations import ControllerSpec, TaskContext


def parameter_schema(family: ControllerFamily, spec: ControllerSpec | None) -> ParameterSchema:
    """What proposers propose for an env family's controller on an env whose ``controller_spec`` is ``spec``: the
    bounds of the parameters that act there (:meth:`~envs.controllers.ControllerFamily.bounds`: the trot's
    height-scan fields only on an env with a scan) and which of them are whole numbers."""
    bounds = family.bounds(spec)
    return ParameterSchema(family.family, bounds, family.integer_params & frozenset(bounds))


class AdaptiveControllerTeacher(ControllerTeacher):
    """A controller teacher whose parameters are proposed per context (module docstring).

    Args:
        venv, family, spec: as :class:`ControllerTeacher`.
        service: the proposals (its proposer, verifier and budgets).
        segment_steps: a segment ends at an episode end or after this many steps.
        max_age: adoptions in a context after which an answer asked for before them is stale.
        params: the starting parameters of every context (``None``: the controllers' defaults for the robot).
        verify_on: what the verifier replays: ``context`` (episodes of the context, the verifier's seeds
            drawing commands or goals) or ``segment`` (the segment's own episode start, in its context).
        per_context: one parameter set per context (True) or one for all of them (module docstring).
    """

    on_device = False  # its weights and proposals come from each env's step outcomes, read on the host

    def __init__(self, venv: VecEnv, family: ControllerFamily, spec: ControllerSpec, service: ProposalService,
                 segment_steps: int = 200, max_age: int = 3, params: Any = None, verify_on: str = "context",
                 per_context: bool = True) -> None:
        super().__init__(venv, family, spec, params)
        n = venv.num_envs
        self.service, self.schema = service, parameter_schema(family, spec)
        self.segment_steps, self.max_age, self.verify_on = segment_steps, max_age, verify_on
        self.table = ContextTable(self.policy.controllers[0].params.to_dict(), per_context)
        self.contexts: list[TaskContext] = self._teaching_contexts()
        self.applied: list[tuple[str, int] | None] = [None] * n  # (context, version) each controller has
        self.segments = [family.segment() for _ in range(n)]
        self.episode_start: list[Any] = [None] * n  # each env's first observation of its current episode
        self.steps = 0  # env steps taken by all copies together
        self.decisions: Counter[str] = Counter()  # coach.contexts.DECISIONS, and invalid_params
        self.warned = False
        self.on_close: list[Any] = []  # e.g. the LLM channel and the bundled server

    def reset(self):
        obs = super().reset()
        self.segments = [self.family.segment() for _ in range(self.num_envs)]
        self.episode_start = [copy.deepcopy(per_entry(itemgetter(i), obs)) for i in range(self.num_envs)]
        for i in range(self.num_envs):
            self._enter_context(i)
        return obs

    def weights(self) -> np.ndarray:
        """1 for the envs whose context teaches (its last proposal was accepted), else 0."""
        return np.array([1.0 if self.table.entry(c.name).teaching else 0.0 for c in self.contexts], dtype=np.float32)

    def observe(self, obs: Any, dones: np.ndarray, infos: list[dict]) -> None:
        self.steps += self.num_envs
        self._track_segments(obs, dones, infos)
        self._collect()

    def _teaching_contexts(self) -> list[TaskContext]:
        """Each env's episode's teaching context (:func:`teaching_context`): its table key and what its checks replay."""
        return [teaching_context(self.table, c) for c in self.venv.env_method("task_context")]

    def _enter_context(self, i: int) -> None:
        """Env ``i`` started an episode: its controller takes the parameters of the episode's context."""
        self.contexts[i] = teaching_context(self.table, self.venv.env_method("task_context", indices=[i])[0])
        self._use_table(i)

    def _use_table(self, i: int) -> None:
        """Env ``i``'s controller takes its context's current parameters (unless it has them already)."""
        name = self.contexts[i].name
        entry = self.table.entry(name)
        if self.applied[i] != (name, entry.version):
            self.policy.controllers[i].params = self.family.params.from_dict(entry.params)
            self.sync_env(i)
            self.applied[i] = (name, entry.version)

    def _track_segments(self, obs: Any, dones: np.ndarray, infos: list[dict]) -> None:
        """Add the step to each env's segment; a finished segment asks for a proposal for its context."""
        for i, info in enumerate(infos):
            self.segments[i].add(info["terminal_observation"] if dones[i] else per_entry(itemgetter(i), obs), info)
            if dones[i] or self.segments[i].steps >= self.segment_steps:
                summary, outcome = self.segments[i].summary()
                context = self.contexts[i]
                entry = self.table.entry(context.name)
                start = verify_start(self.family, self.verify_on, self.episode_start[i], context)
                self.service.submit(context.name, entry.version,
                                    build_request(self.schema, entry.params, summary, outcome), start)
                self.segments[i] = self.family.segment()
            if dones[i]:
                self.episode_start[i] = copy.deepcopy(per_entry(itemgetter(i), obs))
                self._enter_context(i)

    def _collect(self) -> None:
        for outcome in self.service.poll():
            if outcome.accepted and outcome.params:
                try:
                    self.family.params.from_dict({**self.table.entry(outcome.key).params, **outcome.params})
                except (TypeError, ValueError):
                    self.decisions["invalid_params"] += 1
                    outcome.accepted, outcome.params = False, {}
            decision = self.table.apply(outcome, self.steps, self.max_age)
            self.decisions[decision] += 1
            if decision == "adopted":
                for i, context in enumerate(self.contexts):
                    if context.name == outcome.key:
                        self._use_table(i)

    def retire(self, step: int) -> None:
        """Stop teaching (:meth:`ControllerTeacher.retire`), and give every env back the settings of the starting
        parameters (the gait clock's frequency): the run's evaluation envs and its saved config have those, so the
        student goes on learning on the clock it is evaluated on."""
        super().retire(step)
        start = self.family.params.from_dict(self.table.start)
        for i, controller in enumerate(self.policy.controllers):
            controller.params = start
            self.sync_env(i)
        self.applied = [None] * self.num_envs

    def context_state(self) -> dict[str, Any]:
        """The context table as JSON (checkpoints, exports)."""
        return self.table.to_json()

    def restore_context_state(self, state: dict[str, Any]) -> None:
        """Continue with a saved context table (a resumed run): every env takes its context's parameters."""
        self.table = ContextTable.from_json(state)
        self.contexts = self._teaching_contexts()
        self.applied = [None] * self.num_envs
        for i in range(self.num_envs):
            self._use_table(i)

    def record_stats(self, record) -> None:
        """The coverage and the table's counters (``teacher/*``), the proposals' (``hints/*``); says once on stderr
        when most LLM calls time out."""
        super().record_stats(record)
        self._record_counters(record)

    def _record_counters(self, record) -> None:
        for key, value in self.service.stats().items():
            record(f"hints/{key}", value)
        for key in ("adopted", "kept", "masked", "stale", "invalid_params"):
            record(f"teacher/table_{key}", float(self.decisions[key]))
        record("teacher/contexts", float(len(self.table.entries)))
        record("teacher/contexts_teaching", float(sum(e.teaching for e in self.table.entries.values())))
        warning = self.service.proposer.warning()
        if warning is not None and not self.warned:
            print(f"warning: {warning}", file=sys.stderr)
            self.warned = True

    def finish(self, logger: Any, step: int) -> None:
        """Give the proposals in flight the proposer's ``patience_s`` (an LLM: one attempt's time,
        ``llm.timeout_s * (llm.max_retries + 1)``) to finish, record the rest as cancelled, take in those that
        came and log the final counters, which then match the records file."""
        self.service.finish(self.service.proposer.patience_s)
        self._collect()
        self._record_counters(logger.record)  # coverage has no new samples to report
        logger.dump(step)

    def report(self) -> dict[str, Any]:
        did = super().report()
        stats = self.service.stats()
        did.update(teacher_proposer=self.service.proposer.name, teacher_hint_queries=int(stats["queries"]),
                   teacher_hints_accepted=int(stats["accepted"]), teacher_hints_rejected=int(stats["rejected"]),
                   teacher_malformed_answers=int(stats.get("parse_errors", 0)),
                   teacher_errors=int(stats.get("calls_failed", 0) + stats["internal_errors"]),
                   teacher_contexts=len(self.table.entries),
                   teacher_stale_answers=int(self.decisions["stale"]))
        if "verified" in stats:  # distill.verify_hints: what the checks cost and let through
            did.update(teacher_hints_verified=int(stats["verified"]), teacher_hints_adopted=int(stats["adopted"]),
                       teacher_verify_cpu_s_per_hint=round(stats["verify_cpu_s_per_hint"], 4),
                       teacher_verify_cpu_share=round(stats["verify_cpu_share"], 4))
        warning = self.service.proposer.warning()
        if warning is not None:
            did["teacher_hint_warning"] = warning
        return did

    def coverage_cause(self) -> str:
        stats = self.service.stats()
        if not stats["queries"]:
            return (f"no proposal was asked for: no segment ended (lower distill.segment_steps={self.segment_steps} "
                    "or train longer)")
        if not stats["accepted"]:
            return (f"none of {int(stats['queries'])} proposals was accepted ({int(stats['rejected'])} rejected, "
                    f"{int(stats.get('parse_errors', 0))} malformed or refused answers, "
                    f"{int(stats.get('calls_failed', 0))} failed calls); python -m coach.llm.check diagnoses the channel")
        return (f"{int(stats['accepted'])} of {int(stats['queries'])} proposals were accepted, in "
                f"{sum(e.teaching for e in self.table.entries.values())} of {len(self.table.entries)} contexts; "
                "the samples of the other contexts are masked")

    def close(self) -> None:
        self.service.close()
        for close in self.on_close:
            close()
        super().close()


def adaptive_teacher(venv: VecEnv, family: ControllerFamily, env: Any, cfg: Any,
                     params: Any = None) -> AdaptiveControllerTeacher:
    """The ``distill=adaptive`` teacher around ``venv`` (raw), ``env`` being its first env (unwrapped); every
    context starts from ``params`` (``None``: the controllers' defaults for the robot); its proposer is
    ``distill.proposer``'s.

    ``llm`` and ``llm_cma`` open the ``llm`` channel (the bundled offline server when ``llm.base_url`` is null),
    ``coach`` the bundled server whatever ``llm`` says; the channel is checked with one call per model, and a
    failed check raises :class:`ConfigError` with the diagnosis. ``distill.hint_replay`` answers from a
    records file instead, without any LLM.
    """
    distill = cfg.distill
    run_name = f"{cfg.env.name}-{cfg.agent.name}-{Path(cfg.run_dir).name}"
    records_dir = Path(distill.records_dir) if distill.records_dir else Path(cfg.run_dir) / "records"
    records = records_dir / f"{run_name}-{time.strftime('%Y%m%d-%H%M%S')}.jsonl"
    resources: list[Any] = []
    proposer = make_proposer(cfg, parameter_schema(family, env.controller_spec), resources)
    verifier = None
    if distill.verify_hints:
        # distill.verify_confirm_rollouts is absent from a run saved before the setting (resume): off, as it was made
        verifier = ShadowVerifier(env.spec.id, {**env.spec.kwargs, **family.score_kwargs}, family, env.controller_spec,
                                  distill.verify_rollouts, distill.verify_steps, distill.verify_margin,
                                  distill.get("verify_confirm_rollouts", 0))
    service = ProposalService(proposer, records_path=records, verifier=verifier,
                              verify_budget_s_per_min=distill.verify_budget_s_per_min,
                              max_verified=distill.max_verified)
    # distill.per_context is absent from a run saved before the setting (resume): per context, as it was made
    teacher = AdaptiveControllerTeacher(venv, family, env.controller_spec, service, distill.segment_steps,
                                        distill.hint_max_age, params, distill.verify_on, distill.get("per_context", True))
    teacher.on_close += [r.close for r in resources]
    return teacher


def teaching_context(table: ContextTable, context: TaskContext) -> TaskContext:
    """The context an episode in ``context`` teaches with: ``context`` itself, or for a pooled table
    (``distill.per_context=false``) the run's one context :data:`~coach.contexts.ALL`, without reset options, so
    that its checks play episodes of every context (the verifier's seeds draw them)."""
    key = table.key(context.name)
    return context if key == context.name else TaskContext(key)


def verify_start(family: ControllerFamily, verify_on: str, first_obs: Any, context: TaskContext) -> dict[str, Any]:
    """The reset options the verifier replays for a proposal about a segment that began with ``first_obs`` in
    ``context``: the context's options, and with ``verify_on="segment"`` also the segment's episode start."""
    replay = family.episode_start(first_obs) if verify_on == "segment" else {}
    return {**replay, **context.options}


def make_proposer(cfg: Any, schema: ParameterSchema, resources: list[Any]) -> Proposer:
    """The proposer ``cfg.distill.proposer`` names (``cfg``: ``distill``, ``llm`` and ``seed``, as a run's config);
    what must be closed after it (channel, bundled server) is appended to ``resources``. ``distill.hint_replay``
    answers from a records file instead of a channel."""
    distill = cfg.distill
    if distill.proposer in ("random", "cma"):
        return RandomProposer(schema, cfg.seed) if distill.proposer == "random" else _cma(distill, schema, cfg.seed)
    channel_cfg = channel_config(cfg)
    llm = LLMProposer(_checked_channel(channel_cfg, resources, distill.hint_replay), channel_cfg, schema,
                      "coach" if distill.proposer == "coach" else "llm")
    if distill.hint_replay:
        llm.load_records(Path(distill.hint_replay))
    return HybridProposer(llm, _cma(distill, schema, cfg.seed)) if distill.proposer == "llm_cma" else llm


def _cma(distill: Any, schema: ParameterSchema, seed: int) -> CMAProposer:
    return CMAProposer(schema, distill.search_sigma, distill.search_popsize, seed)


def channel_config(cfg: Any) -> ChannelConfig:
    """The channel settings of ``distill.proposer``: the ``llm`` group's; for ``coach`` the bundled server."""
    if cfg.distill.proposer != "coach":
        if cfg.llm is None:
            raise ConfigError(f"distill.proposer={cfg.distill.proposer} needs an LLM channel: add llm=default (configs/llm/)")
        return ChannelConfig.from_mapping(OmegaConf.to_container(cfg.llm, resolve=True)).with_env_overrides()
    return ChannelConfig()  # its defaults: the bundled server's openclaw-coach


def _checked_channel(channel_cfg: ChannelConfig, resources: list[Any], replay: str | None) -> Any:
    """The open channel (its closers appended to ``resources``), checked with one call per model; None to replay."""
    if replay:
        return None
    try:
        channel, server = open_channel(channel_cfg)
    except ChannelError as err:
        raise ConfigError(f"LLM channel: {err.message}") from None
    resources += [r for r in (channel, server) if r is not None]
    failed = [r for r in check_models(channel, models_of(channel_cfg)) if not r.ok]
    if failed:
        for resource in resources:
            resource.close()
        raise ConfigError("LLM channel check failed (python -m coach.llm.check diagnoses it):\n" + "\n".join(
            f"  {r.model}: {r.message}" for r in failed))
    return channel
