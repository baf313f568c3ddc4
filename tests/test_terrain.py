"""OpenClaw/QuadrupedTerrain-v1: the tile grid, the curriculum, the privileged observations, their use in
training (masked actor-critic, checkpointed levels) and the terrain-aware trot."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import mujoco
import numpy as np
import pytest
import torch

import envs  # noqa: F401  (registers OpenClaw/*)
from envs.quadruped import QuadrupedTerrainEnv
from envs.quadruped.config import FOOT_LOOKAHEAD, FOOT_LOOKAHEAD_REACH
from envs.quadruped.height_scan import TerrainState, _sum, scan_points
from envs.quadruped.terrain import (CELL, COLUMN_TYPES, COLUMNS, LEVELS, STEPPED_TYPES, STRIDE, TERRAIN_TYPES, riser_height,
                                    size_scale, terrain_grid)
from test_train import cli_here

ROOT = Path(__file__).resolve().parent.parent
ENV_ID = "OpenClaw/QuadrupedTerrain-v1"
GO1_SCALE = size_scale(0.213 + 0.213)


@pytest.fixture(scope="module")
def env():
    e = gym.make(ENV_ID)
    yield e
    e.close()


def test_grid_is_seeded_and_sized_from_the_legs():
    a, b, c = terrain_grid(0, GO1_SCALE), terrain_grid(0, GO1_SCALE), terrain_grid(1, GO1_SCALE)
    assert a is b and not np.array_equal(a.heights, c.heights)
    assert GO1_SCALE == pytest.approx(0.671, abs=1e-3)
    assert a.tile_size == pytest.approx(8 * GO1_SCALE, abs=CELL)  # legged_gym's 8 m tiles, scaled
    assert a.heights.shape == (LEVELS * a.tile_samples, len(COLUMN_TYPES) * a.tile_samples)
    assert riser_height(1.0, GO1_SCALE) == pytest.approx(0.154, abs=1e-3)  # ~15 cm steps for Go1 at the hardest
    assert list(COLUMNS.values())[1:] == [2, 2, 7, 5, 4]  # legged_gym's 0.1/0.1/0.35/0.25/0.2 of 20 columns


def test_stair_edges_rise_within_one_cell_and_levels_get_harder():
    grid = terrain_grid(0, GO1_SCALE)
    n = grid.tile_samples
    column = COLUMN_TYPES.index("stairs_down")
    for level in (0, 9):
        row = grid.heights[level * n : (level + 1) * n, column * n + n // 2]  # across the tile through its centre
        steps = np.diff(row)
        riser = grid.riser(level, column)
        # every change between two neighbouring samples is a whole riser: the edge is vertical within one cell
        assert np.allclose(np.abs(steps[steps != 0]), riser)
        assert row.max() - row.min() >= 5 * riser
    assert np.all(np.diff([grid.riser(lv, column) for lv in range(LEVELS)]) > 0)


def test_observation_layout_and_spec(env):
    u = env.unwrapped
    assert env.observation_space.shape == (138,)
    assert list(u.privileged_obs) == ["height_scan", "friction", "true_lin_vel"]
    assert u.privileged_obs["height_scan"] == slice(57, 134)
    assert u.controller_spec.scan_obs == u.privileged_obs["height_scan"]


def test_the_docstring_tables_the_privileged_observation_as_the_env_lays_it_out(env):
    """QuadrupedTerrainEnv's observation table, at the default arguments: its Box, each privileged entry's indices, and
    the height scan's grid, spacing (Go1's in m), window and order (x major: the first ``ny`` points share an x)."""
    u, doc = env.unwrapped, QuadrupedTerrainEnv.__doc__
    section = doc[doc.index("## Observation space"):]
    section = section[: section.index("\n    ## ")]
    assert section.splitlines()[0] == f"## Observation space: ``{env.observation_space}`` (the default scan)"
    rows = re.findall(r"^ {4}(\d+)(?:-(\d+))? +(\w+) ", section, re.M)
    assert {name: slice(int(first), int(last or first) + 1) for first, last, name in rows} == u.privileged_obs
    text = " ".join(section.split())
    nx, ny = map(int, re.search(r"``scan_grid`` = (\d+) x (\d+) points", text).groups())
    spacing, go1, window_x, window_y = map(float, re.search(
        r"``scan_spacing`` = ([\d.]+) s m apart \(Go1: ([\d.]+) m; a ([\d.]+) m x ([\d.]+) m window\)", text).groups())
    points = u.scan_points
    assert (nx, ny) == tuple(u.scan_grid) and nx * ny == len(points) == len(range(138)[u.privileged_obs["height_scan"]])
    assert spacing == u.scan_spacing and go1 == round(points[1, 1] - points[0, 1], 2)
    assert (window_x, window_y) == tuple(np.round(np.ptp(points, axis=0), 1))
    assert np.all(points[:ny, 0] == points[0, 0]) and np.all(points[::ny, 1] == points[0, 1])  # x major


def test_height_scan_matches_ray_casts_on_the_heightfield(env):
    """The scan comes from the height array (no ray casts): it must be MuJoCo's own ground, on every type (the
    heightfield's float32 samples are the only difference)."""
    u = env.unwrapped
    for kind in TERRAIN_TYPES:
        obs, _ = env.reset(seed=3, options={"terrain_type": kind, "terrain_level": 8})
        m, d = u.model, u.data
        x, y, z = d.qpos[0:3]
        hit = np.empty(len(u.scan_points))
        for k, (px, py) in enumerate(u.scan_points):  # heading +x at reset: the yaw frame is the world's
            geom = np.array([-1], dtype=np.int32)
            distance = mujoco.mj_ray(m, d, np.array([x + px, y + py, 3.0]), np.array([0.0, 0.0, -1.0]),
                                     np.array([0, 0, 0, 1, 0, 0], dtype=np.uint8), 1, -1, geom)  # group 3: the colliding field
            hit[k] = 3.0 - distance
        scan = obs[u.privileged_obs["height_scan"]]
        assert np.abs((z - hit) - scan).max() < 1e-6, kind


