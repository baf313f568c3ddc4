"""The terrain grid's stepped tiles as boxes (``envs.quadruped.terrain_boxes``): the ground they make, the height
scan against it and against the old heightfield's, the window of boxes that follows the robot, and batched
bit-identity while it moves."""

from __future__ import annotations

import gymnasium as gym
import mujoco
import numpy as np
import pytest

import envs  # noqa: F401  (registers OpenClaw/*)
from envs.batched import BatchedSimulation
from envs.controllers.trot import TrotController
from envs.quadruped.terrain import CELL, COLUMN_TYPES, LEVELS, STEPPED_TYPES, terrain_grid
from envs.quadruped.terrain_boxes import _morton_key, rectangles, stepped_boxes
from test_terrain import ENV_ID, GO1_SCALE, env  # noqa: F401  (env: a pytest fixture)


def bilinear(grid, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The scan's lookup before the boxes (main at 64dff32): bilinear everywhere, the zero ring off the grid."""
    padded = np.pad(grid.heights, 2)
    rows, cols = padded.shape
    u, v = x / CELL, y / CELL
    i, j = np.floor(u), np.floor(v)
    fu, fv = u - i, v - j
    k = np.minimum(np.maximum(i, -2.0), rows - 4.0) * cols + np.minimum(np.maximum(j, -2.0), cols - 4.0)
    k = k.astype(np.intp) + (2 * cols + 2)
    flat = padded.reshape(-1)
    low = flat[k] + (flat[k + 1] - flat[k]) * fv
    high = flat[k + cols] + (flat[k + cols + 1] - flat[k + cols]) * fv
    return low + (high - low) * fu


def ground_by_rays(u, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The colliding ground's height (m) under each point: a ray down from 3 m on the env's model, after its box
    window was centred on the points' mean."""
    u._box_window.follow(float(x.mean()), float(y.mean()), reset=True)
    mujoco.mj_forward(u.model, u.data)
    hits, geom = np.empty(len(x)), np.array([-1], dtype=np.int32)
    groups = np.array([0, 0, 0, 1, 0, 0], dtype=np.uint8)  # group 3: the colliding terrain (the view is group 0)
    for n, (px, py) in enumerate(zip(x.tolist(), y.tolist())):
        hits[n] = 3.0 - mujoco.mj_ray(u.model, u.data, np.array([px, py, 3.0]), np.array([0.0, 0.0, -1.0]),
                                      groups, 1, -1, geom)
    return hits


def test_rectangles_cover_an_array_once_each_of_one_value():
    values = np.random.default_rng(0).integers(0, 3, size=(30, 40))
    cover = np.zeros(values.shape, dtype=int)
    for a0, a1, b0, b1 in rectangles(values).tolist():
        assert np.all(values[a0:a1, b0:b1] == values[a0, b0])
        cover[a0:a1, b0:b1] += 1
    assert np.all(cover == 1)
    stairs = np.add.outer(np.arange(10) // 3, np.zeros(10))  # three bands: one rectangle each
    assert rectangles(stairs).tolist() == [[0, 3, 0, 10], [3, 6, 0, 10], [6, 9, 0, 10], [9, 10, 0, 10]]


def test_morton_keys_interleave_x_and_y_bits():
    """The box slots' order: x's raster bits at the even positions of the key, y's at the odd ones."""
    half = 1.0
    raster = lambda q: np.asarray(q, dtype=float) / (128 / half) - half + 1e-9  # noqa: E731  (the point of raster cell q)
    qx = np.array([0, 1, 0, 2, 255, 0, 0b1010_0101, 3])
    qy = np.array([0, 0, 1, 0, 255, 255, 0b0101_1010, 3])
    expected = [sum((((x >> b) & 1) << (2 * b)) | (((y >> b) & 1) << (2 * b + 1)) for b in range(8)) for x, y in zip(qx, qy)]
    keys = [_morton_key(x, y, half) for x, y in zip(raster(qx).tolist(), raster(qy).tolist())]
    assert keys == expected == [0, 1, 2, 4, 65535, 43690, 26265, 15]
    assert [_morton_key(-5.0, 0.0, half), _morton_key(5.0, 0.0, half)] == [32768, 54613]  # clipped to 0 / 255


def test_boxes_are_seeded_and_only_for_stepped_tiles():
    grid = terrain_grid(0, GO1_SCALE)
    boxes, starts = stepped_boxes(grid)
    assert stepped_boxes(grid)[0] is boxes  # built once per grid
    fresh, _ = stepped_boxes.__wrapped__(grid)
    assert np.array_equal(fresh, boxes)  # deterministic in the seed
    other = stepped_boxes(terrain_grid(1, GO1_SCALE))[0]
    assert other.shape != boxes.shape or not np.array_equal(other, boxes)  # another seed: other obstacles
    counts = np.diff(starts).reshape(LEVELS, len(COLUMN_TYPES))
    for column, kind in enumerate(COLUMN_TYPES):
        assert (counts[:, column] > 0).all() == (kind in STEPPED_TYPES), kind
    assert boxes[:, 1].min() - boxes[:, 4].min() >= grid.stepped_from * CELL - 1e-9  # never over the heightfield


@pytest.mark.parametrize("kind", STEPPED_TYPES)
def test_scan_is_the_colliding_ground_on_stepped_tiles(env, kind):
    """Exact (to rounding) at random points of a tile, across its edges into the next tiles and the seam with the
    heightfield: the lookup reads the stepped columns as nearest samples, the boxes' ground."""
    u = env.unwrapped
    grid, rng = u.tiles, np.random.default_rng(1)
    column = COLUMN_TYPES.index(kind)
    for level in (0, 5, 9):
        cx, cy, _ = grid.origins[level, column]
        edge = grid.tile_size / 2 if level < LEVELS - 1 else -grid.tile_size / 2  # (the grid ends after level 9)
        for dx, dy in ((0.0, 0.0), (edge, 0.0), (0.0, -grid.tile_size / 2)):  # centre, x and y edges
            x, y = cx + dx + rng.uniform(-0.8, 0.8, 150), cy + dy + rng.uniform(-0.8, 0.8, 150)
            y = np.maximum(y, grid.stepped_from * CELL + 1e-6)  # (the first stepped column's edge: the seam)
            np.testing.assert_allclose(grid.heights_at(x, y), ground_by_rays(u, x, y), rtol=0, atol=1e-12)


def test_scan_against_the_old_heightfields():
    """Against the old lookup (bilinear everywhere): identical wherever the four samples around a point are equal
    (flat treads, tops, ground); elsewhere within that cell's step: near a step edge the old scan ramped across the
    cell, the new one steps half-way; on the smooth columns MuJoCo's triangles replace bilinear."""
    grid, rng = terrain_grid(0, GO1_SCALE), np.random.default_rng(2)
    ex, ey = grid.extent
    x, y = rng.uniform(-1.0, ex + 1.0, 200_000), rng.uniform(-1.0, ey + 1.0, 200_000)
    new, old = grid.heights_at(x, y), bilinear(grid, x, y)
    padded = np.pad(grid.heights, 2)
    i = np.clip(np.floor(x / CELL), -2, padded.shape[0] - 4).astype(int) + 2
    j = np.clip(np.floor(y / CELL), -2, padded.shape[1] - 4).astype(int) + 2
    corners = np.stack([padded[i, j], padded[i + 1, j], padded[i, j + 1], padded[i + 1, j + 1]])
    step = corners.max(axis=0) - corners.min(axis=0)
    smooth = y < grid.stepped_from * CELL
    assert np.array_equal(new[step == 0], old[step == 0])
    assert np.all(np.abs(new - old) <= step + 1e-12)
    stepped = ~smooth & (step > 0)
    assert stepped.sum() > 1000 and np.mean(new[stepped] != old[stepped]) > 0.5  # edges moved: the test can fail


def test_lookup_of_any_point_stays_inside_the_grid():
    """The compiled lookup reads no memory outside the padded grid (numba does not check indices): far off the grid
    the ground is z = 0, a NaN point reads NaN, and every point of a batch reads the same bits alone."""
    grid = terrain_grid(0, GO1_SCALE)
    x = np.array([-1e9, 1e9, 0.0, 0.0, np.nan, 1.0, np.inf, -np.inf, 3.0])
    y = np.array([0.0, 0.0, -1e9, 1e9, 1.0, np.nan, 2.0, 2.0, 1e300])
    heights = grid.heights_at(x, y)
    assert heights[[0, 1, 2, 3, 8]].tolist() == [0.0] * 5
    assert np.isnan(heights[[4, 5]]).all()
    assert [grid.heights_at(a, b).item() for a, b in zip(x[:4], y[:4])] == heights[:4].tolist()


def test_box_window_follows_the_robot(env):
    """Every box near the trunk is in the model at every step of a walk across tiles; the spares are inert."""
    u = env.unwrapped
    window = u._box_window
    boxes = stepped_boxes(u.tiles)[0]
    trot = TrotController(spec=u.controller_spec)
    obs, _ = env.reset(seed=0, options={"terrain_type": "obstacles", "terrain_level": 3, "command": (0.8, 0.0, 0.0),
                                        "heading": 0.0})
    centres = set()
    for _ in range(150):
        obs, *_ = env.step(trot.act(obs))
        x, y = u.data.qpos[0:2]
        centres.add(window.centre)
        reach = window.half - window.slack  # (module docstring: beyond any foot)
        near = boxes[(np.abs(boxes[:, 0] - x) < boxes[:, 3] + reach) & (np.abs(boxes[:, 1] - y) < boxes[:, 4] + reach)]
        active = window.slots[u.model.geom_contype[window.slots] == 1]
        placed = np.hstack([u.model.geom_pos[active], u.model.geom_size[active]])
        assert {tuple(b) for b in near.tolist()} <= {tuple(b) for b in placed.tolist()}
    assert len(centres) >= 3  # it moved with the robot
    for x in np.linspace(0.0, u.tiles.extent[0], 40):  # no window anywhere holds more boxes than the model's slots
        for y in np.linspace(u.tiles.stepped_from * CELL, u.tiles.extent[1], 60):
            window.follow(float(x), float(y), reset=True)


def test_box_window_refits_the_collision_tree(env):
    """After any re-placement, every node of the world body's tree bounds exactly its leaves: a slot's leaf its box
    (centre +- half sizes, world frame), another geom's leaf as compiled. The midphase prunes with these boxes, so a
    node too small would drop contacts."""
    u = env.unwrapped
    m, window = u.model, u._box_window
    compiled = m.bvh_aabb.copy()
    slots = {int(g) for g in window.slots}
    rng = np.random.default_rng(3)
    ex, ey = u.tiles.extent

    def bounds(node: int, root: int) -> tuple[np.ndarray, np.ndarray]:
        geom = int(m.bvh_nodeid[node])
        if geom >= 0:
            centre, half = (m.geom_pos[geom], m.geom_size[geom]) if geom in slots else (compiled[node, 0:3], compiled[node, 3:6])
            low, high = centre - half, centre + half
        else:
            (low0, high0), (low1, high1) = (bounds(root + int(c), root) for c in m.bvh_child[node])
            low, high = np.minimum(low0, low1), np.maximum(high0, high1)
        np.testing.assert_allclose(m.bvh_aabb[node], np.hstack([(low + high) / 2, (high - low) / 2]), rtol=0, atol=1e-12)
        return low, high

    root, met = int(m.body_bvhadr[0]), 0
    for _ in range(30):
        window.follow(float(rng.uniform(0.0, ex)), float(rng.uniform(u.tiles.stepped_from * CELL - 1.0, ey)), reset=True)
        bounds(root, root)
        met += bool(m.geom_contype[window.slots].any())
    assert met >= 20  # windows that held boxes


def test_midphase_on_or_off_steps_the_same_bits():
    """MuJoCo's collision midphase is a speed choice (``envs.quadruped.scene``): off for our Go1, whose bodies collide
    with one geom each, on when a leg's body has several. With it on, the refitted trees prune, and a walk across
    obstacle tiles whose box window moves steps to the same bits as with it off."""
    midphase = mujoco.mjtDisableBit.mjDSBL_MIDPHASE
    assert not gym.make(ENV_ID, leg_collisions=True).unwrapped.model.opt.disableflags & midphase
    options = {"terrain_type": "obstacles", "terrain_level": 6, "command": (0.8, 0.0, 0.0), "heading": 0.0}
    off, on = gym.make(ENV_ID), gym.make(ENV_ID)
    assert off.unwrapped.model.opt.disableflags & midphase
    on.unwrapped.model.opt.disableflags &= ~int(midphase)
    obs, _ = off.reset(seed=4, options=options)
    assert np.array_equal(obs, on.reset(seed=4, options=options)[0])
    trot, window, centres = TrotController(spec=off.unwrapped.controller_spec), on.unwrapped._box_window, set()
    for _ in range(150):
        action = trot.act(obs)
        obs, reward, *_ = off.step(action)
        obs_on, reward_on, *_ = on.step(action)
        assert np.array_equal(obs, obs_on) and reward == reward_on
        centres.add(window.centre)
    assert len(centres) >= 3  # the windows moved


def test_batched_steps_match_single_envs_while_the_windows_move():
    options = {"terrain_type": "stairs_up", "terrain_level": 2, "command": (0.7, 0.0, 0.0), "heading": 0.0}
    singles = [gym.make(ENV_ID) for _ in range(2)]
    sim = BatchedSimulation(ENV_ID, 2)
    obs = np.stack([env.reset(seed=5 + i, options=options)[0] for i, env in enumerate(singles)])
    batch_obs = np.stack([sim.reset(i, seed=5 + i, options=options)[0] for i in range(2)])
    assert np.array_equal(obs, batch_obs)
    trot = TrotController(spec=singles[0].unwrapped.controller_spec)
    moves = 0
    for _ in range(120):
        before = [task._box_window.centre for task in sim.tasks]
        actions = trot.act(obs)
        result = sim.step(actions)
        steps = [env.step(a) for env, a in zip(singles, actions)]
        obs = np.stack([s[0] for s in steps])
        assert np.array_equal(obs, result.obs) and np.array_equal([s[1] for s in steps], result.rewards)
        moves += sum(task._box_window.centre != c for task, c in zip(sim.tasks, before))
        assert not any(s[2] or s[3] for s in steps)
    assert moves >= 4  # the windows moved mid-episode, in the batch's models too
    sim.close()


def test_the_trunk_clearance_term_is_the_same_bits_single_and_batched():
    """A charged trunk_clearance term (the perceptive student's) on a robot collapsing onto a stairs-up flight: the
    single envs and the batch give the same rewards and terms, and the term does charge."""
    kwargs = {"reward_scales": {"trunk_clearance": -40.0}}
    options = {"terrain_type": "stairs_up", "terrain_level": 9, "command": (1.0, 0.0, 0.0)}
    singles = [gym.make(ENV_ID, **kwargs) for _ in range(2)]
    sim = BatchedSimulation(ENV_ID, 2, **kwargs)
    for i, env_ in enumerate(singles):
        assert np.array_equal(env_.reset(seed=7 + i, options=options)[0], sim.reset(i, seed=7 + i, options=options)[0])
    rng, charged, live = np.random.default_rng(1), 0, [0, 1]
    for _ in range(150):
        actions = rng.uniform(-1.5, 1.5, (2, 12))
        result = sim.step(actions, live)
        for j, i in enumerate(live):
            _, reward, terminated, _, info = singles[i].step(actions[i])
            assert reward == result.rewards[j] and terminated == result.terminated[j]
            assert info["reward_trunk_clearance"] == result.infos.dicts()[j]["reward_trunk_clearance"]
            charged += info["reward_trunk_clearance"] < 0.0
        live = [i for j, i in enumerate(live) if not result.terminated[j]]
        if not live:
            break
    assert charged >= 3, charged
    sim.close()
