"""The quadruped's reward: one function per named term (``reward_<name>``), :func:`feet_air_time` and
:func:`step_outcome`, the step's reward, fall flag and info (with the gait measures of ``envs.quadruped.gait``).

The terms and their default scales are tabled in :class:`~envs.quadruped.QuadrupedEnv`'s docstring (the
scales: ``envs.quadruped.config.DEFAULT_REWARD_SCALES``). One implementation for one env and the batch:
the env's ``step()`` runs :func:`step_outcome` on its floats (``m=ScalarMath``), the batched vector env
(``envs.batched``) on (N,) arrays (``m=BatchMath``), with the same bits. ``env`` arguments are the
:class:`~envs.quadruped.QuadrupedEnv` whose settings are read (its ``dt``, thresholds, fall height, base
height target, tracking sigma and per-step scales).
"""

from __future__ import annotations

import numpy as np

from envs.array_math import BatchMath, ScalarMath
from envs.quadruped.gait import advance_gait, foot_motion, gait_info


# ---------------------------------------------------------------- reward terms
# One function per term of QuadrupedEnv.DEFAULT_REWARD_SCALES (the reward table of QuadrupedEnv's
# docstring), as in MuJoCo Playground's joystick env. Each takes the term's scale times dt and returns
# its contribution to the step's reward (``info["reward_<name>"]``); velocities are body frame. Each
# works on one env's floats (vectors: shape (12,)) with ``m=ScalarMath`` and on N envs' (N,) arrays
# (vectors: (N, 12)) with ``m=BatchMath``, with the same rounding.


def reward_tracking_lin_vel(scale: float, error2: float, sigma: float, m: type[ScalarMath] | type[BatchMath]) -> float:
    """``scale * exp(-|cmd_xy - v_xy|^2 / sigma)``; ``error2`` = |cmd_xy - v_xy|^2 in (m/s)^2."""
    return scale * m.exp(-error2 / sigma)


def reward_tracking_ang_vel(scale: float, error: float, sigma: float, m: type[ScalarMath] | type[BatchMath]) -> float:
    """``scale * exp(-(cmd_wz - w_z)^2 / sigma)``; ``error`` = cmd_wz - w_z in rad/s."""
    return scale * m.exp(-error * error / sigma)


def reward_lin_vel_z(scale: float, vz: float) -> float:
    """``scale * v_z^2``: vertical trunk velocity (m/s)."""
    return scale * vz * vz


def reward_ang_vel_xy(scale: float, wx: float, wy: float) -> float:
    """``scale * (w_x^2 + w_y^2)``: roll and pitch rates (rad/s)."""
    return scale * (wx * wx + wy * wy)


def reward_orientation(scale: float, gx: float, gy: float) -> float:
    """``scale * (g_x^2 + g_y^2)``: tilt as projected gravity (unit vector; 0 when level)."""
    return scale * (gx * gx + gy * gy)


def reward_torques(scale: float, torques: np.ndarray, m: type[ScalarMath] | type[BatchMath]) -> float:
    """``scale * sum_j tau_j^2``: actuator torques (N·m)."""
    return scale * m.sum_of_squares(torques)


def reward_action_rate(scale: float, action: np.ndarray, previous: np.ndarray,
                       m: type[ScalarMath] | type[BatchMath]) -> float:
    """``scale * sum_j (a_t,j - a_t-1,j)^2`` (clipped actions in [-1, 1])."""
    return scale * m.sum_of_squares(action - previous)


def reward_base_height(scale: float, dz: float) -> float:
    """``scale * dz^2``: trunk height minus its target (m, world z)."""
    return scale * dz * dz


def reward_feet_slip(scale: float, contact: list, slip2: list, m: type[ScalarMath] | type[BatchMath]) -> float:
    """``scale * sum_feet in contact |v_contact_xy|^2``: the squared horizontal speed (m/s)^2 of each stance
    foot's contact point (:func:`~envs.quadruped.gait.foot_motion`; Playground Go1's ``feet_slip``, which
    takes the foot centre's). ``contact``, ``slip2``: four per-foot values each (floats or (N,) arrays)."""
    total = 0.0
    for c, s2 in zip(contact, slip2):
        total = total + m.where(c, s2, 0.0)
    return scale * total


