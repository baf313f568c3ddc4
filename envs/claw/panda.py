"""The Franka Emika Panda for the claw tasks (``ClawEnv(arm="panda")``): its model and its differential IK.

**Model.** :func:`panda_claw_model` builds, with ``mujoco.MjSpec``, our claw scene (``assets/claw.xml``: the
table, floor, cube, target and cameras, without the gantry) with the Panda that PyPI's ``gymnasium-robotics``
ships (``gymnasium_robotics/envs/assets/kitchen_franka/franka_assets``: Vikash Kumar's franka model, Apache-2.0;
the ``arms`` extra installs the package). The package's files are read where they are installed, located
but never imported (nothing of it runs), and nothing is copied into this repository. The arm stands on a
pedestal at :data:`BASE_POS`, facing +x across the table. Kept from the package: the kinematic chain, the
visual and collision meshes, the finger collision capsules, masses, joint limits and damping, and the nine
position actuators (joints 1-4: kp 870 N·m/rad, torque limit 87 N·m; joints 5-7: kp 120, 12 N·m; fingers:
kp 500 N/m, 70 N; the limits of Franka's datasheet). Changed, by name:

* every arm body has ``gravcomp="1"``: the Panda's own controller compensates gravity under every command
  (libfranka adds it to all torque commands), so a position servo holds its target instead of sagging; a
  payload (the cube) still loads the servos;
* collision geoms use the claw scene's filter (robot: contype 2, conaffinity 0: they touch the cube and the
  table, never each other); the finger capsules are our pads: ``condim`` 4, ``priority`` 1 and the pads'
  friction (``ClawEnv``'s ``object_friction`` writes it, as on the gantry);
* the two fingers are coupled (``q_right = q_left``, an equality), as the Franka Hand's single motor
  couples them, so the grip self-centres on the cube;
* added: a ``grip`` site midway between the finger pads 1.4 cm above the finger tips (its z axis points out
  of the hand, its y axis along the jaws' closing direction), two touch sites on the pads (the ``pad_l`` /
  ``pad_r`` sensors) and a ``closeup`` camera that follows the hand (not its yaw).

**Control** (:class:`DifferentialIK`). An action asks, as on the gantry, for a grip target 0.05 m x ``a``
from the grip's current position (clipped to the workspace) and a yaw 0.15 rad x ``a`` from its current
yaw, with the hand pointing straight down. Damped least squares on the grip site's 6-D Jacobian (position
and orientation error; joint 1-7 targets clipped to the joint limits at every iteration; a null-space pull
to the home posture resolves the 7th degree of freedom) turns that pose into the seven joint targets the
package's position servos track; the servos' force limits are the torque limits. Differential IK and not
operational-space control: the package's actuators are position servos with the Panda's gains, and OSC
would replace them with torque motors and gains of our own; differential IK keeps the arm's own servo
loop and its torque limits, and is what the real Panda's Cartesian interfaces do (a Cartesian target,
joint-level control). Not a mocap weld (Fetch's): that would hide the arm's joint limits, torque limits
and dynamics, which this arm is here to add.
"""

from __future__ import annotations

import copy
import functools
import math
from pathlib import Path

import mujoco
import numpy as np

from envs.packaging import asset_path, installed_package_dir, package_file
from envs.claw.scene import (
    GRIP_HOME,
    PAD_FRICTION,
    POS_STEP,
    WORKSPACE_HIGH,
    WORKSPACE_LOW,
    YAW_LIMIT,
    YAW_STEP,
)

EXTRA = "arms"  # the pyproject extra that installs gymnasium-robotics
PACKAGE = "gymnasium-robotics"
FRANKA_ASSETS = "envs/assets/kitchen_franka/franka_assets"  # inside the installed gymnasium_robotics
PREFIX = "panda/"  # prefix of the package's names in the built model
BASE_POS = (-0.50, 0.0, 0.40)  # m, world: link0 on a pedestal 0.15 m behind the table edge, facing +x
FINGER_STROKE = 0.04  # m, each finger's travel (the package's finger joint range)
GRIP_OFFSET = 0.1654 + 0.0805  # m along link7's z: the finger bodies' origin + the pads' centre (tips 14 mm on)
#: rad, the Panda's "ready" posture in the package's joint coordinates (its joint 6 is offset by -1.64 rad
#: from Franka's): the hand points down; the start of the home pose search and the IK's null-space target
READY = (0.0, -0.785, 0.0, -2.356, 0.0, -0.069, 0.0)
IK_DAMPING = 1e-4  # damped least squares: (J J^T + damping I)^-1, m^2 / rad^2
IK_ITERATIONS = 3  # per control step (a target within 5 cm: sub-millimetre after 3, tests/test_panda.py)
IK_MAX_STEP = 0.5  # rad, largest joint change of one iteration
NULL_SPACE_GAIN = 0.1  # fraction of the distance to the home posture pulled back per iteration (null space)
ARM_JOINTS = tuple(f"{PREFIX}robot:panda0_joint{i}" for i in range(1, 8))
FINGER_JOINTS = (f"{PREFIX}robot:panda0_finger_joint1", f"{PREFIX}robot:panda0_finger_joint2")
_DOWN = np.array([[-1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, -1.0]])  # grip frame at yaw 0: z down, jaws along y


