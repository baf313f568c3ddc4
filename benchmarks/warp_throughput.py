"""Env steps per second of the quadruped on MuJoCo Warp (``envs.quadruped.warp_sim``) against the number of worlds.

For each world count: the physics alone (``frame_skip`` ``mujoco_warp.step`` calls, a CUDA graph on a GPU) and the
whole :meth:`~envs.quadruped.warp_sim.WarpQuadruped.step` (controls, clock, physics, observation, reward, resets),
with zero actions (on the terrain: the worlds standing on their tiles, whose box windows stay put), timed after a warm-up (kernel compilation, graph capture) with the device synchronised; with
``--train``, also PPO end to end on the device (``agents.students.device_ppo.DevicePPOStudent``: rollouts of
``--n-steps`` through ``VecNormalize``, 5 epochs of 4 minibatches, rsl_rl's shape of update), timed over whole
rollouts and updates after a first one.

Usage::

    python benchmarks/warp_throughput.py --device cuda:0 --worlds 256 1024 4096 8192
    python benchmarks/warp_throughput.py --device cuda:0 --worlds 4096 --train         # with PPO's training
    python benchmarks/warp_throughput.py --env OpenClaw/QuadrupedTerrain-v1 --device cuda:0 --worlds 256 1024 4096
    python benchmarks/warp_throughput.py --device cpu --worlds 4 16 --steps 20      # Warp's CPU device: tests only

Prints one line per world count and, with ``--json``, writes the figures there.
"""

from __future__ import annotations

import argparse
import json
import time

import torch
import warp as wp

import envs  # noqa: F401  (registers OpenClaw/*)
from envs.quadruped.warp_sim import WarpQuadruped


def timed(step, steps: int, sync) -> float:
    """Seconds per call of ``step`` over ``steps`` calls (after one warm-up call), the device synchronised."""
    step()
    sync()
    start = time.perf_counter()
    for _ in range(steps):
        step()
    sync()
    return (time.perf_counter() - start) / steps


def training_rate(env_id: str, worlds: int, device: str, n_steps: int, updates: int) -> float:
    """Env steps per second of PPO training on the device (collection and update), over ``updates`` rollouts
    after a first one (kernel compilation, graph capture, allocations)."""
    from stable_baselines3.common.vec_env import VecNormalize

    from agents.students.device_ppo import DevicePPOStudent
    from agents.warp_vec_env import WarpVecEnv

    venv = VecNormalize(WarpVecEnv(env_id, {}, worlds, device=device, seed=0))
    model = DevicePPOStudent("MlpPolicy", venv, n_steps=n_steps, batch_size=n_steps * worlds // 4, n_epochs=5,
                             device=device, seed=0, policy_kwargs={"net_arch": [512, 256, 128]})
    per_rollout = n_steps * worlds
    model.learn(per_rollout)
    torch.cuda.synchronize() if torch.cuda.is_available() else None
    start = time.perf_counter()
    model.learn(per_rollout * updates, reset_num_timesteps=False)
    torch.cuda.synchronize() if torch.cuda.is_available() else None
    return per_rollout * updates / (time.perf_counter() - start)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--env", default="OpenClaw/Quadruped-v1")
    p.add_argument("--device", default="cuda:0")
    p.add_argument("--worlds", type=int, nargs="+", default=[256, 1024, 4096, 8192])
    p.add_argument("--steps", type=int, default=200, help="control steps timed per figure")
    p.add_argument("--train", action="store_true", help="also PPO training's env steps/s on the device")
    p.add_argument("--n-steps", type=int, default=24, help="--train: steps per world per rollout")
    p.add_argument("--updates", type=int, default=5, help="--train: rollouts and updates timed")
    p.add_argument("--json", help="write the figures to this file")
    args = p.parse_args()
    rows = []
    for n in args.worlds:
        sim = WarpQuadruped(args.env, num_worlds=n, device=args.device, seed=0)
        actions = torch.zeros((n, 12), device=sim.device)
        sync = lambda: wp.synchronize_device(sim.wp_device)  # noqa: E731
        physics = timed(sim._step_physics, args.steps, sync)
        full = timed(lambda: sim.step(actions), args.steps, sync)
        row = {"worlds": n, "physics_steps_per_s": n / physics, "env_steps_per_s": n / full,
               "task_share": 1 - physics / full}
        if args.train:
            row["training_steps_per_s"] = training_rate(args.env, n, args.device, args.n_steps, args.updates)
        rows.append(row)
        trained = f"   training {row['training_steps_per_s']:12,.0f} env steps/s" if args.train else ""
        print(f"{n:6d} worlds  physics {row['physics_steps_per_s']:12,.0f} env steps/s   with the task "
              f"{row['env_steps_per_s']:12,.0f} env steps/s   task {100 * row['task_share']:4.1f} % of the step"
              f"{trained}", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"env": args.env, "device": str(wp.get_device(args.device)), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
