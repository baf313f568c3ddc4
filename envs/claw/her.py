"""The claw's Gymnasium-Robotics goal API: the reward of (batches of) relabelled goals
(:func:`relabelled_reward`, what ``ClawEnv.compute_reward`` returns, as hindsight relabelling, e.g. SB3's
``HerReplayBuffer``, calls it), from the same reward terms as the step's (:mod:`envs.claw.rewards`); the dense
reward's goal-independent terms are read back from the step's info dicts (:func:`info_term`).
"""

from __future__ import annotations

import numpy as np

from envs.array_math import BatchMath
from envs.claw.rewards import goal_terms, step_reward

_MISSING_INFO = (
    "reward_type='dense' needs the step's info dicts (goal-independent term {key!r} is missing); "
    "with SB3 pass HerReplayBuffer(..., copy_info_dict=True) via replay_buffer_kwargs, or use reward_type='sparse'"
)


def relabelled_reward(achieved_goal, desired_goal, info, distance_threshold: float, dense: bool) -> float | np.ndarray:
    """The step reward (:func:`~envs.claw.rewards.step_reward`) of achieved and desired goals of shape
    ``(..., 3)`` (m, world; rounded to float32 as the observation is), with success radius
    ``distance_threshold`` (m); ``dense`` reads the goal-independent terms from ``info`` (see
    ``ClawEnv.compute_reward``). A float for one goal pair, else a float64 array of the leading shape."""
    ag = np.asarray(achieved_goal, dtype=np.float32).astype(np.float64)
    dg = np.asarray(desired_goal, dtype=np.float32).astype(np.float64)
    goal = goal_terms(np.moveaxis(ag, -1, 0), np.moveaxis(dg, -1, 0), distance_threshold, BatchMath)
    shape = np.shape(goal.distance)
    dense_terms = (info_term(info, "reward_reach", shape), info_term(info, "reward_grasp", shape)) if dense else None
    reward = step_reward(goal, dense_terms, BatchMath)
    return float(reward) if reward.ndim == 0 else reward


def info_term(info, key: str, shape: tuple[int, ...]) -> np.ndarray:
    """``info[key]`` for one info dict, a dict of arrays, or a list/array of dicts, as ``shape``; 0 for the
    base's physics blow-up transition (whose info carries no terms); ``ValueError`` when missing otherwise."""
    if isinstance(info, dict):
        if key not in info and not info.get("physics_blowup", False):
            raise ValueError(_MISSING_INFO.format(key=key))
        return np.broadcast_to(np.asarray(info.get(key, 0.0), dtype=np.float64), shape)
    if info is None:
        raise ValueError(_MISSING_INFO.format(key=key))
    flat = np.asarray(info, dtype=object).reshape(-1)
    values = np.empty(flat.size)
    for n, item in enumerate(flat):
        if key in item:
            values[n] = item[key]
        elif item.get("physics_blowup", False):  # the base's blow-up transition carries no terms
            values[n] = 0.0
        else:
            raise ValueError(_MISSING_INFO.format(key=key))
    return values.reshape(shape)
