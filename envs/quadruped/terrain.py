"""Terrain generation for the quadruped envs, every generator in one place: the rough field and the tile grid.

* :func:`rough_heights`: the rough heightfield of ``terrain="rough"`` (``OpenClaw/QuadrupedRough-*``), a
  50 m x 50 m field of bumps around the spawn point (:class:`~envs.quadruped.QuadrupedEnv`'s docstring).
* :func:`terrain_grid`: the tile grid of ``OpenClaw/QuadrupedTerrain-v1``, legged_gym's curriculum tiles
  sized for a robot's legs (below).

Both are deterministic functions of a seed (numpy; the ground lookup compiled with numba); ``envs.quadruped.scene``
puts them into the model.

**The tile grid.** :class:`TerrainGrid` is a deterministic, seeded heightfield of ``LEVELS`` rows of
difficulty by ``sum(COLUMNS.values())`` columns of terrain types (legged_gym's ``Terrain`` with ``curriculum=True``;
Isaac Lab's ``ROUGH_TERRAINS_CFG``): row ``l``'s tiles draw their difficulty ``d`` in ``[l / LEVELS, (l + 1) /
LEVELS]`` (below), so level 0 is nearly flat and level 9 the hardest. Columns, in this order (legged_gym's split of 20 columns for the
five types, plus two of plain rough ground):

===============  =======  ============================================================================
type             columns  tile (d: difficulty in [0, 1], s: the robot's size scale below)
===============  =======  ============================================================================
rough            2        uniform bumps on the 0.1 m collision lattice, heights in [0, (0.025 + 0.075 d) s] m
smooth_slope     2        a pyramid valley: the robot starts in its flat centre and walks out uphill, slope
                          0.4 d (rise over run)
rough_slope      2        a pyramid hill (walks out downhill), slope 0.4 d, plus bumps of +-0.05 s m
stairs_up        7        pyramid stairs down into a pit: the robot starts at the bottom and climbs out;
                          treads 0.31 s m (times a per-tile draw, below), risers (0.05 + 0.18 d) s m
stairs_down      5        pyramid stairs up to a platform: the robot starts on top and walks down
obstacles        4        20 boxes 1-2 s m wide (times a per-tile draw), heights drawn from (-1, -1/2, 1/2, 1) x (0.05 + 0.2 d) s m
===============  =======  ============================================================================

**Dimensions vary per tile** (Isaac Lab's curriculum rule; legged_gym's ``Terrain`` draws obstacle sizes per tile
too): a tile of level ``l`` draws its difficulty ``d = (l + u) / LEVELS`` with ``u ~ U(0, 1)`` (level 0: d in
[0, 0.1], level 9: [0.9, 1.0]), so its riser, slope, bump and obstacle heights lie in its level's band; its stairs'
treads are ``TREAD`` s m times ``U(1 - TREAD_SPREAD, 1 + TREAD_SPREAD)`` and its obstacles' widths their range
times ``U(1 - WIDTH_SPREAD, 1 + WIDTH_SPREAD)``. Every draw comes from the tile's own generator, seeded
``(seed, level, column)``: one ``terrain_seed`` gives the same grid to the bit, another one tiles the policy
never saw (:attr:`TerrainGrid.dimensions` holds each tile's draws). Go1 (s = 0.671): stairs risers 3.4-4.6 cm at
level 0, 9.4-10.6 cm at level 5, 11.8-13.0 cm at level 7, 14.2-15.4 cm at level 9; treads 16.7-25.0 cm.

Every tile but the rough ones has a flat platform of 2 s m x 2 s m at its centre, where the robot
spawns (legged_gym: 3 m for ANYmal); the tiles are ``8 s`` m square (legged_gym: 8 m).

**Sizes from leg length.** legged_gym's numbers are for ANYmal C, whose leg (hip pitch axis to foot:
thigh 0.285 m + shank 0.35 m) is ``ANYMAL_LEG_LENGTH`` = 0.635 m long. Every length above (tile, platform,
tread, riser, obstacle height, bump height) is legged_gym's times ``s = leg / ANYMAL_LEG_LENGTH`` with
``leg`` the robot's thigh + calf length; slopes (rise over run) are kept. Go1's 0.213 + 0.213 m give
s = 0.671: tiles 5.35 m, risers 3.4 - 15.4 cm, obstacles up to 16.8 cm.

**Grid.** Heights are sampled on a ``CELL`` = 0.05 m grid (half legged_gym's 0.1 m; a 0.21 m Go1 tread keeps
16 cm of flat top). World frame: the grid spans ``x`` in [0, levels x tile] (rows: levels, along +x) and
``y`` in [0, columns x tile] (columns: types, along +y); ground level outside the tiles' features is z = 0
and the env surrounds the grid with flat ground at z = 0. The smooth types (rough, slopes: the first
columns) collide as a heightfield of every ``STRIDE``-th sample (:func:`lattice`: 0.1 m apart, legged_gym's
horizontal scale; a foot sphere meets 2-8 triangle prisms on a 0.05 m field, fewer on this one): the bumps are
drawn at the lattice's samples in every tile (a tile's first sample may lie between two), and every sample
between lies on MuJoCo's triangles of the lattice (:func:`_triangulated`). The ``STEPPED_TYPES`` (stairs,
obstacles: the last columns) collide as boxes, each sample's height over its cell, so a step edge is vertical,
half-way between two samples (``envs.quadruped.terrain_boxes``).

Heights are queried without ray casts: :meth:`TerrainGrid.heights_at` reads the array at any number of points
at once, as MuJoCo's triangles in the smooth columns (the 0.05 m grid's triangles are the lattice's) and as the
nearest sample in the stepped ones: the ground that collides. The height scan reads it point by point in compiled
code (:func:`ground_in_samples`, from ``envs.quadruped.height_scan``).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numba
import numpy as np

ANYMAL_LEG_LENGTH = 0.635  # m, ANYmal C thigh 0.285 + shank-to-foot 0.35 (anymal_c_simple_description)
LEVELS = 10
CELL = 0.05  # m between height samples
STRIDE = 2  # samples per side of a collision lattice cell: the smooth columns collide on a 0.1 m grid (legged_gym's)
COLUMNS = {"rough": 2, "smooth_slope": 2, "rough_slope": 2, "stairs_up": 7, "stairs_down": 5, "obstacles": 4}
TERRAIN_TYPES = tuple(COLUMNS)
COLUMN_TYPES = tuple(t for t, n in COLUMNS.items() for _ in range(n))  # the type of each column
STEPPED_TYPES = ("stairs_up", "stairs_down", "obstacles")  # flat pieces at a few heights: collide as boxes
FIRST_STEPPED = min(COLUMN_TYPES.index(t) for t in STEPPED_TYPES)  # the stepped columns are the last ones
assert all(t in STEPPED_TYPES for t in COLUMN_TYPES[FIRST_STEPPED:]), "stepped columns must come last"
# legged_gym's terrain numbers (ANYmal, metres; the tile builders scale them by s)
TILE = 8.0
PLATFORM = 3.0
TREAD = 0.31
OBSTACLES = 20
TREAD_SPREAD = 0.2  # a tile's treads: TREAD s m times U(0.8, 1.2)
WIDTH_SPREAD = 0.25  # a tile's obstacle widths: their 1-2 s m range times U(0.75, 1.25)
DIMENSIONS = ("difficulty", "tread", "width")  # what TerrainGrid.dimensions holds per tile (module docstring)


def rough_heights(seed: int, nrow: int, ncol: int, half_x: float, half_y: float) -> np.ndarray:
    """The rough field of ``seed``: ``(nrow, ncol)`` heights in [0, 1] (fractions of the bump height; rows
    along y, columns along x, as MuJoCo's heightfield data) over x in [-half_x, half_x] and y in [-half_y,
    half_y] (m, the field's frame). Two octaves: smooth 0.5 m undulations (bilinear upsampling of a coarse
    grid, 0.1 m samples) plus per-sample bumps, normalized to [0, 1], then flat (0) within 0.5 m of the
    centre (the spawn point) and blended in over the next 0.5 m."""
    rng = np.random.default_rng(seed)
    # Two octaves: smooth 0.5 m undulations (bilinear upsampling of a coarse grid) plus 0.1 m bumps.
    coarse = rng.uniform(0.0, 1.0, size=(nrow // 5 + 2, ncol // 5 + 2))
    r = np.arange(nrow) / 5.0
    c = np.arange(ncol) / 5.0
    r0, c0 = r.astype(int), c.astype(int)
    fr, fc = (r - r0)[:, None], (c - c0)[None, :]
    smooth = (
        coarse[r0][:, c0] * (1 - fr) * (1 - fc)
        + coarse[r0 + 1][:, c0] * fr * (1 - fc)
        + coarse[r0][:, c0 + 1] * (1 - fr) * fc
        + coarse[r0 + 1][:, c0 + 1] * fr * fc
    )
    heights = 0.6 * smooth + 0.4 * rng.uniform(0.0, 1.0, size=(nrow, ncol))
    heights = (heights - heights.min()) / max(heights.max() - heights.min(), 1e-9)
    # Flat patch at height 0 of radius 0.5 m around the spawn point, blended in over 0.5 m.
    y = np.linspace(-half_y, half_y, nrow)[:, None]
    x = np.linspace(-half_x, half_x, ncol)[None, :]
    heights *= np.clip((np.sqrt(x**2 + y**2) - 0.5) / 0.5, 0.0, 1.0)
    return heights


def size_scale(leg_length: float) -> float:
    """``s``: a robot's leg length (thigh + calf, m) over ANYmal C's (module docstring)."""
    if not leg_length > 0:
        raise ValueError(f"leg length {leg_length} m must be > 0")
    return float(leg_length) / ANYMAL_LEG_LENGTH


def riser_height(difficulty: float, scale: float) -> float:
    """Stair riser (m) at ``difficulty`` d in [0, 1]: legged_gym's 0.05 + 0.18 d, times ``scale``."""
    return (0.05 + 0.18 * difficulty) * scale


