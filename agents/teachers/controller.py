"""Scripted-controller teachers for online distillation: default parameters or LLM hints.

:class:`ControllerTargets` wraps the training vector env (below ``VecNormalize``, so it reads raw
observations) and runs one scripted controller per env (the env family's, from
:data:`envs.controllers.FAMILIES`: the trot for the quadruped, the grasp for the claw). For every
step it writes into ``info["teacher_target"]`` the controller's action for the observation that
step's action was taken on, followed by a weight.
The students store that row with the sample; :class:`distill.teachers.SampleTargetsTeacher` turns
it into a Gaussian target for the KL loss.

Two sources of controller parameters:

* ``scripted`` — the ablation teacher: default parameters, weight 1 on every sample, no LLM;
* ``llm`` — hints: each env's stream is cut into segments (an episode, or ``segment_steps`` steps).
  When a segment ends its compact summary goes to :class:`distill.llm.service.HintService`
  (asynchronous). An accepted hint sets that env's controller parameters for the following segments
  (weight 1); a rejected, failed, missing or stale hint (older than ``max_age`` segments) masks the
  env's samples (weight 0). Training never waits for a hint. With ``distill.verify_hints`` (the
  default) an accepted hint is first checked in simulation (:mod:`agents.teachers.verifier`) on the hint
  thread; one that does not beat the current parameters keeps them (and still teaches with them).
"""

from __future__ import annotations

import copy
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from omegaconf import OmegaConf
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.vec_env import VecEnv, VecEnvWrapper

from agents.errors import ConfigError
from agents.controller_policy import ControllerPolicy, obs_row
from agents.teachers.verifier import ShadowVerifier
from agents.students.rollout_buffer import TARGET_KEY
from distill.llm.channel import ChannelConfig, ChannelError, check_models, models_of, open_channel
from distill.llm.service import HintService
from distill.llm.hints import HintSchema, build_request
from envs.controllers import FAMILIES, ControllerFamily, family_of


@dataclass(frozen=True)
class ControllerTask:
    """How one env family is taught: its controller (a name in :data:`envs.controllers.FAMILIES`), how
    hinted parameters are validated, the hint schema and the segment statistics."""

    controller: str
    schema: HintSchema
    params_from_dict: Callable[[dict[str, Any]], Any]
    segment: Callable[[], Any]

    @classmethod
    def of(cls, family: ControllerFamily) -> ControllerTask:
        """The task of an env family: hint schema bounds and whole-number parameters from its params class."""
        schema = HintSchema(family.family, dict(family.params.BOUNDS), family.integer_params)
        return cls(family.name, schema, family.params.from_dict, family.segment)


TASKS: dict[str, ControllerTask] = {name: ControllerTask.of(family) for name, family in FAMILIES.items()}


def task_for(env: Any) -> ControllerTask:
    """The :data:`TASKS` entry for an env (by class); ``ValueError`` naming the families that have one."""
    return TASKS[family_of(env).family]


