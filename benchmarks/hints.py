"""LLM-hint teacher benchmark (long; not run in CI): does the hint teacher help, and does the LLM?

Arms, all through ``train.py``, same seeds and budget:

``baseline``  ``distill=none``
``scripted``  ``distill=scripted``: the scripted controller with default parameters, no LLM (ablation)
``llm_hint``  ``distill=adaptive``: the same controller driven by accepted hints of the offline coach
              (``llm=default``: the bundled server, started automatically); hints verified in simulation
              (``distill.verify_hints``, the default) before they teach
``adversarial``  ``llm_hint`` with ``llm.hint_model=fault-random``: valid, in-bound, random parameters, always +1
``*_unverified``  the same without the check (``distill.verify_hints=false``): the control that shows it works

Tasks and the thresholds, fixed before running:

``quadruped``  the default job (``python train.py``: PPO on ``OpenClaw/Quadruped-v1``, full command ranges,
               teacher alpha 0.5 -> 0 over the first 200 k steps); threshold: eval tracking error <= 0.15 m/s
               with <= 5% falls (20 episodes), the quadruped-teacher issue's criterion (``learning.py teachers``
               runs the same job, so its ``scripted`` and ``llm_hint`` arms are these)
``claw``       SAC on ``OpenClaw/Claw-v0`` (tuned: dense reward, no HER); teachers with alpha 1 (constant)
               and std 0.1; threshold: eval success >= 90% (50 episodes), the training issue's criterion

Usage::

    python benchmarks/hints.py quadruped --seeds 0 1 2 --steps 200000
    python benchmarks/hints.py claw --seeds 0 1 2 --steps 50000 --arms scripted llm_hint
    python benchmarks/hints.py claw -- distill.alpha=2.0        # extra overrides for every run
"""

from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path

import runs

ARMS = {
    "baseline": ["distill=none"],
    "scripted": ["distill=scripted"],
    "llm_hint": ["distill=adaptive"],
    "llm_hint_unverified": ["distill=adaptive", "distill.verify_hints=false"],
    "adversarial": ["distill=adaptive", "llm.hint_model=fault-random"],
    "adversarial_unverified": ["distill=adaptive", "llm.hint_model=fault-random", "distill.verify_hints=false"],
}

TASKS = {
    "quadruped": dict(
        overrides=["env=quadruped", "agent=ppo", "train.eval_episodes=20", "train.eval_envs=10", "train.video=false"],
        eval_freq=50_000,
        criterion=runs.TRACKING,
    ),
    "claw": dict(
        overrides=["env=claw", "agent=sac", "train.eval_episodes=50", "train.eval_envs=10", "train.video=false",
                   "distill.alpha=1.0", "distill.schedule=constant", "distill.teacher_std=0.1"],
        eval_freq=25_000,
        criterion=runs.SUCCESS,
    ),
}


def last_hint_stats(run_dir: Path) -> dict[str, float]:
    """The last logged ``hints/*`` counters of a run (empty for arms without hints)."""
    with (run_dir / "progress.csv").open() as f:
        rows = [r for r in csv.DictReader(f) if r.get("hints/queries")]
    if not rows:
        return {}
    keys = ("queries", "accepted", "acceptance_rate", "parse_errors", "timeouts", "errors", "latency_p50_s",
            "verified", "adopted", "adoption_rate", "verify_over_budget", "verify_cpu_s_per_hint", "verify_cpu_share")
    return {k: float(rows[-1][f"hints/{k}"]) for k in keys if rows[-1].get(f"hints/{k}")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("task", choices=list(TASKS))
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--steps", type=int, default=None, help="env steps per run (quadruped 200k, claw 50k)")
    parser.add_argument("--arms", nargs="+", choices=list(ARMS), default=list(ARMS))
    parser.add_argument("--out", default=str(runs.ROOT / "runs" / "benchmarks" / "hints"))
    args, extra = parser.parse_known_args()
    extra = [e for e in extra if e != "--"]
    spec = TASKS[args.task]
    steps = args.steps or (200_000 if args.task == "quadruped" else 50_000)
    common = [*spec["overrides"], f"train.total_timesteps={steps}", f"train.eval_freq={spec['eval_freq']}", *extra]

    table = {}
    for arm in args.arms:
        per_seed = []
        for seed in args.seeds:
            run_dir = Path(args.out) / f"{args.task}-{arm}-seed{seed}"
            records = run_dir / "records"
            wall = runs.train([*common, *ARMS[arm], f"seed={seed}", f"distill.records_dir={records}"], run_dir)
            first = runs.first_passing(run_dir, spec["criterion"].passed)
            summary = runs.summary(run_dir)
            per_seed.append({
                "seed": seed,
                "steps_to_threshold": int(first["step"]) if first else None,
                "final_return": summary["final_eval_return"],
                "final_success_rate": summary.get("final_success_rate"),
                "final_tracking_error": summary.get("final_tracking_error"),
                "wall_s": round(wall, 1),
                "hints": last_hint_stats(run_dir),
            })
        mean, ci = runs.mean_ci95([s["final_return"] for s in per_seed])
        table[arm] = {"seeds": per_seed, "final_return_mean": mean, "final_return_ci95": ci}
    print(json.dumps({"task": args.task, "threshold": spec["criterion"].text, "steps": steps, "arms": table}, indent=2))


if __name__ == "__main__":
    main()
