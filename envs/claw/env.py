"""Goal-conditioned claw (Fetch-style pick-and-lift and pick-and-place), gantry or Franka Panda: :class:`ClawEnv`.

The spec - observation, action, reward, success/termination and argument tables, with units and frames - is
the class docstring. Its ``step()`` (``envs.base.MujocoTaskEnv``'s) runs, in order, :meth:`ClawEnv._apply_action`
(the arm's controls), the physics, :meth:`ClawEnv._observe` (:func:`envs.claw.observation.observe`) and
:meth:`ClawEnv._step_outcome` (:func:`envs.claw.rewards.step_outcome`); the batched vector env runs the same
functions on arrays (:meth:`ClawEnv.apply_batch`, :meth:`ClawEnv.finish_batch`). The episode's cube
(object properties fixed or drawn per reset) is :class:`envs.claw.cube.Cube`.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np

from envs.array_math import BatchMath, ScalarMath
from envs.base import MujocoTaskEnv, ResetOption
from envs.claw.config import REWARD_TYPES, TASKS, ClawConfig
from envs.claw.cube import Cube
from envs.claw.gantry import ARMS, arm_class
from envs.claw.her import relabelled_reward
from envs.claw.observation import OBS_DIM, OBS_SLICES, observe
from envs.claw.rewards import step_outcome
from envs.claw.scene import (
    FRAME_SKIP,
    GOAL_LOW,
    MAX_OPENING,
    OBJECT_XY_LIMIT,
    POS_STEP,
    WORKSPACE_HIGH,
    YAW_STEP,
)
from envs.declarations import Metric, TaskContext


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
    torque limits), built into this scene by :mod:`envs.claw.panda` (the ``arms`` extra installs the package).
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
    seven position servos, clipped to the joint limits (:class:`envs.claw.panda.DifferentialIK`); each finger's
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
    ``info["reward_<term>"]`` (for both reward types), computed by :mod:`envs.claw.rewards`' function
    ``reward_<term>`` (``reward_goal`` for ``lift``/``place``) with its scale from ``REWARD_SCALES``, inside
    :func:`~envs.claw.rewards.step_outcome`, which this env's ``step()`` (on floats) and the batched vector env
    (``envs.batched``, on arrays) both run. ``reach`` and ``grasp`` do not depend on the goal
    and are read back from ``info`` by :meth:`ClawEnv.compute_reward`; the goal terms are recomputed
    from its arguments by the same functions, so ``compute_reward(ag, dg, info)`` equals the ``step()`` reward. (SB3's
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
                                             ``envs.claw.panda``; needs ``pip install -e ".[arms]"``)
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

    OBS_SLICES = OBS_SLICES  # named slices of the observation (envs.claw.observation)
    OBS_DIM = OBS_DIM
    #: physical change per unit action (see the action table): servo-target lead of dx, dy, dz (m) and
    #: dyaw (rad) from the current position; jaw opening target 0.0425 m + this * a (m, closes as a grows)
    ACTION_SCALE = (POS_STEP, POS_STEP, POS_STEP, YAW_STEP, -MAX_OPENING / 2)
    TASKS = TASKS  # the task= choices (envs.claw.config)
    ARMS = ARMS  # the arm= choices: GantryArm, envs.claw.panda.PandaArm (envs.claw.gantry)
    RESET_OPTIONS: ClassVar[dict[str, ResetOption]] = {  # the keys reset(options=...) takes
        "object_xy": ResetOption(tuple[float, float], "the cube's start x, y on the table (m)",
                                 -OBJECT_XY_LIMIT, OBJECT_XY_LIMIT),
        "object_yaw": ResetOption(float, "the cube's start yaw (rad)", -math.pi, math.pi),
        "goal": ResetOption(tuple[float, float, float], "the target x, y, z of the cube centre within the "
                            "gripper's reach (m)", GOAL_LOW, WORKSPACE_HIGH),
        "object_class": ResetOption(Any, "drawn object properties -> the half of their range"),  # Cube.class_option
    }
    REWARD_TYPES = REWARD_TYPES
    METRICS = (Metric("success_rate", "is_success", "last", "fraction", "success"),)

    def __init__(self, **kwargs: Any) -> None:
        """Keyword arguments: :class:`ClawConfig`'s fields (the class docstring's Arguments table)."""
        config = ClawConfig.from_kwargs(type(self), kwargs)  # checked; also self.<argument> (the base)
        # model and arm
        model, arm = arm_class(config.arm).create()
        super().__init__(model, FRAME_SKIP, 5, config, scene_file="claw.xml")
        self.claw_arm = arm  # GantryArm or envs.claw.panda.PandaArm (env.arm is the argument, its name)
        m = self.model
        self._target_mocap = m.body("target").mocapid[0]
        obj = m.joint("object").id
        self._object_qpos = slice(int(m.jnt_qposadr[obj]), int(m.jnt_qposadr[obj]) + 7)  # free joint: m, quaternion
        self._object_qvel = slice(int(m.jnt_dofadr[obj]), int(m.jnt_dofadr[obj]) + 6)  # m/s (world), rad/s (body)
        # object properties: fixed ones written now, drawn ones at every reset
        self.cube = Cube(m, self.data, self.claw_arm.pad_geoms, config)

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
        self._grasped = False
        self._reach = 0.0
        self._ag_list = [0.0, 0.0, 0.0]

    @property
    def object_properties(self) -> dict[str, float]:
        """The episode's cube properties: ``{"mass": kg, "friction": -, "size": m}``."""
        return self.cube.properties

    @property
    def object_rest_z(self) -> float:
        """The episode's resting cube-centre height (m, world)."""
        return self.cube.rest_z

    # ------------------------------------------------------------------ task hooks
    def _reset_task(self, options: dict[str, Any]) -> None:
        object_class = self.cube.class_option(options)
        obj_xy, goal = (np.array(options[name]) if name in options else None for name in ("object_xy", "goal"))
        yaw = options.get("object_yaw")
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
        if self.cube.drawn:
            self.cube.draw(rng, object_class)  # edits the model and resets the data to it
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

    def task_context(self) -> TaskContext:
        """``TaskContext("gantry")`` when no object property is drawn; else the halves of their ranges the episode's
        draws fell in: ``TaskContext("gantry/mass=heavy/size=small", {"object_class": {"mass": "heavy",
        "size": "small"}})`` (the options give another episode of that class)."""
        if not self.cube.drawn:
            return TaskContext(self.claw_arm.name)
        name = "/".join([self.claw_arm.name, *(f"{k}={w}" for k, w in self.cube.object_class.items())])
        return TaskContext(name, {"object_class": dict(self.cube.object_class)})

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
        pair, else a float64 array of the leading shape (:func:`envs.claw.her.relabelled_reward`, from the
        same reward terms as :meth:`step`'s).
        """
        return relabelled_reward(achieved_goal, desired_goal, info, self.distance_threshold, self._dense)


ClawEnv.__init__.__signature__ = ClawConfig.signature()  # help(), inspect: the keyword arguments