def test_a_finer_scan_holds_the_default_scans_points_and_reads_the_same_ground(env):
    """``scan_grid=(21, 13)``, ``scan_spacing=0.075``: the same window at twice the resolution. Its every second point
    along x and y is a default scan point, read to the same bits on every type; the entries after the scan move along
    and the scan's points are declared (the teachers compare them) and exported."""
    fine = gym.make(ENV_ID, scan_grid=(21, 13), scan_spacing=0.075)
    u, f = env.unwrapped, fine.unwrapped
    assert fine.observation_space.shape == (57 + 21 * 13 + 4,)
    assert f.privileged_obs == {"height_scan": slice(57, 330), "friction": slice(330, 331),
                                "true_lin_vel": slice(331, 334)}
    assert np.allclose(np.diff(np.unique(f.scan_points[:, 0])), 0.075 * u.tiles.scale)
    assert np.array_equal(f.scan_points.reshape(21, 13, 2)[::2, ::2], u.scan_points.reshape(11, 7, 2))
    assert np.array_equal(f.OBSERVATION_POINTS["height_scan"], f.scan_points)
    assert f.deploy_metadata()["observation_terms"]["height_scan"]["points"] == f.scan_points.tolist()
    for kind in TERRAIN_TYPES:
        options = {"terrain_type": kind, "terrain_level": 7}
        (coarse, _), (dense, _) = env.reset(seed=5, options=options), fine.reset(seed=5, options=options)
        scan = dense[f.privileged_obs["height_scan"]].reshape(21, 13)
        assert np.array_equal(scan[::2, ::2].ravel(), coarse[u.privileged_obs["height_scan"]]), kind
        assert np.array_equal(dense[f.privileged_obs["true_lin_vel"]], coarse[u.privileged_obs["true_lin_vel"]])
    fine.close()


def test_the_scans_mean_ground_has_numpys_bits_for_any_number_of_points():
    """The compiled pairwise sum (the mean ground of a scan of any size: above 128 points numpy splits in halves)."""
    rng = np.random.default_rng(0)
    for n in (1, 7, 8, 77, 128, 129, 136, 273, 1681):
        values = rng.normal(size=n) * 3.0
        assert _sum(values) == values.sum(), n


@pytest.mark.parametrize("kind", [t for t in TERRAIN_TYPES if t not in STEPPED_TYPES])
def test_smooth_tiles_collide_on_the_lattice_and_the_scan_reads_its_triangles(env, kind):
    """Rough ground and slopes collide as a heightfield of every second sample (0.1 m): the model's field is that
    lattice, the other samples lie on its triangles, and the lookup is MuJoCo's ground at any point, across tile
    edges too (rays, to the field's float32 rounding)."""
    from test_terrain_boxes import ground_by_rays

    u = env.unwrapped
    grid, rng = u.tiles, np.random.default_rng(4)
    field = u.model.hfield("terrain")
    assert field.ncol[0] == (grid.heights.shape[0] - 2) // STRIDE + 2  # x: one sample past the grid's odd last one
    assert field.nrow[0] == grid.stepped_from // STRIDE + 1  # y: up to the first stepped sample
    assert 2 * field.size[0] / (field.ncol[0] - 1) == pytest.approx(STRIDE * CELL)  # 0.1 m apart
    for column in [c for c, t in enumerate(COLUMN_TYPES) if t == kind]:
        for level in (0, 5, 9):
            cx, cy, _ = grid.origins[level, column]
            x = np.clip(cx + rng.uniform(-0.6, 0.6, 200) * grid.tile_size, 1e-6, grid.extent[0] - 1e-6)
            y = np.clip(cy + rng.uniform(-0.6, 0.6, 200) * grid.tile_size, 1e-6, grid.stepped_from * CELL - 1e-6)
            np.testing.assert_allclose(grid.heights_at(x, y), ground_by_rays(u, x, y), rtol=0, atol=1e-6)


