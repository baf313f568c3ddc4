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

SCAN_X = 11  # height-scan points along the body's x (forward)
SCAN_Y = 7  # and y (left)
SCAN_SPACING = 0.15  # m between scan points, times the robot's size scale (Go1: 0.1 m)
HEADING_GAIN = 0.5  # yaw-rate command per rad of heading error (legged_gym)


@dataclass(frozen=True, eq=False)
class TerrainLegGeometry(LegGeometry):
    """:class:`~envs.quadruped.robots.LegGeometry` plus where the height scan lies: ``scan_points`` (P, 2) in
    the trunk's yaw frame (m: x forward, y left, origin under the trunk origin) and ``scan_obs``, its slice of
    the observation (each entry: trunk height above the ground at that point, m)."""

    scan_points: np.ndarray
    scan_obs: slice


def scan_points(scale: float) -> np.ndarray:
    """The (SCAN_X * SCAN_Y, 2) scan points (m, trunk yaw frame), x-major: point ``k`` is
    ``(i - 5, j - 3) * SCAN_SPACING * scale`` for ``k = i * SCAN_Y + j``."""
    i, j = np.meshgrid(np.arange(SCAN_X) - SCAN_X // 2, np.arange(SCAN_Y) - SCAN_Y // 2, indexing="ij")
    return np.stack([i.ravel(), j.ravel()], axis=1) * SCAN_SPACING * scale


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
      ``FOOT_LOOKAHEAD`` s (at most ``FOOT_LOOKAHEAD_REACH`` m in x and in y; the ground ahead of the foot).

    ``out`` (optional) names arrays to write into instead of new ones (e.g. views into an env's observation)."""

    def __init__(self, grid: TerrainGrid, points: np.ndarray, yaw_range: tuple[float, float], copies: int = 1,
                 **out: np.ndarray) -> None:
        self.grid, self.points, self.yaw_range = grid, np.ascontiguousarray(points, dtype=np.float64), yaw_range
        shapes = {"scan": (copies, len(points)), "ground": (copies,), "yaw_rate": (copies,),
                  "foot_ground": (copies, 4), "step_ground": (copies, 4)}
        for name, shape in shapes.items():
            array = out.get(name, np.zeros(shape))
            assert array.shape == shape, f"{name} must have shape {shape}, not {array.shape}"
            setattr(self, name, array)

    def update(self, qpos: np.ndarray, heading: np.ndarray, feet: np.ndarray | None) -> None:
        """From ``qpos`` (N, nq) (the free joint first), ``heading`` (N,) (rad, world) and ``feet`` (N, 36): the foot
        sensor readings (``envs.quadruped.gait``: positions (m, world) then linear velocities (m/s, world); None:
        not current, e.g. before the first step, and the feet's ground is left as it was)."""
        _terrain_state(self.grid.padded, self.grid.stepped_from, self.points, qpos, heading, *self.yaw_range,
                       _NO_FEET if feet is None else feet, self.scan, self.ground, self.yaw_rate, self.foot_ground,
                       self.step_ground)


_NO_FEET = np.zeros((0, 36))


@numba.njit(cache=True, nogil=True)
def _clip(x: float, low: float, high: float) -> float:
    """``x`` within ``[low, high]`` (a NaN stays NaN)."""
    return low if x < low else high if x > high else x


@numba.njit(cache=True, nogil=True)
def _mean(values: np.ndarray) -> float:
    """``values.sum() / len(values)`` with numpy's bits for up to 128 values (its pairwise sum: eight running
    sums combined in pairs, then the rest in order), so the scan's mean ground is the one numpy gives."""
    n = values.shape[0]
    if n < 8:
        total = 0.0
        for k in range(n):
            total += values[k]
        return total / n
    r = values[:8].copy()
    k = 8
    while k < n - n % 8:
        r += values[k : k + 8]
        k += 8
    total = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
    while k < n:
        total += values[k]
        k += 1
    return total / n


@numba.njit(cache=True, nogil=True)
def _terrain_state(padded, stepped_from, points, qpos, heading, yaw_low, yaw_high, feet, scan, ground, yaw_rate,
                   foot_ground, step_ground):
    """:meth:`TerrainState.update`'s arithmetic (``feet`` with no rows: the feet left out)."""
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
        ground[r] = _mean(heights)
        error = heading[r] - math.atan2(fy, fx)
        error = error - 2.0 * math.pi * (error > math.pi) + 2.0 * math.pi * (error < -math.pi)
        yaw_rate[r] = _clip(HEADING_GAIN * error, yaw_low, yaw_high)
        if r < feet.shape[0]:
            for f in range(4):
                px, py, vx, vy = feet[r, 3 * f], feet[r, 3 * f + 1], feet[r, 12 + 3 * f], feet[r, 13 + 3 * f]
                under = ground_in_samples(padded, stepped_from, px / CELL, py / CELL)
                ax = px + _clip(FOOT_LOOKAHEAD * vx, -FOOT_LOOKAHEAD_REACH, FOOT_LOOKAHEAD_REACH)
                ay = py + _clip(FOOT_LOOKAHEAD * vy, -FOOT_LOOKAHEAD_REACH, FOOT_LOOKAHEAD_REACH)
                foot_ground[r, f] = under
                step_ground[r, f] = np.maximum(under, ground_in_samples(padded, stepped_from, ax / CELL, ay / CELL))
