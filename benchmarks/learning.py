"""Learning benchmarks (long; not run in CI). Results go to ``benchmarks/RESULTS.md``.

Tasks:

``quadruped``  PPO on ``OpenClaw/Quadruped-v0`` with forward commands vx in [0.3, 1.0] m/s through
               ``train.py``; reports, per seed, the first evaluation (20 episodes) whose mean absolute
               velocity tracking error is <= 0.15 m/s with <= 5% falls: steps and wall clock to get there,
               and the final figures.
``default_job`` ``python train.py`` as it is (full command ranges, the scripted trot teaching the first
               200 k steps); the same criterion as ``quadruped``.
``claw``       SAC on ``OpenClaw/Claw-v0`` through ``train.py`` (tuned: dense reward, no HER); first
               evaluation (50 episodes) with >= 90% success.
``claw_teacher`` the same SAC with the scripted grasp controller as an online-distillation teacher
               (``distill=scripted_sac``: alpha 20 constant; the squashed student's term, ``distill/squashed.py``).
               Every SAC task reports the range of the entropy coefficient (``ent_coef_range``).
``panda_teacher`` ``claw_teacher`` with the Franka Panda (``env=claw_panda``).
``claw_hard_teacher``, ``claw_hard_cma`` ``claw_teacher`` on ``env=claw_hard`` (heavy, slippery cubes), taught by the
               default grasp, or by it adapted per object class by CMA-ES (``distill=adaptive distill.proposer=cma``,
               60 verified proposals).
``claw_hard_offline``, ``claw_hard_cma_pooled`` the same, taught by one grasp for every object class: the offline
               reference (run ``benchmarks/proposers.py teacher --case claw_hard --arms tuned`` first), or CMA-ES
               adapting one set online (``distill.per_context=false``, checks of 8 + 8 episodes).
``panda_her``  SAC + HER alone on the Panda (sparse reward, no teacher), for the record.
``teachers``   the default job (``python train.py``: PPO on ``OpenClaw/Quadruped-v1``, full command ranges;
               ``--env quadruped_rough`` for the rough terrain) with each online-distillation teacher:
               arms ``none``, ``scripted`` (the trot, the robot's default parameters: tuned where the robot
               has a parameter file), ``scripted_untuned`` (the trot's class defaults), ``llm_hint`` (the trot driven by
               the bundled offline coach), ``ema`` and ``ema_gated`` (decay 0.999, updated only while
               evaluations do not get worse). Per arm and seed: steps to the first evaluation
               (20 episodes) with tracking error <= 0.15 m/s and <= 5% falls, the final evaluation return
               (mean and 95% CI over seeds) and the distillation KL curve (``distill/kl`` per update).
``fps``        training throughput side by side in one process: SB3 PPO on our quadruped (SB3's
               ``DummyVecEnv``, and our batched vector env) vs on Gymnasium's ``Ant-v5`` with the same
               settings (alternating, median of repeats).

Usage::

    python benchmarks/learning.py quadruped --seeds 0 1 2
    python benchmarks/learning.py claw --seeds 0 1 2
    python benchmarks/learning.py default_job --seeds 0 -- train.total_timesteps=200000 train.eval_freq=25000
    python benchmarks/learning.py claw_teacher --seeds 0 1 2 -- train.total_timesteps=50000 train.eval_freq=25000
    python benchmarks/learning.py teachers --seeds 0 1 2
    python benchmarks/learning.py teachers --env quadruped_rough --arms none scripted --seeds 0 1 2
    python benchmarks/learning.py teachers --env go2 --arms none scripted --seeds 0 1 2
    python benchmarks/learning.py teachers --env go2 --arms scripted_untuned --seeds 0
    python benchmarks/learning.py fps --repeats 3
    python benchmarks/learning.py quadruped --seeds 0 -- train.total_timesteps=2000000   # extra overrides
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import time
from pathlib import Path

import runs

ROOT = runs.ROOT

CLAW_SAC = ["agent=sac", "train.eval_episodes=50", "train.eval_envs=10"]
# the adaptive teacher with scripted_sac's weights (configs/distill/scripted_sac.yaml: alpha 20, constant)
TEACHER_WEIGHT = ["distill.alpha=20.0", "distill.schedule=constant"]
CLAW_TEACHER = [*CLAW_SAC, "distill=scripted_sac"]
TASKS = {
    "quadruped": dict(
        overrides=[
            "env=quadruped",
            "agent=ppo",
            "env.kwargs.command_vx=[0.3,1.0]",
            "env.kwargs.command_vy=[0.0,0.0]",
            "env.kwargs.command_yaw_rate=[0.0,0.0]",
            "train.eval_episodes=20",
            "train.eval_envs=10",
        ],
        criterion=runs.TRACKING,
    ),
    # `python train.py` as it is (PPO, full command ranges, the trot teacher for the first 200 k steps)
    "default_job": dict(
        overrides=["env=quadruped", "agent=ppo", "train.eval_episodes=20", "train.eval_envs=10"],
        criterion=runs.TRACKING,
    ),
    "claw": dict(
        overrides=["env=claw", "agent=sac", "train.eval_episodes=50", "train.eval_envs=10"],
        criterion=runs.SUCCESS,
    ),
    # SAC kick-started by the scripted grasp controller (online distillation, alpha 20)
    "claw_teacher": dict(overrides=["env=claw", *CLAW_TEACHER], criterion=runs.SUCCESS),
    # issue 27: the same on the Franka Panda (env=claw_panda: arm=panda), and SAC + HER alone (sparse reward)
    "panda_teacher": dict(overrides=["env=claw_panda", *CLAW_TEACHER], criterion=runs.SUCCESS),
    # issue 26: claw_hard's students, taught by the default grasp and by CMA-ES adapting it per object class
    "claw_hard_teacher": dict(overrides=["env=claw_hard", *CLAW_TEACHER], criterion=runs.SUCCESS),
    "claw_hard_cma": dict(overrides=["env=claw_hard", *CLAW_SAC, "distill=adaptive", "distill.proposer=cma",
                                     "distill.max_verified=60", *TEACHER_WEIGHT], criterion=runs.SUCCESS),
    # ... by one grasp for every object class: the offline reference (benchmarks/proposers.py teacher --case claw_hard
    # --arms tuned writes it), and CMA-ES adapting one set online (distill.per_context=false, 8 + 8 episodes a check)
    "claw_hard_offline": dict(overrides=["env=claw_hard", *CLAW_TEACHER, "distill.controller_params="
                                         f"{ROOT}/runs/benchmarks/proposers/claw_hard/offline_params.json"],
                              criterion=runs.SUCCESS),
    "claw_hard_cma_pooled": dict(overrides=["env=claw_hard", *CLAW_SAC, "distill=adaptive", "distill.proposer=cma",
                                            "distill.max_verified=60", "distill.per_context=false",
                                            "distill.verify_rollouts=8", "distill.verify_confirm_rollouts=8",
                                            *TEACHER_WEIGHT], criterion=runs.SUCCESS),
    "panda_her": dict(
        overrides=["env=claw_panda", "agent=sac", "train.eval_episodes=50", "train.eval_envs=10", "agent.her=true",
                   "env.kwargs.reward_type=sparse"],
        criterion=runs.SUCCESS,
    ),
}


def run_seed(task: str, seed: int, out_root: Path, extra: list[str]) -> dict:
    spec = TASKS[task]
    run_dir = out_root / f"{task}-seed{seed}"
    wall = runs.train([*spec["overrides"], f"seed={seed}", *extra], run_dir)
    first = runs.first_passing(run_dir, spec["criterion"].passed)
    return {
        "seed": seed,
        "run_dir": str(run_dir),
        "criterion": spec["criterion"].text,
        "reached_at_step": int(first["step"]) if first else None,
        "reached_at_wall_s": float(first["wall_time_s"]) if first else None,
        "total_wall_s": round(wall, 1),
        "ent_coef_range": ent_coef_range(run_dir),
        "summary": runs.summary(run_dir),
    }


def ent_coef_range(run_dir: Path) -> list[float] | None:
    """``[min, max]`` of SAC's logged entropy coefficient (``train/ent_coef``) over a run; None for PPO."""
    with (run_dir / "progress.csv").open() as f:
        values = [float(r["train/ent_coef"]) for r in csv.DictReader(f) if r.get("train/ent_coef")]
    return [min(values), max(values)] if values else None


