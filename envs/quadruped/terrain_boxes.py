"""The stepped tiles of the terrain grid (stairs up, stairs down, obstacles) as boxes: :func:`stepped_boxes`, and
the few of them around the robot that its model holds: :class:`BoxWindow`.

MuJoCo's narrow phase on a heightfield tests each foot sphere against every triangle prism under it (2-8 on
the 0.05 m grid, a contact for each) and stair edges rise over one cell; a box gives one sphere-box test and
one contact, and vertical edges. So the tiles whose ground is flat pieces at a few heights
(:data:`envs.quadruped.terrain.STEPPED_TYPES`) collide as boxes, and the smooth ones (rough ground, slopes)
stay a heightfield (``envs.quadruped.scene.tiles_model``; mjlab builds its stairs and obstacles the same way).

**The ground the boxes make** is the height array read as nearest samples: each sample's height holds over
its cell ``+-CELL / 2`` around it (world x, y), so every step edge is vertical, half-way between the last
sample of one height and the first of the next (the heightfield ramped across that cell), and sample heights
are the same as the heightfield's. :meth:`envs.quadruped.terrain.TerrainGrid.heights_at` reads those
columns the same way, so the height scan there is the ground the feet touch. Each tile is a base slab (its
lowest height, ``BASE_DEPTH`` m thick) with a slab per higher height on top: the region at or above that
height, split into rectangles (runs of samples along y merged over consecutive x rows), from the height
below it up to it. Boxes are clipped at the grid's outer edge and at the first stepped column's first
sample (the heightfield's last row), so they never overlap the heightfield or the border.

**The window.** The grid has ~5,000 such boxes, and MuJoCo poses every geom at every substep (~8 ns each: 40 us
per substep for all of them), so the model holds only ``slots`` box geoms in one static body
(``terrain_boxes``): the boxes within ``WINDOW`` of a centre near the trunk (x and y, m, world), re-placed
when the trunk has moved ``SLACK`` from it (:meth:`BoxWindow.follow`, every step and reset). ``WINDOW -
SLACK`` (1.35 s m; Go1: 0.91 m) exceeds the farthest any foot or the trunk reaches from the trunk origin.
``slots`` is the most boxes any window can meet (:func:`window_slots`). Moving geoms of a static body needs
its bounding-volume tree refitted (MuJoCo built it at compile time for the collision midphase): the slots
sit in the tree's leaf order and every node's box becomes the union of its range of leaves.
"""

from __future__ import annotations

import functools

import mujoco
import numpy as np

from envs.quadruped.terrain import CELL, COLUMN_TYPES, LEVELS, STEPPED_TYPES, TerrainGrid

BASE_DEPTH = 0.2  # m of slab under a tile's lowest ground
WINDOW = 1.65  # half side of the window of boxes, in units of the size scale s (m / s)
SLACK = 0.3  # how far (units of s) the trunk moves from the window's centre before it re-centres
PARKED = -1000.0  # m, x, y and z of the slots no box fills


def rectangles(mask: np.ndarray) -> list[tuple[int, int, int, int]]:
    """Disjoint rectangles ``(a0, a1, b0, b1)`` (half-open index ranges along axes 0 and 1) whose union is
    exactly the true entries of the 2-D boolean ``mask``: each row's runs of true entries, a run merged with
    the same run of the rows before it."""
    rows, cols = mask.shape
    edges = np.diff(np.pad(mask.astype(np.int8), ((0, 0), (1, 1))), axis=1)
    opened: dict[tuple[int, int], int] = {}  # run (b0, b1) -> first row
    out = []
    for a in range(rows + 1):
        runs = set()
        if a < rows:
            starts, ends = np.flatnonzero(edges[a] == 1), np.flatnonzero(edges[a] == -1)
            runs = set(zip(starts.tolist(), ends.tolist()))
        for run in [r for r in opened if r not in runs]:
            out.append((opened.pop(run), a, *run))
        for run in runs:
            opened.setdefault(run, a)
    return sorted(out)


@functools.lru_cache(maxsize=4)
def stepped_boxes(grid: TerrainGrid) -> np.ndarray:
    """The boxes of every stepped tile of ``grid``: ``(B, 6)`` rows of centre (x, y, z) and half sizes (m, world
    frame), the module docstring's construction (built once per grid; read-only)."""
    n = grid.tile_samples
    ex, ey = grid.extent
    y_min = grid.stepped_from * CELL
    boxes = []
    for level in range(LEVELS):
        for column, kind in enumerate(COLUMN_TYPES):
            if kind not in STEPPED_TYPES:
                continue
            tile = grid.heights[level * n : (level + 1) * n, column * n : (column + 1) * n]
            heights = np.unique(tile)
            below = heights[0] - BASE_DEPTH
            for height in heights.tolist():
                for a0, a1, b0, b1 in rectangles(tile >= height):
                    x0 = max((level * n + a0 - 0.5) * CELL, 0.0)
                    x1 = min((level * n + a1 - 0.5) * CELL, ex)
                    y0 = max((column * n + b0 - 0.5) * CELL, y_min)
                    y1 = min((column * n + b1 - 0.5) * CELL, ey)
                    boxes.append(((x0 + x1) / 2, (y0 + y1) / 2, (below + height) / 2,
                                  (x1 - x0) / 2, (y1 - y0) / 2, (height - below) / 2))
                below = height
    boxes = np.array(boxes)
    boxes.flags.writeable = False
    return boxes


