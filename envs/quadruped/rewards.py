"""The quadruped's reward: one function per named term (``reward_<name>``), the table of terms
(:data:`TERM_TABLE`: name, function, default scale; the info key ``reward_<name>``), :func:`feet_air_time` and
:func:`step_outcome`, the step's reward, fall flag and info (with the gait measures of ``envs.quadruped.gait``).

The table is the one place a term is declared: the default scales (``DEFAULT_REWARD_SCALES``, which
``envs.quadruped.config`` and the ``reward_scales`` argument read), the info keys and the order of the sum come from
it; :class:`~envs.quadruped.QuadrupedEnv`'s docstring tables the terms in its order (``tests/test_env_docs.py``
checks the names and scales). One implementation for one env and the batch: the env's ``step()`` runs
:func:`step_outcome` on its floats (``m=ScalarMath``), the batched vector env (``envs.batched``) on (N,) arrays
(``m=BatchMath``), with the same bits. ``env`` arguments are the :class:`~envs.quadruped.QuadrupedEnv` whose
settings are read (its ``dt``, thresholds, fall height, base height target, tracking sigma and per-step scales).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from envs.array_math import BatchMath, ScalarMath
from envs.quadruped.gait import advance_gait, foot_motion, gait_info


# ---------------------------------------------------------------- reward terms
# One function per term of TERM_TABLE (the reward table of QuadrupedEnv's docstring), as in MuJoCo Playground's
# joystick env. Each takes the term's scale times dt (per step), the step's :class:`StepQuantities` ``q``, the env
# (its thresholds and targets) and the maths ``m``, and returns its contribution to the step's reward
# (``info["reward_<name>"]``); velocities are body frame. Each works on one env's floats (vectors: shape (12,)) with
# ``m=ScalarMath`` and on N envs' (N,) arrays (vectors: (N, 12)) with ``m=BatchMath``, with the same rounding.


@dataclass(slots=True)
class StepQuantities:
    """What the reward terms read of one step: floats for one env, (N,) arrays for N (vectors (12,) or (N, 12);
    per-foot values: lists of four, FR, FL, RR, RL). Velocities body frame unless noted."""

    vz: float  # trunk vertical velocity (m/s)
    wx: float  # roll rate (rad/s)
    wy: float  # pitch rate (rad/s)
    gx: float  # projected gravity x (unit vector; 0 when level)
    gy: float  # projected gravity y
    lin_error2: float  # |cmd_xy - v_xy|^2 ((m/s)^2)
    yaw_error: float  # cmd_wz - w_z (rad/s)
    torques: np.ndarray  # actuator torques (N·m)
    action: np.ndarray  # this step's clipped action, in [-1, 1]
    previous: np.ndarray  # the previous step's
    air_time: float  # feet_air_time's sum over this step's touchdowns (s; :func:`feet_air_time`)
    contact: list  # each foot's touch reading is above CONTACT_FORCE_THRESHOLD this step (bools)
    height: list  # each foot's lowest point above the ground (m; :func:`~envs.quadruped.gait.foot_motion`)
    speed2: list  # each foot centre's squared horizontal speed ((m/s)^2, world)
    slip2: list  # each foot's contact point's squared horizontal speed ((m/s)^2, world)
    ahead: list  # each foot's clearance over the ground ahead (m; ``height`` where the ground is flat)
    trunk_clearance: float  # the trunk's clearance over the ground (m; inf where not measured)
    z: float  # trunk height (m: world z, or above the ground under it on the terrain env)
    fell: bool  # this step ended in a fall


def reward_tracking_lin_vel(scale: float, q: StepQuantities, env, m) -> float:
    """``scale * exp(-|cmd_xy - v_xy|^2 / sigma)``, ``sigma`` the env's ``tracking_sigma`` ((m/s)^2)."""
    return scale * m.exp(-q.lin_error2 / env.tracking_sigma)


def reward_tracking_ang_vel(scale: float, q: StepQuantities, env, m) -> float:
    """``scale * exp(-(cmd_wz - w_z)^2 / sigma)`` (rad/s; ``sigma`` the env's ``tracking_sigma``)."""
    return scale * m.exp(-q.yaw_error * q.yaw_error / env.tracking_sigma)


def reward_lin_vel_z(scale: float, q: StepQuantities, env, m) -> float:
    """``scale * v_z^2``: vertical trunk velocity (m/s)."""
    return scale * q.vz * q.vz


def reward_ang_vel_xy(scale: float, q: StepQuantities, env, m) -> float:
    """``scale * (w_x^2 + w_y^2)``: roll and pitch rates (rad/s)."""
    return scale * (q.wx * q.wx + q.wy * q.wy)


def reward_orientation(scale: float, q: StepQuantities, env, m) -> float:
    """``scale * (g_x^2 + g_y^2)``: tilt as projected gravity (unit vector; 0 when level)."""
    return scale * (q.gx * q.gx + q.gy * q.gy)


