"""Evaluation on the curriculum's tiles, on terrain training never saw: success, falls and tracking per tile.

For an env that declares a :class:`envs.declarations.Curriculum` (``OpenClaw/QuadrupedTerrain-v1``: groups are
terrain types), :func:`evaluate_tiles` runs ``episodes`` seeded episodes on each (group, level) tile of the grid
built from a **held-out** ``terrain_seed`` (:func:`held_out_kwargs`: another seed than training's, so every tile's
riser, tread, slope and obstacle sizes are ones the policy never met; ``envs.quadruped.terrain``). Each episode
starts on its tile's platform with a command drawn from a :class:`Commands` band: forward speed ``vx ~ U(low,
high)`` m/s (body frame), no lateral speed, a heading ``U(-pi, pi)`` that the yaw-rate command steers to. On
:data:`FAST` (``vx >= 0.3`` m/s) a robot that tracks its command leaves the tile within the 20 s episode (at most
~4 m from the centre to a corner for the Go1 and Go2); :data:`SLOW` commands (below 0.3 m/s) get their own table.

An episode runs its whole length (a fall or the time limit), past its tile too. Per episode (:func:`succeeded`):
it *left* when the trunk left its tile or, on stairs up, climbed out of the pit (the scan's mean ground within
:data:`RIM_MARGIN` of the rim at z = 0); it *fell* when it ended in a fall anywhere; it *succeeded* when it left
(on a band that requires it: :attr:`Commands.must_leave`) and never fell. Per tile (:class:`TileResult`): the
success and fall rates and the mean tracking error (m/s, ``|v_xy - cmd_xy|`` over all the episode's steps) of
the episodes commanded below and at or above :data:`SPLIT_SPEED`. Per training seed :func:`summary` reads the
targets' figures; :func:`paired_test` compares two recipes across training seeds, paired by seed (never episodes
pooled over seeds).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from envs.batched import BatchedSimulation

Act = Callable[[np.ndarray], np.ndarray]  # raw observations (n, obs_dim) -> actions (n, action_dim)
HELD_OUT_TERRAIN_SEED = 1_000  # the evaluation's terrain (training's is the env's terrain_seed, 0 by default)
RIM_MARGIN = 0.1  # m: out of a stairs-up pit once the scan's mean ground is within this of the rim (world z = 0)
SPLIT_SPEED = 0.5  # m/s: the tracking error is reported for commands below it and at or above it


class Commands(NamedTuple):
    """A band of commands (module docstring): forward speed ``U(low, high)`` m/s (``high`` None: the env's highest
    ``command_vx``); ``must_leave``: success requires leaving the tile."""

    name: str
    low: float
    high: float | None
    must_leave: bool


FAST = Commands("fast", 0.3, None, True)
SLOW = Commands("slow", 0.0, 0.3, False)


@dataclass(frozen=True)
class TileResult:
    """One (group, level) tile under one :class:`Commands` band: its episodes, the share that succeeded, the share
    that fell (anywhere in the episode), the share that left the tile (or climbed out of the pit), and the mean
    tracking error (m/s) over the steps of its episodes commanded below / at or above :data:`SPLIT_SPEED` (nan:
    none)."""

    group: str
    level: int
    commands: str
    episodes: int
    success: float
    fall_rate: float
    left: float
    error_slow: float
    error_fast: float


def held_out_kwargs(kwargs: dict, terrain_seed: int = HELD_OUT_TERRAIN_SEED) -> dict:
    """``kwargs`` (the env's, as trained) with ``terrain_seed``; ValueError naming the fix when it is the seed
    training used (``kwargs["terrain_seed"]``, 0 when absent)."""
    trained = int(kwargs.get("terrain_seed", 0))
    if int(terrain_seed) == trained:
        raise ValueError(f"tile terrain seed {terrain_seed} is the terrain the policy trained on (env terrain_seed "
                         f"{trained}): evaluate on another one, e.g. {HELD_OUT_TERRAIN_SEED}")
    return {**kwargs, "terrain_seed": int(terrain_seed)}


def succeeded(fell: np.ndarray, left: np.ndarray, must_leave: bool) -> np.ndarray:
    """The success rule (module docstring), per episode: never fell, and left its tile where the band requires it."""
    fell, left = np.asarray(fell, dtype=bool), np.asarray(left, dtype=bool)
    return ~fell & (left | (not must_leave))


def evaluate_tiles(act: Act | None, env_id: str, kwargs: dict, groups: Sequence[str], levels: Sequence[int],
                   episodes: int = 20, seed: int = 0, make_act: Callable[[BatchedSimulation], Act] | None = None,
                   options: dict | None = None, commands: Commands = FAST) -> list[TileResult]:
    """:class:`TileResult` of every (group, level), with ``kwargs`` as given (:func:`held_out_kwargs` picks the
    terrain): a group's tiles run side by side, one batch; episode ``k`` of a tile is seeded ``seed + k``, its command
    drawn from ``commands`` by ``numpy.random.default_rng((seed, k))`` (the same commands on every tile) and reset with
    ``options`` (they may fix the command or heading) and the tile's level and group. ``act`` acts for a batch of raw
    observations; ``make_act(sim)`` (instead) builds it for the group's envs."""
    results = []
    for group in groups:
        sim = BatchedSimulation(env_id, episodes * len(levels), **kwargs)
        try:
            declared, task = sim.tasks[0].CURRICULUM, sim.tasks[0]
            high = commands.high if commands.high is not None else float(task._cmd_hi[0])
            drawn = [np.random.default_rng((seed, k)).uniform((commands.low, -math.pi), (high, math.pi))
                     for k in range(episodes)]
            for i, level in enumerate(levels):
                for k, (vx, heading) in enumerate(drawn):
                    option = {"command": (float(vx), 0.0, 0.0), "heading": float(heading), **(options or {}),
                              declared.level_key: level, declared.group_key: group}
                    sim.reset(i * episodes + k, seed=seed + k, options=option)
            policy = make_act(sim) if make_act is not None else act
            fell, left, speed, error, steps = _run(sim, policy, pit=group == "stairs_up")
            for i, level in enumerate(levels):
                part = slice(i * episodes, (i + 1) * episodes)
                results.append(tile_result(group, level, commands, fell[part], left[part], speed[part], error[part],
                                           steps[part]))
        finally:
            sim.close()
    return results


def tile_result(group: str, level: int, commands: Commands, fell: np.ndarray, left: np.ndarray, speed: np.ndarray,
                error: np.ndarray, steps: np.ndarray) -> TileResult:
    """A tile's :class:`TileResult` from its episodes: whether each fell and left, its commanded horizontal speed
    (m/s), its summed tracking error (m/s x steps) and its steps."""
    def mean_error(chosen: np.ndarray) -> float:
        return float(error[chosen].sum() / steps[chosen].sum()) if steps[chosen].sum() else float("nan")

    return TileResult(group, level, commands.name, len(fell), float(succeeded(fell, left, commands.must_leave).mean()),
                      float(np.mean(fell)), float(np.mean(left)), mean_error(speed < SPLIT_SPEED),
                      mean_error(speed >= SPLIT_SPEED))


def _run(sim: BatchedSimulation, act: Act, pit: bool):
    """Every episode of ``sim`` to its end (a fall or the time limit): per episode whether it fell, whether it left
    its tile (``pit``: or climbed out of a stairs-up pit), its commanded speed (m/s), summed tracking error, steps."""
    n, tasks = sim.num_envs, sim.tasks
    alive, fell, left = np.ones(n, dtype=bool), np.zeros(n, dtype=bool), np.zeros(n, dtype=bool)
    error, steps = np.zeros(n), np.zeros(n)
    speed = np.array([float(np.hypot(*task.command[0:2])) for task in tasks])
    actions = np.zeros((n, *tasks[0].action_space.shape))
    while alive.any():
        ids = np.flatnonzero(alive)
        actions[ids] = act(sim.obs[ids])
        step = sim.step(actions, ids)
        info = step.infos.arrays()
        left[ids] |= info["left_tile"]
        if pit:
            left[ids] |= np.array([tasks[i].state.ground.item() >= -RIM_MARGIN for i in ids.tolist()])
        error[ids] += info["tracking_error"]
        steps[ids] += 1
        fell[ids] |= step.terminated
        alive[ids] &= ~step.terminated & ~step.truncated
    return fell, left, speed, error, steps


# ------------------------------------------------------------------------------------------- reading the table
TARGET_LEVELS = range(6)  # the targets' "levels 0-5"


def summary(results: Sequence[TileResult]) -> dict[str, float]:
    """The targets' figures of one policy's table (a training seed's): the lowest success of any type at any of the
    :data:`TARGET_LEVELS`, stairs up's success at level 7, and the fall rate over all the tiles of those levels
    (episodes weighted; nan where the table lacks the tiles)."""
    low = [r for r in results if r.level in TARGET_LEVELS]
    stairs7 = [r.success for r in results if r.group == "stairs_up" and r.level == 7]
    falls = sum(r.fall_rate * r.episodes for r in low) / sum(r.episodes for r in low) if low else float("nan")
    return {"lowest_success_levels_0_5": min((r.success for r in low), default=float("nan")),
            "stairs_up_level_7_success": stairs7[0] if stairs7 else float("nan"),
            "falls_levels_0_5": float(falls)}


def overall_success(results: Sequence[TileResult], levels: Sequence[int] | None = None) -> float:
    """The share of successful episodes over the tiles of ``levels`` (all when None), episodes weighted."""
    chosen = [r for r in results if levels is None or r.level in levels]
    return sum(r.success * r.episodes for r in chosen) / sum(r.episodes for r in chosen)


def paired_test(a: Sequence[float], b: Sequence[float]) -> dict[str, float]:
    """Two recipes' per-seed figures (``a[i]``, ``b[i]``: training seed ``i`` of each), paired by seed: the mean
    difference ``a - b``, the paired t statistic and its two-sided p-value (Student's t on the ``n - 1`` degrees
    of freedom of the per-seed differences; nan with fewer than two seeds or differences that never vary)."""
    from scipy import stats

    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.shape != b.shape:
        raise ValueError(f"paired test: {len(a)} seeds against {len(b)}; pair each training seed with its own")
    diff = a - b
    if len(diff) < 2 or np.all(diff == diff[0]):
        return {"seeds": len(diff), "mean_difference": float(diff.mean()) if len(diff) else float("nan"),
                "t": float("nan"), "p": float("nan")}
    result = stats.ttest_rel(a, b)
    return {"seeds": len(diff), "mean_difference": float(diff.mean()), "t": float(result.statistic),
            "p": float(result.pvalue)}


def table(results: Sequence[TileResult]) -> str:
    """A markdown table of ``results``: a row per group, a column per level, each cell ``success / falls`` (%); then
    per group the tracking error below and at or above :data:`SPLIT_SPEED` (m/s, over its tiles' steps, averaged
    over its tiles that hold such episodes)."""
    levels = sorted({r.level for r in results})
    split = f"{SPLIT_SPEED:g} m/s"
    lines = ["| type | " + " | ".join(f"L{lv}" for lv in levels) + f" | error < {split} | error >= {split} |",
             "|---|" + "---|" * (len(levels) + 2)]
    for group in dict.fromkeys(r.group for r in results):
        rows = {r.level: r for r in results if r.group == group}
        cells = [f"{rows[lv].success:.0%} / {rows[lv].fall_rate:.0%}" if lv in rows else "-" for lv in levels]
        errors = [np.nanmean([getattr(r, name) for r in rows.values()]) if not all(
            math.isnan(getattr(r, name)) for r in rows.values()) else float("nan") for name in ("error_slow", "error_fast")]
        lines.append(f"| {group} | " + " | ".join(cells) + " | " + " | ".join(
            "-" if math.isnan(e) else f"{e:.3f}" for e in errors) + " |")
    return "\n".join(lines)
