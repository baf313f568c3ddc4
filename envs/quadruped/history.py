"""The quadruped's proprioceptive history (``history_steps=k``): the last k - 1 frames after the observation.

A *frame* is the proprioceptive part of one control step's observation, as observed (observation noise
included, i.e. what a robot's sensors and its own last command give): :data:`FRAME` = ``ang_vel`` (3, rad/s,
body), ``gravity`` (3, body), ``joint_pos`` (12, rad, joint, minus the default pose), ``joint_vel`` (12, rad/s)
and ``last_action`` (12), 42 entries in that order. The command, the gait clock, the velocimeter's
``lin_vel`` and any privileged entries appear once, in the current observation only.

Layout with ``k`` > 1: ``[the observation of history_steps=1 (D entries) | history_1 | ... | history_{k-1}]``,
``history_j`` the frame of ``j`` control steps (0.02 s each) ago, newest first, so a policy trained with fewer
steps reads a prefix. At reset every past frame is the reset observation's own frame (the robot is taken to
have stood still in its reset state; a deploy loop fills its buffer with the first frame it measures).
``k = 1`` adds nothing: the observation is today's, bit for bit.

Every function works on one env (a 1-D observation, a ``(k - 1, 42)`` history) or on N envs at once
(``(N, D)`` and ``(N, k - 1, 42)``; numpy, or torch tensors: the worlds on MuJoCo Warp) with the same bits per env: the single env's ``step()`` and the batched
vector env both run :func:`with_history`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from envs.array_math import array_namespace

FRAME = ("ang_vel", "gravity", "joint_pos", "joint_vel", "last_action")
MAX_HISTORY_STEPS = 100  # 2 s of control steps


def frame_index(slices: dict[str, slice]) -> np.ndarray:
    """The indices of a frame's entries (:data:`FRAME`, in order) in an observation laid out by ``slices``."""
    return np.concatenate([np.arange(slices[name].start, slices[name].stop) for name in FRAME])


def history_slices(dim: int, steps: int, width: int) -> dict[str, slice]:
    """``{"history_j": slice}`` for ``j`` = 1 .. ``steps`` - 1: frames of ``width`` entries after ``dim`` entries."""
    return {f"history_{j}": slice(dim + (j - 1) * width, dim + j * width) for j in range(1, steps)}


def frames_oldest_first(slices: dict[str, slice], steps: int) -> list[list[int]]:
    """The ``steps`` frames' entry indices in an observation laid out by ``slices`` (with its history slots), oldest
    first: ``history_{steps-1}`` .. ``history_1``, then the current observation's frame (:func:`frame_index`)."""
    past = [slices[f"history_{j}"] for j in range(steps - 1, 0, -1)]
    return [list(range(s.start, s.stop)) for s in past] + [frame_index(slices).tolist()]


def with_history(obs: np.ndarray, history: np.ndarray, index: np.ndarray, fill: bool) -> np.ndarray:
    """``obs`` followed by the past frames in ``history`` (newest first); then ``history`` (in place) gains
    ``obs``'s frame (``obs[..., index]``) as its newest and drops its oldest. ``fill`` (a reset): every past
    frame is ``obs``'s own first."""
    frame = obs[..., index]
    if fill:
        history[...] = frame[..., None, :]
    xp = array_namespace(obs)
    out = xp.concatenate([obs, history.reshape(*obs.shape[:-1], -1)], axis=-1)
    newer = history[..., :-1, :]
    history[..., 1:, :] = newer.copy() if xp is np else newer.clone()  # a copy: the two overlap
    history[..., 0, :] = frame
    return out


def deploy_description(slices: dict[str, slice], steps: int) -> dict[str, Any]:
    """How a deploy loop fills the history (``env.deploy_metadata()["observation_history"]``, JSON): ``steps``;
    ``frame`` (the frame's names, in order, and each one's ``[start, stop]`` in the current observation, which
    is where a frame is copied from); ``slots`` (the history entries, newest first); ``order`` and ``reset``."""
    return {
        "steps": steps,
        "frame": {name: [slices[name].start, slices[name].stop] for name in FRAME},
        "slots": [f"history_{j}" for j in range(1, steps)],
        "order": "after each control step, history_1 holds the frame of the observation just passed to the "
                 "policy, history_j the one j steps back (shift by one frame, drop the oldest)",
        "reset": "at the first step every history_j is the first observation's own frame",
    }
