"""The stepped tiles of the terrain grid (stairs up, stairs down, obstacles) as boxes: :func:`stepped_boxes`, and
the few of them around the robot that its model holds: :class:`BoxWindow`.

MuJoCo's narrow phase on a heightfield tests each foot sphere against every triangle prism under it (2-8 on
a 0.05 m grid, a contact for each: 7.5 us per substep against 1.4 us on a plane), and stair edges rise over
one cell; a box gives one sphere-box test and one contact, and vertical edges. So the tiles whose ground is
flat pieces at a few heights (:data:`envs.quadruped.terrain.STEPPED_TYPES`) collide as boxes, and the smooth
ones (rough ground, slopes) stay a heightfield (``envs.quadruped.scene.tiles_model``; mjlab builds its
stairs and obstacles the same way).

**The ground the boxes make** is the height array read as nearest samples: each sample's height holds over
its cell ``+-CELL / 2`` around it (world x, y), so every step edge is vertical, half-way between the last
sample of one height and the first of the next (the heightfield ramped across that cell), and sample heights
are the same as the heightfield's. :meth:`envs.quadruped.terrain.TerrainGrid.heights_at` reads those columns
the same way, so the height scan there is the ground the feet touch. A tile's boxes are its regions of one
height, split into rectangles (runs of samples along y merged over consecutive x rows), each from
``BASE_DEPTH`` m under the tile's lowest ground up to its height. Boxes are clipped at the grid's outer edge
and at the first stepped column's first sample (the heightfield's last row), so they never overlap the
heightfield or the border.

**The window.** The grid has ~6,000 boxes, and MuJoCo poses every geom at every substep (~8 ns each: 40 us
a substep for all of them), so the model holds ``slots`` box geoms ``terrain_box_<k>`` in the world body:
the boxes within ``reach + slack`` of a centre near the trunk (x and y, m, world), re-placed when the trunk
has moved ``slack`` (``SLACK`` s m; Go1: 0.2 m) from it (:meth:`BoxWindow.follow`, after every step and at
every reset); the spare slots sit inert (``contype`` 0, 1 mm) beside the last box. ``reach`` (:func:`reach`;
Go1: 0.72 m) is the farthest a foot or the trunk gets from the trunk origin along x or y, ``slots`` the most
boxes any window meets (:func:`window_slots`); the model keeps both in its numeric ``terrain_box_window``
(half side, slack; m). Static geoms that move need the world body's bounding-volume tree refitted (MuJoCo
built it at compile time for the collision midphase, which the tile grid's model runs when a robot body holds several
colliding geoms, ``envs.quadruped.scene``): every node's box becomes the union of its range of leaves, the slots
taking the boxes in Morton order of their centres so that a node's leaves lie together. The
placement and the refit are one compiled call (:func:`_place_window`, numba: ~6 us a re-placement, against ~42 us
in numpy). Everything is written to the env's own model copy, the same way by the single env and the batched one.
"""

from __future__ import annotations

import functools

import mujoco
import numba
import numpy as np

from envs.quadruped.robots import LegGeometry
from envs.quadruped.terrain import CELL, COLUMN_TYPES, LEVELS, STEPPED_TYPES, TerrainGrid

BASE_DEPTH = 0.2  # m of slab under a tile's lowest ground
SLACK = 0.3  # how far (units of the size scale s: m / s) the trunk moves from the window's centre before it re-centres
PARKED = -1000.0  # m: where the slots are compiled (x, y, z), and their z when no box is near


def rectangles(values: np.ndarray) -> np.ndarray:
    """Disjoint rectangles ``(a0, a1, b0, b1)`` (rows of half-open index ranges along axes 0 and 1), each of one
    value of the 2-D array ``values``, that together cover it: each row's runs of one value, a run merged with
    the same run (columns and value) of the rows before it. Sorted by ``(a0, b0)``."""
    rows, cols = values.shape
    change = np.ones((rows, cols + 1), dtype=bool)
    change[:, 1:cols] = values[:, 1:] != values[:, :-1]
    row, start = np.nonzero(change[:, :cols])
    end = np.nonzero(change[:, 1:])[1] + 1  # row-major like the starts: the i-th run of a row ends at the i-th end
    value = values[row, start]
    order = np.lexsort((row, value, end, start))  # runs of the same columns and value, by row
    row, start, end, value = row[order], start[order], end[order], value[order]
    new = np.ones(len(row), dtype=bool)
    new[1:] = (start[1:] != start[:-1]) | (end[1:] != end[:-1]) | (value[1:] != value[:-1]) | (row[1:] != row[:-1] + 1)
    first = np.flatnonzero(new)
    last = np.append(first[1:], len(row)) - 1
    out = np.stack([row[first], row[last] + 1, start[first], end[first]], axis=1)
    return out[np.lexsort((out[:, 2], out[:, 0]))]


