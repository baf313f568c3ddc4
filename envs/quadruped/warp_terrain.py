"""The terrain env (``OpenClaw/QuadrupedTerrain-v1``) on MuJoCo Warp: what its worlds need beyond the flat
quadruped's (``envs.quadruped.warp_sim``), :class:`WarpTiles`, and the ground that the task reads, on the device:
:class:`TorchGround`.

* **The ground the task reads** (the height scan, the mean ground under the trunk, the ground under and ahead of each
  foot, the trunk's clearance, the heading's yaw command) is :class:`~envs.quadruped.height_scan.TerrainState`'s
  arithmetic on torch tensors for all worlds at once: the same lookups in the tile grid's height array (nearest
  sample on the stepped columns, MuJoCo's heightfield triangles elsewhere), gathered on the device.
* **The stair and obstacle boxes**: each world holds the C env's window of boxes around its trunk
  (:class:`~envs.quadruped.terrain_boxes.BoxWindow`) in its own rows of the model's ``geom_pos``, ``geom_size``,
  ``geom_aabb`` and ``geom_rbound`` (batched per world) and of the data's ``geom_xpos`` (Warp poses the world body's
  geoms once, when the data is made). A world's window is re-placed, as the C env's, when its trunk
  has moved ``slack`` from the window's centre and at its resets: the placement (:func:`window_rows`) runs on the host
  for those worlds only (one host read of which worlds moved per step, ~10 us per re-placed world). Warp fixes the
  colliding geom pairs when the model is made, so every slot keeps ``contype`` 1, and a spare slot is parked at
  z = -1000 m (the C env makes it inert instead).
* **The curriculum**: each world's column and level, moved at its resets by the C env's rule
  (:meth:`QuadrupedTerrainEnv.next_levels`); a first reset spreads the worlds over the columns as a vector env's copies
  seeded ``seed``, ``seed + 1``, ... are (:func:`~envs.quadruped.terrain_env.seeded_column`); the start on the tile,
  the foot friction and the heading are :meth:`QuadrupedTerrainEnv.start_on_tiles`.

What differs from the C env: the rough and slope tiles' heightfield contacts (Warp's heightfield collider finds other
contacts than C MuJoCo's prisms, ``tests/test_warp.py``); the stair boxes match.
"""

from __future__ import annotations

import math
from typing import Any

import mujoco
import numpy as np
import torch
import warp as wp

from envs.quadruped.config import FOOT_LOOKAHEAD, FOOT_LOOKAHEAD_REACH
from envs.quadruped.height_scan import HEADING_GAIN, TerrainState
from envs.quadruped.terrain import CELL, LEVELS
from envs.quadruped.terrain_boxes import PARKED, window_rows
from envs.quadruped.terrain_env import QuadrupedTerrainEnv, seeded_column

# the model fields the worlds hold their own rows of: the feet's friction (drawn per episode) and the box windows
TILE_FIELDS = ("geom_friction", "pair_friction", "geom_pos", "geom_size", "geom_aabb", "geom_rbound")


