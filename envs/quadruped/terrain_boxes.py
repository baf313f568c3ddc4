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
built it at compile time for the collision midphase): every node's box becomes the union of its range of
leaves, the slots taking the boxes in Morton order of their centres so that a node's leaves lie together.
Everything is written to the env's own model copy, the same way by the single env and the batched one.
"""

from __future__ import annotations

import functools

import mujoco
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


def _z_order(x: np.ndarray, y: np.ndarray, half: float) -> np.ndarray:
    """Morton keys of points ``(x, y)`` within ``+-half`` (clipped) on a 256 x 256 raster (x's bits at the even
    positions, y's at the odd ones): sorted by them, every run of points is spatially compact (tight boxes for the
    tree's nodes)."""
    qx, qy = (np.minimum(np.maximum((c + half) * (128 / half), 0), 255).astype(np.int64) for c in (x, y))
    return _SPREAD[qx] | (_SPREAD[qy] << 1)


def _as_slice(index: np.ndarray) -> slice | np.ndarray:
    """``index`` (integers) as the slice it spans when it is a run of consecutive ones (numpy writes through a slice
    ~2x faster), else itself."""
    if len(index) and np.array_equal(index, np.arange(index[0], index[0] + len(index))):
        return slice(int(index[0]), int(index[0]) + len(index))
    return index


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
        self._slot_geoms, self._slot_leaves = _as_slice(self.slots), _as_slice(self.leaves)  # the same, for writes
        self._ranks = np.arange(len(self.slots))
        compiled = model.bvh_aabb[leaves]
        self.corners = np.zeros((len(leaves) + 1, 6))  # low and high corners of every leaf, + a row for the last range's end
        self.corners[:-1, 0:3], self.corners[:-1, 3:6] = compiled[:, 0:3] - compiled[:, 3:6], compiled[:, 0:3] + compiled[:, 3:6]
        self.nodes = np.array(nodes)
        self.bounds = np.array(ranges).ravel()  # reduceat indices: (start, end) of every node

    def follow(self, x: float, y: float, reset: bool = False) -> None:
        """Re-place the boxes around trunk position ``(x, y)`` (m, world) if it moved ``slack`` from the window's
        centre, or when ``reset`` (a new episode: the trunk may be anywhere)."""
        centre = self.centre
        if not reset and centre is not None and abs(x - centre[0]) <= self.slack and abs(y - centre[1]) <= self.slack:
            return
        self.centre = (x, y)
        b, h = self._candidates(x, y), self.half
        near = b[(np.abs(b[:, 0] - x) < b[:, 3] + h) & (np.abs(b[:, 1] - y) < b[:, 4] + h)]
        if len(near) > len(self.slots):
            raise RuntimeError(f"{len(near)} terrain boxes near ({x:.2f}, {y:.2f}) m, the model holds {len(self.slots)}")
        boxes = np.empty((len(self.slots), 6))  # per slot in leaf order: neighbours in the tree get neighbouring boxes
        boxes[: len(near)] = near[np.argsort(_z_order(near[:, 0] - x, near[:, 1] - y, h), kind="stable")]
        boxes[len(near) :] = boxes[len(near) - 1] if len(near) else (x, y, PARKED, 0, 0, 0)  # spares: inert, in place
        boxes[len(near) :, 3:6] = 1e-3
        m, g, sizes = self.model, self._slot_geoms, boxes[:, 3:6]
        m.geom_contype[g] = self._ranks < len(near)
        m.geom_pos[g] = boxes[:, 0:3]
        m.geom_size[g] = sizes
        m.geom_aabb[g, 3:6] = sizes
        m.geom_rbound[g] = np.sqrt((sizes**2).sum(axis=1))
        corners = self.corners.copy()
        corners[self._slot_leaves, 0:3], corners[self._slot_leaves, 3:6] = boxes[:, 0:3] - sizes, boxes[:, 0:3] + sizes
        low = np.minimum.reduceat(corners[:, 0:3], self.bounds, axis=0)[::2]
        high = np.maximum.reduceat(corners[:, 3:6], self.bounds, axis=0)[::2]
        m.bvh_aabb[self.nodes, 0:3] = (low + high) / 2
        m.bvh_aabb[self.nodes, 3:6] = (high - low) / 2

    def _candidates(self, x: float, y: float) -> np.ndarray:
        """The boxes of the tiles a window at ``(x, y)`` (m) may meet (each tile's boxes reach half a cell past it)."""
        reach, columns = self.half + CELL, len(COLUMN_TYPES)
        c0, c1 = (max(0, min(int((y + d) // self.tile), columns - 1)) for d in (-reach, reach))
        rows = [self.boxes[self.starts[level * columns + c0] : self.starts[level * columns + c1 + 1]]
                for level in range(max(0, int((x - reach) // self.tile)), min(LEVELS, int((x + reach) // self.tile) + 1))]
        return np.concatenate(rows) if rows else self.boxes[:0]
