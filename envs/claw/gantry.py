"""The claw's arms: :class:`GantryArm` (``ClawEnv(arm="gantry")``, the default) and the arm table
(:data:`ARMS`, :func:`arm_class`); the Franka Panda's arm is :class:`envs.claw.panda.PandaArm`.

An arm is the interface :class:`~envs.claw.env.ClawEnv` drives: ``create()`` a model and the arm on it,
``reset(data)`` to the start pose, ``grip_state`` (what the observation says of the grip) and ``controls``
(the ``ctrl`` of an action) of one env, and their batched forms for the batched vector env.
"""

from __future__ import annotations

import mujoco
import numpy as np

from envs.array_math import BatchMath, ScalarMath
from envs.packaging import asset_path
from envs.claw.scene import GRIP_HOME, MAX_OPENING, POS_STEP, WORKSPACE_HIGH, WORKSPACE_LOW, YAW_LIMIT, YAW_STEP

ARMS = ("gantry", "panda")  # the arm= choices: GantryArm, envs.claw.panda.PandaArm


class GantryArm:
    """``ClawEnv(arm="gantry")``'s arm (the default): the Cartesian gantry of ``assets/claw.xml``, whose joints
    are the grip's coordinates (x, y, z slides from :data:`~envs.claw.scene.GRIP_HOME`, wrist yaw, two coupled
    jaws).

    The arm interface of the module docstring; its batched forms are array maths on all envs at once,
    bit-identical to the single env's.
    """

    name = "gantry"
    #: the joint layout of claw.xml this class is written for (checked when an env is made)
    JOINTS = ("gantry_x", "gantry_y", "gantry_z", "wrist_yaw", "finger_l", "finger_r", "object")

    def __init__(self, model: mujoco.MjModel) -> None:
        names = tuple(model.joint(i).name for i in range(model.njnt))
        if names != self.JOINTS or model.nu != 5 or model.nsensor != 2:
            raise RuntimeError(f"assets/claw.xml joint layout changed: {names}; update envs/claw/gantry.py")
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
        (see ``ClawEnv``'s action table), for one env or, with ``m=BatchMath`` and ``(N,)`` arrays as entries
        of ``q`` and ``a``, for ``N`` at once; the servo targets are clipped to the workspace."""
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
    """The arm class of ``ClawEnv(arm=name)`` (``name`` in :data:`ARMS`): :class:`GantryArm` or
    :class:`envs.claw.panda.PandaArm` (imported only when asked for: building it needs the ``arms`` extra)."""
    if name == "gantry":
        return GantryArm
    from envs.claw.panda import PandaArm

    return PandaArm
