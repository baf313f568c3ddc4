"""The hinted controller teacher: a controller teacher whose parameters come from LLM hints.

:class:`HintedControllerTeacher` is a :class:`~agents.teachers.controller.ControllerTeacher` that cuts each
env's stream into segments (an episode, or ``segment_steps`` steps). When a segment ends its compact
summary goes to :class:`distill.llm.service.HintService` (asynchronous). An accepted hint sets that env's
controller parameters for the following segments (weight 1); a rejected, failed, missing or stale hint
(older than ``max_age`` segments) masks the env's samples (weight 0). Training never waits for a hint.
With ``distill.verify_hints`` (the default) an accepted hint is first checked in simulation
(:mod:`agents.teachers.verifier`) on the hint thread; one that does not beat the current parameters keeps
them (and still teaches with them).

This module and its verifier are the only modules of ``agents/`` that import :mod:`distill.llm` (and with it
``openai``) when loaded; :mod:`agents.teachers.controller` loads this one only for ``distill=llm_hint``.
"""

from __future__ import annotations

import copy
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from omegaconf import OmegaConf
from stable_baselines3.common.vec_env import VecEnv

from agents.controller_policy import obs_row
from agents.errors import ConfigError
from agents.teachers.controller import ControllerTeacher
from agents.teachers.verifier import ShadowVerifier
from distill.llm.channel import ChannelConfig, ChannelError, check_models, models_of, open_channel
from distill.llm.hints import HintSchema, build_request
from distill.llm.service import HintService
from envs.base import ControllerSpec
from envs.controllers import ControllerFamily


def hint_schema(family: ControllerFamily) -> HintSchema:
    """The hint schema of an env family: its parameters' bounds and which of them are whole numbers."""
    return HintSchema(family.family, dict(family.params.BOUNDS), family.integer_params)


class HintedControllerTeacher(ControllerTeacher):
    """A controller teacher whose parameters come from hints (module docstring).

    Args:
        venv, family, spec: as :class:`ControllerTeacher`.
        service: the hint queries.
        segment_steps: a segment ends at an episode end or after this many steps.
        max_age: segments an accepted hint stays valid for.
    """

    def __init__(self, venv: VecEnv, family: ControllerFamily, spec: ControllerSpec, service: HintService,
                 segment_steps: int = 200, max_age: int = 3, params: Any = None) -> None:
        super().__init__(venv, family, spec, params)
        n = venv.num_envs
        self.service, self.schema = service, hint_schema(family)
        self.segment_steps, self.max_age = segment_steps, max_age
        self.segments = [family.segment() for _ in range(n)]
        self.segment_index = [0] * n
        self.episode_start: list[Any] = [None] * n  # each env's first observation of its current episode
        self.hint_from: list[int | None] = [None] * n  # first segment an accepted hint applies to (None: no hint)
        self.invalid_hints = 0
        self.warned = False
        self.on_close: list[Any] = []  # e.g. the LLM channel and the bundled server

    def reset(self):
        obs = super().reset()
        self.segments = [self.family.segment() for _ in range(self.num_envs)]
        self.episode_start = [copy.deepcopy(obs_row(obs, i)) for i in range(self.num_envs)]
        return obs

    def weights(self) -> np.ndarray:
        """1 for the envs whose current hint was accepted at most ``max_age`` segments ago, else 0."""
        def taught(i: int) -> bool:
            start = self.hint_from[i]
            return start is not None and 0 <= self.segment_index[i] - start < self.max_age

        return np.array([1.0 if taught(i) else 0.0 for i in range(self.num_envs)], dtype=np.float32)

    def observe(self, obs: Any, dones: np.ndarray, infos: list[dict]) -> None:
        self._track_segments(obs, dones, infos)
        self._collect_hints()

    def _track_segments(self, obs: Any, dones: np.ndarray, infos: list[dict]) -> None:
        """Add the step to each env's segment; a finished segment goes to the hint service."""
        for i, info in enumerate(infos):
            self.segments[i].add(info["terminal_observation"] if dones[i] else obs_row(obs, i), info)
            if dones[i] or self.segments[i].steps >= self.segment_steps:
                summary, outcome = self.segments[i].summary()
                params = self.policy.controllers[i].params.to_dict()
                self.service.submit(i, self.segment_index[i], build_request(self.schema, params, summary, outcome),
                                    self.episode_start[i])
                self.segment_index[i] += 1
                self.segments[i] = self.family.segment()
            if dones[i]:
                self.episode_start[i] = copy.deepcopy(obs_row(obs, i))

    def _collect_hints(self) -> None:
        for i in range(self.num_envs):
            outcome = self.service.poll(i)
            if outcome is None:
                continue
            if not outcome.accepted:
                self.hint_from[i] = None
                continue
            controller = self.policy.controllers[i]
            try:
                controller.params = self.family.params.from_dict({**controller.params.to_dict(), **outcome.params})
            except (TypeError, ValueError):
                self.invalid_hints += 1
                self.hint_from[i] = None
                continue
            self.sync_env(i)
            self.hint_from[i] = outcome.segment + 1

    def record_stats(self, record) -> None:
        """The coverage and the hint service's counters (``hints/*``); says once on stderr when most LLM calls
        time out."""
        super().record_stats(record)
        self._record_hints(record)

    def _record_hints(self, record) -> None:
        for key, value in self.service.stats().items():
            record(f"hints/{key}", value)
        record("hints/invalid_params", float(self.invalid_hints))
        warning = self.service.timeout_warning()
        if warning is not None and not self.warned:
            print(f"warning: {warning}", file=sys.stderr)
            self.warned = True

    def finish(self, logger: Any, step: int) -> None:
        """Give the queries in flight one attempt's time (``llm.timeout_s * (llm.max_retries + 1)``) to finish,
        record the rest as cancelled and log the final counters, which then match the records file."""
        self.service.finish(self.service.cfg.timeout_s * (self.service.cfg.max_retries + 1))
        self._record_hints(logger.record)  # coverage has no new samples to report
        logger.dump(step)

    def report(self) -> dict[str, Any]:
        did = super().report()
        stats = self.service.stats()
        did.update(teacher_hint_queries=int(stats["queries"]), teacher_hints_accepted=int(stats["accepted"]),
                   teacher_hints_rejected=int(stats["rejected"]), teacher_malformed_answers=int(stats["parse_errors"]),
                   teacher_errors=int(stats["calls_failed"]))  # timeouts, errors, breaker and budget refusals
        if "verified" in stats:  # distill.verify_hints: what the checks cost and let through
            did.update(teacher_hints_verified=int(stats["verified"]), teacher_hints_adopted=int(stats["adopted"]),
                       teacher_verify_cpu_s_per_hint=round(stats["verify_cpu_s_per_hint"], 4),
                       teacher_verify_cpu_share=round(stats["verify_cpu_share"], 4))
        timeouts = self.service.timeout_warning()
        if timeouts is not None:
            did["teacher_hint_warning"] = timeouts
        return did

    def coverage_cause(self) -> str:
        stats = self.service.stats()
        if not stats["queries"]:
            return (f"no hint was asked for: no segment ended (lower distill.segment_steps={self.segment_steps} "
                    "or train longer)")
        if not stats["accepted"]:
            errors = int(stats["calls_failed"])
            return (f"none of {int(stats['queries'])} hint queries was accepted ({int(stats['rejected'])} rejected, "
                    f"{int(stats['parse_errors'])} malformed or refused answers, {errors} failed calls); "
                    "python -m distill.llm.check diagnoses the channel")
        return (f"{int(stats['accepted'])} of {int(stats['queries'])} hint queries were accepted and each teaches "
                f"for distill.hint_max_age={self.max_age} segments")

    def close(self) -> None:
        self.service.close()
        for close in self.on_close:
            close()
        super().close()


