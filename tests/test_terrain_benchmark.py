"""``benchmarks/terrain.py``'s arms are command lines ``train.py`` composes (every override names a real key or adds
one with ``+``), and its recipe arms train the documented env configs with their tuned presets; its ``report`` and
``climb`` figures on inputs whose answer is known."""

from __future__ import annotations

import math
import re
import sys
from dataclasses import asdict
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

from agents.evaluation.tiles import TileResult
from envs.controllers.trot import TrotController
from envs.quadruped.terrain import TERRAIN_TYPES
from test_train import ROOT, compose_train


@pytest.fixture(scope="module")
def terrain_benchmark():
    """The benchmark script as a module (it imports its sibling ``runs``, as ``python benchmarks/terrain.py`` does)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import terrain

        yield terrain
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
        for name in ("terrain", "runs"):
            sys.modules.pop(name, None)


def test_every_arm_composes_and_the_recipes_are_the_documented_configs(terrain_benchmark):
    teacher = Path("runs/benchmarks/terrain/stairs_recipe_s1")
    composed = {arm: compose_train(*terrain_benchmark.arm_overrides(arm, 3, 5_000_000, teacher))
                for arm in terrain_benchmark.ARMS}
    for arm, cfg in composed.items():
        assert (cfg.seed, cfg.train.total_timesteps, cfg.agent.name) == (3, 5_000_000, "ppo"), arm
        if not terrain_benchmark.ARMS[arm][0].startswith("env="):  # an arm that names no env config
            assert cfg.env.name == "quadruped_terrain", arm
    perceptive, stairs, blind = composed["perceptive_recipe"], composed["stairs_recipe"], composed["blind_recipe"]
    assert (perceptive.env.name, perceptive.distill.teacher) == ("quadruped_terrain_perceptive", str(teacher))
    assert perceptive.agent.desired_kl == 0.04 and perceptive.agent.perceptive_actor  # its tuned preset
    assert stairs.env.kwargs.terrain_types == ["stairs_up"] and stairs.agent.desired_kl == 0.02
    assert composed["stairs_recipe_quadruped_terms"].agent.desired_kl is None  # the older teacher, as measured
    assert [stage.name for stage in perceptive.distill.stages] == ["checkpoint", "ema"]
    for arm in ("perceptive_stairskeep", "blind_stairskeep", "blind_recipe"):
        kept = composed[arm].distill.stages[1]  # the specialist on the stairs-up samples only
        assert (kept.name, kept.label, list(kept.teach_contexts), kept.alpha, kept.schedule) == (
            "checkpoint", "stairs_keep", ["*/stairs_up/*"], 0.1, "constant"), arm
    anchor = composed["blind_ema_anchor"].distill.stages  # the blind recipe before 2026-12-07
    assert [{key: value for key, value in dict(stage).items() if value is not None} for stage in anchor] == [
        {"name": "checkpoint", "steps": 1_500_000, "schedule_steps": 1_500_000},
        {"name": "ema", "alpha": 0.1, "schedule": "constant"}]  # the keys it sets
    clear = composed["perceptive_trunkclear"].env.kwargs.reward_scales  # the documented recipe's, and the trunk's term
    assert clear.trunk_clearance == -40.0 and clear == {**perceptive.env.kwargs.reward_scales, "trunk_clearance": -40.0}
    assert blind.env.name == "quadruped_terrain_blind" and blind.agent.desired_kl is None
    assert composed["stairs_recipe_quadruped_terms"].env.kwargs.reward_scales.orientation == -1.0
    assert "feet_clearance_ahead" not in composed["stairs_recipe_quadruped_terms"].env.kwargs.reward_scales


def tile(group: str, level: int, succeeded: int, falls: int) -> TileResult:
    """A tile of 20 fast-command episodes, ``succeeded`` of which left it with no fall, ``falls`` of which fell."""
    return TileResult(group, level, "fast", 20, succeeded / 20, falls / 20, succeeded / 20, 0.1, 0.2)


TILES = [tile(group, level, ok, falls) for group, cells in (
    ("rough", ((20, 0), (18, 2), (17, 3), (20, 0))),
    ("stairs_up", ((10, 10), (20, 0), (16, 4), (0, 20)))) for level, (ok, falls) in zip((0, 3, 6, 9), cells)]


def test_report_reads_the_curriculum_and_tables_the_tiles(terrain_benchmark, tmp_path):
    """``report``'s record and printout from a hand-made ``progress.csv`` (SB3 leaves a cell blank where a row logged
    nothing: the first row, before the first rollout, and a type no env copy was on) and hand-made tiles."""
    columns = ["time/total_timesteps", "curriculum/mean_level", *(f"curriculum/level_{t}" for t in TERRAIN_TYPES)]
    rows = [["2048", "", "", "", "", "", "", ""], ["32768", "1.5", "1", "2", "", "1.25", "0", "3"],
            ["65536", "2.25", "2", "2.5", "3", "", "1", "4"]]
    (tmp_path / "progress.csv").write_text("\n".join(",".join(r) for r in [columns, *rows]) + "\n")
    record = terrain_benchmark.level_record(tmp_path)
    assert record == {"curve": [(32768, 1.5), (65536, 2.25)],
                      "per_type": {"rough": 2.0, "smooth_slope": 2.5, "rough_slope": 3.0, "stairs_up": None,
                                   "stairs_down": 1.0, "obstacles": 4.0}}
    record = {"step": 65536, **record, "terrain_seed": 1000, "tiles": [asdict(t) for t in TILES]}
    text = terrain_benchmark.report_text("arm_s0", record).splitlines()
    assert text[1:4] == ["## arm_s0: step 65536; mean level curve (training): 32k 1.50, 65k 2.25",
                         "final mean level 2.25; per type: rough 2.0, smooth_slope 2.5, rough_slope 3.0, "
                         "stairs_down 1.0, obstacles 4.0", "held-out terrain seed 1000:"]
    # the targets' figures: the lowest success at levels 0-5 (stairs up, level 0: 50 %), no level 7, falls over
    # the 4 tiles of levels 0-5 (0 + 2 + 10 + 0 of 80)
    assert text[4] == ("fast commands (success / falls, whole episode): lowest_success_levels_0_5 50.0%, "
                       "stairs_up_level_7_success nan%, falls_levels_0_5 15.0%")
    assert text[5] == "| type | L0 | L3 | L6 | L9 | error < 0.5 m/s | error >= 0.5 m/s |"
    assert text[7:9] == ["| rough | 100% / 0% | 90% / 10% | 85% / 15% | 100% / 0% | 0.100 | 0.200 |",
                         "| stairs_up | 50% / 50% | 100% / 0% | 80% / 20% | 0% / 100% | 0.100 | 0.200 |"]


def test_report_refuses_a_run_without_a_curriculum(terrain_benchmark, tmp_path):
    (tmp_path / "progress.csv").write_text("time/total_timesteps,rollout/ep_rew_mean\n2048,1.0\n")
    with pytest.raises(ValueError, match=re.escape(f"{tmp_path / 'progress.csv'} logs no curriculum/mean_level")):
        terrain_benchmark.level_record(tmp_path)


def test_climb_groups_its_episodes_by_commanded_speed(terrain_benchmark):
    """Hand-made episodes: 0.75 m/s belongs to the fastest group; an episode out of the pit that fell later counts in
    both; the apex medians are per foot; a group with no episode has no row."""
    inf, Climb = math.inf, terrain_benchmark.Climb
    climbs = [Climb(0.9, False, 4.0, (8.0, 9.0), ""), Climb(0.8, True, inf, (2.0, 3.0), "upright touch"),
              Climb(0.75, False, 6.0, (10.0, 7.0), ""), Climb(0.6, False, inf, (3.0, 4.0), ""),
              Climb(0.6, True, 5.0, (5.0, 5.0), "tilted touch"), Climb(0.0, False, inf, (1.0, 2.0), "")]
    groups = {g.name: g for g in terrain_benchmark.climb_groups(climbs)}
    assert list(groups) == [">= 0.75 m/s", "0.5-0.75 m/s", "< 0.3 m/s", "all"]
    fast, mid, slow, every = groups.values()
    assert (fast.episodes, fast.falls, fast.climbed_out, fast.median_s_out) == (3, pytest.approx(1 / 3), 2 / 3, 5.0)
    assert (fast.apex_out, fast.apex_stalled, fast.causes) == ((9.0, 8.0), None, (1, 0, 0))
    assert (mid.falls, mid.climbed_out, mid.apex_out, mid.apex_stalled, mid.causes) == (0.5, 0.5, (5.0, 5.0),
                                                                                        (3.0, 4.0), (0, 1, 0))
    assert (slow.climbed_out, math.isnan(slow.median_s_out), slow.apex_out, slow.apex_stalled) == (0.0, True, None,
                                                                                                  (1.0, 2.0))
    assert (every.episodes, every.falls, every.climbed_out, every.median_s_out) == (6, pytest.approx(1 / 3), 0.5, 5.0)
    assert (every.apex_out, every.apex_stalled, every.causes) == ((8.0, 7.0), (2.0, 3.0), (1, 1, 0))
    table = terrain_benchmark.climb_table(list(groups.values())).splitlines()
    assert table[2:4] == ["| >= 0.75 m/s | 3 | 33% | 67% | 5.0 | 9.0 / 8.0 | - | 1 / 0 / 0 |",
                          "| 0.5-0.75 m/s | 2 | 50% | 50% | 5.0 | 5.0 / 5.0 | 3.0 / 4.0 | 0 / 1 / 0 |"]
    assert table[4] == "| < 0.3 m/s | 1 | 0% | 0% | nan | - | 1.0 / 2.0 | 0 / 0 / 0 |"


def test_climb_times_the_trot_out_of_a_level_0_pit_and_not_a_robot_that_stands(terrain_benchmark):
    """A tiny real run of ``climb``'s episodes (stairs up, level 0: 3.4 cm risers): the terrain-aware trot climbs out
    of every one, no sooner than its command could carry it 1 m, within the 20 s; a robot that stands never does, and
    neither falls. The speeds are the env's commands for the seeds 10,000 + k."""
    env = gym.make(terrain_benchmark.ENV_ID)
    commands = []
    for k in range(2):
        env.reset(seed=10_000 + k, options={"terrain_level": 0, "terrain_type": "stairs_up"})
        commands.append(float(np.hypot(*env.unwrapped.command[0:2])))
    trot = TrotController(spec=env.unwrapped.controller_spec)
    env.close()
    climbed = terrain_benchmark._climbs(trot.act, {}, 0, 2)
    stood = terrain_benchmark._climbs(lambda obs: np.zeros((len(obs), 12)), {}, 0, 2)
    assert [c.speed for c in climbed] == [c.speed for c in stood] == commands
    assert not any(c.fell for c in climbed + stood)
    assert all(1.0 / c.speed <= c.seconds_out < 20.0 for c in climbed), climbed
    assert all(math.isinf(c.seconds_out) for c in stood), stood
