"""Online policy distillation benchmark (long; not run in CI). Results go to ``benchmarks/RESULTS.md``.

Student task: PPO on ``OpenClaw/QuadrupedRough-v0`` (5 cm bumps, full joystick command ranges).
Arms, each over the same seeds:

``baseline``   ``distill=none``
``ema``        ``distill=ema`` (alpha 0.1, decay 0.995)
``kickstart``  ``distill=checkpoint`` from a PPO policy trained on flat ground (``--teacher``), alpha 1 -> 0
               linearly over the run (kickstarting, Schmitt et al. 2018)
``parity``     ``distill=ema distill.alpha=0``: must reproduce ``baseline`` exactly (same seed, CPU)

Threshold, fixed before running: a deterministic evaluation (10 episodes) with mean velocity tracking
error <= 0.25 m/s and no more than 10% falls. Reported per arm: env steps and wall clock to the
threshold (per seed), and the final evaluation return (mean and 95% CI over seeds).

Usage::

    python train.py hydra.run.dir=runs/flat_teacher            # the teacher (flat ground)
    python benchmarks/opd.py --teacher runs/flat_teacher --seeds 0 1 2 --steps 2000000
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import runs

THRESHOLD = "eval tracking error <= 0.25 m/s and falls <= 10% (10 episodes)"


def passed(row: dict[str, str]) -> bool:
    return float(row["tracking_error"]) <= 0.25 and float(row["fall_rate"]) <= 0.10


def arms(teacher: str) -> dict[str, list[str]]:
    return {
        "baseline": ["distill=none"],
        "ema": ["distill=ema", "distill.alpha=0.1"],
        "kickstart": ["distill=checkpoint", f"distill.teacher={teacher}", "distill.alpha=1.0",
                      "distill.schedule=linear", "distill.final_alpha=0.0"],
        "parity": ["distill=ema", "distill.alpha=0.0"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--teacher", required=True, help="run directory of a flat-ground PPO policy")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--steps", type=int, default=2_000_000)
    parser.add_argument("--arms", nargs="+", default=["baseline", "ema", "kickstart", "parity"])
    parser.add_argument("--out", default=str(runs.ROOT / "runs" / "benchmarks" / "opd"))
    args = parser.parse_args()

    common = ["env=quadruped_rough", "agent=ppo", f"train.total_timesteps={args.steps}",
              "train.eval_freq=100000", "train.eval_episodes=10", "train.eval_envs=5"]
    table = {}
    for arm in args.arms:
        per_seed = []
        for seed in args.seeds:
            run_dir = Path(args.out) / f"{arm}-seed{seed}"
            wall = runs.train([*common, *arms(args.teacher)[arm], f"seed={seed}"], run_dir)
            first = runs.first_passing(run_dir, passed)
            per_seed.append({
                "seed": seed,
                "steps_to_threshold": int(first["step"]) if first else None,
                "wall_to_threshold_s": float(first["wall_time_s"]) if first else None,
                "final_return": runs.summary(run_dir)["final_eval_return"],
                "wall_s": round(wall, 1),
                "run_dir": str(run_dir),
            })
        mean, ci = runs.mean_ci95([s["final_return"] for s in per_seed])
        table[arm] = {"seeds": per_seed, "final_return_mean": mean, "final_return_ci95": ci}
    if "parity" in table and "baseline" in table:
        table["parity"]["identical_to_baseline"] = all(
            runs.eval_rows(Path(p["run_dir"])) and
            [r["mean_return"] for r in runs.eval_rows(Path(p["run_dir"]))]
            == [r["mean_return"] for r in runs.eval_rows(Path(b["run_dir"]))]
            for p, b in zip(table["parity"]["seeds"], table["baseline"]["seeds"])
        )
    print(json.dumps({"threshold": THRESHOLD, "steps": args.steps, "arms": table}, indent=2))


if __name__ == "__main__":
    main()