def franka_assets() -> Path:
    """The installed gymnasium-robotics' ``franka_assets`` folder; :class:`~envs.packaging.MissingExtra` naming the extra."""
    root = installed_package_dir("gymnasium_robotics", PACKAGE, EXTRA, "arm='panda'", "use arm='gantry' (the default)")
    package_file(root, f"{FRANKA_ASSETS}/chain.xml", PACKAGE, EXTRA)
    return root / FRANKA_ASSETS


def panda_claw_model() -> tuple[mujoco.MjModel, np.ndarray]:
    """The compiled claw scene with the Panda (a fresh copy each call; built once per process) and the home
    posture (7 joint angles, rad: the grip at ``GRIP_HOME`` pointing down, yaw 0; the IK's solution from
    :data:`READY`)."""
    model, home = _built()
    return copy.deepcopy(model), home.copy()


@functools.lru_cache(maxsize=1)
def _built() -> tuple[mujoco.MjModel, np.ndarray]:
    model = panda_claw_spec().compile()
    ik = DifferentialIK(model, np.array(READY))
    return model, ik.solve(np.array(READY), np.array(GRIP_HOME), 0.0, iterations=200)


def panda_claw_spec() -> mujoco.MjSpec:
    """A new, uncompiled spec of the claw scene with the Panda (what :func:`panda_claw_model` compiles)."""
    root = franka_assets()
    scene = mujoco.MjSpec.from_file(str(asset_path("claw.xml")))
    closeup = scene.camera("closeup")  # on the gantry's z column: its offset from the grip at home, world axes
    grip_at_home = scene.body("gantry_x").pos + scene.body("gantry_z").pos + scene.body("wrist").pos + scene.site("grip").pos
    closeup_offset = scene.body("gantry_x").pos + scene.body("gantry_z").pos + closeup.pos - grip_at_home
    closeup_axes, closeup_fovy = closeup.alt.xyaxes.reshape(2, 3).copy(), closeup.fovy
    scene.delete(scene.body("gantry_x"))
    for geom in list(scene.worldbody.geoms):  # the gantry frame: the world's visual-only geoms
        if geom.contype == 0 and geom.conaffinity == 0:
            scene.delete(geom)
    for element in (*scene.actuators, *scene.sensors, *scene.tendons, *scene.equalities):
        scene.delete(element)
    arm = _package_panda(root)
    scene.attach(arm, prefix=PREFIX, frame=scene.worldbody.add_frame(pos=list(BASE_POS)))
    pedestal = scene.worldbody.add_geom(name="pedestal", type=mujoco.mjtGeom.mjGEOM_BOX,
                                        pos=[BASE_POS[0], BASE_POS[1], BASE_POS[2] / 2],
                                        size=[0.11, 0.11, BASE_POS[2] / 2], rgba=[0.30, 0.31, 0.33, 1])
    pedestal.contype, pedestal.conaffinity = 4, 2  # the claw scene's static world
    _add_closeup(scene, closeup_offset, closeup_axes, closeup_fovy)
    for side in ("l", "r"):
        scene.add_sensor(name=f"pad_{side}", type=mujoco.mjtSensor.mjSENS_TOUCH, objtype=mujoco.mjtObj.mjOBJ_SITE,
                         objname=f"{PREFIX}pad_{side}")
    scene.modelname = "openclaw_claw_panda"
    return scene