# The teachers benchmark: one train.py run per arm and seed, the default job plus these overrides.
TEACHER_ARMS = {
    "none": ["distill=none"],
    "scripted": ["distill=scripted"],
    # issue 24: the trot with the class defaults (hand-tuned for openclaw_go1) on a robot that has tuned ones
    "scripted_untuned": ["distill=scripted", "distill.controller_params=untuned"],
    "llm_hint": ["distill=adaptive"],
    # issue 26: the trot's class defaults adapted online per context by a proposer (benchmarks/proposers.py)
    **{f"{p}_untuned": ["distill=adaptive", f"distill.proposer={p}", "distill.controller_params=untuned"]
       for p in ("coach", "random", "cma", "llm_cma")},
    "ema": ["distill=ema"],
    # issue 13 item 5: a slower EMA that only follows the student while its evaluations do not get worse
    "ema_gated": ["distill=ema", "distill.ema_decay=0.999", "distill.ema_condition=eval_not_worse"],
}
TEACHER_EVAL = ["train.eval_episodes=20", "train.eval_envs=10"]


def kl_curve(run_dir: Path) -> list[tuple[int, float]]:
    """``(env steps, distill/kl)`` per logged update of a run (empty without a teacher)."""
    with (run_dir / "progress.csv").open() as f:
        rows = [r for r in csv.DictReader(f) if r.get("distill/kl")]
    return [(int(float(r["time/total_timesteps"])), float(r["distill/kl"])) for r in rows]