class TorchGround:
    """:meth:`TerrainState.update` for N worlds on torch tensors on ``device`` (the module docstring; float64), from
    the C env's ``sensor``: its grid, scan points, trunk corners and yaw-command range."""

    def __init__(self, sensor: TerrainState, device: torch.device) -> None:
        tensor = lambda a: torch.tensor(np.asarray(a), dtype=torch.float64, device=device)  # noqa: E731  (a copy)
        self.padded = tensor(sensor.grid.padded)
        self.rows, self.cols = self.padded.shape[0] - 4, self.padded.shape[1] - 4
        self.stepped_from = sensor.grid.stepped_from
        self.points, self.corners, self.yaw_range = tensor(sensor.points), tensor(sensor.trunk_corners), sensor.yaw_range

    def heights(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """The ground height (m) at world points ``(x, y)`` (m, tensors of one shape):
        :func:`~envs.quadruped.terrain.ground_in_samples` of each, elementwise."""
        u, v = x / CELL, y / CELL
        i, j = torch.floor(u), torch.floor(v)
        stepped = (j >= self.stepped_from) & (j <= self.cols - 2) & (i >= 0) & (i <= self.rows - 2)
        zero = torch.zeros_like(u)
        nearest = self.padded[torch.where(stepped, torch.round(u), zero).long() + 2,
                              torch.where(stepped, torch.round(v), zero).long() + 2]
        a = torch.where(i >= -2, torch.clamp(i, max=self.rows), zero - 2).long()  # the corner within the padding ring
        b = torch.where(j >= -2, torch.clamp(j, max=self.cols), zero - 2).long()
        fu, fv = u - i, v - j
        h00, h11 = self.padded[a + 2, b + 2], self.padded[a + 3, b + 3]
        side = torch.where(fu >= fv, self.padded[a + 3, b + 2], self.padded[a + 2, b + 3])
        triangles = h00 + torch.maximum(fu, fv) * (side - h00) + torch.minimum(fu, fv) * (h11 - side)
        return torch.where(stepped, nearest, triangles)

    def update(self, qpos: torch.Tensor, heading: torch.Tensor, feet: torch.Tensor | None = None,
               qvel: torch.Tensor | None = None, out=None) -> None:
        """:meth:`TerrainState.update` of every world (``out``: the worlds' task state, written in place)."""
        q = qpos[:, 0:7].to(torch.float64)
        x, y, z, qw, qx, qy, qz = q.unbind(1)
        fx, fy = 1.0 - 2.0 * (qy * qy + qz * qz), 2.0 * (qx * qy + qw * qz)  # the body x axis, world xy
        norm = torch.sqrt(fx * fx + fy * fy)
        c, s = (fx / norm)[:, None], (fy / norm)[:, None]
        ahead, left = self.points[:, 0], self.points[:, 1]
        ground = self.heights(x[:, None] + c * ahead - s * left, y[:, None] + s * ahead + c * left)
        out.scan[:] = torch.clamp(z[:, None] - ground, -1.0, 1.0)
        out.ground[:] = ground.mean(1)
        error = heading - torch.atan2(fy, fx)
        error = torch.where(error > math.pi, error - 2.0 * math.pi, torch.where(error < -math.pi, error + 2.0 * math.pi,
                                                                                  error))
        out.yaw_rate[:] = torch.clamp(HEADING_GAIN * error, *self.yaw_range)
        if feet is None:
            return
        f, v = feet.to(torch.float64), qvel.to(torch.float64)
        px, py = f[:, 0:12:3], f[:, 1:12:3]
        under = self.heights(px, py)
        out.foot_ground[:] = under
        out.step_ground[:] = torch.maximum(under, self.heights(px + _reach(f[:, 12:24:3]), py + _reach(f[:, 13:24:3])))
        if len(self.corners) == 0:
            return
        rotation = _rotation(qw, qx, qy, qz)  # (N, 3, 3): body to world
        corners = q[:, None, 0:3] + torch.einsum("nij,kj->nki", rotation, self.corners)  # (N, K, 3) (m, world)
        cx, cy = corners[..., 0], corners[..., 1]
        below = torch.maximum(self.heights(cx, cy),
                              self.heights(cx + _reach(v[:, 0:1]), cy + _reach(v[:, 1:2])))
        out.trunk_clearance[:] = (corners[..., 2] - below).min(1).values


def _reach(velocity: torch.Tensor) -> torch.Tensor:
    """How far (m) a velocity component (m/s, world) carries a point in ``FOOT_LOOKAHEAD`` s, at most
    ``FOOT_LOOKAHEAD_REACH`` either way (``envs.quadruped.height_scan._reach``)."""
    return torch.clamp(FOOT_LOOKAHEAD * velocity, -FOOT_LOOKAHEAD_REACH, FOOT_LOOKAHEAD_REACH)


def _rotation(qw, qx, qy, qz) -> torch.Tensor:
    """The rotation matrices (N, 3, 3) of unit quaternions (w, x, y, z) given as (N,) columns."""
    return torch.stack([
        torch.stack([1.0 - 2.0 * (qy * qy + qz * qz), 2.0 * (qx * qy - qw * qz), 2.0 * (qx * qz + qw * qy)], 1),
        torch.stack([2.0 * (qx * qy + qw * qz), 1.0 - 2.0 * (qx * qx + qz * qz), 2.0 * (qy * qz - qw * qx)], 1),
        torch.stack([2.0 * (qx * qz - qw * qy), 2.0 * (qy * qz + qw * qx), 1.0 - 2.0 * (qx * qx + qy * qy)], 1),
    ], 1)


def tiles_model(mjm: mujoco.MjModel, env: QuadrupedTerrainEnv) -> mujoco.MjModel:
    """``mjm`` (a copy of the terrain env's model) with every box slot colliding (``contype`` 1): Warp fixes the
    colliding pairs when the model is made (module docstring)."""
    mjm.geom_contype[env._box_window.slots] = 1
    return mjm


class WarpTiles:
    """The terrain env's per-world part of ``sim``'s worlds (module docstring): their curriculum (``column``,
    ``origin``; the levels are the task state's ``level``), box windows and ground; ``seed`` spreads the first
    reset's worlds over the columns."""

    def __init__(self, sim: Any, seed: int) -> None:  # sim: the envs.quadruped.warp_sim.WarpQuadruped it is part of
        env, device, n = sim.env, sim.device, sim.num_worlds
        self.sim, self.env, self.seed = sim, env, seed
        self.ground = TorchGround(env._ground_sensor, device)
        sim.settings._ground_sensor = self.ground  # the task functions' sense_ground reads it
        sim.settings.tile_origins = torch.tensor(env.tile_origins, dtype=torch.float64, device=device)
        sim.settings.column_type_index = torch.as_tensor(env.column_type_index, device=device)
        self.column = torch.zeros(n, dtype=torch.int64, device=device)  # each world's column
        self.origin = torch.zeros((n, 3), dtype=torch.float64, device=device)  # its episode's spawn point (m, world)
        self.kept = torch.zeros(n, dtype=torch.bool, device=device)  # set_curriculum_state: keep at the next reset
        self.seeded = True  # the next reset of all worlds is a first (seeded) one
        self.window = env._box_window
        self.slots = torch.as_tensor(self.window.slots, device=device)
        self.centres = torch.full((n, 2), math.nan, dtype=torch.float64, device=device)  # of each world's window
        model = sim.model
        self.geom_pos, self.geom_size, self.geom_aabb, self.geom_rbound = (
            wp.to_torch(getattr(model, name)) for name in ("geom_pos", "geom_size", "geom_aabb", "geom_rbound"))
        self.geom_xpos = wp.to_torch(sim.data.geom_xpos)  # Warp poses the world's geoms once, when the data is made

    # ------------------------------------------------------------------ episodes
    def end(self, ids: torch.Tensor) -> None:
        """The curriculum's move of the worlds ``ids`` whose episode ended (before their reset): legged_gym's rule on
        their walked and commanded distances, or a uniform level without the curriculum; worlds restored by
        :meth:`set_curriculum_state` and a first reset keep theirs."""
        env, sim = self.env, self.sim
        if self.seeded:
            return
        moving = ids[~self.kept[ids]]
        if not len(moving):
            return
        levels = sim.state.level[moving]
        if env.curriculum:
            walked = torch.linalg.vector_norm(sim.qpos[moving, 0:2].to(torch.float64) - self.origin[moving, 0:2], dim=1)
            commanded = torch.linalg.vector_norm(sim.state.command[moving, 0:2], dim=1) * env._episode_length_s()
            levels = QuadrupedTerrainEnv.next_levels(env, levels, walked, commanded, sim._integers)
        else:
            levels = sim._integers(0, LEVELS, (len(moving),))
        sim.state.level[moving] = levels

    def start(self, ids: torch.Tensor, qpos: torch.Tensor, rows, state) -> None:
        """The worlds ``ids``' new episodes on their tiles (``qpos`` (n, nq) float64 rows after the reset's pose,
        ``rows`` their model rows, ``state`` their task state rows): a first reset's columns and levels, the start
        on the tile (:meth:`QuadrupedTerrainEnv.start_on_tiles`), the ground and the heading's command, the box
        windows."""
        env, sim = self.env, self.sim
        if self.seeded:
            fresh = ids[~self.kept[ids]].tolist()
            self.column[fresh] = torch.as_tensor([seeded_column(env._drawn_columns, self.seed + w) for w in fresh],
                                                 dtype=torch.int64, device=sim.device)
            state.level[~self.kept[ids]] = sim._integers(0, env.max_init_level + 1, (len(fresh),))
            self.seeded = False
        self.kept[ids] = False
        QuadrupedTerrainEnv.start_on_tiles(sim.settings, state, qpos, self.column[ids], rows, sim._uniform)
        self.origin[ids] = qpos[:, 0:3]
        self.ground.update(qpos, state.heading, out=state)
        if env.heading_command:
            state.command[:, 2] = state.yaw_rate
        self.place(ids, qpos[:, 0:2])

    def reseed(self, seed: int) -> None:
        """The next reset of all worlds is a first one, its columns spread from ``seed``."""
        self.seed, self.seeded = seed, True

    # ------------------------------------------------------------------ the box windows
    def follow(self) -> None:
        """Re-place the box windows of the worlds whose trunk moved ``slack`` from their window's centre."""
        xy = self.sim.qpos[:, 0:2].to(torch.float64)
        moved = ((xy - self.centres).abs() > self.window.slack).any(1).nonzero().squeeze(1)
        if len(moved):
            self.place(moved, xy[moved])

    def place(self, ids: torch.Tensor, xy: torch.Tensor) -> None:
        """The box windows of the worlds ``ids`` around their trunks at ``xy`` (n, 2) (m, world), into their model
        rows (:func:`window_rows` on the host; the spare slots parked)."""
        slots, window = len(self.slots), self.window
        centres, sizes = np.empty((len(ids), slots, 3)), np.empty((len(ids), slots, 3))
        for k, (x, y) in enumerate(xy.tolist()):
            near = window_rows(window.candidates(x, y), x, y, window.half, centres[k], sizes[k])
            if near > slots:
                raise RuntimeError(f"{near} terrain boxes near ({x:.2f}, {y:.2f}) m, the model holds {slots}")
            centres[k, near:, 2] = PARKED
        rows, columns = ids[:, None], self.slots[None, :]
        size = torch.as_tensor(sizes, dtype=torch.float32, device=self.sim.device)
        self.geom_pos[rows, columns] = self.geom_xpos[rows, columns] = torch.as_tensor(centres, dtype=torch.float32,
                                                                                     device=self.sim.device)
        self.geom_size[rows, columns] = size
        self.geom_aabb[rows, columns, 1] = size
        self.geom_rbound[rows, columns] = torch.linalg.vector_norm(size, dim=2)
        self.centres[ids] = xy

    def task_context(self, world: int):
        """World ``world``'s episode's task context (``QuadrupedTerrainEnv.task_context``'s)."""
        return QuadrupedTerrainEnv.tile_context(self.env.robot, int(self.column[world]), int(self.sim.state.level[world]))

    # ------------------------------------------------------------------ the curriculum's checkpoint
    def curriculum_state(self, world: int) -> dict[str, int]:
        """World ``world``'s place in the curriculum (``QuadrupedTerrainEnv.curriculum_state``'s)."""
        return {"column": int(self.column[world]), "level": int(self.sim.state.level[world])}

    def set_curriculum_state(self, world: int, state: dict[str, int]) -> None:
        """World ``world`` continues from ``state`` at its next reset (``QuadrupedTerrainEnv.set_curriculum_state``)."""
        column, level = QuadrupedTerrainEnv.checked_curriculum_state(state)
        self.column[world], self.sim.state.level[world], self.kept[world] = column, level, True
