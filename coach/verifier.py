"""Proposals checked in simulation before they teach: :class:`ShadowVerifier`.

Any proposal (an LLM's voted hint, a search's candidate) is checked first. The verifier rolls the scripted
controller out on a *shadow copy* of the training env (same Gymnasium id and kwargs, built in the
thread that calls it) with the current and with the proposed parameters: ``rollouts`` episodes
each, of at most ``steps`` steps, with the same reset options (the proposal's task context: tile type and
level, object class; with ``distill.verify_on=segment`` also the segment's episode's goal and cube pose for the
claw, its command for the quadruped) and the same seeds ``0..rollouts-1`` for both parameter sets (which
draw what the options leave open: commands, goals), so the comparison is paired and repeatable. The proposal is adopted only when the task score of the
proposal beats the current one by ``margin``, and, with ``confirm_rollouts`` (``distill.verify_confirm_rollouts``,
0: off), also on held-out episodes:

=========  ======================================================================================
task       score of one rollout (higher is better); the mean over the rollouts is compared
=========  ======================================================================================
claw       success at the end (0/1) minus the final cube-goal distance (m); also reported: the
           highest cube lift above its resting height (m)
quadruped  minus the mean tracking error (m/s) minus 1 if it fell; also reported: the fall rate
=========  ======================================================================================

**Held-out confirmation.** Many checks on the same few seeds are a fitness a search can overfit (CMA-ES takes the
first check's score as its fitness): it finds parameters that win on seeds ``0..rollouts-1`` and lose elsewhere.
With ``confirm_rollouts = k > 0`` a proposal that passes the first check is played again, both parameter sets, on
``k`` other seeds, and adopted only if it wins there by ``margin`` too. The seeds rotate: the verifier's n-th
confirmation (n = 0, 1, ...) plays seeds ``CONFIRM_SEED + n k ... CONFIRM_SEED + n k + k - 1``
(:meth:`ShadowVerifier.confirm_seeds`), so no confirmation reuses a seed of the first check or of an earlier
confirmation, and no fixed set of episodes decides adoptions for the search to fit; within one confirmation both
sets play the same seeds (paired). ``CONFIRM_SEED`` (10^6) is also far from the seeds the benchmarks validate on
(1000..., 2000...). A confirmation runs only after a passed first check, inside the same call, so its CPU time counts in
the service's verification budget. The confirmation's metrics and seeds are the :class:`coach.proposals.Confirmation`
of the result (``Verification.not_confirmed``: passed the first check, failed the confirmation); ``current`` and
``proposed`` stay the first check's, comparable across proposals.

The start and the score of each env family are columns of :data:`envs.controllers.FAMILIES` (beside
its controller). The verifier is a plain callable for :class:`coach.proposals.ProposalService`, which runs it on its
threads (never in the training loop), measures its CPU time and bounds it by a budget.

Its rollouts are :func:`rollout_metrics`, which also plays episodes whose controller takes its task context's
parameters after each reset (the proposers benchmark's validation of a context table, ``benchmarks/proposers.py``).
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Iterable
from typing import Any

import gymnasium as gym
import numpy as np

import envs  # noqa: F401  (registers the OpenClaw ids)
from coach.proposals import Confirmation, Verification
from envs.controllers import ControllerFamily, tell_env
from envs.declarations import ControllerSpec, TaskContext

# the first seed of the held-out confirmations (ShadowVerifier.confirm_seeds): far from the first check's seeds 0..k-1
# and from the benchmarks' validation (1000...) and offline-tuning (2000...) seeds
CONFIRM_SEED = 1_000_000


class ShadowVerifier:
    """``verifier(current, proposed, start) -> Verification`` for one env family (module docstring); ``start``: the
    reset options of the episode to replay (its goal or command and its task context's options).

    Args:
        env_id, env_kwargs: the training env's Gymnasium id and kwargs (the shadow copies use them).
        family: the env family (:data:`envs.controllers.FAMILIES`): controller, parameters, episode start, score.
        spec: what the env tells its controller (``env.controller_spec``: control period, robot geometry).
        rollouts: episodes per parameter set (k) in the first check (seeds 0..k-1).
        steps: steps per rollout at most (the env's own time limit may end it earlier).
        margin: how much higher the proposal's mean score must be to be adopted (in the first check and in the
            confirmation).
        confirm_rollouts: episodes per parameter set in the held-out confirmation of a proposal that passed the
            first check (module docstring; 0: no confirmation).
    """

    def __init__(self, env_id: str, env_kwargs: dict[str, Any], family: ControllerFamily, spec: ControllerSpec,
                 rollouts: int, steps: int, margin: float, confirm_rollouts: int = 0) -> None:
        if confirm_rollouts < 0:
            raise ValueError(f"confirm_rollouts={confirm_rollouts}: use >= 0 (0: no held-out confirmation)")
        if rollouts > CONFIRM_SEED:
            raise ValueError(f"rollouts={rollouts}: at most {CONFIRM_SEED}, the first held-out seed")
        self.env_id, self.env_kwargs, self.family, self.spec = env_id, dict(env_kwargs), family, spec
        self.rollouts, self.steps, self.margin, self.confirm_rollouts = rollouts, steps, margin, confirm_rollouts
        self._local = threading.local()  # one shadow env per thread
        self._confirmations = itertools.count()  # the next confirmation's index (its seeds)
        self._lock = threading.Lock()

    def confirm_seeds(self, n: int) -> range:
        """The seeds of the verifier's ``n``-th confirmation (n = 0, 1, ...; module docstring): none of them is a seed
        of the first check (0..rollouts-1) or of another confirmation."""
        k = self.confirm_rollouts
        return range(CONFIRM_SEED + n * k, CONFIRM_SEED + (n + 1) * k)

    def __call__(self, current: dict[str, Any], proposed: dict[str, Any], start: dict[str, Any] | None) -> Verification:
        options = dict(start or {})
        candidate = {**current, **proposed}
        seeds = range(self.rollouts)
        before, after, gain = self._paired(current, candidate, seeds, options)
        if gain <= self.margin:
            return Verification(False, f"not adopted: score {after['score']:.3f} vs current {before['score']:.3f} "
                                f"(gain {gain:.3f} <= distill.verify_margin={self.margin:g}); kept the current "
                                "parameters", before, after)
        first = f"score {after['score']:.3f} beats current {before['score']:.3f} by {gain:.3f}"
        if not self.confirm_rollouts:
            return Verification(True, f"verified: {first}", before, after)
        with self._lock:
            held_out = self.confirm_seeds(next(self._confirmations))
        held_before, held_after, held_gain = self._paired(current, candidate, held_out, options)
        passed = held_gain > self.margin
        confirmation = Confirmation(list(held_out), held_before, held_after, passed)
        named = f"held-out seeds {held_out.start}..{held_out.stop - 1}"
        if passed:
            reason = (f"verified: {first}, confirmed on {named}: score {held_after['score']:.3f} beats "
                      f"{held_before['score']:.3f} by {held_gain:.3f}")
        else:
            reason = (f"not adopted: passed the first check ({first}) but not its confirmation on {named}: score "
                      f"{held_after['score']:.3f} vs current {held_before['score']:.3f} (gain {held_gain:.3f} <= "
                      f"distill.verify_margin={self.margin:g}, distill.verify_confirm_rollouts="
                      f"{self.confirm_rollouts}); kept the current parameters")
        return Verification(passed, reason, before, after, confirmation)

    def _paired(self, current: dict[str, Any], candidate: dict[str, Any], seeds: Iterable[int],
                options: dict[str, Any]) -> tuple[dict[str, float], dict[str, float], float]:
        """Both parameter sets on the same ``seeds``: their mean metrics and the candidate's score gain."""
        before = self._evaluate(current, seeds, options)
        after = self._evaluate(candidate, seeds, options)
        return before, after, after["score"] - before["score"]

    def _evaluate(self, params: dict[str, Any], seeds: Iterable[int], options: dict[str, Any]) -> dict[str, float]:
        """Mean metrics of one episode per seed of the controller with ``params``."""
        return rollout_metrics(self._env(), self.family, self.spec, params, seeds, options, self.steps)

    def _env(self) -> gym.Env:
        env = getattr(self._local, "env", None)
        if env is None:
            env = self._local.env = gym.make(self.env_id, **self.env_kwargs)
        return env


# the parameters of every episode, or those of an episode's task context (``env.task_context()`` after its reset)
EpisodeParams = dict[str, Any] | Callable[[TaskContext], dict[str, Any]]


def rollout_metrics(env: gym.Env, family: ControllerFamily, spec: ControllerSpec, params: EpisodeParams,
                    seeds: Iterable[int], options: dict[str, Any], steps: int | None = None,
                    digits: int = 5) -> dict[str, float]:
    """Mean metrics of the family's score (``score().metrics()``) over one episode of ``env`` per seed, reset with
    ``options``, each driven by the family's controller (built with ``spec``) for at most ``steps`` steps
    (``None``: until the episode ends), rounded to ``digits``.

    ``params``: a dict drives every episode; it is set, and told to the env (:func:`envs.controllers.tell_env`: the
    gait clock's frequency), once before the first reset, so every episode starts with the env settings it needs.
    A callable gives each episode its task context's parameters after its reset (:func:`start_episode`), as the
    training envs take theirs."""
    controller = family.controller(spec=spec)
    per_context = callable(params)
    if not per_context:
        use_params(env, controller, family, params)
    runs = []
    for seed in seeds:
        obs, _ = start_episode(env, controller, family, params if per_context else None, seed, options)
        score = family.score()
        for _ in range(steps) if steps is not None else itertools.count():
            obs, _, terminated, truncated, info = env.step(controller.act(obs))
            score.add(obs, info)
            if terminated or truncated:
                break
        runs.append(score.metrics())
    return {key: round(float(np.mean([r[key] for r in runs])), digits) for key in runs[0]}


def start_episode(env: gym.Env, controller: Any, family: ControllerFamily,
                  params_for: Callable[[TaskContext], dict[str, Any]] | None, seed: int | None,
                  options: dict[str, Any]) -> tuple[Any, TaskContext]:
    """Reset ``env`` (``seed``, a copy of ``options``) and ``controller``; with ``params_for`` the controller first
    takes the parameters of the episode's task context (:func:`use_params`). Returns (first observation, context)."""
    obs, _ = env.reset(seed=seed, options=dict(options))
    context = env.unwrapped.task_context()
    if params_for is not None:
        use_params(env, controller, family, params_for(context))
    controller.reset()
    return obs, context


def use_params(env: gym.Env, controller: Any, family: ControllerFamily, params: dict[str, Any]) -> None:
    """``controller`` takes ``params`` (validated by the family's params class) and ``env`` is told what they need."""
    controller.params = family.params.from_dict(params)
    tell_env(env, controller)  # e.g. the gait clock's frequency