def test_rough_bumps_sit_on_the_lattice_in_every_tile():
    """The bumps are uniform draws at the lattice's samples whatever a tile's first sample (107 samples a Go1 tile:
    every other tile starts between two lattice samples); drawn on the tile's own grid, half the tiles would
    collide on the draws' midpoints, with the spread of a mean of two (1/sqrt 2)."""
    grid = terrain_grid(0, GO1_SCALE)
    n, high = grid.tile_samples, 0.1 * GO1_SCALE  # level 9: bumps in [0, 0.1 s] m
    assert n % 2 == 1  # so the tiles' parities differ
    lattice_samples = grid.heights[::STRIDE, ::STRIDE]
    for column in [c for c, t in enumerate(COLUMN_TYPES) if t == "rough"]:
        for level in (8, 9):  # an even and an odd first row
            rows = slice(-(-level * n // STRIDE), (level + 1) * n // STRIDE)
            cols = slice(-(-column * n // STRIDE), (column + 1) * n // STRIDE)
            draws = lattice_samples[rows, cols]
            spread = (0.025 + 0.075 * level / (LEVELS - 1)) * GO1_SCALE / np.sqrt(12)  # a uniform draw's std
            assert draws.std() == pytest.approx(spread, rel=0.08), (level, column)
            assert 0.0 <= draws.min() and draws.max() <= high + 1e-12


def test_privileged_friction_and_velocity(env):
    u = env.unwrapped
    frictions = []
    for seed in range(5):
        obs, _ = env.reset(seed=seed)
        f = obs[u.privileged_obs["friction"]][0]
        assert u.model.geom_friction[u._foot_geoms, 0] == pytest.approx([f] * 4)
        frictions.append(f)
    assert 0.5 <= min(frictions) < max(frictions) <= 1.25
    obs, *_ = env.step(np.zeros(12))
    assert np.array_equal(obs[u.privileged_obs["true_lin_vel"]], obs[u.OBS_SLICES["lin_vel"]])
    noisy = gym.make(ENV_ID, obs_noise=1.0)
    obs, _ = noisy.reset(seed=0)
    obs, *_ = noisy.step(np.zeros(12))
    n = noisy.unwrapped
    assert not np.array_equal(obs[n.privileged_obs["true_lin_vel"]], obs[n.OBS_SLICES["lin_vel"]])
    assert np.array_equal(obs[n.privileged_obs["true_lin_vel"]], n.data.sensordata[n._sensor_slices[0]][0:3].astype(np.float32))
    noisy.close()


def test_foot_heights_are_taken_above_the_ground_under_each_foot(env):
    """The feet_clearance term and the swing apex read each foot's height above the ground under it: a robot
    standing on a stairs-down platform (level 9, far above z = 0) or at the bottom of a stairs-up pit has its
    feet at ~0 m there, while the raw world heights are the tile's."""
    base = env.unwrapped
    for kind in ("stairs_down", "stairs_up"):
        env.reset(seed=0, options={"terrain_type": kind, "terrain_level": 9, "command": np.zeros(3)})
        for _ in range(25):  # settle onto the feet
            env.step(np.zeros(12, dtype=np.float32))
        feet = base.data.sensordata[base._sensor_slices[-1]]
        world = feet[2:12:3] - base.foot_radius
        local = type(base).feet(base, base.state, feet[None])[0, 2:12:3] - base.foot_radius
        assert np.abs(world).min() > 0.1, (kind, world)  # the tile's ground is far from z = 0 ...
        assert np.abs(local).max() < 0.02, (kind, local)  # ... and the feet stand on it
    rng = np.random.default_rng(0)
    for kind in ("stairs_up", "rough", "smooth_slope", "obstacles"):  # the feet's ground comes with the scan's lookup
        env.reset(seed=1, options={"terrain_type": kind, "terrain_level": 6})
        for _ in range(30):
            env.step(rng.uniform(-1, 1, 12).astype(np.float32))
            feet = base.data.sensordata[base._sensor_slices[-1]]
            under = base.tiles.heights_at(feet[0:12:3], feet[1:12:3])
            assert np.array_equal(type(base).feet(base, base.state, feet[None])[0, 2:12:3], feet[2:12:3] - under), kind
            reach = np.clip(FOOT_LOOKAHEAD * feet[12:24], -FOOT_LOOKAHEAD_REACH, FOOT_LOOKAHEAD_REACH)
            ahead = base.tiles.heights_at(feet[0:12:3] + reach[0::3], feet[1:12:3] + reach[1::3])
            assert np.array_equal(base.state.step_ground[0], np.maximum(under, ahead)), kind


def test_the_ground_ahead_of_a_foot_is_where_its_velocity_takes_it():
    """A foot 3 cm short of a stairs-up riser sees the tread above once its velocity carries it past the edge
    within FOOT_LOOKAHEAD (at most FOOT_LOOKAHEAD_REACH): the feet_clearance_ahead term's ground; walking away
    from the riser, standing, or too slow to reach it, the ground under it."""
    grid = terrain_grid(0, GO1_SCALE)
    cx, cy, bottom = grid.origins[9, COLUMN_TYPES.index("stairs_up")]
    x = cx + np.arange(0.0, 2.0, 0.001)
    edge = x[np.argmax(grid.heights_at(x, np.full_like(x, cy)) > bottom + 0.01)]  # the first riser along +x
    top = grid.heights_at(edge + 0.05, cy)
    assert top - bottom == pytest.approx(grid.riser(9, COLUMN_TYPES.index("stairs_up")))
    state = TerrainState(grid, scan_points(GO1_SCALE, (11, 7), 0.15), (-1.0, 1.0), copies=5)
    qpos = np.zeros((5, 19))
    qpos[:, 0:4] = (cx, cy, bottom + 0.3, 1.0)
    feet = np.zeros((5, 36))
    feet[:, 0:12:3], feet[:, 1:12:3] = edge - 0.03, cy
    feet[:, 12] = (1.0, -1.0, 0.0, 0.2, 50.0)  # FR's x velocity (m/s): at, away, still, slow, very fast
    state.update(qpos, np.zeros(5), feet, np.zeros((5, 18)))
    assert np.array_equal(state.foot_ground, np.full((5, 4), bottom))
    assert state.step_ground[:, 0].tolist() == [top, bottom, bottom, bottom, top]
    assert np.array_equal(state.step_ground[:, 1:], state.foot_ground[:, 1:])
    feet[:, 0] = edge - 0.03 - FOOT_LOOKAHEAD_REACH - 0.01  # out of reach even at 50 m/s
    state.update(qpos, np.zeros(5), feet, np.zeros((5, 18)))
    assert state.step_ground[4, 0] == bottom


def test_the_trunk_clearance_is_its_touch_zones_lowest_corner_over_the_ground_ahead():
    """The trunk_clearance term's input: the lowest bottom corner of the trunk's touch zone (the box site where a
    contact is a fall) over the higher of the ground under it and where the trunk's velocity takes it within
    FOOT_LOOKAHEAD. Against MuJoCo's own kinematics on a tumbling robot; then a trunk 3 cm short of a riser sees the
    tread above only while it moves at the riser."""
    env = gym.make(ENV_ID)
    base = env.unwrapped
    model, data = base.model, mujoco.MjData(base.model)
    site = model.site("trunk_touch").id
    env.reset(seed=3, options={"terrain_type": "stairs_up", "terrain_level": 9})
    rng = np.random.default_rng(0)
    for _ in range(80):
        *_, terminated, _, info = env.step(rng.uniform(-1.5, 1.5, 12).astype(np.float32))
        data.qpos[:] = base.data.qpos
        mujoco.mj_kinematics(model, data)
        box = data.site_xpos[site] + np.array([(sx, sy, -1.0) for sx in (1, -1) for sy in (1, -1)]) \
            * model.site_size[site] @ data.site_xmat[site].reshape(3, 3).T
        reach = np.clip(FOOT_LOOKAHEAD * base.data.qvel[0:2], -FOOT_LOOKAHEAD_REACH, FOOT_LOOKAHEAD_REACH)
        ground = np.maximum(base.tiles.heights_at(box[:, 0], box[:, 1]),
                            base.tiles.heights_at(box[:, 0] + reach[0], box[:, 1] + reach[1]))
        assert base.state.trunk_clearance.item() == pytest.approx((box[:, 2] - ground).min(), abs=1e-12)
        assert info["reward_trunk_clearance"] == 0.0  # the env's default scale
        if terminated:
            break
    grid = base.tiles
    cx, cy, bottom = grid.origins[9, COLUMN_TYPES.index("stairs_up")]
    x = cx + np.arange(0.0, 2.0, 0.001)
    edge = x[np.argmax(grid.heights_at(x, np.full_like(x, cy)) > bottom + 0.01)]  # the first riser along +x
    front = base._trunk_corners[0, 0]  # the touch zone's front (m, body frame); level: its bottom at 0.1 m + bottom
    state = TerrainState(grid, scan_points(GO1_SCALE, (11, 7), 0.15), (-1.0, 1.0), copies=3,
                         trunk_corners=base._trunk_corners)
    qpos = np.zeros((3, 19))
    qpos[:, 0:4] = (edge - 0.03 - front, cy, bottom + 0.1 - base._trunk_corners[0, 2], 1.0)
    qvel = np.zeros((3, 18))
    qvel[:, 0] = (1.0, -1.0, 0.0)  # m/s along x: at the riser, away, still
    state.update(qpos, np.zeros(3), np.zeros((3, 36)), qvel)
    top = grid.heights_at(edge + 0.05, cy)
    assert state.trunk_clearance == pytest.approx([bottom + 0.1 - top, 0.1, 0.1])
    env.close()


def test_curriculum_moves_levels_as_legged_gym():
    env = gym.make(ENV_ID)
    u = env.unwrapped
    go = {"command": (0.5, 0.0, 0.0)}
    env.reset(seed=0, options={"terrain_type": "rough", "terrain_level": 4, **go})
    assert (u.terrain_type, u.terrain_level) == ("rough", 4)
    u.data.qpos[0] += 0.6 * u.tiles.tile_size  # walked more than half a tile: up
    env.reset(options=go)
    assert u.terrain_level == 5
    env.reset(options=go)  # walked 0 m of the commanded 0.5 m/s x 20 s: down
    assert u.terrain_level == 4
    env.reset(options={"command": (0.0, 0.0, 0.0)})  # (down again for the last episode)
    assert u.terrain_level == 3
    env.reset()  # nothing commanded, nothing walked: stays
    assert u.terrain_level == 3
    info = env.step(np.zeros(12))[-1]
    assert (info["terrain_level"], TERRAIN_TYPES[info["terrain_type"]], info["left_tile"]) == (u.terrain_level, "rough", False)
    top = []
    for _ in range(20):  # past the top level: a random level
        env.reset(options={"terrain_level": LEVELS - 1})
        u.data.qpos[0] += u.tiles.tile_size
        env.reset()
        top.append(u.terrain_level)
    assert len(set(top)) > 3 and max(top) < LEVELS
    spawn = u.tiles.origins[u.terrain_level, u._column]
    assert np.hypot(*(u.data.qpos[0:2] - spawn[0:2])) < 0.25 * u.tiles.scale * 1.5
    with pytest.raises(ValueError, match="terrain_type"):
        env.reset(options={"terrain_type": "lava"})
    with pytest.raises(ValueError, match="terrain_level"):
        env.reset(options={"terrain_level": 10})
    env.close()


def test_seeded_reset_draws_the_start_and_a_restored_state_survives_it():
    a, b = gym.make(ENV_ID), gym.make(ENV_ID)
    starts = set()
    for seed in range(12):
        a.reset(seed=seed)
        b.reset(seed=seed)
        assert a.unwrapped.curriculum_state() == b.unwrapped.curriculum_state()
        starts.add(a.unwrapped.terrain_level)
    assert starts <= set(range(6)) and len(starts) > 2  # max_init_level 5
    a.unwrapped.set_curriculum_state({"column": 3, "level": 7})
    a.reset(seed=99)
    assert a.unwrapped.curriculum_state() == {"column": 3, "level": 7}
    with pytest.raises(ValueError, match="level"):
        a.unwrapped.set_curriculum_state({"column": 3, "level": 12})
    fixed = gym.make(ENV_ID, curriculum=False)
    fixed.reset(seed=0)
    levels = {fixed.reset()[1] is not None and fixed.unwrapped.terrain_level for _ in range(30)}
    assert len(levels) > 5  # without the curriculum every episode draws its level
    for e in (a, b, fixed):
        e.close()


def test_terrain_types_choose_the_columns_a_seeded_reset_spreads_over():
    default, stairs = gym.make(ENV_ID), gym.make(ENV_ID, terrain_types=["stairs_up", "obstacles"])
    kinds, special = set(), set()
    for seed in range(60):
        default.reset(seed=seed)
        stairs.reset(seed=seed)
        kinds.add(COLUMN_TYPES[default.unwrapped.curriculum_state()["column"]])
        special.add(COLUMN_TYPES[stairs.unwrapped.curriculum_state()["column"]])
    assert kinds == set(TERRAIN_TYPES) and special == {"stairs_up", "obstacles"}
    # 16 consecutive seeds (a vector env's copies) from any start meet every type, each near its share of the columns
    for env, allowed in ((default, TERRAIN_TYPES), (stairs, ("stairs_up", "obstacles"))):
        columns = [c for c, t in enumerate(COLUMN_TYPES) if t in allowed]
        for start in (0, 1, 37, 1000, 2**31 - 16):
            drawn = []
            for seed in range(start, start + 16):
                env.reset(seed=seed)
                drawn.append(COLUMN_TYPES[env.unwrapped.curriculum_state()["column"]])
            for kind in allowed:
                share = 16 * sum(COLUMN_TYPES[c] == kind for c in columns) / len(columns)
                assert drawn.count(kind) >= 1 and abs(drawn.count(kind) - share) <= 2, (start, kind, drawn)
    # the curriculum keeps a copy on its column: 30 unseeded episodes stay on the drawn type
    for _ in range(30):
        stairs.reset()
        assert COLUMN_TYPES[stairs.unwrapped.curriculum_state()["column"]] in special
    for e in (default, stairs):
        e.close()


def test_bad_arguments_name_the_fix():
    for bad in (["stairs"], []):
        with pytest.raises(ValueError, match=r"terrain_types=.*rough, smooth_slope.*null: all of them"):
            gym.make(ENV_ID, terrain_types=bad)
    with pytest.raises(ValueError, match="ground_friction"):
        gym.make(ENV_ID, ground_friction=(1.0, 0.5))
    with pytest.raises(ValueError, match="max_init_level"):
        gym.make(ENV_ID, max_init_level=10)
    with pytest.raises(ValueError, match="terrain="):
        gym.make(ENV_ID, terrain="rough")
    with pytest.raises(ValueError, match="gait_clock"):
        gym.make(ENV_ID, gait_clock=False)
    for bad in ((10, 7), (11, 0), (43, 7)):
        with pytest.raises(ValueError, match=r"scan_grid=.*two odd counts.*\[1, 41\].*e\.g\. \[11, 7\]"):
            gym.make(ENV_ID, scan_grid=bad)
    for grid, spacing in (((11, 7), 0.0), ((41, 7), 0.1)):
        with pytest.raises(ValueError, match=r"scan_spacing=.*keep the spacing > 0 and the window within 1.5 s m"):
            gym.make(ENV_ID, scan_grid=grid, scan_spacing=spacing)


def test_masked_policy_hides_privileged_entries():
    from agents.students.observation_masks import MaskedActorCriticPolicy, observation_masks

    space = gym.spaces.Box(-np.inf, np.inf, (10,), np.float32)
    privileged = {"height_scan": slice(5, 8), "friction": slice(8, 9), "true_lin_vel": slice(9, 10)}
    obs = torch.randn(4, 10)
    changed = obs.clone()
    changed[:, 5:] += 3.0
    changed_scan = obs.clone()
    changed_scan[:, 5:8] += 3.0

    def policy(**switches):
        actor, critic = observation_masks(10, privileged, **switches)
        return MaskedActorCriticPolicy(space, gym.spaces.Box(-1, 1, (2,)), lambda _: 3e-4, actor_keep=actor,
                                       critic_keep=critic)

    blind = policy(privileged_critic=False, perceptive_actor=False)
    asymmetric = policy(privileged_critic=True, perceptive_actor=False)
    perceptive = policy(privileged_critic=True, perceptive_actor=True)
    with torch.no_grad():
        for p in (blind, asymmetric):
            assert torch.equal(p.get_distribution(obs).distribution.mean, p.get_distribution(changed).distribution.mean)
        assert torch.equal(blind.predict_values(obs), blind.predict_values(changed))
        assert not torch.equal(asymmetric.predict_values(obs), asymmetric.predict_values(changed))
        assert not torch.equal(perceptive.get_distribution(obs).distribution.mean,
                               perceptive.get_distribution(changed_scan).distribution.mean)


def test_training_checkpoints_levels_and_resume_restores_them(tmp_path):
    run = tmp_path / "run"
    common = ["env=quadruped_terrain", "train=smoke", "train.num_envs=4", "agent.privileged_critic=true", "train.video=false",
              f"hydra.run.dir={run}"]
    first = cli_here("train.py", *common)
    assert first.returncode == 0, first.stderr[-3000:]
    saved = sorted((run / "checkpoints").glob("step_*"))[-1]
    states = json.loads((saved / "curriculum.json").read_text())
    assert len(states) == 4 and all(set(s) == {"column", "level"} for s in states)
    header = (run / "progress.csv").read_text().splitlines()[0]
    assert "curriculum/mean_level" in header and "curriculum/max_level" in header

    from agents import checkpoint
    from agents.vec_env import make_vec_env

    venv = make_vec_env(ENV_ID, {}, 4, mode="batched")
    assert checkpoint.latest(run).restore_curriculum(venv)
    venv.seed(123)  # a seeded reset, as a resumed run's first one, keeps the restored levels
    venv.reset()
    assert list(venv.env_method("curriculum_state")) == states
    venv.close()

    steps = int(json.loads((saved / "meta.json").read_text())["num_timesteps"])
    resumed = cli_here("train.py", f"resume={run}", f"train.total_timesteps={steps + 2048}")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "start the curriculum again" not in resumed.stderr

    # the blind actor exports, and its file ignores the privileged entries (a robot passes zeros there)
    exported = cli_here("export.py", f"run={run}", f"out_dir={tmp_path / 'export'}")
    assert exported.returncode == 0, exported.stderr[-3000:]
    from agents.export.onnx_policy import OnnxPolicy

    policy = OnnxPolicy(tmp_path / "export" / "policy.onnx")
    assert json.loads(policy.metadata["ignored_inputs"]) == ["height_scan", "friction", "true_lin_vel"]
    obs = np.random.default_rng(0).normal(size=(5, 138)).astype(np.float32)
    blind = obs.copy()
    blind[:, 57:] = 0.0
    assert np.array_equal(policy(obs), policy(blind))


def test_perceptive_actor_exports_with_the_scan_as_a_named_input(tmp_path):
    """Issue 38: the perceptive actor's ONNX takes the height scan, named in its metadata's layout, and ignores only
    the entries a robot cannot measure (friction, true velocity): its action moves with the scan, not with them."""
    run = tmp_path / "run"
    trained = cli_here("train.py", "env=quadruped_terrain", "train=smoke", "train.num_envs=4", "train.video=false",
                       "agent.privileged_critic=true", "agent.perceptive_actor=true", f"hydra.run.dir={run}")
    assert trained.returncode == 0, trained.stderr[-3000:]
    exported = cli_here("export.py", f"run={run}", f"out_dir={tmp_path / 'export'}")
    assert exported.returncode == 0, exported.stderr[-3000:]
    from agents.export.onnx_policy import OnnxPolicy

    policy = OnnxPolicy(tmp_path / "export" / "policy.onnx")
    layout = json.loads(policy.metadata["observation_layout"])
    assert json.loads(policy.metadata["ignored_inputs"]) == ["friction", "true_lin_vel"]
    obs = np.random.default_rng(0).normal(size=(5, 138)).astype(np.float32)
    unmeasured, scan = obs.copy(), obs.copy()
    unmeasured[:, layout["friction"][0] : layout["true_lin_vel"][1]] = 0.0
    scan[:, slice(*layout["height_scan"])] += 0.2
    assert np.array_equal(policy(obs), policy(unmeasured))
    assert not np.allclose(policy(obs), policy(scan))


def test_terrain_aware_trot_walks_down_stairs_where_the_blind_one_falls():
    from dataclasses import fields

    from agents.evaluation.tiles import evaluate_tiles
    from envs.controllers.trot import TrotController
    from envs.quadruped import LegGeometry

    def trot(scan: bool):
        def make(sim):
            spec = sim.tasks[0].controller_spec
            if not scan:
                spec = LegGeometry(**{f.name: getattr(spec, f.name) for f in fields(LegGeometry)})
            return TrotController(spec=spec).act
        return evaluate_tiles(None, ENV_ID, {}, ["stairs_down"], [1], episodes=10, make_act=make)[0]

    aware, blind = trot(True), trot(False)  # whole episodes (issue 81): 20 % vs 90 % falls, 70 % vs 10 % success
    assert aware.fall_rate <= 0.3 and blind.fall_rate >= 0.6 and aware.success >= 0.5 > blind.success
    assert aware.error_slow < 0.3


def test_rendering_draws_the_terrain_around_the_robot():
    env = gym.make(ENV_ID, render_mode="rgb_array", width=96, height=96)
    u = env.unwrapped
    env.reset(seed=0, options={"terrain_type": "stairs_down", "terrain_level": 9})
    frame = env.render()
    assert frame.shape == (96, 96, 3) and frame.std() > 5
    m = u.model
    view, field = m.geom("terrain_view").id, m.hfield("terrain_view").id
    assert np.allclose(m.geom_pos[view, 0:2], u.data.qpos[0:2], atol=0.1)
    data = m.hfield_data[m.hfield_adr[field] : m.hfield_adr[field] + m.hfield_nrow[field] * m.hfield_ncol[field]]
    assert data.max() - data.min() > 0.1  # the platform and its stairs, not a flat patch
    assert m.geom_contype[view] == m.geom_conaffinity[view] == 0  # drawn only: the physics is untouched
    env.close()


def test_the_drawn_terrain_follows_the_robot_while_another_env_renders():
    """evaluate.py records several envs in one process, each with its own GL context: the window re-centred under a
    robot that walked on must reach its own env's context (it went to the last one rendered: a stale, shifted
    terrain drawn over the robot from the first re-centring on)."""
    def frame_after_walking(beside: bool) -> np.ndarray:
        env = gym.make(ENV_ID, render_mode="rgb_array", width=64, height=64)
        env.reset(seed=0, options={"terrain_type": "stairs_down", "terrain_level": 9})
        env.render()
        if beside:
            other = gym.make(ENV_ID, render_mode="rgb_array", width=64, height=64)
            other.reset(seed=1, options={"terrain_type": "rough", "terrain_level": 0})
            other.render()
        u = env.unwrapped
        u.data.qpos[0] += 3.0  # more than a quarter of the window: the view re-centres at the next frame
        mujoco.mj_forward(u.model, u.data)
        frame = env.render().astype(int)
        for each in (env, other) if beside else (env,):
            each.close()
        return frame

    alone = frame_after_walking(False)
    assert alone.std() > 5
    assert np.abs(frame_after_walking(True) - alone).max() == 0


def test_evaluate_py_tables_the_fixed_tiles_and_checks_their_levels(tmp_path):
    out = tmp_path / "eval"
    args = [sys.executable, str(ROOT / "evaluate.py"), "policy=trot", f"env_id={ENV_ID}", "episodes=2", "videos=0",
            "tile_episodes=2", "+env_kwargs.max_episode_steps=100", f"out_dir={out}"]  # 2 s episodes: the table's form
    bad = subprocess.run([*args, "tile_levels=[0,10]"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert bad.returncode == 2 and "tile_levels" in bad.stderr and "0 .. 9" in bad.stderr
    trained = subprocess.run([*args, "tile_terrain_seed=0"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert trained.returncode == 2 and "terrain the policy trained on" in trained.stderr  # the env's terrain_seed
    assert not out.exists()  # refused before anything was written
    done = subprocess.run([*args, "tile_levels=[0]"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    metrics = json.loads((out / "metrics.json").read_text())
    assert [t["group"] for t in metrics["tiles"]] == list(TERRAIN_TYPES)
    assert metrics["tile_terrain_seed"] == 1000 and set(metrics["tile_summary"]) == {"fast"}
    assert "fast commands on the held-out tiles of terrain seed 1000" in done.stdout


def test_the_trots_defaults_fail_up_stairs_where_they_walk_rough_ground():
    """The proposers' "default fails" case on the terrain (benchmarks/proposers.py --case stairs): at level 3 the
    terrain trot's own defaults fall on stairs up and walk rough ground (whole episodes: 0 % vs 100 % success)."""
    from agents.evaluation.tiles import evaluate_tiles
    from envs.controllers.trot import TrotController

    rough, stairs = evaluate_tiles(None, ENV_ID, {}, ["rough", "stairs_up"], [3], episodes=10,
                                   make_act=lambda sim: TrotController(spec=sim.tasks[0].controller_spec).act)
    assert rough.success >= 0.9 and rough.fall_rate <= 0.1 and stairs.fall_rate >= 0.3, (rough, stairs)



@pytest.mark.parametrize("env_id, kwargs, options", [
    (ENV_ID, {}, {"terrain_type": "smooth_slope", "terrain_level": 0}),  # the flat tile of the slopes
    ("OpenClaw/Quadruped-v1", {"terrain": "rough", "terrain_bump_height": 0.0, "domain_randomization": True}, {}),
])
def test_a_trotting_foot_meets_a_flat_heightfield_upright_with_its_own_friction(env_id, kwargs, options):
    """A foot that sinks into its soft contact near a triangle edge reaches the next prism's vertical wall, and that
    contact pushes sideways (envs.quadruped.scene's docstring): on the feet's stiff pairs, a trot's foot contacts on
    flat heightfield ground stay upright, and their friction is the foot's draw (one per episode, or per foot)."""
    from envs.controllers.trot import TrotController

    env = gym.make(env_id, **kwargs).unwrapped
    m, d = env.model, env.data
    feet, ground = set(env._foot_geoms.tolist()), m.geom("terrain").id
    assert m.npair == 4 and set(m.pair_geom2.tolist()) == feet
    normals, frictions = [], set()
    for seed in range(3):
        obs, _ = env.reset(seed=seed, options=options)
        controller = TrotController(spec=env.controller_spec)
        for _ in range(150):
            obs, *_ = env.step(controller.act(obs[None])[0])
            for c in d.contact[: d.ncon]:
                if c.geom1 == ground and c.geom2 in feet:
                    normals.append(c.frame[2])
                    assert c.friction[0] == m.geom_friction[c.geom2, 0]
                    frictions.add(float(c.friction[0]))
    assert len(normals) > 500 and len(frictions) >= 3
    # 0.2-3.4 % per seed of the terrain env's episodes here (seeds 0-11), ~72 % on the feet's soft contact
    assert np.mean(np.array(normals) < np.cos(np.radians(26))) < 0.05
    env.close()