def reward_torques(scale: float, q: StepQuantities, env, m) -> float:
    """``scale * sum_j tau_j^2``: actuator torques (N·m)."""
    return scale * m.sum_of_squares(q.torques)


def reward_action_rate(scale: float, q: StepQuantities, env, m) -> float:
    """``scale * sum_j (a_t,j - a_t-1,j)^2`` (clipped actions in [-1, 1])."""
    return scale * m.sum_of_squares(q.action - q.previous)


def reward_feet_air_time(scale: float, q: StepQuantities, env, m) -> float:
    """``scale * sum_touchdowns (t_air - AIR_TIME_THRESHOLD)`` (s): :func:`feet_air_time`'s sum."""
    return scale * q.air_time


def reward_feet_slip(scale: float, q: StepQuantities, env, m) -> float:
    """``scale * sum_feet in contact |v_contact_xy|^2``: the squared horizontal speed (m/s)^2 of each stance
    foot's contact point (:func:`~envs.quadruped.gait.foot_motion`; Playground Go1's ``feet_slip``, which
    takes the foot centre's)."""
    total = 0.0
    for c, s2 in zip(q.contact, q.slip2):
        total = total + m.where(c, s2, 0.0)
    return scale * total


def reward_feet_clearance(scale: float, q: StepQuantities, env, m) -> float:
    """``scale * sum_feet |h - target| * sqrt(|v_xy|)``: each foot's lowest point's height ``h`` (m, above the
    ground: world z on flat ground, the ground under the foot on the terrain env) away from the env's
    ``FOOT_CLEARANCE_TARGET`` (m), weighted by the root of its centre's horizontal speed (m/s), so a foot that moves
    does it ``target`` high (Playground Go1's ``feet_clearance``)."""
    total, target = 0.0, env.FOOT_CLEARANCE_TARGET
    for h, v2 in zip(q.height, q.speed2):
        total = total + abs(h - target) * m.sqrt(m.sqrt(v2))
    return scale * total


def reward_feet_clearance_ahead(scale: float, q: StepQuantities, env, m) -> float:
    """``scale * sum_feet max(0, margin - c) * sqrt(|v_xy|)``: how far each foot's lowest point is below the env's
    ``FOOT_STEP_MARGIN`` (m) over the ground ahead, ``c`` (m: over the higher of the ground under the foot and where
    its horizontal velocity takes it in ``FOOT_LOOKAHEAD``; on flat ground its height), weighted by the root of its
    centre's horizontal speed (m/s). One-sided: a foot swinging at a riser is charged until it is ``margin`` above
    the riser's top, a higher one or one standing is not."""
    total, margin = 0.0, env.FOOT_STEP_MARGIN
    for c, v2 in zip(q.ahead, q.speed2):
        total = total + m.maximum(margin - c, 0.0) * m.sqrt(m.sqrt(v2))
    return scale * total


def reward_trunk_clearance(scale: float, q: StepQuantities, env, m) -> float:
    """``scale * max(0, margin - c)``: how far the trunk is below the env's ``TRUNK_MARGIN`` (m) over the ground,
    ``c`` (m: the lowest of its touch zone's bottom corners over the higher of the ground under the corner and where
    the trunk's horizontal velocity takes it in ``FOOT_LOOKAHEAD``; the terrain env's
    :class:`~envs.quadruped.height_scan.TerrainState`). One-sided: a trunk running its front into a riser, or its
    belly onto a step's edge, is charged before the touch ends the episode; one ``margin`` clear of the ground is
    not."""
    return scale * m.maximum(env.TRUNK_MARGIN - q.trunk_clearance, 0.0)


def reward_base_height(scale: float, q: StepQuantities, env, m) -> float:
    """``scale * dz^2``: trunk height minus the env's ``base_height_target`` (m, world z)."""
    dz = q.z - env.base_height_target
    return scale * dz * dz


def reward_termination(scale: float, q: StepQuantities, env, m) -> float:
    """``scale`` on the step the robot falls, else 0."""
    return scale * q.fell


@dataclass(frozen=True)
class RewardTerm:
    """One row of :data:`TERM_TABLE`: a term's ``name`` (the ``reward_scales`` key), its function
    (``reward_<name>(scale, q, env, m)``), its default scale (per second of simulated time) and the ``info`` key its
    contribution is reported under."""

    name: str
    function: Callable[..., float]
    default_scale: float

    @property
    def info_key(self) -> str:
        return f"reward_{self.name}"