def bench_teachers(env: str, arms: list[str], seeds: list[int], out_root: Path, extra: list[str]) -> dict:
    """Every arm of :data:`TEACHER_ARMS` over ``seeds`` (module docstring); one run at a time."""
    table = {}
    for arm in arms:
        per_seed = []
        for seed in seeds:
            run_dir = out_root / f"teachers-{env}-{arm}-seed{seed}"
            wall = runs.train([f"env={env}", "agent=ppo", *TEACHER_EVAL, *TEACHER_ARMS[arm], f"seed={seed}", *extra],
                              run_dir)
            first = runs.first_passing(run_dir, runs.TRACKING.passed)
            kl = kl_curve(run_dir)
            per_seed.append({
                "seed": seed,
                "steps_to_threshold": int(first["step"]) if first else None,
                "final_return": runs.summary(run_dir)["final_eval_return"],
                "final_eval": runs.eval_rows(run_dir)[-1],
                "kl_first": kl[0][1] if kl else None,
                "kl_last": kl[-1][1] if kl else None,
                "kl_curve": kl,
                "wall_s": round(wall, 1),
                "run_dir": str(run_dir),
            })
        mean, ci = runs.mean_ci95([s["final_return"] for s in per_seed])
        table[arm] = {"seeds": per_seed, "final_return_mean": mean, "final_return_ci95": ci}
    return {"env": env, "criterion": runs.TRACKING.text, "overrides": extra, "arms": table}


def bench_fps(repeats: int, steps: int, num_envs: int) -> dict:
    """SB3 PPO steps/s on our quadruped vs Ant-v5, same hyper-parameters, alternating."""
    import torch
    from stable_baselines3 import PPO
    from stable_baselines3.common.env_util import make_vec_env

    import envs  # noqa: F401

    from agents.vec_env import make_vec_env as make_ours

    torch.set_num_threads(1)
    settings = dict(n_steps=256, batch_size=1024, n_epochs=5, policy_kwargs=dict(net_arch=[256, 256]))
    batched = "OpenClaw/Quadruped-v0 (train.vec_mode=batched)"
    fps: dict[str, list[float]] = {"OpenClaw/Quadruped-v0": [], batched: [], "Ant-v5": []}
    for _ in range(repeats):
        for env_id in fps:
            if env_id == batched:
                venv = make_ours("OpenClaw/Quadruped-v0", {}, num_envs, mode="batched")
                venv.seed(0)
            else:
                venv = make_vec_env(env_id, n_envs=num_envs, seed=0)
            model = PPO("MlpPolicy", venv, seed=0, device="cpu", **settings)
            t0 = time.perf_counter()
            model.learn(steps)
            fps[env_id].append(model.num_timesteps / (time.perf_counter() - t0))
            venv.close()
    med = {k: statistics.median(v) for k, v in fps.items()}
    return {
        "settings": {**settings, "num_envs": num_envs, "steps": steps, "repeats": repeats},
        "samples": fps,
        "median_fps": med,
        "ratio_ours_over_ant": med["OpenClaw/Quadruped-v0"] / med["Ant-v5"],
        "ratio_ours_batched_over_ant": med[batched] / med["Ant-v5"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("task", choices=[*TASKS, "teachers", "fps"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--out", default=str(ROOT / "runs" / "benchmarks"))
    parser.add_argument("--env", default="quadruped", help="teachers: env config (quadruped, quadruped_rough)")
    parser.add_argument("--arms", nargs="+", choices=list(TEACHER_ARMS), default=list(TEACHER_ARMS), help="teachers")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--steps", type=int, default=40960, help="fps: PPO steps per timing")
    parser.add_argument("--num-envs", type=int, default=16, help="fps: vector envs")
    args, extra = parser.parse_known_args()  # anything else (after --) goes to train.py
    extra = [e for e in extra if e != "--"]

    if args.task == "fps":
        result = bench_fps(args.repeats, args.steps, args.num_envs)
    elif args.task == "teachers":
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        result = bench_teachers(args.env, args.arms, args.seeds, out, extra)
    else:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        result = {"task": args.task, "seeds": [run_seed(args.task, s, out, extra) for s in args.seeds]}
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