def _add_closeup(scene: mujoco.MjSpec, offset: np.ndarray, axes: np.ndarray, fovy: float) -> None:
    """The gantry's ``closeup`` camera on the Panda's hand: it follows the grip in x, y, z, not its yaw (MuJoCo's
    ``track`` mode: the world-frame offset from the body at ``qpos0``), at ``offset`` (m, world) from the grip with
    world ``axes`` (x and y axes of the image) as the gantry's is at home. ``track`` keeps the pose the camera has
    at ``qpos0`` (all Panda joints 0, the hand pointing sideways), so the local pose is set for that posture."""
    model = scene.compile()
    data = mujoco.MjData(model)
    mujoco.mj_kinematics(model, data)
    hand = model.body(f"{PREFIX}panda0_link7").id
    rot = data.xmat[hand].reshape(3, 3)  # the hand's orientation at qpos0
    grip = model.site(f"{PREFIX}grip").id
    grip_in_hand = model.site_pos[grip]  # the grip's position in the hand frame
    # at home the hand is straight above the grip (pointing down): the camera's offset from the hand, world axes
    from_hand = offset - np.array([0.0, 0.0, np.linalg.norm(grip_in_hand)])
    camera = scene.body(f"{PREFIX}panda0_link7").add_camera(name="closeup", mode=mujoco.mjtCamLight.mjCAMLIGHT_TRACK,
                                                              pos=rot.T @ from_hand, fovy=fovy)
    camera.alt.type = mujoco.mjtOrientation.mjORIENTATION_XYAXES
    camera.alt.xyaxes = np.concatenate([rot.T @ axes[0], rot.T @ axes[1]])


def _package_panda(root: Path) -> mujoco.MjSpec:
    """The package's Panda (chain, assets, actuators) as a spec, edited as the module docstring says."""
    xml = (f'<mujoco><include file="{root / "assets.xml"}"/><worldbody><include file="{root / "chain.xml"}"/>'
           f'</worldbody><include file="{root / "actuator.xml"}"/></mujoco>')
    arm = mujoco.MjSpec.from_string(xml)
    for mesh in arm.meshes:  # the parser resolves them against the include's folder; the files are in meshes/
        mesh.file = str(root / "meshes" / Path(mesh.file).relative_to(root))
    arm.nuser_actuator = -1  # the package's actuator user data (5 numbers) means nothing here
    for actuator in arm.actuators:
        actuator.userdata = []
    for body in arm.bodies:
        body.gravcomp = 1.0
    for geom in arm.geoms:
        if not (geom.contype or geom.conaffinity):
            continue  # visual meshes
        geom.contype, geom.conaffinity = 2, 0
        if geom.parent.name.endswith("finger"):
            geom.condim, geom.priority = 4, 1
            geom.friction = [PAD_FRICTION, 0.01, 0.0001]
    arm.delete(arm.site("end_effector"))  # the package's, 36 mm above the pads; the grip site below replaces it
    hand = arm.body("panda0_link7")
    # site frame: link7's turned 135 deg about z, so that its y axis lies along the fingers' closing direction
    # and the grip's yaw is 0 when joint 7 is
    hand.add_site(name="grip", pos=[0, 0, GRIP_OFFSET], quat=[math.cos(3 * math.pi / 8), 0, 0, math.sin(3 * math.pi / 8)],
                  size=[0.006, 0, 0], rgba=[0.1, 0.9, 0.1, 0.8], group=3)
    for side, finger, sign in (("l", "panda0_leftfinger", 1.0), ("r", "panda0_rightfinger", -1.0)):
        # around the finger's pad capsules (finger frame z 0.035-0.0875 m, inner faces at y ~ 0)
        arm.body(finger).add_site(name=f"pad_{side}", type=mujoco.mjtGeom.mjGEOM_BOX, pos=[0, sign * 0.006, 0.061],
                                  size=[0.022, 0.012, 0.038], rgba=[0, 0, 0, 0], group=4)
    coupling = arm.add_equality(name="finger_coupling", type=mujoco.mjtEq.mjEQ_JOINT,
                                objtype=mujoco.mjtObj.mjOBJ_JOINT)
    coupling.name1, coupling.name2 = "robot:panda0_finger_joint2", "robot:panda0_finger_joint1"
    coupling.data[:5] = [0.0, 1.0, 0.0, 0.0, 0.0]
    return arm


