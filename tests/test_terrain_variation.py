"""The tile grid's per-tile dimensions (issue 81): drawn from each level's band, the same for one ``terrain_seed``
to the bit, other tiles for another seed, and the heights built from them."""

from __future__ import annotations

import numpy as np
import pytest

from envs.quadruped.terrain import (CELL, COLUMN_TYPES, LEVELS, TREAD, TREAD_SPREAD, WIDTH_SPREAD, level_band,
                                    riser_height, size_scale, terrain_grid)
from envs.quadruped.terrain_boxes import stepped_boxes

GO1_SCALE = size_scale(0.213 + 0.213)


def fresh(seed: int):
    """A grid built anew (not the cached one)."""
    return terrain_grid.__wrapped__(seed, GO1_SCALE)


def test_one_seed_gives_the_same_grid_to_the_bit():
    a, b = fresh(0), fresh(0)
    assert np.array_equal(a.heights, b.heights) and np.array_equal(a.dimensions, b.dimensions)
    assert np.array_equal(a.origins, b.origins)
    assert np.array_equal(stepped_boxes(a)[0], stepped_boxes(b)[0])


def test_another_seed_gives_tiles_of_other_dimensions_within_each_levels_band():
    a, b = fresh(0), fresh(7)
    for grid in (a, b):
        d, tread, width = np.moveaxis(grid.dimensions, -1, 0)
        for level in range(LEVELS):
            low, high = level_band(level)
            assert np.all((low <= d[level]) & (d[level] <= high))
        assert np.all(np.abs(tread - 1) <= TREAD_SPREAD) and np.all(np.abs(width - 1) <= WIDTH_SPREAD)
    # every tile's draws differ between the seeds: a held-out seed's tiles were never trained on
    assert np.all(a.dimensions != b.dimensions)
    stairs = COLUMN_TYPES.index("stairs_up")
    assert all(a.riser(lv, stairs) != b.riser(lv, stairs) and a.tread(lv, stairs) != b.tread(lv, stairs)
               for lv in range(LEVELS))
    assert not np.array_equal(a.heights, b.heights)


@pytest.mark.parametrize("kind", ["stairs_up", "stairs_down"])
def test_the_stairs_are_built_with_their_tiles_riser_and_tread(kind):
    """Along a line through a stairs tile's centre every step is the tile's riser, and the treads between two
    risers are the tile's tread, rounded to the 0.05 m grid."""
    grid = fresh(3)
    n, column = grid.tile_samples, COLUMN_TYPES.index(kind)
    for level in (0, 5, 9):
        row = grid.heights[level * n : (level + 1) * n, column * n + n // 2]
        steps = np.diff(row)
        assert np.allclose(np.abs(steps[steps != 0]), grid.riser(level, column))
        edges = np.flatnonzero(steps != 0)
        half = edges[: len(edges) // 2]  # one side of the pyramid: consecutive risers a tread apart
        treads = np.diff(half) * CELL
        assert np.all(np.abs(treads - grid.tread(level, column)) <= CELL + 1e-9)
        assert riser_height(level / LEVELS, GO1_SCALE) <= grid.riser(level, column) <= riser_height(
            (level + 1) / LEVELS, GO1_SCALE)
        assert (1 - TREAD_SPREAD) * TREAD * GO1_SCALE <= grid.tread(level, column) <= (1 + TREAD_SPREAD) * TREAD * GO1_SCALE
