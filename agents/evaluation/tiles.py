"""Evaluation on fixed curriculum tiles: tracking error and falls per group (terrain type) and level.

For an env that declares a :class:`envs.declarations.Curriculum` (``OpenClaw/QuadrupedTerrain-v1``: groups are
terrain types), :func:`evaluate_tiles` runs ``episodes`` seeded episodes on each (group, level) tile, each
episode reset with ``options={level_key: level, group_key: group name}``, and counts what happens while the
robot is still on its tile (``info["left_tile"]`` false): a fall there, and the tracking error. An episode
ends at its time limit, at a fall, or when the robot leaves the tile (it crossed it). :func:`highest_levels`
gives, per group, the highest level at which the robot walks: at most ``max_falls`` of the episodes fell and
the tracking error stayed within ``WALKING_ERROR``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from envs.batched import BatchedSimulation

Act = Callable[[np.ndarray], np.ndarray]  # raw observations (n, obs_dim) -> actions (n, action_dim)


@dataclass(frozen=True)
class TileResult:
    """One (group, level) tile: the share of its episodes that fell on it, the mean tracking error (m/s) over
    their steps on it, and the mean seconds they stayed on it."""

    group: str
    level: int
    episodes: int
    fall_rate: float
    tracking_error: float
    seconds_on_tile: float


def evaluate_tiles(act: Act, env_id: str, kwargs: dict, groups: Sequence[str], levels: Sequence[int],
                   episodes: int = 20, seed: int = 0, make_act: Callable[[BatchedSimulation], Act] | None = None,
                   options: dict | None = None) -> list[TileResult]:
    """:class:`TileResult` of every (group, level); episode ``k`` of a tile is seeded ``seed + k`` and reset with
    ``options`` (e.g. a fixed command) and the tile's level and group over them. ``act`` acts for a batch of raw
    observations; ``make_act(sim)`` (instead) builds it for the tile's envs."""
    results = []
    for group in groups:
        for level in levels:
            sim = BatchedSimulation(env_id, episodes, **kwargs)
            try:
                declared = sim.tasks[0].CURRICULUM
                policy = make_act(sim) if make_act is not None else act
                for k in range(episodes):
                    tile = {declared.level_key: level, declared.group_key: group}
                    sim.reset(k, seed=seed + k, options={**(options or {}), **tile})
                results.append(_run_tile(sim, policy, group, level))
            finally:
                sim.close()
    return results


def _run_tile(sim: BatchedSimulation, act: Act, group: str, level: int) -> TileResult:
    n = sim.num_envs
    alive, fell = np.ones(n, dtype=bool), np.zeros(n, dtype=bool)
    error, steps = np.zeros(n), np.zeros(n)
    actions = np.zeros((n, *sim.tasks[0].action_space.shape))
    while alive.any():
        ids = np.flatnonzero(alive)
        actions[ids] = act(sim.obs[ids])
        step = sim.step(actions, ids)
        info = step.infos.arrays()
        on = ~info["left_tile"]
        error[ids] += info["tracking_error"] * on
        steps[ids] += on
        fell[ids] |= step.terminated & on
        alive[ids] &= on & ~step.terminated & ~step.truncated
    dt = sim.tasks[0].dt
    return TileResult(group, level, n, float(fell.mean()), float(error.sum() / max(steps.sum(), 1)),
                      float(steps.mean() * dt))


WALKING_ERROR = 0.35  # m/s: above it a robot is not walking to its command (standing still scores ~0.49)


def highest_levels(results: Sequence[TileResult], max_falls: float = 0.1,
                   max_error: float = WALKING_ERROR) -> dict[str, int | None]:
    """Per group, the highest evaluated level at which the robot walks: ``fall_rate <= max_falls`` and
    ``tracking_error <= max_error`` m/s (None: no such level)."""
    best: dict[str, int | None] = {}
    for r in results:
        best.setdefault(r.group, None)
        walks = r.fall_rate <= max_falls and r.tracking_error <= max_error
        if walks and (best[r.group] is None or r.level > best[r.group]):
            best[r.group] = r.level
    return best
