"""The claw's reward terms (``reward_<term>``, scaled by :data:`REWARD_SCALES`) and a step's outcome
(:func:`step_outcome`: reward, termination, info), which ``ClawEnv.step()`` (on floats, ``ScalarMath``) and the
batched vector env (on ``(N,)`` arrays, ``BatchMath``) both run, and whose goal-dependent part
(:func:`goal_terms`, :func:`step_reward`) ``ClawEnv.compute_reward`` reruns for relabelled goals
(:mod:`envs.claw.her`). The terms, their values and units: ``ClawEnv``'s docstring, section "Rewards".
"""

from __future__ import annotations

from typing import Any, NamedTuple, Protocol

import numpy as np

from envs.array_math import BatchMath, ScalarMath
from envs.claw.scene import TABLE_TOP_Z

REWARD_SCALES = {
    "reach": -1.0,  # per m of grip-to-cube distance
    "grasp": 0.25,  # while the cube is held
    "goal": -2.0,  # per m of cube-to-target distance (info key reward_lift or reward_place)
    "success": 1.0,  # while within distance_threshold
}


def reward_reach(scale: float, grip_to_cube: float) -> float:
    """``scale * |grip_pos - object_pos|`` (m)."""
    return scale * grip_to_cube


def reward_grasp(scale: float, grasped: bool | np.ndarray) -> float | np.ndarray:
    """``scale`` while the cube is held, else 0; works on batches of flags."""
    return scale * grasped


def reward_goal(scale: float, distance: float | np.ndarray) -> float | np.ndarray:
    """``scale * d``, ``d`` = |achieved_goal - desired_goal| (m); works on batches of distances."""
    return scale * distance


def reward_success(scale: float, success: bool | np.ndarray) -> float | np.ndarray:
    """``scale`` where ``d <= distance_threshold``, else 0; works on batches of flags."""
    return scale * success


class RewardSettings(Protocol):
    """What :func:`step_outcome` reads of the env (``ClawEnv``, from its arguments)."""

    distance_threshold: float  # m, the success radius
    _dense: bool  # reward_type == "dense"
    _goal_term: str  # the goal term's info key: reward_lift or reward_place (the task)


class GoalTerms(NamedTuple):
    """What a step's reward takes from its goals (floats, or arrays of one shape)."""

    distance: Any  # d = |achieved_goal - desired_goal| (m)
    success: Any  # d <= distance_threshold
    goal: Any  # the reward_goal term (info key reward_lift or reward_place)
    success_term: Any  # the reward_success term


def goal_terms(ag, g, distance_threshold: float, m: type[ScalarMath] | type[BatchMath]) -> GoalTerms:
    """The goal-dependent terms of achieved goal ``ag`` and desired goal ``g``: each three coordinates x, y, z
    (m, world; float32-exact), as floats or as arrays (``m=BatchMath``) of any one shape."""
    dx, dy, dz = ag[0] - g[0], ag[1] - g[1], ag[2] - g[2]
    dist = m.sqrt(dx * dx + dy * dy + dz * dz)
    success = dist <= distance_threshold
    k = REWARD_SCALES
    return GoalTerms(dist, success, reward_goal(k["goal"], dist), reward_success(k["success"], success))


def step_reward(goal: GoalTerms, dense_terms: tuple | None, m: type[ScalarMath] | type[BatchMath]):
    """The reward: with ``dense_terms`` = ``(reach, grasp)``, the goal-independent terms, the dense sum of the
    four terms; with ``None`` the sparse reward (0 on success, else -1)."""
    if dense_terms is None:
        return m.where(goal.success, 0.0, -1.0)
    reach, grasp = dense_terms
    return reach + grasp + goal.goal + goal.success_term


def step_outcome(ag, g, reach_distance, grasped, env: RewardSettings, m: type[ScalarMath] | type[BatchMath]):
    """Reward, termination (the cube fell) and info of one env's transition or of ``N`` at once.

    ``ag`` and ``g`` hold the float32-exact achieved and desired goal coordinates x, y, z (m) as three
    floats or three ``(N,)`` float64 arrays; ``reach_distance`` (m) and ``grasped`` come from
    :func:`envs.claw.observation.observe`; ``env`` (the ``ClawEnv``) gives the settings.
    """
    goal = goal_terms(ag, g, env.distance_threshold, m)
    k = REWARD_SCALES
    reach = reward_reach(k["reach"], reach_distance)
    grasp = reward_grasp(k["grasp"], grasped)
    reward = step_reward(goal, (reach, grasp) if env._dense else None, m)
    fell = ag[2] < TABLE_TOP_Z
    info = {
        "is_success": m.where(goal.success, 1.0, 0.0),
        "distance": goal.distance,
        "grasped": grasped,
        "object_fell": fell,
        "reward_reach": reach,
        "reward_grasp": grasp,
        env._goal_term: goal.goal,
        "reward_success": goal.success_term,
    }
    return reward, fell, info