class ControllerTargets(VecEnvWrapper):
    """Record a scripted controller's target (and a weight) in every step's info.

    Args:
        venv: the raw (un-normalised) training vector env.
        task: controller, schema and statistics for the env family.
        dt: control period of the env (s), for the controllers' clocks.
        service: hint queries (``llm`` source), or None for the default-parameter teacher.
        segment_steps: a segment ends at an episode end or after this many steps.
        max_age: segments an accepted hint stays valid for.
    """

    def __init__(self, venv: VecEnv, task: ControllerTask, dt: float, service: HintService | None = None,
                 segment_steps: int = 200, max_age: int = 3) -> None:
        super().__init__(venv)
        n = venv.num_envs
        self.task, self.service = task, service
        self.segment_steps, self.max_age = segment_steps, max_age
        self.policy = ControllerPolicy(task.controller, n, dt)  # each controller holds its params
        self.segments = [task.segment() for _ in range(n)]
        self.segment_index = [0] * n
        self.episode_start: list[Any] = [None] * n  # each env's first observation of its current episode
        self.hint_from = [None] * n  # first segment an accepted hint applies to (None: no hint)
        self.invalid_hints = 0
        self._pending: np.ndarray | None = None
        self._weights_sum, self._weights_n = 0.0, 0
        self._run_sum, self._run_n = 0.0, 0  # the same, summed over the whole run
        self.retired_at_step: int | None = None  # see retire()
        self.on_close: list[Callable[[], None]] = []  # e.g. the LLM channel and the bundled server
        for i in range(n):
            self._sync_env(i)

    def _sync_env(self, i: int) -> None:
        """Make env ``i`` match its controller's params (e.g. the gait clock runs at the trot's frequency)."""
        for name, args in self.policy.controllers[i].env_settings().items():
            self.venv.env_method(name, *args, indices=[i])

    def reset(self):
        obs = self.venv.reset()
        self.segments = [self.task.segment() for _ in range(self.num_envs)]
        self.episode_start = [copy.deepcopy(obs_row(obs, i)) for i in range(self.num_envs)]
        self._pending = self._targets(obs, np.ones(self.num_envs, dtype=bool))
        return obs

    @property
    def retired(self) -> bool:
        return self.retired_at_step is not None

    def retire(self, step: int) -> None:
        """Stop teaching from env step ``step`` to the end of the run: no controller runs, no segment is
        summarised or sent to the LLM; every sample gets a zero row of weight 0 (nothing reads it: alpha
        is 0 by now) and the coverage counts only the samples before this call."""
        self.retired_at_step = step
        self._pending = np.zeros_like(self._pending)

    def step_wait(self):
        obs, rewards, dones, infos = self.venv.step_wait()
        acted_on = self._pending
        if self.retired:
            for info in infos:
                info[TARGET_KEY] = acted_on[0]
            return obs, rewards, dones, infos
        for i, info in enumerate(infos):
            info[TARGET_KEY] = acted_on[i]
        if self.service is not None:
            self._track_segments(obs, dones, infos)
            self._collect_hints()
        self._pending = self._targets(obs, dones)
        return obs, rewards, dones, infos

    def coverage(self) -> float:
        """Fraction of recorded samples with a target since the last call."""
        value = self._weights_sum / self._weights_n if self._weights_n else 0.0
        self._run_sum, self._run_n = self._run_sum + self._weights_sum, self._run_n + self._weights_n
        self._weights_sum, self._weights_n = 0.0, 0
        return value

    def run_coverage(self) -> float:
        """Fraction of all samples recorded so far that have a target."""
        n = self._run_n + self._weights_n
        return (self._run_sum + self._weights_sum) / n if n else 0.0

    def close(self) -> None:
        if self.service is not None:
            self.service.close()
        for close in self.on_close:
            close()
        super().close()

    # ------------------------------------------------------------------

    def _weight(self, i: int) -> float:
        if self.service is None:
            return 1.0
        start = self.hint_from[i]
        return 1.0 if start is not None and 0 <= self.segment_index[i] - start < self.max_age else 0.0

    def _targets(self, obs, episode_start: np.ndarray) -> np.ndarray:
        """Rows (action, weight) for ``obs``; controllers of envs starting an episode are reset first."""
        actions, _ = self.policy.predict(obs, episode_start=episode_start)
        weights = np.array([self._weight(i) for i in range(self.num_envs)], dtype=np.float32)
        self._weights_sum += float(weights.sum())
        self._weights_n += len(weights)
        return np.hstack([actions, weights[:, None]]).astype(np.float32)

    def _track_segments(self, obs, dones: np.ndarray, infos: list[dict]) -> None:
        """Add the step to each env's segment; a finished segment goes to the hint service."""
        for i, info in enumerate(infos):
            self.segments[i].add(info["terminal_observation"] if dones[i] else obs_row(obs, i), info)
            if dones[i] or self.segments[i].steps >= self.segment_steps:
                summary, outcome = self.segments[i].summary()
                params = self.policy.controllers[i].params.to_dict()
                self.service.submit(i, self.segment_index[i], build_request(self.task.schema, params, summary, outcome),
                                    self.episode_start[i])
                self.segment_index[i] += 1
                self.segments[i] = self.task.segment()
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
                controller.params = self.task.params_from_dict({**controller.params.to_dict(), **outcome.params})
            except (TypeError, ValueError):
                self.invalid_hints += 1
                self.hint_from[i] = None
                continue
            self._sync_env(i)
            self.hint_from[i] = outcome.segment + 1