def hinted_teacher(venv: VecEnv, family: ControllerFamily, env: Any, cfg: Any,
                   params: Any = None) -> HintedControllerTeacher:
    """The ``distill=llm_hint`` teacher around ``venv`` (raw), ``env`` being its first env (unwrapped); the
    controllers start from ``params`` (``None``: their defaults for the robot).

    Opens the LLM channel (starting the bundled offline server when ``llm.base_url`` is null), checks it
    with one call per model, and raises :class:`ConfigError` with the diagnosis when the check fails;
    ``distill.hint_replay`` answers from a records file instead, without any LLM.
    """
    distill, llm = cfg.distill, cfg.llm
    channel_cfg = ChannelConfig.from_mapping(OmegaConf.to_container(llm, resolve=True)).with_env_overrides()
    run_name = f"{cfg.env.name}-{cfg.agent.name}-{Path(cfg.run_dir).name}"
    records = Path(distill.records_dir) / f"{run_name}-{time.strftime('%Y%m%d-%H%M%S')}.jsonl"
    channel, server = None, None
    if not distill.hint_replay:
        try:
            channel, server = open_channel(channel_cfg)
        except ChannelError as err:
            raise ConfigError(f"LLM channel: {err.message}") from None
        failed = [r for r in check_models(channel, models_of(channel_cfg)) if not r.ok]
        if failed:
            for resource in (channel, server):
                if resource is not None:
                    resource.close()
            raise ConfigError("LLM channel check failed (python -m distill.llm.check diagnoses it):\n" + "\n".join(
                f"  {r.model}: {r.message}" for r in failed))
    verifier = None
    if distill.verify_hints:
        verifier = ShadowVerifier(env.spec.id, env.spec.kwargs, family, env.controller_spec, distill.verify_rollouts,
                                  distill.verify_steps, distill.verify_margin)
    service = HintService(channel, channel_cfg, hint_schema(family), records_path=records, verifier=verifier,
                          verify_budget_s_per_min=distill.verify_budget_s_per_min)
    if distill.hint_replay:
        service.load_records(Path(distill.hint_replay))
    teacher = HintedControllerTeacher(venv, family, env.controller_spec, service, distill.segment_steps,
                                      distill.hint_max_age, params)
    teacher.on_close += [c.close for c in (channel, server) if c is not None]
    return teacher