class DifferentialIK:
    """Grip pose <-> Panda joint angles on a private ``MjData`` of ``model`` (the env's own data is never touched).

    Poses are the grip site's position (m, world) and yaw (rad about world z; 0: the jaws close along world y)
    with the hand pointing straight down.

    Args:
        model: the compiled claw scene with the Panda (:func:`panda_claw_model`).
        posture: the null-space target (7 joint angles, rad): the home posture.
    """

    def __init__(self, model: mujoco.MjModel, posture: np.ndarray) -> None:
        self.model, self.data = model, mujoco.MjData(model)
        joints = [model.joint(name).id for name in ARM_JOINTS]
        fingers = [model.joint(name).id for name in FINGER_JOINTS]
        self.qpos_adr = model.jnt_qposadr[joints].copy()
        self.dof_adr = model.jnt_dofadr[joints].copy()
        self.finger_qpos = model.jnt_qposadr[fingers].copy()
        self.finger_dof = model.jnt_dofadr[fingers].copy()
        self.low, self.high = model.jnt_range[joints, 0].copy(), model.jnt_range[joints, 1].copy()
        self.posture = np.asarray(posture, dtype=np.float64).copy()
        self.site = model.site(f"{PREFIX}grip").id
        self._jac_pos, self._jac_rot = np.zeros((3, model.nv)), np.zeros((3, model.nv))
        self._quat, self._error = np.zeros(4), np.zeros(6)

    def _at(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Kinematics at arm angles ``q``: the grip's position (m) and rotation matrix (world); the Jacobians filled."""
        d = self.data
        d.qpos[self.qpos_adr] = q
        mujoco.mj_kinematics(self.model, d)
        mujoco.mj_comPos(self.model, d)
        mujoco.mj_jacSite(self.model, d, self._jac_pos, self._jac_rot, self.site)
        return d.site_xpos[self.site], d.site_xmat[self.site].reshape(3, 3)

    def solve(self, q: np.ndarray, position: np.ndarray, yaw: float, iterations: int = IK_ITERATIONS) -> np.ndarray:
        """Joint angles (7, rad, within the joint limits) that put the grip at ``position`` (m) with ``yaw``
        (rad), pointing down, by ``iterations`` damped least-squares steps from ``q``."""
        return self._iterate(np.asarray(q, dtype=np.float64).copy(), position, yaw, iterations, None)

    def move(self, q: np.ndarray, delta: np.ndarray, delta_yaw: float) -> np.ndarray:
        """Joint angles (:data:`IK_ITERATIONS` steps from ``q``) for the grip moved by ``delta`` (m, world) and turned
        by ``delta_yaw`` (rad) from its pose at ``q``, the target clipped to the workspace and the yaw range: one
        control step's IK. The kinematics at ``q`` serve both the target and the first iteration."""
        q = np.asarray(q, dtype=np.float64).copy()
        pos, rot = self._at(q)
        target = np.clip(pos + delta, WORKSPACE_LOW, WORKSPACE_HIGH)
        yaw = min(max(_yaw(rot) + delta_yaw, -YAW_LIMIT), YAW_LIMIT)
        return self._iterate(q, target, yaw, IK_ITERATIONS, (pos, rot))

    def _iterate(self, q: np.ndarray, position: np.ndarray, yaw: float, iterations: int,
                 first: tuple[np.ndarray, np.ndarray] | None) -> np.ndarray:
        """``iterations`` damped least-squares steps from ``q`` (modified); ``first``: the kinematics at ``q``,
        already computed (:meth:`_at`, its Jacobians still in place)."""
        c, s = math.cos(yaw), math.sin(yaw)
        target = np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]]) @ _DOWN
        for i in range(iterations):
            pos, rot = first if i == 0 and first is not None else self._at(q)
            self._error[:3] = position - pos
            mujoco.mju_mat2Quat(self._quat, (target @ rot.T).ravel())
            mujoco.mju_quat2Vel(self._error[3:], self._quat, 1.0)
            jac = np.vstack([self._jac_pos[:, self.dof_adr], self._jac_rot[:, self.dof_adr]])
            inverse = jac.T @ np.linalg.inv(jac @ jac.T + IK_DAMPING * np.eye(6))
            step = inverse @ self._error + (np.eye(7) - inverse @ jac) @ (NULL_SPACE_GAIN * (self.posture - q))
            largest = float(np.abs(step).max())
            if largest > IK_MAX_STEP:
                step *= IK_MAX_STEP / largest
            q = np.clip(q + step, self.low, self.high)
        return q

    def pose(self, q: np.ndarray) -> tuple[np.ndarray, float]:
        """The grip's position (m, world; a copy) and yaw (rad) at arm angles ``q``."""
        pos, rot = self._at(q)
        return pos.copy(), _yaw(rot)

    def grip_state(self, qpos, qvel) -> tuple[float, ...]:
        """The grip's state from one env's ``qpos`` and ``qvel``: position x, y, z (m), jaw opening (m), linear
        velocity (m/s), yaw (rad), yaw rate (rad/s), opening rate (m/s); world frame (the gantry's joint layout)."""
        qpos, qvel = np.asarray(qpos, dtype=np.float64), np.asarray(qvel, dtype=np.float64)
        pos, rot = self._at(qpos[self.qpos_adr])
        rate = qvel[self.dof_adr]
        vel = self._jac_pos[:, self.dof_adr] @ rate
        yaw_rate = float(self._jac_rot[2, self.dof_adr] @ rate)
        yaw = _yaw(rot)
        opening = float(qpos[self.finger_qpos].sum())
        opening_rate = float(qvel[self.finger_dof].sum())
        return (float(pos[0]), float(pos[1]), float(pos[2]), opening, float(vel[0]), float(vel[1]), float(vel[2]),
                yaw, yaw_rate, opening_rate)


