"""The held-out tile evaluation's rules (``agents/evaluation/tiles.py``, issue 81) on inputs whose answer is known:
the success rule, a tile's figures, the table, the targets' figures, the held-out terrain and the paired test; and
one tiny real run of the trot."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from agents.evaluation.tiles import (FAST, SLOW, TileResult, evaluate_tiles, held_out_kwargs, overall_success,
                                     paired_test, succeeded, summary, table, tile_result)
from envs.controllers.trot import TrotController


def test_success_is_leaving_the_tile_with_no_fall_in_the_whole_episode():
    fell = [False, False, True, True]
    left = [True, False, True, False]
    assert succeeded(fell, left, must_leave=True).tolist() == [True, False, False, False]
    assert succeeded(fell, left, must_leave=False).tolist() == [True, True, False, False]  # slow commands: no fall


def test_a_tiles_figures_split_the_tracking_error_at_half_a_metre_a_second():
    fell, left = np.array([False, True, False, False]), np.array([True, True, False, True])
    speed = np.array([0.3, 0.49, 0.5, 0.9])
    error, steps = np.array([10.0, 30.0, 20.0, 60.0]), np.array([100.0, 100.0, 100.0, 200.0])
    r = tile_result("stairs_up", 5, FAST, fell, left, speed, error, steps)
    assert (r.group, r.level, r.commands, r.episodes) == ("stairs_up", 5, "fast", 4)
    assert (r.success, r.fall_rate, r.left) == (0.5, 0.25, 0.75)
    assert r.error_slow == pytest.approx(40 / 200) and r.error_fast == pytest.approx(80 / 300)  # step-weighted
    slow = tile_result("rough", 0, SLOW, fell, left, np.full(4, 0.2), error, steps)
    assert slow.success == 0.75 and math.isnan(slow.error_fast)


def result(group: str, level: int, success: float, falls: float, episodes: int = 20) -> TileResult:
    return TileResult(group, level, "fast", episodes, success, falls, success, 0.1, 0.2)


RESULTS = [result(g, lv, s, f) for g, cells in (
    ("rough", ((0, 1.0, 0.0), (5, 0.95, 0.05), (7, 0.9, 0.1))),
    ("stairs_up", ((0, 1.0, 0.0), (5, 0.85, 0.1), (7, 0.8, 0.2)))) for lv, s, f in cells]


def test_the_targets_figures_read_levels_0_to_5_and_stairs_up_at_level_7():
    figures = summary(RESULTS)
    assert figures == {"lowest_success_levels_0_5": 0.85, "stairs_up_level_7_success": 0.8,
                       "falls_levels_0_5": pytest.approx((0.05 + 0.1) / 4)}
    assert overall_success(RESULTS, range(6)) == pytest.approx((1 + 0.95 + 1 + 0.85) / 4)
    assert math.isnan(summary(RESULTS[:2])["stairs_up_level_7_success"])


def test_the_table_has_a_row_per_type_and_a_cell_per_level():
    lines = table(RESULTS).splitlines()
    assert lines[0] == "| type | L0 | L5 | L7 | error < 0.5 m/s | error >= 0.5 m/s |"
    assert lines[2] == "| rough | 100% / 0% | 95% / 5% | 90% / 10% | 0.100 | 0.200 |"
    assert lines[3] == "| stairs_up | 100% / 0% | 85% / 10% | 80% / 20% | 0.100 | 0.200 |"
    slow = [TileResult("rough", 3, "slow", 5, 1.0, 0.0, 0.0, 0.1, float("nan"))]  # no episode at >= 0.5 m/s
    assert table(slow).splitlines()[2] == "| rough | 100% / 0% | 0.100 | - |"


def test_the_evaluation_refuses_the_terrain_the_policy_trained_on():
    assert held_out_kwargs({"robot": "go2", "terrain_seed": 0}, 5) == {"robot": "go2", "terrain_seed": 5}
    with pytest.raises(ValueError, match="trained on .*terrain_seed 3.*evaluate on another one"):
        held_out_kwargs({"terrain_seed": 3}, 3)
    with pytest.raises(ValueError, match="terrain_seed 0"):
        held_out_kwargs({}, 0)  # the env's default seed


def test_the_paired_test_pairs_training_seeds():
    a, b = [0.9, 0.8, 0.95], [0.85, 0.7, 0.93]
    test = paired_test(a, b)
    expected = stats.ttest_1samp(np.subtract(a, b), 0.0)  # a paired test is a one-sample test of the differences
    assert test["seeds"] == 3 and test["mean_difference"] == pytest.approx(np.mean(np.subtract(a, b)))
    assert (test["t"], test["p"]) == (pytest.approx(expected.statistic), pytest.approx(expected.pvalue))
    assert math.isnan(paired_test([0.9], [0.8])["p"]) and math.isnan(paired_test(a, a)["p"])
    with pytest.raises(ValueError, match="pair each training seed"):
        paired_test(a, b[:2])


def test_the_trot_leaves_level_0_tiles_and_a_robot_that_stands_never_does():
    """A tiny real run (two episodes a tile, level 0, held-out terrain): the terrain-aware trot leaves rough ground and
    climbs out of the stairs-up pit without a fall; zero actions stand on the platform: no success, no fall."""
    kwargs = held_out_kwargs({})

    def trot(sim):
        return TrotController(spec=sim.tasks[0].controller_spec).act

    walked = evaluate_tiles(None, "OpenClaw/QuadrupedTerrain-v1", kwargs, ["rough", "stairs_up"], [0], episodes=2,
                            make_act=trot)
    stood = evaluate_tiles(lambda obs: np.zeros((len(obs), 12)), "OpenClaw/QuadrupedTerrain-v1", kwargs, ["stairs_up"],
                           [0], episodes=2)
    assert [(r.success, r.fall_rate) for r in walked] == [(1.0, 0.0), (1.0, 0.0)], walked
    assert (stood[0].success, stood[0].fall_rate, stood[0].left) == (0.0, 0.0, 0.0)
    assert walked[1].error_slow < stood[0].error_slow or walked[1].error_fast < stood[0].error_fast
