"""Hints checked in simulation before they teach: :class:`ShadowVerifier`.

An accepted hint (the LLM's answers agreed) is only a proposal. The verifier rolls the scripted
controller out on a *shadow copy* of the training env (same Gymnasium id and kwargs, built in the
hint thread that calls it) with the current and with the proposed parameters: ``rollouts`` episodes
each, of at most ``steps`` steps, from the same start (the segment's episode's goal and cube pose
for the claw, its command for the quadruped) and the same seeds ``0..rollouts-1`` for both
parameter sets, so the comparison is paired. The hint is adopted only when the task score of the
proposal beats the current one by ``margin``:

=========  ======================================================================================
task       score of one rollout (higher is better); the mean over the rollouts is compared
=========  ======================================================================================
claw       success at the end (0/1) minus the final cube-goal distance (m); also reported: the
           highest cube lift above its resting height (m)
quadruped  minus the mean tracking error (m/s) minus 1 if it fell; also reported: the fall rate
=========  ======================================================================================

The verifier is a plain callable for :class:`distill.llm.service.HintService`, which runs it on its
hint threads (never in the training loop), measures its CPU time and bounds it by a budget.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np

import envs  # noqa: F401  (registers the OpenClaw ids)
from agents.controller_policy import ControllerPolicy
from distill.llm.service import Verification
from envs.claw import OBJECT_REST_Z, ClawEnv
from envs.quadruped import QuadrupedEnv


def _claw_start(obs: dict[str, np.ndarray]) -> dict[str, Any]:
    """Reset options that rebuild a claw episode from its first observation: cube pose and goal."""
    s = ClawEnv.OBS_SLICES
    o = np.asarray(obs["observation"], dtype=np.float64)
    w, _, _, z = o[s["object_quat"]]
    return {"object_xy": o[s["object_pos"]][:2].tolist(), "object_yaw": float(2.0 * math.atan2(z, w)),
            "goal": np.asarray(obs["desired_goal"], dtype=np.float64).tolist()}


def _quadruped_start(obs: np.ndarray) -> dict[str, Any]:
    """Reset options that rebuild a quadruped episode from its first observation: the command."""
    return {"command": np.asarray(obs[QuadrupedEnv.OBS_SLICES["command"]], dtype=np.float64).tolist()}


class _ClawScore:
    def __init__(self) -> None:
        self.success, self.distance, self.lift = 0.0, math.inf, 0.0

    def add(self, obs: dict[str, np.ndarray], info: dict[str, Any]) -> None:
        self.success = float(info.get("is_success", 0.0))
        self.distance = float(info["distance"])
        cube_z = float(obs["observation"][ClawEnv.OBS_SLICES["object_pos"]][2])
        self.lift = max(self.lift, cube_z - OBJECT_REST_Z)

    def metrics(self) -> dict[str, float]:
        return {"score": self.success - self.distance, "success": self.success,
                "final_distance": self.distance, "lift": self.lift}


class _QuadrupedScore:
    def __init__(self) -> None:
        self.error_sum, self.steps, self.fell = 0.0, 0, False

    def add(self, obs: np.ndarray, info: dict[str, Any]) -> None:
        self.error_sum += float(info["tracking_error"])
        self.steps += 1
        self.fell |= bool(info.get("fell", False))

    def metrics(self) -> dict[str, float]:
        error = self.error_sum / max(self.steps, 1)
        return {"score": -error - float(self.fell), "tracking_error": error, "fall": float(self.fell)}


# hint task name -> (reset options from an episode's first observation, score of one rollout)
_TASK_CHECKS: dict[str, tuple[Callable[[Any], dict[str, Any]], Callable[[], Any]]] = {
    "claw": (_claw_start, _ClawScore),
    "quadruped": (_quadruped_start, _QuadrupedScore),
}


class ShadowVerifier:
    """``verifier(current, proposed, start_obs) -> Verification`` for one env family (module docstring).

    Args:
        env_id, env_kwargs: the training env's Gymnasium id and kwargs (the shadow copies use them).
        task: the :class:`agents.controller_teacher.ControllerTask` (controller name, schema, params).
        dt: control period (s) for the controller's clock.
        rollouts: episodes per parameter set (k).
        steps: steps per rollout at most (the env's own time limit may end it earlier).
        margin: how much higher the proposal's mean score must be to be adopted.
    """

    def __init__(self, env_id: str, env_kwargs: dict[str, Any], task: Any, dt: float, rollouts: int,
                 steps: int, margin: float) -> None:
        if task.schema.task not in _TASK_CHECKS:
            raise ValueError(f"no hint verification for task {task.schema.task!r}; "
                             f"verifiable tasks: {', '.join(_TASK_CHECKS)}")
        self.env_id, self.env_kwargs, self.task, self.dt = env_id, dict(env_kwargs), task, dt
        self.rollouts, self.steps, self.margin = rollouts, steps, margin
        self.start_options, self.score = _TASK_CHECKS[task.schema.task]
        self._local = threading.local()  # one shadow env per hint thread

    def __call__(self, current: dict[str, Any], proposed: dict[str, Any], start_obs: Any) -> Verification:
        options = self.start_options(start_obs) if start_obs is not None else {}
        before = self._evaluate(current, options)
        after = self._evaluate({**current, **proposed}, options)
        gain = after["score"] - before["score"]
        if gain > self.margin:
            reason = f"verified: score {after['score']:.3f} beats current {before['score']:.3f} by {gain:.3f}"
        else:
            reason = (f"not adopted: score {after['score']:.3f} vs current {before['score']:.3f} (gain {gain:.3f} "
                      f"<= distill.verify_margin={self.margin:g}); kept the current parameters")
        return Verification(gain > self.margin, reason, before, after)

    def _evaluate(self, params: dict[str, Any], options: dict[str, Any]) -> dict[str, float]:
        """Mean metrics of ``rollouts`` episodes (seeds 0..k-1) of the controller with ``params``."""
        env = self._env()
        controller = ControllerPolicy(self.task.controller, 1, self.dt).controllers[0]
        controller.params = self.task.params_from_dict(params)
        runs = []
        for seed in range(self.rollouts):
            obs, _ = env.reset(seed=seed, options=options)
            controller.reset()
            score = self.score()
            for _ in range(self.steps):
                obs, _, terminated, truncated, info = env.step(controller.act(obs))
                score.add(obs, info)
                if terminated or truncated:
                    break
            runs.append(score.metrics())
        return {key: round(float(np.mean([r[key] for r in runs])), 5) for key in runs[0]}

    def _env(self) -> gym.Env:
        env = getattr(self._local, "env", None)
        if env is None:
            env = self._local.env = gym.make(self.env_id, **self.env_kwargs)
        return env