def _yaw(rot: np.ndarray) -> float:
    """The grip's yaw (rad) from its rotation matrix: its jaw axis (site y) turned from world y about world z."""
    return math.atan2(-float(rot[0, 1]), float(rot[1, 1]))


class PandaArm:
    """``ClawEnv(arm="panda")``'s arm: the Panda, driven through :class:`DifferentialIK` (module docstring).

    The same interface as :class:`envs.claw.gantry.GantryArm`: ``create()``, ``reset(data)``, ``grip_state`` and
    ``controls`` of one env, and their batched forms (env by env here: the IK is per env; the physics of a
    batched vector env still advances in one native call).
    """

    name = "panda"

    def __init__(self, model: mujoco.MjModel, home: np.ndarray) -> None:
        self.ik = DifferentialIK(model, home)
        self.home = np.asarray(home, dtype=np.float64).copy()
        fingers = [model.body(f"{PREFIX}panda0_{side}finger").id for side in ("left", "right")]
        # the finger capsules and blocks: the fingers' colliding geoms
        self.pad_geoms = np.flatnonzero(np.isin(model.geom_bodyid, fingers) & (model.geom_contype > 0)).tolist()

    @classmethod
    def create(cls) -> tuple[mujoco.MjModel, PandaArm]:
        """A new model of the claw scene with the Panda (:func:`panda_claw_model`) and the arm on it."""
        model, home = panda_claw_model()
        return model, cls(model, home)

    def reset(self, data: mujoco.MjData) -> None:
        """Arm at home, jaws open, servos on that pose (``data`` freshly reset)."""
        data.qpos[self.ik.qpos_adr] = data.ctrl[:7] = self.home
        data.qpos[self.ik.finger_qpos] = data.ctrl[7:9] = FINGER_STROKE

    def grip_state(self, qpos, qvel) -> tuple[float, ...]:
        """:meth:`DifferentialIK.grip_state` (one env)."""
        return self.ik.grip_state(qpos, qvel)

    def controls(self, qpos, action) -> list[float]:
        """The nine ``ctrl`` values (7 joint targets, rad; 2 finger targets, m) for clipped ``action`` (the claw's
        action table) at ``qpos``: the grip target 0.05 m x ``a`` and yaw target 0.15 rad x ``a`` from the grip's
        current pose (clipped to the workspace and the yaw range), solved by the IK from the current angles."""
        q = np.asarray(qpos, dtype=np.float64)[self.ik.qpos_adr]
        joints = self.ik.move(q, POS_STEP * np.asarray(action[:3], dtype=np.float64), YAW_STEP * float(action[3]))
        finger = 0.5 * FINGER_STROKE * (1.0 - float(action[4]))
        return [*joints.tolist(), finger, finger]

    @staticmethod
    def batch_grip_state(arms: list[PandaArm], qpos: np.ndarray, qvel: np.ndarray) -> np.ndarray:
        """``(10, N)``: :meth:`grip_state` of ``N`` envs (their arms) at ``qpos`` ``(N, nq)``, ``qvel`` ``(N, nv)``."""
        return np.array([arm.grip_state(q, v) for arm, q, v in zip(arms, qpos, qvel)]).T

    @staticmethod
    def batch_controls(arms: list[PandaArm], actions: np.ndarray, qpos: np.ndarray) -> np.ndarray:
        """``(N, 9)``: :meth:`controls` of ``N`` envs."""
        return np.array([arm.controls(q, a) for arm, q, a in zip(arms, qpos, actions)])
