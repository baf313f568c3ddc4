"""``benchmarks/terrain.py``'s arms are command lines ``train.py`` composes (every override names a real key or adds
one with ``+``), and its recipe arms train the documented env configs with their tuned presets."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

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
    assert [dict(stage) for stage in anchor] == [{"name": "checkpoint", "steps": 1_500_000, "schedule_steps": 1_500_000},
                                                 {"name": "ema", "alpha": 0.1, "schedule": "constant"}]
    clear = composed["perceptive_trunkclear"].env.kwargs.reward_scales  # the documented recipe's, and the trunk's term
    assert clear.trunk_clearance == -40.0 and clear == {**perceptive.env.kwargs.reward_scales, "trunk_clearance": -40.0}
    assert blind.env.name == "quadruped_terrain_blind" and blind.agent.desired_kl is None
    assert composed["stairs_recipe_quadruped_terms"].env.kwargs.reward_scales.orientation == -1.0
    assert "feet_clearance_ahead" not in composed["stairs_recipe_quadruped_terms"].env.kwargs.reward_scales