def level_band(level: int) -> tuple[float, float]:
    """The difficulties a tile of ``level`` draws from (module docstring): ``[level / LEVELS, (level + 1) / LEVELS]``."""
    return level / LEVELS, (level + 1) / LEVELS


def _coarse_noise(rng: np.random.Generator, n: int, low: float, high: float, first: tuple[int, int]) -> np.ndarray:
    """``n x n`` heights of the tile whose first sample is grid sample ``first`` (indices along x, y): uniform draws
    in [low, high] at the samples of the collision lattice (grid indices that are multiples of ``STRIDE``, 0.1 m
    apart); every other sample holds the draw before it, until :func:`terrain_grid` sets it on the lattice's
    triangles."""
    offset = np.mod(first, STRIDE)
    coarse = rng.uniform(low, high, size=tuple((n - 1 + offset) // STRIDE + 2))  # (one spare: the seeds' draws)
    i, j = ((np.arange(n) + o) // STRIDE for o in offset)
    return coarse[i][:, j]


def _edge_distance(n: int) -> np.ndarray:
    """Each sample's distance (m) to the tile's nearest edge, ``n x n`` (a pyramid)."""
    r = np.arange(n) * CELL
    half = (n - 1) * CELL / 2
    d = half - np.abs(r - half)
    return np.minimum(d[:, None], d[None, :])


def _dimensions(level: int, rng: np.random.Generator) -> np.ndarray:
    """A tile's draws (:data:`DIMENSIONS`, module docstring): its difficulty in :func:`level_band`, its tread factor
    and its obstacle-width factor."""
    low, high = level_band(level)
    return np.array([rng.uniform(low, high), rng.uniform(1 - TREAD_SPREAD, 1 + TREAD_SPREAD),
                     rng.uniform(1 - WIDTH_SPREAD, 1 + WIDTH_SPREAD)])


def _tile(kind: str, dimensions: np.ndarray, scale: float, n: int, rng: np.random.Generator,
          first: tuple[int, int]) -> np.ndarray:
    """Heights (m) of one ``n x n`` tile of type ``kind`` with ``dimensions`` (:func:`_dimensions`; module docstring)
    whose first sample is grid sample ``first`` (indices along x, y)."""
    d, tread, width = dimensions.tolist()
    half = (n - 1) * CELL / 2
    plateau = half - PLATFORM * scale / 2  # edge distance where the central platform begins
    if kind == "rough":
        return _coarse_noise(rng, n, 0.0, (0.025 + 0.075 * d) * scale, first)
    edge = _edge_distance(n)
    if kind in ("smooth_slope", "rough_slope"):
        hill = 0.4 * d * np.minimum(edge, plateau)
        if kind == "smooth_slope":
            return -hill
        return hill + _coarse_noise(rng, n, -0.05 * scale, 0.05 * scale, first)
    if kind in ("stairs_up", "stairs_down"):
        rings = np.floor(np.minimum(edge, plateau) / (TREAD * tread * scale))
        stairs = rings * riser_height(d, scale)
        return -stairs if kind == "stairs_up" else stairs
    if kind == "obstacles":
        height = (0.05 + 0.2 * d) * scale
        heights = np.zeros((n, n))
        for _ in range(OBSTACLES):
            w, h = (rng.uniform(1.0, 2.0, size=2) * width * scale / CELL).astype(int)
            i, j = rng.integers(0, n - w), rng.integers(0, n - h)
            heights[i : i + w, j : j + h] = rng.choice((-1.0, -0.5, 0.5, 1.0)) * height
        heights[edge >= plateau] = 0.0
        return heights
    raise ValueError(f"terrain type {kind!r} is unknown; choose one of: {', '.join(TERRAIN_TYPES)}")


@dataclass(frozen=True, eq=False)
class TerrainGrid:
    """The heights (m, world z) of the whole grid, ``heights[i, j]`` at ``x = i * CELL``, ``y = j * CELL``,
    each tile's spawn point: ``origins[level, column]`` = (x, y, z) m of the tile centre's ground,
    ``stepped_from``: the first sample index along y of the stepped columns (``STEPPED_TYPES``), and each tile's
    draws: ``dimensions[level, column]``, the :data:`DIMENSIONS` (module docstring)."""

    seed: int
    scale: float
    tile_samples: int
    heights: np.ndarray
    origins: np.ndarray
    stepped_from: int
    dimensions: np.ndarray

    def riser(self, level: int, column: int) -> float:
        """The stairs riser (m) of tile ``(level, column)`` (whatever its type)."""
        return riser_height(float(self.dimensions[level, column, 0]), self.scale)

    def tread(self, level: int, column: int) -> float:
        """The stairs tread (m) of tile ``(level, column)`` (whatever its type)."""
        return TREAD * float(self.dimensions[level, column, 1]) * self.scale

    @property
    def tile_size(self) -> float:
        """Side of a tile (m)."""
        return self.tile_samples * CELL

    @property
    def extent(self) -> tuple[float, float]:
        """The grid's size along x and y (m), from the first sample to the last."""
        return ((self.heights.shape[0] - 1) * CELL, (self.heights.shape[1] - 1) * CELL)

    def heights_at(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Ground height (m) at world points ``(x, y)`` (arrays of one shape, or broadcastable), on MuJoCo's
        heightfield triangles between samples (:func:`_on_triangles`), but the nearest sample's in the cells of the
        stepped columns (the boxes' ground, ``envs.quadruped.terrain_boxes``, from the first sample of the first
        stepped column on); off the grid the ground outside it, z = 0 (within one cell of the edge: a ramp to it).
        Point by point (:func:`ground_in_samples`), so any batch gives the same bits per point."""
        x, y = np.broadcast_arrays(np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64))
        heights = np.empty(x.shape)
        _grounds_in_samples(self.padded, self.stepped_from, (x / CELL).ravel(), (y / CELL).ravel(), heights.reshape(-1))
        return heights

    @functools.cached_property
    def padded(self) -> np.ndarray:
        """``heights`` inside a ring of zero samples two wide (the flat ground around the grid): sample ``(i, j)`` is
        entry ``(i + 2, j + 2)`` (what :func:`ground_in_samples` reads)."""
        padded = np.zeros((self.heights.shape[0] + 4, self.heights.shape[1] + 4))
        padded[2:-2, 2:-2] = self.heights
        padded.flags.writeable = False
        return padded


@numba.njit(cache=True, nogil=True)
def _on_triangles(h00, side, h11, fu, fv):
    """The height at fractions ``fu``, ``fv`` (in [0, 1]) along x and y of a cell on MuJoCo's two triangles of a
    heightfield cell, split along the diagonal from its lowest corner (height ``h00``) to its highest (``h11``;
    ``mjc_ConvexHField``'s prisms; a ray cast confirms the split): from the low corner along the larger fraction's
    axis to the corner ``side`` (the one at x + 1 where ``fu >= fv``, else at y + 1), then along the smaller one.
    Compiled for one point (:func:`ground_in_samples`); its ``py_func`` runs the same lines on arrays elementwise."""
    return h00 + np.maximum(fu, fv) * (side - h00) + np.minimum(fu, fv) * (h11 - side)


@numba.njit(cache=True, nogil=True)
def ground_in_samples(padded: np.ndarray, stepped_from: int, u: float, v: float) -> float:
    """The ground height (m) at the point ``x = u * CELL``, ``y = v * CELL`` of the grid whose heights are
    ``padded`` (:attr:`TerrainGrid.padded`) and whose stepped columns start at sample ``stepped_from``: the nearest
    sample where the cell's lowest corner ``(floor u, floor v)`` lies in the stepped columns, MuJoCo's triangles
    elsewhere, off the grid the padding ring's zeros (the fractions from the unclamped corner). Compiled (numba):
    one robot's height scan is ~85 points, where numpy's ~0.6 µs per call on arrays that small cost 15-20 µs a step.
    A NaN point reads the ring's corner (a NaN height), never outside ``padded``."""
    rows, cols = padded.shape[0] - 4, padded.shape[1] - 4
    i, j = np.floor(u), np.floor(v)
    if stepped_from <= j <= cols - 2 and 0 <= i <= rows - 2:
        return padded[int(np.rint(u)) + 2, int(np.rint(v)) + 2]
    a = int(min(i, rows)) if i >= -2.0 else -2  # the corner within the padding ring
    b = int(min(j, cols)) if j >= -2.0 else -2
    fu, fv = u - i, v - j
    h00 = padded[a + 2, b + 2]
    side = padded[a + 3, b + 2] if fu >= fv else padded[a + 2, b + 3]
    return _on_triangles(h00, side, padded[a + 3, b + 3], fu, fv)


@numba.njit(cache=True, nogil=True)
def _grounds_in_samples(padded: np.ndarray, stepped_from: int, u: np.ndarray, v: np.ndarray, out: np.ndarray) -> None:
    """:func:`ground_in_samples` of every point ``(u[k], v[k])`` into ``out[k]`` (1-D arrays)."""
    for k in range(u.shape[0]):
        out[k] = ground_in_samples(padded, stepped_from, u[k], v[k])


def lattice(block: np.ndarray) -> np.ndarray:
    """The collision lattice's samples of the heights ``block`` (m; a grid's first rows and columns): every
    ``STRIDE``-th sample along both axes, from the first to the first at or past the last, those past the block
    the ground outside the grid (z = 0)."""
    rows, cols = block.shape
    samples = np.zeros(((rows - 2) // STRIDE + 2, (cols - 2) // STRIDE + 2))
    on = block[::STRIDE, ::STRIDE]
    samples[: on.shape[0], : on.shape[1]] = on
    return samples


def _triangulated(block: np.ndarray) -> np.ndarray:
    """``block`` with every sample off the collision lattice replaced by the ground MuJoCo's heightfield makes of
    the lattice (:func:`lattice`; :func:`_on_triangles`)."""
    samples = lattice(block)
    rows, cols = block.shape
    a = np.minimum(np.arange(rows) // STRIDE, samples.shape[0] - 2)
    b = np.minimum(np.arange(cols) // STRIDE, samples.shape[1] - 2)
    fu = ((np.arange(rows) - a * STRIDE) / STRIDE)[:, None]  # fractions of a lattice cell along x, y
    fv = ((np.arange(cols) - b * STRIDE) / STRIDE)[None, :]
    # the function's numpy source on whole arrays (its compiled version is for one point)
    side = np.where(fu >= fv, samples[a + 1][:, b], samples[a][:, b + 1])
    ground = _on_triangles.py_func(samples[a][:, b], side, samples[a + 1][:, b + 1], fu, fv)
    ground[::STRIDE, ::STRIDE] = block[::STRIDE, ::STRIDE]  # the lattice itself, to the bit
    return ground


@functools.lru_cache(maxsize=4)
def terrain_grid(seed: int, scale: float) -> TerrainGrid:
    """The grid of ``seed`` for size scale ``scale`` (built once per process; treat it as read-only)."""
    n = int(round(TILE * scale / CELL))
    columns = len(COLUMN_TYPES)
    heights = np.zeros((LEVELS * n, columns * n))
    dimensions = np.zeros((LEVELS, columns, len(DIMENSIONS)))
    for level in range(LEVELS):
        for column, kind in enumerate(COLUMN_TYPES):
            rng = np.random.default_rng((seed, level, column))
            dimensions[level, column] = _dimensions(level, rng)
            tile = _tile(kind, dimensions[level, column], scale, n, rng, (level * n, column * n))
            heights[level * n : (level + 1) * n, column * n : (column + 1) * n] = tile
    stepped_from = FIRST_STEPPED * n
    assert stepped_from % STRIDE == 0, "the heightfield must end on a lattice sample: the first stepped one"
    heights[:, :stepped_from] = _triangulated(heights[:, : stepped_from + 1])[:, :stepped_from]
    origins = np.zeros((LEVELS, columns, 3))
    centre = n // 2 + np.arange(-int(0.5 / CELL), int(0.5 / CELL) + 1)  # +-0.5 m around the tile centre
    for level in range(LEVELS):
        for column in range(columns):
            ground = heights[np.ix_(level * n + centre, column * n + centre)]
            origins[level, column] = ((level * n + (n - 1) / 2) * CELL, (column * n + (n - 1) / 2) * CELL, ground.max())
    for array in (heights, origins, dimensions):
        array.flags.writeable = False
    return TerrainGrid(seed, scale, n, heights, origins, stepped_from, dimensions)
