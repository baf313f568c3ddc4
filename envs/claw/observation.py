"""The claw's observation (:func:`observe`, its layout :data:`OBS_SLICES`) and the held test, for one env and
for the batched vector env alike (``ScalarMath`` on floats, ``BatchMath`` on ``(N,)`` arrays; bit-identical).
The table of the entries, with units and frames, is ``ClawEnv``'s docstring, section "Observation space".
"""

from __future__ import annotations

import math

import numpy as np

from envs.array_math import BatchMath, ScalarMath
from envs.claw.scene import GRIP_FORCE_LIMIT

#: named slices of the 29-entry ``observation`` (world frame; units in ``ClawEnv``'s observation table)
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
GRASP_MIN_FORCE = 0.5  # N on each pad to count as held

_HALF_PI = math.pi / 2
_QUARTER_PI = math.pi / 4


def observe(grip, q, v, f, desired_goal: np.ndarray, m: type[ScalarMath] | type[BatchMath]):
    """Observation dict, held flag and grip-to-cube distance (m) of one env or of ``N`` at once.

    One env (``m=ScalarMath``): ``grip`` is the arm's grip state (``GantryArm.grip_state``: position,
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