@functools.lru_cache(maxsize=4)
def stepped_boxes(grid: TerrainGrid) -> tuple[np.ndarray, np.ndarray]:
    """The boxes of every stepped tile of ``grid``: ``(B, 6)`` rows of centre (x, y, z) and half sizes (m, world
    frame), the module docstring's construction, tile by tile, and where each tile's rows start: tile ``(level,
    column)``'s are ``starts[t]:starts[t + 1]``, ``t = level * len(COLUMN_TYPES) + column`` (built once per grid;
    read-only)."""
    n = grid.tile_samples
    ex, ey = grid.extent
    y_min = grid.stepped_from * CELL
    boxes, starts = [], []
    for level in range(LEVELS):
        for column, kind in enumerate(COLUMN_TYPES):
            starts.append(len(boxes))
            if kind not in STEPPED_TYPES:
                continue
            tile = grid.heights[level * n : (level + 1) * n, column * n : (column + 1) * n]
            bottom = float(tile.min()) - BASE_DEPTH
            for a0, a1, b0, b1 in rectangles(tile).tolist():
                height = float(tile[a0, b0])
                x0 = max((level * n + a0 - 0.5) * CELL, 0.0)
                x1 = min((level * n + a1 - 0.5) * CELL, ex)
                y0 = max((column * n + b0 - 0.5) * CELL, y_min)
                y1 = min((column * n + b1 - 0.5) * CELL, ey)
                boxes.append(((x0 + x1) / 2, (y0 + y1) / 2, (bottom + height) / 2,
                              (x1 - x0) / 2, (y1 - y0) / 2, (height - bottom) / 2))
    boxes, starts = np.array(boxes), np.array([*starts, len(boxes)])
    boxes.flags.writeable = starts.flags.writeable = False
    return boxes, starts


def reach(model: mujoco.MjModel, legs: LegGeometry) -> float:
    """The farthest (m, at any tilt) a foot or a colliding geom of the trunk (the free joint's body) of the robot's
    ``model`` gets from the trunk origin: a hip's offset plus its whole leg stretched out plus the foot, or a
    geom's offset plus its bounding sphere."""
    leg = legs.hip_to_thigh + legs.thigh + np.hypot(legs.calf[:, 0], legs.calf[:, 1]) + legs.foot_radius
    trunk = [g for g in range(model.ngeom) if model.geom_bodyid[g] == model.jnt_bodyid[0]
             and (model.geom_contype[g] or model.geom_conaffinity[g])]
    geoms = [np.linalg.norm(model.geom_pos[g]) + model.geom_rbound[g] for g in trunk]
    return float(max((np.linalg.norm(legs.hip, axis=1) + leg).max(), *geoms))


def window_slots(boxes: np.ndarray, half: float) -> int:
    """An upper bound on the number of ``boxes`` any square window of half side ``half`` (m) meets: the most
    boxes grown by ``half`` (plus one raster cell) that cover one point of a ``CELL`` raster."""
    step = CELL
    grow = half + step
    lo = np.floor((boxes[:, 0:2] - boxes[:, 3:5] - grow) / step).astype(int)
    hi = np.ceil((boxes[:, 0:2] + boxes[:, 3:5] + grow) / step).astype(int) + 1
    origin = lo.min(axis=0)
    lo, hi = lo - origin, hi - origin
    count = np.zeros(hi.max(axis=0) + 1, dtype=np.int32)
    for (i, j), sign in (((lo[:, 0], lo[:, 1]), 1), ((lo[:, 0], hi[:, 1]), -1), ((hi[:, 0], lo[:, 1]), -1),
                         ((hi[:, 0], hi[:, 1]), 1)):
        np.add.at(count, (i, j), sign)
    return int(count.cumsum(axis=0).cumsum(axis=1).max())