def reward_feet_clearance(scale: float, height: list, speed2: list, target: float,
                          m: type[ScalarMath] | type[BatchMath]) -> float:
    """``scale * sum_feet |h - target| * sqrt(|v_xy|)``: each foot's lowest point's height ``h`` (m, above the
    ground: world z on flat ground, the ground under the foot on the terrain env) away from ``target`` (m),
    weighted by the root of its centre's horizontal speed (m/s; ``speed2`` its square), so a foot that moves
    does it ``target`` high (Playground Go1's ``feet_clearance``). ``height``, ``speed2``: four per-foot values
    each (floats or (N,) arrays)."""
    total = 0.0
    for h, v2 in zip(height, speed2):
        total = total + abs(h - target) * m.sqrt(m.sqrt(v2))
    return scale * total


def reward_feet_clearance_ahead(scale: float, clearance: list, speed2: list, margin: float,
                                m: type[ScalarMath] | type[BatchMath]) -> float:
    """``scale * sum_feet max(0, margin - c) * sqrt(|v_xy|)``: how far each foot's lowest point is below ``margin``
    (m) over the ground ahead, ``c`` (m: over the higher of the ground under the foot and where its horizontal
    velocity takes it in ``FOOT_LOOKAHEAD``; on flat ground its height), weighted by the root of its centre's
    horizontal speed (m/s; ``speed2`` its square). One-sided: a foot swinging at a riser is charged until it is
    ``margin`` above the riser's top, a higher one or one standing is not. ``clearance``, ``speed2``: four
    per-foot values each (floats or (N,) arrays)."""
    total = 0.0
    for c, v2 in zip(clearance, speed2):
        total = total + m.maximum(margin - c, 0.0) * m.sqrt(m.sqrt(v2))
    return scale * total


def reward_trunk_clearance(scale: float, clearance: float, margin: float,
                           m: type[ScalarMath] | type[BatchMath]) -> float:
    """``scale * max(0, margin - c)``: how far the trunk is below ``margin`` (m) over the ground, ``c`` (m: the lowest
    of its touch zone's bottom corners over the higher of the ground under the corner and where the trunk's horizontal
    velocity takes it in ``FOOT_LOOKAHEAD``; the terrain env's :class:`~envs.quadruped.height_scan.TerrainState`).
    One-sided: a trunk running its front into a riser, or its belly onto a step's edge, is charged before the touch
    ends the episode; one ``margin`` clear of the ground is not. A float, or an (N,) array."""
    return scale * m.maximum(margin - clearance, 0.0)


def reward_termination(scale: float, fell: bool) -> float:
    """``scale`` on the step the robot falls, else 0."""
    return scale * fell


def feet_air_time(touch, air, last, command_xy2, env, m: type[ScalarMath] | type[BatchMath]):
    """Sum over the feet touching down this step of ``t_air - AIR_TIME_THRESHOLD`` (s), and the feet's
    new air times (s) and contact flags, from foot touch readings ``touch`` (N, FR FL RR RL order; a
    fifth entry, the trunk's, is ignored) and the previous ``air`` times and contacts ``last`` (four
    floats/bools each, or four (N,) arrays).

    Playground style: contact is the touch sensor above ``CONTACT_FORCE_THRESHOLD`` N, or'ed with the
    previous step's contact; the sum is 0 while the commanded planar speed is at most 0.1 m/s
    (``command_xy2`` = |cmd_xy|^2 <= 0.01 (m/s)^2).
    """
    dt, thr, t_min = env.dt, env.CONTACT_FORCE_THRESHOLD, env.AIR_TIME_THRESHOLD
    air_time, new_air, new_last = 0.0, [], []
    for force, t, was in zip(touch, air, last):  # the four feet
        c = force > thr
        first_contact = (t > 0.0) & (c | was)  # first contact after being airborne
        air_time = air_time + first_contact * (t + dt - t_min)  # adds exactly t + dt - t_min, or a zero
        new_air.append(m.where(c, 0.0, t + dt))
        new_last.append(c)
    return m.where(command_xy2 <= 0.01, 0.0, air_time), new_air, new_last


