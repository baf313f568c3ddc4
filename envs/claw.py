"""Goal-conditioned claw (Fetch-style pick-and-lift and pick-and-place), gantry or Franka Panda: :class:`ClawEnv`.

The spec - observation, action, reward, success/termination and argument tables, with units and
frames - is :class:`ClawEnv`'s docstring (``help(envs.claw.ClawEnv)``); ``OpenClaw/Claw-v0`` and
``OpenClaw/ClawPlace-v0`` are that class with ``task="lift"`` and ``task="place"``. This module also
holds the model constants, the reward terms (``reward_<term>``), :func:`observe` and :func:`step_outcome`,
which the env's ``step()`` and the batched vector env (``envs.batched``) both run, the gantry arm
(:class:`GantryArm`; the Panda's is ``envs.panda.PandaArm``) and :class:`ClawConfig`, the constructor's
arguments and their checks.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import gymnasium as gym
import mujoco
import numpy as np

from envs.array_math import BatchMath, ScalarMath
from envs.base import EnvConfig, MujocoTaskEnv, reject_unknown_options, reset_option
from envs.declarations import Metric, TaskContext
from envs.packaging import asset_path

# ---------------------------------------------------------------- model constants (see claw.xml)
TABLE_TOP_Z = 0.40  # m, table top height
OBJECT_HALF_SIZE = 0.02  # m, cube half edge (nominal: object_size's default)
OBJECT_MASS = 0.15  # kg, cube mass (nominal: object_mass's default)
PAD_FRICTION = 1.0  # sliding friction coefficient of the rubber pads (nominal: object_friction's default)
OBJECT_REST_Z = TABLE_TOP_Z + OBJECT_HALF_SIZE  # m, nominal cube centre height when resting on the table
GRIP_HOME = (0.0, 0.0, 0.65)  # m, grip centre when every gantry joint is 0
MAX_OPENING = 0.085  # m, jaw stroke
GRIP_FORCE_LIMIT = 20.0  # N, grip actuator force limit
WORKSPACE_LOW = np.array([-0.25, -0.25, TABLE_TOP_Z + 0.015])  # m, grip centre
WORKSPACE_HIGH = np.array([0.25, 0.25, TABLE_TOP_Z + 0.35])  # m, grip centre
YAW_LIMIT = 1.5708  # rad, wrist yaw servo range
OBJECT_XY_LIMIT = 0.22  # m, |x|, |y| of a cube start position that stays on the table within reach


class ObjectProperty(NamedTuple):
    """One physical property of the cube that :class:`ClawConfig` makes an argument (fixed or drawn per episode)."""

    argument: str  # the ClawConfig field
    nominal: float  # claw.xml's value, the argument's default
    limits: tuple[float, float]  # the values the argument may take
    unit: str
    halves: tuple[str, str]  # task-context words of a draw in the lower / upper half of the argument's range


#: The cube's randomizable properties, in task-context order: mass (kg), sliding friction on the pads, half edge (m).
#: Half edges stay within the 85 mm jaw stroke with 15 mm to spare and keep the cube's centre above the
#: grip's lowest point minus the pads' half height.
OBJECT_PROPERTIES = {
    "mass": ObjectProperty("object_mass", OBJECT_MASS, (0.01, 2.0), "kg", ("light", "heavy")),
    "friction": ObjectProperty("object_friction", PAD_FRICTION, (0.05, 2.0), "", ("low", "high")),
    "size": ObjectProperty("object_size", OBJECT_HALF_SIZE, (0.01, 0.035), "m", ("small", "large")),
}
GOAL_LOW = np.array([WORKSPACE_LOW[0], WORKSPACE_LOW[1], TABLE_TOP_Z + OBJECT_PROPERTIES["size"].limits[0]])
"""m, lowest cube-centre target: the resting centre of the smallest cube"""

# ---------------------------------------------------------------- action scaling
FRAME_SKIP = 20  # 20 x 2 ms = 40 ms control period (25 Hz), as Fetch
POS_STEP = 0.05  # m of servo-target lead per unit action (Fetch uses 0.05 m)
YAW_STEP = 0.15  # rad of servo-target lead per unit action
NOMINAL_SPEED = 0.75  # m/s, steady grip speed per unit action (kp/kv * POS_STEP), for controllers

# ---------------------------------------------------------------- dense reward: scales and terms
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

GRASP_MIN_FORCE = 0.5  # N on each pad to count as held

_HALF_PI = math.pi / 2
_QUARTER_PI = math.pi / 4


class GantryArm:
    """``ClawEnv(arm="gantry")``'s arm (the default): the Cartesian gantry of ``assets/claw.xml``, whose joints
    are the grip's coordinates (x, y, z slides from :data:`GRIP_HOME`, wrist yaw, two coupled jaws).

    The arm interface :class:`ClawEnv` drives (``envs.panda.PandaArm`` is the other): ``create()`` a model and the arm on it,
    ``reset(data)`` to the start pose, ``grip_state`` (what the observation says of the grip) and ``controls``
    (the ``ctrl`` of an action) of one env, and their batched forms for the batched vector env (here array
    maths on all envs at once, bit-identical to the single env's).
    """

    name = "gantry"
    #: the joint layout of claw.xml this class is written for (checked when an env is made)
    JOINTS = ("gantry_x", "gantry_y", "gantry_z", "wrist_yaw", "finger_l", "finger_r", "object")

    def __init__(self, model: mujoco.MjModel) -> None:
        names = tuple(model.joint(i).name for i in range(model.njnt))
        if names != self.JOINTS or model.nu != 5 or model.nsensor != 2:
            raise RuntimeError(f"assets/claw.xml joint layout changed: {names}; update envs/claw.py")
        self.pad_geoms = [model.geom("pad_l").id, model.geom("pad_r").id]
        # servo target limits (joint coordinates; grip = GRIP_HOME + q for the slides)
        home = np.array(GRIP_HOME)
        self.ctrl_low = np.concatenate([WORKSPACE_LOW - home, [-YAW_LIMIT, 0.0]]).tolist()
        self.ctrl_high = np.concatenate([WORKSPACE_HIGH - home, [YAW_LIMIT, MAX_OPENING]]).tolist()

    @classmethod
    def create(cls) -> tuple[mujoco.MjModel, GantryArm]:
        """A new model of ``assets/claw.xml`` and the arm on it."""
        model = mujoco.MjModel.from_xml_path(str(asset_path("claw.xml")))
        return model, cls(model)

    def reset(self, data: mujoco.MjData) -> None:
        """Gantry at home (``qpos0`` = 0), jaws open, servos on that pose (``data`` freshly reset)."""
        data.qpos[4] = data.qpos[5] = MAX_OPENING / 2
        data.ctrl[:] = (0.0, 0.0, 0.0, 0.0, MAX_OPENING)

    @staticmethod
    def grip_state(q, v, m: type[ScalarMath] | type[BatchMath] = ScalarMath) -> tuple:
        """Grip position x, y, z (m), jaw opening (m), linear velocity (m/s), yaw (rad), yaw rate (rad/s) and
        opening rate (m/s), world frame, from ``qpos`` and ``qvel`` (lists, or with ``m=BatchMath`` the
        transposed batch arrays)."""
        return (q[0] + GRIP_HOME[0], q[1] + GRIP_HOME[1], q[2] + GRIP_HOME[2], q[4] + q[5],
                v[0], v[1], v[2], q[3], v[3], v[4] + v[5])

    def controls(self, q, a, m: type[ScalarMath] | type[BatchMath] = ScalarMath) -> tuple:
        """The five ``ctrl`` values (m, m, m, rad, m) for clipped action ``a`` at joint positions ``q``
        (see the action table), for one env or, with ``m=BatchMath`` and ``(N,)`` arrays as entries of
        ``q`` and ``a``, for ``N`` at once; the servo targets are clipped to the workspace."""
        lo, hi = self.ctrl_low, self.ctrl_high
        return (
            m.clip(q[0] + POS_STEP * a[0], lo[0], hi[0]),
            m.clip(q[1] + POS_STEP * a[1], lo[1], hi[1]),
            m.clip(q[2] + POS_STEP * a[2], lo[2], hi[2]),
            m.clip(q[3] + YAW_STEP * a[3], lo[3], hi[3]),
            0.5 * MAX_OPENING * (1.0 - a[4]),
        )

    @staticmethod
    def batch_grip_state(arms: list[GantryArm], qpos: np.ndarray, qvel: np.ndarray) -> tuple:
        """:meth:`grip_state` of ``N`` envs at ``qpos`` ``(N, nq)``, ``qvel`` ``(N, nv)``: ten ``(N,)`` arrays."""
        return arms[0].grip_state(qpos.T, qvel.T, BatchMath)

    @staticmethod
    def batch_controls(arms: list[GantryArm], actions: np.ndarray, qpos: np.ndarray) -> np.ndarray:
        """``(N, 5)``: :meth:`controls` of ``N`` envs."""
        return np.stack(arms[0].controls(qpos.T, actions.T, BatchMath), axis=1)


def arm_class(name: str) -> type:
    """The arm class of ``ClawEnv(arm=name)``: :class:`GantryArm` or ``envs.panda.PandaArm`` (imported only
    when asked for: building it needs the ``arms`` extra)."""
    if name == "gantry":
        return GantryArm
    from envs.panda import PandaArm

    return PandaArm


def observe(grip, q, v, f, desired_goal: np.ndarray, m: type[ScalarMath] | type[BatchMath]):
    """Observation dict, held flag and grip-to-cube distance (m) of one env or of ``N`` at once.

    One env (``m=ScalarMath``): ``grip`` is the arm's grip state (:meth:`GantryArm.grip_state`: position,
    opening, velocity, yaw, yaw rate, opening rate), ``q`` and ``v`` the cube's free-joint ``qpos`` (7: m,
    quaternion) and ``qvel`` (6: m/s world, rad/s body), ``f`` the ``sensordata`` (pad forces, N),
    ``desired_goal`` the (3,) float32 target. ``N`` envs (``m=BatchMath``): each entry of ``grip``, ``q``,
    ``v``, ``f`` is an ``(N,)`` float64 array (the transposed batch arrays), ``desired_goal`` is ``(N, 3)``,
    and the results gain a leading ``N`` axis.
    """
    f_l, f_r = f[0], f[1]
    gx, gy, gz, opening, gvx, gvy, gvz, wyaw, wyaw_rate, opening_rate = (grip[i] for i in range(10))
    ox, oy, oz = q[0], q[1], q[2]
    qw, qx, qy, qz = q[3], q[4], q[5], q[6]
    rx, ry, rz = ox - gx, oy - gy, oz - gz
    # cube yaw (z-x-y intrinsic approx. valid while the cube is roughly upright) relative to wrist,
    # folded by the cube's 90-degree symmetry
    oyaw = m.atan2(2.0 * (qw * qz + qx * qy), 1.0 - 2.0 * (qy * qy + qz * qz))
    yaw_rel = (oyaw - wyaw + _QUARTER_PI) % _HALF_PI - _QUARTER_PI
    # free-joint angular velocity is in the body frame: rotate to world, w' = w + 2 qw (u x w) + 2 u x (u x w)
    wx, wy, wz = v[3], v[4], v[5]
    tx, ty, tz = 2.0 * (qy * wz - qz * wy), 2.0 * (qz * wx - qx * wz), 2.0 * (qx * wy - qy * wx)
    awx = wx + qw * tx + (qy * tz - qz * ty)
    awy = wy + qw * ty + (qz * tx - qx * tz)
    awz = wz + qw * tz + (qx * ty - qy * tx)
    obs = m.float32((
        gx, gy, gz, opening, gvx, gvy, gvz, wyaw, wyaw_rate, opening_rate,
        ox, oy, oz, rx, ry, rz, qw, qx, qy, qz, yaw_rel,
        v[0], v[1], v[2], awx, awy, awz, f_l / GRIP_FORCE_LIMIT, f_r / GRIP_FORCE_LIMIT,
    ))
    # held: both pads press and the cube centre lies between the pads (claw frame)
    c, s = m.cos(wyaw), m.sin(wyaw)
    lx, ly = c * rx + s * ry, -s * rx + c * ry
    grasped = (
        (f_l > GRASP_MIN_FORCE)
        & (f_r > GRASP_MIN_FORCE)
        & (abs(lx) < 0.02)
        & (abs(rz) < 0.02)
        & (abs(ly) < 0.5 * opening + 0.005)
    )
    reach = m.sqrt(rx * rx + ry * ry + rz * rz)
    return {"observation": obs, "achieved_goal": obs[..., 10:13].copy(), "desired_goal": desired_goal}, grasped, reach


def step_outcome(ag, g, reach_distance, grasped, env: ClawEnv, m: type[ScalarMath] | type[BatchMath]):
    """Reward, termination (the cube fell) and info of one env's transition or of ``N`` at once.

    ``ag`` and ``g`` hold the float32-exact achieved and desired goal coordinates x, y, z (m) as three
    floats or three ``(N,)`` float64 arrays; ``reach_distance`` (m) and ``grasped`` come from
    :func:`observe`; ``env`` gives the settings (reward type, success radius, task).
    """
    dx, dy, dz = ag[0] - g[0], ag[1] - g[1], ag[2] - g[2]
    dist = m.sqrt(dx * dx + dy * dy + dz * dz)
    success = dist <= env.distance_threshold
    k = REWARD_SCALES
    reach = reward_reach(k["reach"], reach_distance)
    grasp = reward_grasp(k["grasp"], grasped)
    goal_term = reward_goal(k["goal"], dist)
    success_term = reward_success(k["success"], success)
    reward = reach + grasp + goal_term + success_term if env._dense else m.where(success, 0.0, -1.0)
    fell = ag[2] < TABLE_TOP_Z
    info = {
        "is_success": m.where(success, 1.0, 0.0),
        "distance": dist,
        "grasped": grasped,
        "object_fell": fell,
        "reward_reach": reach,
        "reward_grasp": grasp,
        env._goal_term: goal_term,
        "reward_success": success_term,
    }
    return reward, fell, info


class ClawEnv(MujocoTaskEnv):
    """Goal-conditioned gantry claw: grasp a cube and lift it (``task="lift"``, ``OpenClaw/Claw-v0``) or
    place it (``task="place"``, ``OpenClaw/ClawPlace-v0``); one class for both tasks.

    ## Description

    A Cartesian gantry (x/y/z slides plus a wrist yaw hinge, all position-servoed) carries a two-finger
    parallel claw (coupled jaws, 85 mm stroke, grip force limited to 20 N) above a 0.70 m x 0.70 m table
    (top at z = 0.40 m). A 40 mm, 0.15 kg cube lies at a random position and yaw on the table (its mass, size
    and friction on the pads are arguments, fixed or drawn per episode: see "Object properties"). The task
    follows Gymnasium-Robotics Fetch: observations are a dict with ``observation``, ``achieved_goal`` (the
    cube's position) and ``desired_goal`` (the target), ``compute_reward`` works on batches so hindsight
    relabelling (SB3's ``HerReplayBuffer``) can recompute rewards, and episodes do not end on success.

    * ``task="lift"`` (``OpenClaw/Claw-v0``): the target is the cube's start position raised by
      ``lift_height_range`` (default 0.10-0.20 m): grasp the cube and hold it there.
    * ``task="place"`` (``OpenClaw/ClawPlace-v0``): the target is a random point on the table (raised
      by ``target_height_range``, default 0) at least ``min_target_distance`` from the start: carry the
      cube there (and, for a clean place, put it down and let go).

    Model: ``assets/claw.xml`` (constants and sources: ``assets/README.md``, section "Claw").
    Physics 2 ms timestep, ``frame_skip=20`` -> control at 25 Hz (``dt = 0.04 s``), as in Fetch.

    ``arm="panda"`` puts a Franka Emika Panda on a pedestal behind the table (x = -0.50 m, facing +x) in place
    of the gantry: the model Gymnasium-Robotics ships (meshes, joint limits, the Panda's position servos and
    torque limits), built into this scene by :mod:`envs.panda` (the ``arms`` extra installs the package).
    Everything below holds for both arms - the action, observation and goal layout, rewards, success,
    starting state, arguments - except where marked *Panda*: an action asks for the same grip targets, which
    differential IK turns into the arm's seven joint targets, so HER, the scripted grasp controller and every
    config work unchanged. Task contexts (below) are named ``panda`` instead of ``gantry``.

    Frames: everything is in the *world* frame (z up, gravity -z, origin on the floor under the table
    centre) unless noted; the *claw* frame (the world frame turned by the wrist yaw about z; the jaws close
    along its y axis) appears only in the grasp test. Units: m, s, rad, kg, N.

    ## Action space

    ``Box(-1, 1, (5,), float32)``. Each step the servo targets are set relative to the *current* joint
    positions (Fetch style, so there is no hidden integrator state) and clipped to the workspace.

    ===  =======  ==============================================================  ====
    idx  name     effect                                                          unit
    ===  =======  ==============================================================  ====
    0    dx       x servo target = grip x + ``0.05 * a``                          m
    1    dy       y servo target = grip y + ``0.05 * a``                          m
    2    dz       z servo target = grip z + ``0.05 * a``                          m
    3    dyaw     wrist yaw target = yaw + ``0.15 * a``                           rad
    4    grip     jaw opening target = ``0.0425 * (1 - a)``: -1 open (85 mm), +1   m
                  closed (0 mm, i.e. squeeze with the 20 N force limit)
    ===  =======  ==============================================================  ====

    With the servo gains of the model a constant ``a`` moves the grip at about ``0.75 * a`` m/s
    (~0.03 m per step) and the wrist at about ``3 * a`` rad/s. Workspace of the grip centre:
    x, y in [-0.25, 0.25] m, z in [0.415, 0.75] m (0.015-0.35 m above the table top at z = 0.40).

    *Panda*: the grip targets (position from the grip's current position, yaw from its current yaw, the hand
    pointing down) are solved by differential IK from the current joint angles into joint targets for the
    seven position servos, clipped to the joint limits (:class:`envs.panda.DifferentialIK`); each finger's
    target is ``0.02 * (1 - a)`` m (opening 80 mm to 0). The servos' gain over the joints' damping (kp / b =
    870 / 100 per s on joints 1-4) sets the speeds: about ``0.25-0.35 * a`` m/s, ``1.2 * a`` rad/s of yaw. The far top corners of the
    workspace (x = 0.25 m, z above 0.7 m) lie up to 3 cm out of the arm's reach; the IK gets as close as it can.

    ## Observation space

    ``Dict(observation=Box(29), achieved_goal=Box(3), desired_goal=Box(3))``, all float32. Positions,
    velocities and the quaternion are in the world frame (z up, origin on the floor under the table
    centre). Named slices: :attr:`ClawEnv.OBS_SLICES`.

    =====  ===================  ===============================================================  =====
    idx    name                 meaning                                                          unit
    =====  ===================  ===============================================================  =====
    0-2    ``grip_pos``         grip centre (midway between the pads)                            m
    3      ``opening``          jaw opening (distance between the pads)                          m
    4-6    ``grip_vel``         grip centre linear velocity                                      m/s
    7      ``wrist_yaw``        wrist yaw angle (0 = jaws close along world y)                   rad
    8      ``wrist_yaw_rate``   wrist yaw rate                                                   rad/s
    9      ``opening_rate``     jaw opening rate                                                 m/s
    10-12  ``object_pos``       cube centre                                                      m
    13-15  ``object_rel_pos``   cube centre minus grip centre (world axes)                       m
    16-19  ``object_quat``      cube orientation quaternion (w, x, y, z)                         --
    20     ``object_yaw_rel``   cube yaw minus wrist yaw, folded into [-pi/4, pi/4) (a cube is   rad
                                90-degree symmetric): turn the wrist by this to align the jaws
    21-23  ``object_vel``       cube linear velocity                                             m/s
    24-26  ``object_angvel``    cube angular velocity                                            rad/s
    27-28  ``pad_force``        normal force on the left / right pad divided by 20 N (the grip   --
                                force limit), from touch sensors
    =====  ===================  ===============================================================  =====

    ``achieved_goal`` = cube centre (m, world), ``desired_goal`` = target (m, world).

    ## Rewards

    ``reward_type="sparse"``: ``-1.0`` while ``d = |achieved_goal - desired_goal| > distance_threshold``,
    else ``0.0`` (Fetch). ``reward_type="dense"``: the sum of the terms below, each also reported as
    ``info["reward_<term>"]`` (for both reward types), computed by ``envs.claw``'s function
    ``reward_<term>`` (``reward_goal`` for ``lift``/``place``) with its scale from ``REWARD_SCALES``, inside
    :func:`~envs.claw.step_outcome`, which this env's ``step()`` (on floats) and the batched vector env
    (``envs.batched``, on arrays) both run. ``reach`` and ``grasp`` do not depend on the goal
    and are read back from ``info`` by :meth:`ClawEnv.compute_reward`; the goal terms are recomputed
    from its arguments, so ``compute_reward(ag, dg, info)`` equals the ``step()`` reward. (SB3's
    ``HerReplayBuffer`` must then store infos: ``replay_buffer_kwargs=dict(copy_info_dict=True)``.)

    ==================  ==========================================================  ==========
    term                value                                                       per step
    ==================  ==========================================================  ==========
    ``reach``           ``-1.0 * |grip_pos - object_pos|`` (m)                      [-0.6, 0]
    ``grasp``           ``+0.25`` while the cube is held (both pads press > 0.5 N   {0, 0.25}
                        and the cube centre lies between the pads)
    ``lift``/``place``  ``-2.0 * d`` (m), named after the task                      [-1.2, 0]
    ``success``         ``+1.0`` while ``d <= distance_threshold``                  {0, 1}
    ==================  ==========================================================  ==========

    ## Success, termination, truncation

    ``info["is_success"]`` is ``1.0`` when ``d <= distance_threshold`` (default 0.025 m), else ``0.0``
    (Fetch reports a float). Success does not end the episode. An episode *terminates* when the cube
    falls off the table (``info["object_fell"]``, cube centre below the table top) or the physics
    diverges (``info["physics_blowup"]``, from :class:`~envs.base.MujocoTaskEnv`). The registered ids
    truncate after 100 (lift, 4 s) or 150 (place, 6 s) steps.

    Other ``info`` keys: ``distance`` (d, m), ``grasped`` (bool).

    ## Starting state

    Grip at (0, 0, 0.65) (0.25 m above the table), wrist yaw 0, jaws open (*Panda*: its home posture, the IK's
    solution for that grip pose from the Panda's "ready" posture, the same at every reset). The cube rests on the table
    at x, y ~ U(-``object_range``, ``object_range``) with yaw ~ U(-``object_yaw_range``,
    ``object_yaw_range``). ``reset(options=...)`` accepts ``object_xy`` (2,), ``object_yaw`` (rad) and
    ``goal`` (3,) to pin them (tests, demonstrations), and ``object_class`` (see below).

    ## Object properties and task contexts

    ``object_mass`` (kg), ``object_friction`` and ``object_size`` (m, half edge) are each a number (fixed)
    or a ``[low, high]`` pair (``low < high``), drawn uniformly at every reset from the env's seeded RNG
    (after the start pose and goal, so a seed puts the cube and goal where the default env does, goal
    heights measured from the episode's resting height ``TABLE_TOP_Z + object_size``). Each value is
    written into the model (``env.model``, so the batched vector env steps it too): the cube's
    ``body_mass`` and solid-cube inertia ``m (2h)^2 / 6``, its ``geom_size`` (with its bounding sphere
    and box), and the pads' sliding friction ``geom_friction[pad, 0]``: the pads' contact parameters
    take priority over the cube's (``claw.xml``), so this is the coefficient that holds the cube in the
    grasp, while the cube's sliding on the table keeps the table's 0.5; then ``mj_setConst`` updates
    the model's derived constants, so it is the model ``claw.xml`` compiles to with those values. The
    defaults (0.15 kg, 1.0, 0.02 m) leave the model untouched. The episode's values:
    ``env.object_properties`` (``{"mass": kg, "friction": -, "size": m}``); its resting cube-centre
    height: ``env.object_rest_z`` (m).

    ``env.task_context()`` is ``TaskContext("gantry")`` when no property is drawn; else its name tells,
    per drawn property, the half of its range the draw fell in: ``"gantry/mass=heavy/friction=low/size=small"``
    (words mass ``light|heavy``, friction ``low|high``, size ``small|large``; only drawn properties
    appear), with options ``{"object_class": {"mass": "heavy", "friction": "low", "size": "small"}}``.
    The reset option ``object_class`` (a dict of drawn properties to words, all or some) draws each
    named property uniformly within that half of its range, so ``reset(options=env.task_context().options)``
    gives another episode of the same class. ``env=claw_hard`` (``configs/env/claw_hard.yaml``) draws heavy,
    slippery cubes of varied size, from which the default scripted grasp slips in about 40 % of episodes.

    ## Arguments (keyword-only; :class:`~envs.claw.ClawConfig` holds them and their checks)

    =======================  ==============  ==========================================================
    argument                 default         meaning
    =======================  ==============  ==========================================================
    ``task``                 ``"lift"``      ``"lift"`` or ``"place"``
    ``arm``                  ``"gantry"``    ``"gantry"`` (``assets/claw.xml``) or ``"panda"`` (the Franka Panda,
                                             ``envs.panda``; needs ``pip install -e ".[arms]"``)
    ``reward_type``          ``"sparse"``    ``"sparse"`` (Fetch's default) or ``"dense"``
    ``distance_threshold``   0.025           success radius (m), in (0, 0.2]
    ``object_range``         0.15            half-width of the square of cube start positions (m)
    ``object_yaw_range``     pi/4            half-range of the cube's start yaw (rad), <= pi/4
    ``lift_height_range``    (0.10, 0.20)    lift target height above the cube's start (m)
    ``target_range``         0.15            half-width of the square of place targets (m)
    ``target_height_range``  (0.0, 0.0)      place target height above the resting cube centre (m)
    ``min_target_distance``  0.10            min. horizontal start-target distance for place (m)
    ``object_mass``          0.15            cube mass (kg), in [0.01, 2.0], or a ``[low, high]`` range
    ``object_friction``      1.0             sliding friction coefficient of the pads on the cube, in
                                             [0.05, 2.0], or a ``[low, high]`` range
    ``object_size``          0.02            cube half edge (m), in [0.01, 0.035], or a ``[low, high]``
                                             range
    ``render_mode``          None            ``"rgb_array"``, ``"depth_array"``, ``"human"`` or None
    ``width``, ``height``    480, 480        render size (px, at most 1280)
    ``camera``               ``"overview"``  camera name or id (``"overview"``, ``"front"``, ``"closeup"``, -1 = free)
    =======================  ==============  ==========================================================
    """

    OBS_SLICES: dict[str, slice] = {
        "grip_pos": slice(0, 3),
        "opening": slice(3, 4),
        "grip_vel": slice(4, 7),
        "wrist_yaw": slice(7, 8),
        "wrist_yaw_rate": slice(8, 9),
        "opening_rate": slice(9, 10),
        "object_pos": slice(10, 13),
        "object_rel_pos": slice(13, 16),
        "object_quat": slice(16, 20),
        "object_yaw_rel": slice(20, 21),
        "object_vel": slice(21, 24),
        "object_angvel": slice(24, 27),
        "pad_force": slice(27, 29),
    }
    OBS_DIM = 29
    #: physical change per unit action (see the action table): servo-target lead of dx, dy, dz (m) and
    #: dyaw (rad) from the current position; jaw opening target 0.0425 m + this * a (m, closes as a grows)
    ACTION_SCALE = (POS_STEP, POS_STEP, POS_STEP, YAW_STEP, -MAX_OPENING / 2)
    TASKS = ("lift", "place")
    ARMS = ("gantry", "panda")  # the arm= choices: GantryArm, envs.panda.PandaArm
    RESET_OPTIONS = ("object_xy", "object_yaw", "goal", "object_class")  # the keys reset(options=...) takes
    REWARD_TYPES = ("dense", "sparse")
    METRICS = (Metric("success_rate", "is_success", "last", "fraction", "success"),)

    def __init__(self, **kwargs: Any) -> None:
        """Keyword arguments: :class:`ClawConfig`'s fields (the class docstring's Arguments table)."""
        config = ClawConfig.from_kwargs(type(self), kwargs)  # checked; also self.<argument> (the base)
        # model and arm
        model, arm = arm_class(config.arm).create()
        super().__init__(model, FRAME_SKIP, 5, config, scene_file="claw.xml")
        self.claw_arm = arm  # GantryArm or envs.panda.PandaArm (env.arm is the argument, its name)
        m = self.model
        self._target_mocap = m.body("target").mocapid[0]
        self._object_body, self._object_geom = m.body("object").id, m.geom("object").id
        obj = m.joint("object").id
        self._object_qpos = slice(int(m.jnt_qposadr[obj]), int(m.jnt_qposadr[obj]) + 7)  # free joint: m, quaternion
        self._object_qvel = slice(int(m.jnt_dofadr[obj]), int(m.jnt_dofadr[obj]) + 6)  # m/s (world), rad/s (body)
        self._pad_geoms = self.claw_arm.pad_geoms
        if self._object_values() != {name: p.nominal for name, p in OBJECT_PROPERTIES.items()}:
            raise RuntimeError("the claw model's cube mass, size or pad friction changed; update envs/claw.py")
        # Object properties: fixed ones written once (unless nominal: the model stays claw.xml's), drawn ones per reset.
        fixed = {name: getattr(config, p.argument) for name, p in OBJECT_PROPERTIES.items()}
        self._drawn = {name: fixed.pop(name) for name in list(fixed) if isinstance(fixed[name], tuple)}
        if any(value != OBJECT_PROPERTIES[name].nominal for name, value in fixed.items()):
            self._set_object(fixed)
        self.object_properties = self._object_values()  # the episode's values (kg, -, m)
        self.object_rest_z = TABLE_TOP_Z + self.object_properties["size"]  # m, the episode's resting cube centre
        self._object_class: dict[str, str] = {}  # the episode's half of each drawn property's range

        # spaces (actions: the base's Box(-1, 1, (5,)))
        self.observation_space = gym.spaces.Dict(
            {
                "observation": gym.spaces.Box(-np.inf, np.inf, shape=(self.OBS_DIM,), dtype=np.float32),
                "achieved_goal": gym.spaces.Box(-np.inf, np.inf, shape=(3,), dtype=np.float32),
                "desired_goal": gym.spaces.Box(-np.inf, np.inf, shape=(3,), dtype=np.float32),
            }
        )

        # settings the steps read, derived from the config
        self._goal_term = "reward_lift" if config.task == "lift" else "reward_place"
        self._dense = config.reward_type == "dense"

        # state (episode state is set again by reset())
        self.goal = np.zeros(3)
        self._goal32 = np.zeros(3, dtype=np.float32)
        self._goal_list = [0.0, 0.0, 0.0]
        self._obs_list: list[float] = [0.0] * self.OBS_DIM
        self._grasped = False
        self._reach = 0.0
        self._ag_list = [0.0, 0.0, 0.0]

    # ------------------------------------------------------------------ task hooks
    def _reset_task(self, options: dict[str, Any]) -> None:
        reject_unknown_options(type(self), options, self.RESET_OPTIONS)
        object_class = self._object_class_option(options)
        obj_xy = reset_option(options, "object_xy", (2,), -OBJECT_XY_LIMIT, OBJECT_XY_LIMIT,
                              "the cube's start x, y on the table (m)")
        yaw = reset_option(options, "object_yaw", (), -math.pi, math.pi, "the cube's start yaw (rad)")
        goal = reset_option(options, "goal", (3,), GOAL_LOW, WORKSPACE_HIGH,
                            "the target x, y, z of the cube centre within the gripper's reach (m)")
        rng = self.np_random
        if obj_xy is None:
            obj_xy = rng.uniform(-self.object_range, self.object_range, size=2)
        if yaw is None:
            yaw = rng.uniform(-self.object_yaw_range, self.object_yaw_range)
        yaw = float(yaw)
        if goal is None and self.task == "lift":
            goal_xy, rise = obj_xy, rng.uniform(*self.lift_height_range)
        elif goal is None:
            for _ in range(1000):
                goal_xy = rng.uniform(-self.target_range, self.target_range, size=2)
                if np.hypot(*(goal_xy - obj_xy)) >= self.min_target_distance:
                    break
            rise = rng.uniform(*self.target_height_range)
        if self._drawn:
            self._draw_object(object_class)  # edits the model and resets the data to it
        if goal is None:
            goal = np.array([goal_xy[0], goal_xy[1], self.object_rest_z + rise])

        d = self.data
        self.claw_arm.reset(d)  # at home, jaws open
        start = self._object_qpos.start
        d.qpos[start:start + 3] = (obj_xy[0], obj_xy[1], self.object_rest_z)
        d.qpos[start + 3:start + 7] = (math.cos(yaw / 2), 0.0, 0.0, math.sin(yaw / 2))
        self.goal = goal
        self._goal32 = goal.astype(np.float32)
        self._goal_list = self._goal32.tolist()  # float32-exact, as in the observation
        d.mocap_pos[self._target_mocap] = goal
        self._grasped = False

    def _object_class_option(self, options: dict[str, Any]) -> dict[str, str]:
        """The reset option ``object_class`` (``{property: word}`` of drawn properties), checked; ``{}`` when absent."""
        chosen = options.get("object_class", {})
        valid = {name: OBJECT_PROPERTIES[name].halves for name in self._drawn}
        choices = "; ".join(f"{name}: {' or '.join(words)}" for name, words in valid.items()) or "none"
        if not isinstance(chosen, dict) or any(valid.get(k) is None or w not in valid[k] for k, w in chosen.items()):
            raise ValueError(
                f"options['object_class']={chosen!r} must map drawn object properties to the half of their range; "
                f"valid: {choices} (a property is drawn when its argument, object_<property>, is a [low, high] range)"
            )
        return chosen

    def _draw_object(self, object_class: dict[str, str]) -> None:
        """Draw the episode's drawn properties (each in its ``object_class`` half, if given), write the model."""
        rng = self.np_random
        drawn, self._object_class = {}, {}
        for name, (low, high) in self._drawn.items():
            halves, mid = OBJECT_PROPERTIES[name].halves, 0.5 * (low + high)
            word = object_class.get(name)
            lo, hi = (low, high) if word is None else (low, mid) if word == halves[0] else (mid, high)
            drawn[name] = float(rng.uniform(lo, hi))
            self._object_class[name] = word or halves[drawn[name] >= mid]
        self._set_object(drawn)
        mujoco.mj_resetData(self.model, self.data)
        self.object_properties.update(drawn)
        self.object_rest_z = TABLE_TOP_Z + self.object_properties["size"]

    def _set_object(self, values: dict[str, float]) -> None:
        """Write cube properties (``{"mass": kg, "friction": -, "size": m}``, all or some) into the model and
        recompute what the compiler derives from them (``mj_setConst`` and the solver's scale
        ``stat.meaninertia``, the mean diagonal of the mass matrix at ``qpos0``), so the model is the one
        ``claw.xml`` compiles to with these values; ``self.data`` is left to be reset."""
        m, b, g = self.model, self._object_body, self._object_geom
        mass, half = values.get("mass", float(m.body_mass[b])), values.get("size", float(m.geom_size[g, 0]))
        m.body_mass[b] = mass
        m.body_inertia[b] = mass * (2.0 * half) ** 2 / 6.0  # solid cube
        m.geom_size[g] = half
        m.geom_rbound[g] = math.sqrt(3.0) * half
        m.geom_aabb[g, 3:] = half
        if "friction" in values:
            m.geom_friction[self._pad_geoms, 0] = values["friction"]
        mujoco.mj_setConst(m, self.data)
        mass_matrix = np.zeros((m.nv, m.nv))
        mujoco.mj_fullM(m, self.data, mass_matrix)
        m.stat.meaninertia = np.trace(mass_matrix) / m.nv

    def _object_values(self) -> dict[str, float]:
        """The model's cube properties: mass (kg), the pads' sliding friction, half edge (m)."""
        m = self.model
        return {"mass": float(m.body_mass[self._object_body]),
                "friction": float(m.geom_friction[self._pad_geoms[0], 0]),
                "size": float(m.geom_size[self._object_geom, 0])}

    def task_context(self) -> TaskContext:
        """``TaskContext("gantry")`` when no object property is drawn; else the halves of their ranges the episode's
        draws fell in: ``TaskContext("gantry/mass=heavy/size=small", {"object_class": {"mass": "heavy",
        "size": "small"}})`` (the options give another episode of that class)."""
        if not self._drawn:
            return TaskContext(self.claw_arm.name)
        name = "/".join([self.claw_arm.name, *(f"{k}={w}" for k, w in self._object_class.items())])
        return TaskContext(name, {"object_class": dict(self._object_class)})

    def _apply_action(self, action: np.ndarray) -> None:
        self.data.ctrl[:] = self.claw_arm.controls(self.data.qpos.tolist(), action.tolist())

    @classmethod
    def apply_batch(cls, tasks, actions, qpos):
        return tasks[0].claw_arm.batch_controls([task.claw_arm for task in tasks], actions, qpos)

    def _observe(self) -> dict[str, np.ndarray]:
        d = self.data
        q, v = d.qpos.tolist(), d.qvel.tolist()
        obs, self._grasped, self._reach = observe(self.claw_arm.grip_state(q, v), q[self._object_qpos],
                                                  v[self._object_qvel], d.sensordata.tolist(), self._goal32.copy(),
                                                  ScalarMath)
        self._ag_list = obs["achieved_goal"].tolist()  # float32-exact cube position, what compute_reward sees
        return obs

    def _step_outcome(self, action: np.ndarray) -> tuple[float, bool, dict[str, Any]]:
        # _ag_list, _reach and _grasped are set by _observe(), which the base calls just before
        return step_outcome(self._ag_list, self._goal_list, self._reach, self._grasped, self, ScalarMath)

    @classmethod
    def finish_batch(cls, tasks, actions, qpos, qvel, derived):
        first = tasks[0]
        goals = np.stack([task._goal32 for task in tasks])
        grip = first.claw_arm.batch_grip_state([task.claw_arm for task in tasks], qpos, qvel)
        obs, grasped, reach = observe(grip, qpos.T[first._object_qpos], qvel.T[first._object_qvel],
                                      derived["sensordata"].T, goals, BatchMath)
        ag, g = obs["achieved_goal"].T.astype(np.float64), goals.T.astype(np.float64)
        reward, fell, info = step_outcome(ag, g, reach, grasped, first, BatchMath)
        return obs, reward, fell, info

    def _reset_info(self) -> dict[str, Any]:
        return {"is_success": 0.0}

    def overlay_lines(self, obs: dict[str, np.ndarray], info: dict[str, Any]) -> list[str]:
        """The cube's distance to the goal (cm, world frame) in ``obs``, and ``success`` when within the threshold."""
        distance = float(np.linalg.norm(obs["achieved_goal"] - obs["desired_goal"]))
        return [f"cube to goal {100 * distance:.1f} cm" + ("   success" if info.get("is_success") else "")]

    def _blowup_reward(self) -> float:
        # What compute_reward gives for the last good observation (goal terms only), so HER relabelling
        # of a blow-up transition reproduces the reward step() returned.
        last = self._last_obs
        return self.compute_reward(last["achieved_goal"], last["desired_goal"], {"physics_blowup": True})

    # ------------------------------------------------------------------ goal-conditioned API
    def compute_reward(self, achieved_goal, desired_goal, info) -> float | np.ndarray:
        """Reward for (batches of) achieved/desired goals, equal to what :meth:`step` returned.

        ``achieved_goal`` and ``desired_goal`` have shape ``(..., 3)``. ``info`` is the step's info
        dict, or (batched, as SB3's ``HerReplayBuffer`` passes it) a list/array of info dicts with
        the leading shape, or a dict of arrays. ``info`` is only read for the dense goal-independent
        terms (``reward_reach``, ``reward_grasp``); with SB3 the dense reward therefore needs
        ``replay_buffer_kwargs=dict(copy_info_dict=True)`` (SB3 passes empty dicts otherwise, which
        raises ``ValueError``). The sparse reward ignores ``info``. Returns a float for one goal
        pair, else a float64 array of the leading shape.
        """
        ag = np.asarray(achieved_goal, dtype=np.float32).astype(np.float64)
        dg = np.asarray(desired_goal, dtype=np.float32).astype(np.float64)
        diff = ag - dg
        dx, dy, dz = diff[..., 0], diff[..., 1], diff[..., 2]
        dist = np.sqrt(dx * dx + dy * dy + dz * dz)
        success = dist <= self.distance_threshold
        if self._dense:
            reach = _info_term(info, "reward_reach", dist.shape)
            grasp = _info_term(info, "reward_grasp", dist.shape)
            k = REWARD_SCALES
            reward = reach + grasp + reward_goal(k["goal"], dist) + reward_success(k["success"], success)
        else:
            reward = np.where(success, 0.0, -1.0)
        return float(reward) if reward.ndim == 0 else reward


@dataclass(kw_only=True)
class ClawConfig(EnvConfig):
    """:class:`ClawEnv`'s constructor arguments, their defaults and their checks (the Arguments table of its
    docstring; units there). After the checks the numbers are floats, the height ranges float pairs and each
    object property (``object_mass``, ``object_friction``, ``object_size``) a float or a ``(low, high)`` float pair."""

    task: str = "lift"
    arm: str = "gantry"
    reward_type: str = "sparse"
    distance_threshold: float = 0.025
    object_range: float = 0.15
    object_yaw_range: float = math.pi / 4
    lift_height_range: tuple[float, float] = (0.10, 0.20)
    target_range: float = 0.15
    target_height_range: tuple[float, float] = (0.0, 0.0)
    min_target_distance: float = 0.10
    object_mass: float | tuple[float, float] = OBJECT_MASS
    object_friction: float | tuple[float, float] = PAD_FRICTION
    object_size: float | tuple[float, float] = OBJECT_HALF_SIZE
    camera: str | int | None = "overview"

    def __post_init__(self) -> None:
        if self.task not in ClawEnv.TASKS:
            raise ValueError(f"task={self.task!r} is not supported; use task='lift' or task='place'")
        if self.arm not in ClawEnv.ARMS:
            raise ValueError(f"arm={self.arm!r} is not supported; use arm='gantry' (the default) or arm='panda'")
        if self.reward_type not in ClawEnv.REWARD_TYPES:
            raise ValueError(f"reward_type={self.reward_type!r} is not supported; use 'dense' or 'sparse'")
        self.distance_threshold = float(self.distance_threshold)
        if not 0.0 < self.distance_threshold <= 0.2:
            raise ValueError(f"distance_threshold={self.distance_threshold} m must be in (0, 0.2]; Fetch uses 0.05")
        _check_range("object_range", self.object_range, 0.0, OBJECT_XY_LIMIT)
        _check_range("target_range", self.target_range, 0.0, 0.22)
        _check_range("object_yaw_range", self.object_yaw_range, 0.0, _QUARTER_PI + 1e-9)
        self.lift_height_range = _check_interval("lift_height_range", self.lift_height_range, 0.0, 0.30)
        self.target_height_range = _check_interval("target_height_range", self.target_height_range, 0.0, 0.30)
        d, r = self.min_target_distance, self.target_range
        if not 0.0 <= d <= max(r, 0.0) * math.sqrt(2) or (d > 0 and r == 0):
            raise ValueError(
                f"min_target_distance={d} m cannot always be met with target_range="
                f"{r} m; use 0 <= min_target_distance <= target_range"
            )
        if isinstance(self.camera, str) and self.camera not in ("overview", "front", "closeup"):
            raise ValueError(
                f"camera={self.camera!r} is unknown; use 'overview', 'front', 'closeup', an id or -1 (free camera)"
            )
        self.object_range, self.object_yaw_range = float(self.object_range), float(self.object_yaw_range)
        self.target_range, self.min_target_distance = float(self.target_range), float(self.min_target_distance)
        for prop in OBJECT_PROPERTIES.values():
            setattr(self, prop.argument, _check_object_property(prop, getattr(self, prop.argument)))
        super().__post_init__()


ClawEnv.__init__.__signature__ = ClawConfig.signature()  # help(), inspect: the keyword arguments


def _info_term(info, key: str, shape: tuple[int, ...]) -> np.ndarray:
    """``info[key]`` for one info dict, a dict of arrays, or a list/array of dicts, as ``shape``."""
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


_MISSING_INFO = (
    "reward_type='dense' needs the step's info dicts (goal-independent term {key!r} is missing); "
    "with SB3 pass HerReplayBuffer(..., copy_info_dict=True) via replay_buffer_kwargs, or use reward_type='sparse'"
)


def _check_range(name: str, value: float, lo: float, hi: float) -> None:
    if not (isinstance(value, numbers.Real) and lo <= value <= hi):
        raise ValueError(f"{name}={value!r} must be a number in [{lo}, {hi:.3f}]")


def _check_object_property(prop: ObjectProperty, value) -> float | tuple[float, float]:
    """``value`` of argument ``prop.argument``: a number within ``prop.limits`` (float) or a ``(low, high)``
    pair with ``low < high`` within them (float pair); ``ValueError`` naming the argument and the fix otherwise."""
    lo, hi = prop.limits
    unit = f" {prop.unit}" if prop.unit else ""
    fix = (f"{prop.argument}={value!r} must be a number in [{lo}, {hi}]{unit} (fixed) or a [low, high] pair "
           f"with {lo} <= low < high <= {hi} (drawn per episode)")
    pair = isinstance(value, Sequence) and not isinstance(value, str) and len(value) == 2
    entries = value if pair else (value,)
    if not all(isinstance(v, numbers.Real) and not isinstance(v, bool) and lo <= v <= hi for v in entries):
        raise ValueError(fix)
    if pair and not value[0] < value[1]:
        raise ValueError(fix)
    return (float(value[0]), float(value[1])) if pair else float(value)


def _check_interval(name: str, value, lo: float, hi: float) -> tuple[float, float]:
    try:
        a, b = (float(x) for x in value)
    except (TypeError, ValueError):
        raise ValueError(f"{name}={value!r} must be a (low, high) pair in metres") from None
    if not lo <= a <= b <= hi:
        raise ValueError(f"{name}={value!r} must satisfy {lo} <= low <= high <= {hi}")
    return a, b