_SPREAD = np.array([sum(((v >> bit) & 1) << (2 * bit) for bit in range(8)) for v in range(256)], dtype=np.int64)
"""``_SPREAD[v]``: the 8 bits of ``v`` moved to the even bit positions (0, 2, ..., 14), for Morton keys."""


@numba.njit(cache=True, nogil=True)
def _morton_key(x: float, y: float, half: float) -> int:
    """The Morton key of point ``(x, y)`` within ``+-half`` (clipped) on a 256 x 256 raster (x's bits at the even
    positions, y's at the odd ones): sorted by them, every run of points is spatially compact (tight boxes for the
    tree's nodes)."""
    qx = int(min(max((x + half) * (128 / half), 0.0), 255.0))
    qy = int(min(max((y + half) * (128 / half), 0.0), 255.0))
    return _SPREAD[qx] | (_SPREAD[qy] << 1)


@numba.njit(cache=True, nogil=True)
def window_rows(candidates, x, y, half, centres, sizes):
    """The window's boxes at ``(x, y)`` (m, world) as slot rows: the ``candidates`` (rows of centre and half sizes, m)
    within ``half`` of ``(x, y)`` along x and y, in Morton order of their centres around ``(x, y)`` (stable), into the
    first rows of ``centres`` and ``sizes`` (S, 3); the spare rows get the last box's centre (``(x, y, PARKED)`` when
    none is near) and 1 mm sizes. Returns how many candidates are near, and writes nothing when they are more than
    ``S``."""
    placed, keys, count = np.empty(len(candidates), dtype=np.int64), np.empty(len(candidates), dtype=np.int64), 0
    for b in range(len(candidates)):
        if abs(candidates[b, 0] - x) < candidates[b, 3] + half and abs(candidates[b, 1] - y) < candidates[b, 4] + half:
            key, k = _morton_key(candidates[b, 0] - x, candidates[b, 1] - y, half), count
            while k > 0 and keys[k - 1] > key:  # insertion sort: stable, and a window holds a few dozen boxes
                placed[k], keys[k] = placed[k - 1], keys[k - 1]
                k -= 1
            placed[k], keys[k], count = b, key, count + 1
    if count > len(centres):
        return count
    centre = np.array((x, y, PARKED))
    for k in range(len(centres)):
        for i in range(3):
            if k < count:
                centre[i], sizes[k, i] = candidates[placed[k], i], candidates[placed[k], 3 + i]
            else:
                sizes[k, i] = 1e-3
            centres[k, i] = centre[i]
    return count


@numba.njit(cache=True, nogil=True)
def _place_window(candidates, x, y, half, slots, slot_leaves, leaf_corners, nodes, ranges, contype, pos, size, aabb,
                  rbound, bvh_aabb):
    """:meth:`BoxWindow.follow`'s placement, written into the model's arrays (``contype`` ... ``bvh_aabb``: its
    ``geom_contype``, ``geom_pos``, ``geom_size``, ``geom_aabb``, ``geom_rbound``, ``bvh_aabb``): :func:`window_rows`
    into the ``slots`` (geom ids, in leaf order), the spares inert; then every tree node in ``nodes`` gets the box
    around its range of leaves (``ranges``: (start, end) rows into ``leaf_corners``, the compiled low and high corners
    of every leaf, whose ``slot_leaves`` rows the slots replace). Returns how many candidates are near, and writes
    nothing when they are more than the slots."""
    centres, sizes = np.empty((len(slots), 3)), np.empty((len(slots), 3))
    count = window_rows(candidates, x, y, half, centres, sizes)
    if count > len(slots):
        return count
    corners = leaf_corners.copy()
    for k in range(len(slots)):
        g, leaf = slots[k], slot_leaves[k]
        for i in range(3):
            pos[g, i], size[g, i], aabb[g, 3 + i] = centres[k, i], sizes[k, i], sizes[k, i]
            corners[leaf, i], corners[leaf, 3 + i] = centres[k, i] - sizes[k, i], centres[k, i] + sizes[k, i]
        contype[g] = k < count
        rbound[g] = np.sqrt(sizes[k, 0] * sizes[k, 0] + sizes[k, 1] * sizes[k, 1] + sizes[k, 2] * sizes[k, 2])
    for n in range(len(nodes)):
        for i in range(3):
            low, high = corners[ranges[n, 0], i], corners[ranges[n, 0], 3 + i]
            for leaf in range(ranges[n, 0] + 1, ranges[n, 1]):
                low, high = min(low, corners[leaf, i]), max(high, corners[leaf, 3 + i])
            bvh_aabb[nodes[n], i], bvh_aabb[nodes[n], 3 + i] = (low + high) / 2, (high - low) / 2
    return count