def window_slots(boxes: np.ndarray, half: float) -> int:
    """An upper bound on the number of ``boxes`` any square window of half side ``half`` (m) meets: the most
    boxes grown by ``half`` (plus one raster cell) that cover one point of a ``CELL / 2`` raster."""
    step = CELL / 2
    grow = half + step
    lo = np.floor((boxes[:, 0:2] - boxes[:, 3:5] - grow) / step).astype(int)
    hi = np.ceil((boxes[:, 0:2] + boxes[:, 3:5] + grow) / step).astype(int) + 1
    origin = lo.min(axis=0)
    lo, hi = lo - origin, hi - origin
    count = np.zeros(hi.max(axis=0) + 1, dtype=np.int32)
    for (i0, j0), (i1, j1) in zip(lo.tolist(), hi.tolist()):
        count[i0, j0] += 1
        count[i0, j1] -= 1
        count[i1, j0] -= 1
        count[i1, j1] += 1
    return int(count.cumsum(axis=0).cumsum(axis=1).max())


class BoxWindow:
    """The boxes around the trunk in one env's model (module docstring): :meth:`follow` after every step and reset.

    ``model`` is the env's own copy (its ``terrain_boxes`` body's geoms are written), ``boxes`` all boxes
    (:func:`stepped_boxes`), ``scale`` the grid's size scale."""

    def __init__(self, model: mujoco.MjModel, boxes: np.ndarray, scale: float) -> None:
        body = model.body("terrain_boxes").id
        self.model = model
        self.boxes = boxes
        self.half = WINDOW * scale
        self.slack = SLACK * scale
        self.centre: tuple[float, float] | None = None
        adr, num = int(model.body_bvhadr[body]), int(model.body_bvhnum[body])
        first, count = int(model.body_geomadr[body]), int(model.body_geomnum[body])
        # the tree's leaves in depth-first order; each node covers a contiguous range of them
        order, ranges = [], np.zeros((num, 2), dtype=np.intp)

        def visit(node: int) -> None:
            ranges[node, 0] = len(order)
            if model.bvh_nodeid[adr + node] >= 0:
                order.append(int(model.bvh_nodeid[adr + node]))
            else:
                for child in model.bvh_child[adr + node].tolist():
                    visit(child)
            ranges[node, 1] = len(order)

        visit(0)
        if sorted(order) != list(range(first, first + count)):
            raise RuntimeError("terrain_boxes: the collision tree does not hold exactly the body's geoms")
        self.slots = np.array(order)  # geom ids, in leaf order
        self.nodes = slice(adr, adr + num)
        self.bounds = ranges.ravel()  # reduceat indices: (start, end) of every node
        self.parked = np.full(6, PARKED)
        self.parked[3:] = 1e-3

    def follow(self, x: float, y: float, reset: bool = False) -> None:
        """Re-place the boxes around trunk position ``(x, y)`` (m, world) if it moved ``slack`` from the window's
        centre, or when ``reset`` (a new episode: the trunk may be anywhere)."""
        centre = self.centre
        if not reset and centre is not None and abs(x - centre[0]) <= self.slack and abs(y - centre[1]) <= self.slack:
            return
        self.centre = (x, y)
        b, h = self.boxes, self.half
        near = b[(np.abs(b[:, 0] - x) < b[:, 3] + h) & (np.abs(b[:, 1] - y) < b[:, 4] + h)]
        if len(near) > len(self.slots):
            raise RuntimeError(f"{len(near)} terrain boxes near ({x:.2f}, {y:.2f}) m, the model holds {len(self.slots)}")
        near = near[np.argsort(near[:, 0], kind="stable")]  # spatially coherent leaves: tight node boxes
        filled = np.tile(self.parked, (len(self.slots), 1))
        filled[: len(near)] = near
        m, g = self.model, self.slots
        m.geom_pos[g] = filled[:, 0:3]
        m.geom_size[g] = filled[:, 3:6]
        m.geom_aabb[g, 3:6] = filled[:, 3:6]
        m.geom_rbound[g] = np.sqrt((filled[:, 3:6] ** 2).sum(axis=1))
        lo = np.vstack([filled[:, 0:3] - filled[:, 3:6], np.zeros(3)])  # + a row for the last range's end
        hi = np.vstack([filled[:, 0:3] + filled[:, 3:6], np.zeros(3)])
        lo = np.minimum.reduceat(lo, self.bounds, axis=0)[::2]
        hi = np.maximum.reduceat(hi, self.bounds, axis=0)[::2]
        m.bvh_aabb[self.nodes, 0:3] = (lo + hi) / 2
        m.bvh_aabb[self.nodes, 3:6] = (hi - lo) / 2