def step_outcome(base, command, touch, feet, ahead, trunk_clear, z, torques, action, previous, air, last, gait,
                 x_velocity, env, m: type[ScalarMath] | type[BatchMath]):
    """Reward, fall flag, info, new feet air times, contacts and gait state of one env's step or of N at
    once: the single env's ``step()`` runs it on its floats (``m=ScalarMath``), the batched vector env on
    (N,) arrays (``m=BatchMath``), so both give the same bits.

    ``base``: body-frame linear velocity (m/s), angular velocity (rad/s) and projected gravity (9
    values); ``command`` (vx m/s, vy m/s, wz rad/s); ``touch``: the feet's and trunk's touch readings
    (N); ``feet``: the 36 foot sensor readings (:mod:`envs.quadruped.gait`); ``ahead``: the feet's clearance over
    the ground ahead (:func:`reward_feet_clearance_ahead`; four values, m), or None where the ground is flat;
    ``trunk_clear``: the trunk's clearance over the ground (:func:`reward_trunk_clearance`, m; inf where it is not
    measured); ``z``: trunk height (m, world); ``torques`` (N·m) and
    the clipped ``action`` and ``previous`` action: (12,) vectors or (N, 12); ``air``/``last``: see
    :func:`feet_air_time`; ``gait``: the gait state (:func:`~envs.quadruped.gait.advance_gait`);
    ``x_velocity``: world-frame trunk x velocity (m/s). Scalars are floats, or (N,) arrays with
    ``m=BatchMath``. The info carries the gait measures (:func:`~envs.quadruped.gait.gait_info`).
    """
    vx, vy, vz, wx, wy, wz, gx, gy, gz = base
    cx, cy, cw = command
    fell = (gz > env.FALL_GRAVITY_Z) | (z < env.fall_height) | (touch[4] > 0.0)
    ex, ey, ew = cx - vx, cy - vy, cw - wz
    err2 = ex * ex + ey * ey
    sigma = env.tracking_sigma
    k = env.reward_scales_dt
    air_term, air, last = feet_air_time(touch, air, last, cx * cx + cy * cy, env, m)
    contact = last  # this step's touch readings above CONTACT_FORCE_THRESHOLD, per foot
    height, speed2, slip2 = foot_motion(feet, env.foot_radius)
    gait = advance_gait(gait, contact, height, slip2, m)
    r0 = reward_tracking_lin_vel(k["tracking_lin_vel"], err2, sigma, m)
    r1 = reward_tracking_ang_vel(k["tracking_ang_vel"], ew, sigma, m)
    r2 = reward_lin_vel_z(k["lin_vel_z"], vz)
    r3 = reward_ang_vel_xy(k["ang_vel_xy"], wx, wy)
    r4 = reward_orientation(k["orientation"], gx, gy)
    r5 = reward_torques(k["torques"], torques, m)
    r6 = reward_action_rate(k["action_rate"], action, previous, m)
    r7 = k["feet_air_time"] * air_term
    r8 = reward_feet_slip(k["feet_slip"], contact, slip2, m)
    r9 = reward_feet_clearance(k["feet_clearance"], height, speed2, env.FOOT_CLEARANCE_TARGET, m)
    r10 = reward_feet_clearance_ahead(k["feet_clearance_ahead"], height if ahead is None else ahead, speed2,
                                      env.FOOT_STEP_MARGIN, m)
    r11 = reward_trunk_clearance(k["trunk_clearance"], trunk_clear, env.TRUNK_MARGIN, m)
    r12 = reward_base_height(k["base_height"], z - env.base_height_target)
    r13 = reward_termination(k["termination"], fell)
    info = {  # the reward terms in REWARD_TERMS order, as summed below
        "reward_tracking_lin_vel": r0,
        "reward_tracking_ang_vel": r1,
        "reward_lin_vel_z": r2,
        "reward_ang_vel_xy": r3,
        "reward_orientation": r4,
        "reward_torques": r5,
        "reward_action_rate": r6,
        "reward_feet_air_time": r7,
        "reward_feet_slip": r8,
        "reward_feet_clearance": r9,
        "reward_feet_clearance_ahead": r10,
        "reward_trunk_clearance": r11,
        "reward_base_height": r12,
        "reward_termination": r13,
        "tracking_error": m.sqrt(err2),
        "x_velocity": x_velocity,
        "fell": fell,
        **gait_info(gait, m),
    }
    reward = 0.0 + r0 + r1 + r2 + r3 + r4 + r5 + r6 + r7 + r8 + r9 + r10 + r11 + r12 + r13
    return reward, fell, info, air, last, gait