# The reward, term by term, in the order the step sums them (the docstring's table of QuadrupedEnv in this order):
# name, function, default scale (per second). A new term is one function above and one row here.
TERM_TABLE = (
    RewardTerm("tracking_lin_vel", reward_tracking_lin_vel, 1.0),
    RewardTerm("tracking_ang_vel", reward_tracking_ang_vel, 0.5),
    RewardTerm("lin_vel_z", reward_lin_vel_z, -2.0),
    RewardTerm("ang_vel_xy", reward_ang_vel_xy, -0.05),
    RewardTerm("orientation", reward_orientation, -5.0),
    RewardTerm("torques", reward_torques, -0.0002),
    RewardTerm("action_rate", reward_action_rate, -0.01),
    RewardTerm("feet_air_time", reward_feet_air_time, 1.0),
    RewardTerm("feet_slip", reward_feet_slip, -0.25),
    RewardTerm("feet_clearance", reward_feet_clearance, -0.5),
    RewardTerm("feet_clearance_ahead", reward_feet_clearance_ahead, 0.0),
    RewardTerm("trunk_clearance", reward_trunk_clearance, 0.0),
    RewardTerm("base_height", reward_base_height, -10.0),
    RewardTerm("termination", reward_termination, -50.0),
)
DEFAULT_REWARD_SCALES = {term.name: term.default_scale for term in TERM_TABLE}  # per second, by name


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


@dataclass(slots=True)
class StepReadings:
    """What :func:`step_outcome` reads of one env's step (floats, vectors (12,)) or of N envs' (``(N,)`` arrays,
    vectors (N, 12)), from the sensors after the physics and the env's own state.

    ``base``: body-frame linear velocity (m/s), angular velocity (rad/s) and projected gravity (9 values);
    ``command`` (vx m/s, vy m/s, wz rad/s); ``touch``: the feet's and trunk's touch readings (N, five values);
    ``feet``: the 36 foot sensor readings (:mod:`envs.quadruped.gait`); ``ahead``: the feet's clearance over the
    ground ahead (:func:`reward_feet_clearance_ahead`; four values, m), or None where the ground is flat;
    ``trunk_clearance``: the trunk's clearance over the ground (:func:`reward_trunk_clearance`, m; inf where it is
    not measured); ``z``: trunk height (m); ``torques`` (N·m); the clipped ``action`` and the ``previous`` one;
    ``air``/``last``: the feet's air times and contacts before the step (:func:`feet_air_time`); ``gait``: the gait
    state (:func:`~envs.quadruped.gait.advance_gait`), or None when the env does not measure the gait
    (``gait_measures=False``); ``x_velocity``: world-frame trunk x velocity (m/s).
    """

    base: list
    command: list
    touch: list
    feet: list
    ahead: list | None
    trunk_clearance: float
    z: float
    torques: np.ndarray
    action: np.ndarray
    previous: np.ndarray
    air: list
    last: list
    gait: list | None
    x_velocity: float


def step_outcome(s: StepReadings, env, m: type[ScalarMath] | type[BatchMath]):
    """Reward, fall flag, info, new feet air times, contacts and gait state (None when ``s.gait`` is) of one env's
    step or of N at once: the single env's ``step()`` runs it on its floats (``m=ScalarMath``), the batched vector
    env on (N,) arrays (``m=BatchMath``), so both give the same bits.

    The reward is the sum of :data:`TERM_TABLE` in their order, each at the env's per-step scale
    (``env.reward_terms``: function, scale x dt, info key; a term at scale 0 is skipped, its contribution 0); the info
    carries each term's contribution,
    ``tracking_error``, ``x_velocity``, ``fell`` and, with a gait state, the gait measures
    (:func:`~envs.quadruped.gait.gait_info`).
    """
    vx, vy, vz, wx, wy, wz, gx, gy, gz = s.base
    cx, cy, cw = s.command
    touch = s.touch
    fell = (gz > env.FALL_GRAVITY_Z) | (s.z < env.fall_height) | (touch[4] > 0.0)
    ex, ey = cx - vx, cy - vy
    err2 = ex * ex + ey * ey
    air_term, air, last = feet_air_time(touch, s.air, s.last, cx * cx + cy * cy, env, m)
    height, speed2, slip2 = foot_motion(s.feet, env.foot_radius)
    q = StepQuantities(vz, wx, wy, gx, gy, err2, cw - wz, s.torques, s.action, s.previous, air_term, last, height,
                       speed2, slip2, height if s.ahead is None else s.ahead, s.trunk_clearance, s.z, fell)
    info = {}
    reward = 0.0
    for function, scale, key in env.reward_terms:
        if function is None:  # scale 0: adds nothing
            info[key] = m.zeros_like(s.z)
            continue
        term = function(scale, q, env, m)
        info[key] = term
        reward = reward + term
    info["tracking_error"] = m.sqrt(err2)
    info["x_velocity"] = s.x_velocity
    info["fell"] = fell
    gait = s.gait
    if gait is not None:
        gait = advance_gait(gait, last, height, slip2, m)  # contact: this step's touch readings, per foot
        info.update(gait_info(gait, m))
    return reward, fell, info, air, last, gait