class BoxWindow:
    """The boxes around the trunk in one env's model (module docstring): :meth:`follow` after every step and reset.

    ``model`` is the env's own copy (its geoms ``terrain_box_<k>`` are written), ``grid`` the tile grid."""

    def __init__(self, model: mujoco.MjModel, grid: TerrainGrid) -> None:
        slots = [g for g in range(model.ngeom) if model.geom(g).name.startswith("terrain_box_")]
        self.model = model
        self.boxes, self.starts = stepped_boxes(grid)
        self.tile = grid.tile_size  # m between tile origins, along x and y
        self.half, self.slack = (float(v) for v in model.numeric("terrain_box_window").data)
        self.centre: tuple[float, float] | None = None
        # the collision tree of the body holding the slots (the world): its leaves in depth-first order, and every
        # node's contiguous range of them
        nodes, leaves, ranges = [], [], []

        def visit(node: int, root: int) -> None:
            nodes.append(node)
            ranges.append([len(leaves), 0])
            row = ranges[-1]
            if model.bvh_nodeid[node] >= 0:
                leaves.append(node)
            else:
                for child in model.bvh_child[node].tolist():
                    visit(root + child, root)
            row[1] = len(leaves)

        for body in sorted({int(model.geom_bodyid[g]) for g in slots}):
            visit(int(model.body_bvhadr[body]), int(model.body_bvhadr[body]))
        geoms = model.bvh_nodeid[leaves]
        self.leaves = np.flatnonzero(np.isin(geoms, slots))  # the slots' leaf positions (other geoms' leaves keep theirs)
        if len(self.leaves) != len(slots):
            raise RuntimeError("the collision trees do not hold every terrain_box_<k> geom")
        self.slots = geoms[self.leaves]  # geom ids, in leaf order
        compiled = model.bvh_aabb[leaves]
        self.corners = np.hstack([compiled[:, 0:3] - compiled[:, 3:6], compiled[:, 0:3] + compiled[:, 3:6]])  # every leaf's
        self.nodes = np.array(nodes)
        self.ranges = np.array(ranges)  # (start, end) of every node's leaves

    def follow(self, x: float, y: float, reset: bool = False) -> None:
        """Re-place the boxes around trunk position ``(x, y)`` (m, world) if it moved ``slack`` from the window's
        centre, or when ``reset`` (a new episode: the trunk may be anywhere); compiled (:func:`_place_window`)."""
        centre = self.centre
        if not reset and centre is not None and abs(x - centre[0]) <= self.slack and abs(y - centre[1]) <= self.slack:
            return
        m = self.model
        near = _place_window(self.candidates(x, y), x, y, self.half, self.slots, self.leaves, self.corners, self.nodes,
                             self.ranges, m.geom_contype, m.geom_pos, m.geom_size, m.geom_aabb, m.geom_rbound, m.bvh_aabb)
        if near > len(self.slots):
            raise RuntimeError(f"{near} terrain boxes near ({x:.2f}, {y:.2f}) m, the model holds {len(self.slots)}")
        self.centre = (x, y)

    def candidates(self, x: float, y: float) -> np.ndarray:
        """The boxes of the tiles a window at ``(x, y)`` (m) may meet (each tile's boxes reach half a cell past it)."""
        reach, columns = self.half + CELL, len(COLUMN_TYPES)
        c0, c1 = (max(0, min(int((y + d) // self.tile), columns - 1)) for d in (-reach, reach))
        rows = [self.boxes[self.starts[level * columns + c0] : self.starts[level * columns + c1 + 1]]
                for level in range(max(0, int((x - reach) // self.tile)), min(LEVELS, int((x + reach) // self.tile) + 1))]
        return np.concatenate(rows) if rows else self.boxes[:0]
