"""The terrain env's height scan and heading command, computed from the tile grid's height array (no ray
casts) for one env or N at once: :func:`terrain_state`; where the scan's points lie: :func:`scan_points`,
and what the scripted trot is told of them: :class:`TerrainLegGeometry`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from envs.array_math import BatchMath, ScalarMath
from envs.quadruped.robots import LegGeometry
from envs.quadruped.terrain import CELL, TerrainGrid

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


def terrain_state(grid: TerrainGrid, points: np.ndarray, qpos: np.ndarray, heading, yaw_range: tuple[float, float],
                  m: type[ScalarMath] | type[BatchMath], feet: np.ndarray | None = None, radius: float | None = None):
    """Height scan, ground height under the trunk and the feet, and heading command of one copy (``qpos`` (nq,),
    the free joint first, ``heading`` (rad, world) a float, ``feet`` (k,) foot sensor readings, ``m=ScalarMath``)
    or of N at once (``qpos`` (N, nq), ``heading`` (N,), ``feet`` (N, k), ``m=BatchMath``), with the same bits per
    copy. ``feet`` (optional) starts with the four feet's positions (m, world): x, y, z of FR, FL, RR, RL.

    Returns ``scan`` ((P,) or (N, P)): trunk z minus the ground at each point (m), clipped to [-1, 1];
    ``ground`` (a float or (N,)): the mean ground height of the scan (m, world; the trunk's height
    reference); ``yaw_rate``: the yaw command ``clip(HEADING_GAIN * (heading - yaw), *yaw_range)`` (rad/s), the
    heading error wrapped to [-pi, pi]; ``foot_ground`` ((4,) or (N, 4); None without ``feet``): the ground
    height under each foot (m, world), looked up in the same call as the scan's points. ``radius`` (m), a bound
    on the distance in x and y from the trunk to every scan point and foot, speeds up the one-copy lookup
    (:meth:`~envs.quadruped.terrain.TerrainGrid.heights_at`'s ``near``; the same bits).
    """
    one = m is ScalarMath
    x, y, z, qw, qx, qy, qz = qpos[0:7].tolist() if one else qpos[:, 0:7].T
    fx, fy = 1.0 - 2.0 * (qy * qy + qz * qz), 2.0 * (qx * qy + qw * qz)  # the body x axis, world xy
    norm = m.sqrt(fx * fx + fy * fy)
    c, s = fx / norm, fy / norm
    if not one:  # a column per copy
        x, y, z, c, s = x[:, None], y[:, None], z[:, None], c[:, None], s[:, None]
    ahead, left = points[:, 0], points[:, 1]
    near = (x, y, radius) if one and radius is not None else None
    world_x, world_y = x + (c * ahead - s * left), y + (s * ahead + c * left)
    parts = (world_x, world_y) if feet is None else (world_x, feet[..., 0:12:3], world_y, feet[..., 1:12:3])
    uv = np.concatenate(parts, axis=-1) / CELL  # x then y of the points (then of the feet), in samples
    half = uv.shape[-1] // 2
    heights = grid.heights_in_samples(uv[..., :half], uv[..., half:], near)
    n = len(points)
    scan_heights = heights[..., :n]
    scan = np.minimum(np.maximum(z - scan_heights, -1.0), 1.0)
    ground = scan_heights.sum(axis=-1) / n  # row by row: the same bits for any number of rows
    error = heading - m.atan2(fy, fx)
    error = error - 2.0 * math.pi * (error > math.pi) + 2.0 * math.pi * (error < -math.pi)
    foot_ground = heights[..., n:] if feet is not None else None
    return scan, ground, m.clip(HEADING_GAIN * error, yaw_range[0], yaw_range[1]), foot_ground