class HintStatsLogger(BaseCallback):
    """Log the teacher's coverage and the hint service's counters (``hints/*``) once per rollout.

    When most LLM calls time out it says so once on stderr. At the end of training it gives the
    queries in flight one attempt's time (``llm.timeout_s * (llm.max_retries + 1)``) to finish,
    records the rest as cancelled and logs the final counters, which then match the records file.
    """

    def __init__(self, targets: ControllerTargets) -> None:
        super().__init__()
        self.targets = targets
        self.warned = False

    def _on_step(self) -> bool:
        return True

    def _on_rollout_end(self) -> None:
        if not self.targets.retired:
            self.logger.record("hints/teacher_coverage", self.targets.coverage())
        self._record_hints()

    def _record_hints(self) -> None:
        service = self.targets.service
        if service is not None:
            for key, value in service.stats().items():
                self.logger.record(f"hints/{key}", value)
            self.logger.record("hints/invalid_params", float(self.targets.invalid_hints))
            warning = service.timeout_warning()
            if warning is not None and not self.warned:
                print(f"warning: {warning}", file=sys.stderr)
                self.warned = True

    def _on_training_end(self) -> None:
        service = self.targets.service
        if service is None:
            return
        service.finish(service.cfg.timeout_s * (service.cfg.max_retries + 1))
        self._record_hints()  # the final counters (coverage has no new samples to report)
        self.logger.dump(self.num_timesteps)


class RetireTeacher(BaseCallback):
    """Retire the controller teacher (:meth:`ControllerTargets.retire`) once the distillation's alpha is
    0 for the rest of training, e.g. after ``distill.schedule_steps``: the rest of the run costs what
    plain RL costs (the trot's targets take about as long as the quadruped's vector step)."""

    def __init__(self, targets: ControllerTargets, finished: Callable[[float], bool]) -> None:
        super().__init__()
        self.targets, self.finished = targets, finished

    def _on_step(self) -> bool:
        if not self.targets.retired and self.finished(self.num_timesteps / self.model._total_timesteps):
            self.targets.retire(self.num_timesteps)
            print(f"step {self.num_timesteps}: the teacher's alpha is 0 from here on; the controller teacher "
                  "stops (RL alone)", file=sys.stderr)
        return True


def controller_targets(venv: VecEnv, distill: Any, llm: Any, run_name: str) -> ControllerTargets:
    """The ``distill=scripted`` / ``distill=llm_hint`` wrapper for ``venv`` (raw, before normalisation).

    For ``llm_hint`` this opens the LLM channel (starting the bundled offline server when
    ``llm.base_url`` is null), checks it with one call per model, and raises :class:`ConfigError`
    with the diagnosis when the check fails; ``distill.hint_replay`` answers from a records file
    instead, without any LLM.
    """
    env = venv.get_attr("unwrapped", indices=[0])[0]
    task = task_for(env)
    if distill.name == "scripted":
        return ControllerTargets(venv, task, env.dt)
    cfg = ChannelConfig.from_mapping(OmegaConf.to_container(llm, resolve=True)).with_env_overrides()
    records = Path(distill.records_dir) / f"{run_name}-{time.strftime('%Y%m%d-%H%M%S')}.jsonl"
    channel, server = None, None
    if not distill.hint_replay:
        try:
            channel, server = open_channel(cfg)
        except ChannelError as err:
            raise ConfigError(f"LLM channel: {err.message}") from None
        failed = [r for r in check_models(channel, models_of(cfg)) if not r.ok]
        if failed:
            for resource in (channel, server):
                if resource is not None:
                    resource.close()
            raise ConfigError("LLM channel check failed (python -m distill.llm.check diagnoses it):\n" + "\n".join(
                f"  {r.model}: {r.message}" for r in failed))
    verifier = None
    if distill.verify_hints:
        spec = env.spec
        verifier = ShadowVerifier(spec.id, spec.kwargs, task, env.dt, distill.verify_rollouts, distill.verify_steps,
                                  distill.verify_margin)
    service = HintService(channel, cfg, task.schema, records_path=records, verifier=verifier,
                          verify_budget_s_per_min=distill.verify_budget_s_per_min)
    if distill.hint_replay:
        service.load_records(Path(distill.hint_replay))
    wrapper = ControllerTargets(venv, task, env.dt, service, distill.segment_steps, distill.hint_max_age)
    wrapper.on_close += [c.close for c in (channel, server) if c is not None]
    return wrapper
