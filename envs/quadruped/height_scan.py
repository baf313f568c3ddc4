"""The terrain env's height scan and heading command, computed from the tile grid's height array (no ray
casts) for one env or N at once: :class:`TerrainState`; where the scan's points lie: :func:`scan_points`,
and what the scripted trot is told of them: :class:`TerrainLegGeometry`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numba
import numpy as np

from envs.quadruped.config import FOOT_LOOKAHEAD, FOOT_LOOKAHEAD_REACH
from envs.quadruped.robots import LegGeometry
from envs.quadruped.terrain import CELL, TerrainGrid, ground_in_samples

HEADING_GAIN = 0.5  # yaw-rate command per rad of heading error (legged_gym)


@dataclass(frozen=True, eq=False)
class TerrainLegGeometry(LegGeometry):
    """:class:`~envs.quadruped.robots.LegGeometry` plus where the height scan lies: ``scan_points`` (P, 2) in
    the trunk's yaw frame (m: x forward, y left, origin under the trunk origin) and ``scan_obs``, its slice of
    the observation (each entry: trunk height above the ground at that point, m)."""

    scan_points: np.ndarray
    scan_obs: slice


def scan_points(scale: float, grid: tuple[int, int], spacing: float) -> np.ndarray:
    """The (nx * ny, 2) scan points (m, trunk yaw frame) of a ``grid`` = (nx, ny) of points (odd counts, along x
    forward and y left) ``spacing * scale`` m apart, centred under the trunk, x-major: point ``k`` is
    ``(i - nx // 2, j - ny // 2) * spacing * scale`` for ``k = i * ny + j``."""
    nx, ny = grid
    i, j = np.meshgrid(np.arange(nx) - nx // 2, np.arange(ny) - ny // 2, indexing="ij")
    return np.stack([i.ravel(), j.ravel()], axis=1) * spacing * scale


class TerrainState:
    """The height scan, the ground under the trunk and the feet, and the heading command of N copies (one env: N = 1)
    on ``grid``, updated in place by :meth:`update` (compiled: :func:`_terrain_state`; each copy's row the same bits
    for any N). The arrays, row ``r`` for copy ``r``:

    * ``scan`` (N, P): trunk z minus the ground at each of the trunk-frame ``points`` (P, 2), clipped to [-1, 1] (m);
    * ``ground`` (N,): the mean ground height of the scan (m, world; the trunk's height reference);
    * ``yaw_rate`` (N,): the yaw command ``clip(HEADING_GAIN * (heading - yaw), *yaw_range)`` (rad/s), the heading
      error wrapped to [-pi, pi];
    * ``foot_ground`` (N, 4): the ground height under each foot (m, world; FR, FL, RR, RL);
    * ``step_ground`` (N, 4): the higher of that and the ground where the foot's horizontal velocity takes it in
      ``FOOT_LOOKAHEAD`` s (at most ``FOOT_LOOKAHEAD_REACH`` m in x and in y; the ground ahead of the foot);
    * ``trunk_clearance`` (N,): the lowest of the ``trunk_corners`` (K, 3) (m, trunk body frame: the trunk touch
      zone's bottom corners) over the higher of the ground under it and where the trunk's horizontal velocity takes
      it in the same lookahead (m; inf with no corners).

    The feet's and the trunk's rows are written by an :meth:`update` given the foot readings (after a step).
    ``out`` (optional) names arrays to write into instead of new ones (e.g. views into an env's observation)."""

    def __init__(self, grid: TerrainGrid, points: np.ndarray, yaw_range: tuple[float, float], copies: int = 1,
                 trunk_corners: np.ndarray | None = None, **out: np.ndarray) -> None:
        self.grid, self.points, self.yaw_range = grid, np.ascontiguousarray(points, dtype=np.float64), yaw_range
        corners = np.zeros((0, 3)) if trunk_corners is None else trunk_corners
        self.trunk_corners = np.ascontiguousarray(corners, dtype=np.float64)
        shapes = {"scan": (copies, len(points)), "ground": (copies,), "yaw_rate": (copies,),
                  "foot_ground": (copies, 4), "step_ground": (copies, 4), "trunk_clearance": (copies,)}
        for name, shape in shapes.items():
            array = out.get(name, np.zeros(shape))
            assert array.shape == shape, f"{name} must have shape {shape}, not {array.shape}"
            setattr(self, name, array)
        self.trunk_clearance[:] = np.inf

    def update(self, qpos: np.ndarray, heading: np.ndarray, feet: np.ndarray | None = None,
               qvel: np.ndarray | None = None, out=None) -> None:
        """From ``qpos`` (N, nq) (the free joint first), ``heading`` (N,) (rad, world), ``feet`` (N, 36): the foot
        sensor readings (``envs.quadruped.gait``: positions (m, world) then linear velocities (m/s, world)) and
        ``qvel`` (N, nv) (the free joint first: its linear velocity is in the world frame); without them (e.g. before
        the first step, when the sensors are not current) the feet's ground and the trunk's clearance are left as
        they were. Writes into ``out``'s arrays of the same names (e.g. the terrain env's task state,
        ``envs.quadruped.task_state.TerrainTaskState``), or this object's."""
        if feet is None:
            feet, qvel = _NO_FEET, _NO_FEET
        o = self if out is None else out
        _terrain_state(self.grid.padded, self.grid.stepped_from, self.points, self.trunk_corners, qpos, qvel, heading,
                       *self.yaw_range, feet, o.scan, o.ground, o.yaw_rate, o.foot_ground, o.step_ground,
                       o.trunk_clearance)


_NO_FEET = np.zeros((0, 36))


@numba.njit(cache=True, nogil=True)
def _clip(x: float, low: float, high: float) -> float:
    """``x`` within ``[low, high]`` (a NaN stays NaN)."""
    return low if x < low else high if x > high else x


@numba.njit(cache=True, nogil=True)
def _sum(values: np.ndarray) -> float:
    """``values.sum()`` with numpy's bits (its pairwise sum: below 8 values in order; up to 128, eight running sums
    combined in pairs, then the rest in order; above, the two halves split at a multiple of 8, summed alike)."""
    n = values.shape[0]
    if n > 128:
        half = n // 2
        half -= half % 8
        return _sum(values[:half]) + _sum(values[half:])
    if n < 8:
        total = 0.0
        for k in range(n):
            total += values[k]
        return total
    r = values[:8].copy()
    k = 8
    while k < n - n % 8:
        r += values[k : k + 8]
        k += 8
    total = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
    while k < n:
        total += values[k]
        k += 1
    return total


@numba.njit(cache=True, nogil=True)
def _reach(v: float) -> float:
    """How far (m) a velocity component ``v`` (m/s, world) carries a point in ``FOOT_LOOKAHEAD`` s, at most
    ``FOOT_LOOKAHEAD_REACH`` either way: where the feet's and the trunk's lookahead read the ground."""
    return _clip(FOOT_LOOKAHEAD * v, -FOOT_LOOKAHEAD_REACH, FOOT_LOOKAHEAD_REACH)


@numba.njit(cache=True, nogil=True)
def _lowest_corner(padded, stepped_from, corners, pose, vx, vy):
    """The lowest of ``corners`` (K, 3) (m, trunk body frame) over the higher of the ground under it and where the
    trunk's horizontal velocity (``vx``, ``vy``: m/s, world) takes it in ``FOOT_LOOKAHEAD`` s (m); ``pose``: the free
    joint's position (m, world) and quaternion (w, x, y, z)."""
    x, y, z, qw, qx, qy, qz = pose[0], pose[1], pose[2], pose[3], pose[4], pose[5], pose[6]
    rx = (1.0 - 2.0 * (qy * qy + qz * qz), 2.0 * (qx * qy - qw * qz), 2.0 * (qx * qz + qw * qy))  # rows of R
    ry = (2.0 * (qx * qy + qw * qz), 1.0 - 2.0 * (qx * qx + qz * qz), 2.0 * (qy * qz - qw * qx))
    rz = (2.0 * (qx * qz - qw * qy), 2.0 * (qy * qz + qw * qx), 1.0 - 2.0 * (qx * qx + qy * qy))
    reach_x, reach_y = _reach(vx), _reach(vy)
    lowest = np.inf
    for k in range(corners.shape[0]):
        bx, by, bz = corners[k, 0], corners[k, 1], corners[k, 2]
        px = x + rx[0] * bx + rx[1] * by + rx[2] * bz
        py = y + ry[0] * bx + ry[1] * by + ry[2] * bz
        pz = z + rz[0] * bx + rz[1] * by + rz[2] * bz
        under = ground_in_samples(padded, stepped_from, px / CELL, py / CELL)
        ahead = ground_in_samples(padded, stepped_from, (px + reach_x) / CELL, (py + reach_y) / CELL)
        lowest = min(lowest, pz - max(under, ahead))
    return lowest


@numba.njit(cache=True, nogil=True)
def _terrain_state(padded, stepped_from, points, corners, qpos, qvel, heading, yaw_low, yaw_high, feet, scan, ground,
                   yaw_rate, foot_ground, step_ground, trunk_clearance):
    """:meth:`TerrainState.update`'s arithmetic (``feet`` with no rows: the feet and the trunk's corners left out)."""
    n = points.shape[0]
    heights = np.empty(n)
    for r in range(qpos.shape[0]):
        x, y, z, qw, qx, qy, qz = qpos[r, 0], qpos[r, 1], qpos[r, 2], qpos[r, 3], qpos[r, 4], qpos[r, 5], qpos[r, 6]
        fx, fy = 1.0 - 2.0 * (qy * qy + qz * qz), 2.0 * (qx * qy + qw * qz)  # the body x axis, world xy
        norm = math.sqrt(fx * fx + fy * fy)
        c, s = fx / norm, fy / norm
        for k in range(n):
            ahead, left = points[k, 0], points[k, 1]
            u, v = (x + (c * ahead - s * left)) / CELL, (y + (s * ahead + c * left)) / CELL
            heights[k] = ground_in_samples(padded, stepped_from, u, v)
            scan[r, k] = _clip(z - heights[k], -1.0, 1.0)
        ground[r] = _sum(heights) / n
        error = heading[r] - math.atan2(fy, fx)
        error = error - 2.0 * math.pi * (error > math.pi) + 2.0 * math.pi * (error < -math.pi)
        yaw_rate[r] = _clip(HEADING_GAIN * error, yaw_low, yaw_high)
        if r < feet.shape[0]:
            for f in range(4):
                px, py, vx, vy = feet[r, 3 * f], feet[r, 3 * f + 1], feet[r, 12 + 3 * f], feet[r, 13 + 3 * f]
                under = ground_in_samples(padded, stepped_from, px / CELL, py / CELL)
                ax, ay = px + _reach(vx), py + _reach(vy)
                foot_ground[r, f] = under
                step_ground[r, f] = np.maximum(under, ground_in_samples(padded, stepped_from, ax / CELL, ay / CELL))
            trunk_clearance[r] = _lowest_corner(padded, stepped_from, corners, qpos[r], qvel[r, 0], qvel[r, 1])
