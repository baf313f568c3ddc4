"""Where the tuned trot loses tracking on a robot: fast commands, and actions clipped at the action range.

For each robot: over 30 seeded validation episodes (seeds 1000-1029, default command ranges), the mean
tracking error (m/s) of the episodes whose planar command is faster than 0.7 m/s and of the others, the
slopes of the achieved body-frame velocity (mean after the first 2 s) against the commanded one (vx, vy;
1 = tracks), and per joint kind the fraction of control steps whose action is clipped at +-1 (from
:func:`envs.controllers.tune.evaluate_trot`, 50 episodes).

    python benchmarks/trot_diagnosis.py go1 go2 aliengo mini_cheetah
"""

from __future__ import annotations

import sys

import numpy as np

import envs  # noqa: F401  (registers OpenClaw/*)
from envs.batched import BatchedSimulation
from envs.controllers.trot import TrotController
from envs.controllers.tune import ENV_ID, VALIDATION_SEED, evaluate_trot

FAST = 0.7  # m/s


def speed_profile(robot: str, episodes: int = 30, steps: int = 1000) -> dict[str, float]:
    sim = BatchedSimulation(ENV_ID, episodes, robot=robot)
    trot = TrotController(spec=sim.tasks[0].controller_spec)
    for i, task in enumerate(sim.tasks):
        task.set_gait_frequency(trot.params.frequency_hz)
        sim.reset(i, seed=VALIDATION_SEED + i)
    sl = sim.tasks[0].OBS_SLICES
    command = sim.obs[:, sl["command"]].astype(np.float64)
    velocity, errors, counted = np.zeros((episodes, 2)), np.zeros(episodes), np.zeros(episodes)
    running = np.arange(episodes)
    for t in range(steps):
        actions = np.zeros((episodes, 12), dtype=np.float32)
        actions[running] = trot.act(sim.obs[running])
        result = sim.step(actions, running)
        errors[running] += result.infos.arrays()["tracking_error"]
        counted[running] += 1
        if t >= 100:
            velocity[running] += result.obs[:, sl["lin_vel"]][:, :2]
        running = running[~(result.terminated | result.truncated)]
        if not len(running):
            break
    sim.close()
    velocity /= np.maximum(counted - 100, 1)[:, None]
    errors /= counted
    fast = np.hypot(command[:, 0], command[:, 1]) > FAST
    return {"error_fast": float(errors[fast].mean()), "error_slow": float(errors[~fast].mean()),
            "fast_episodes": int(fast.sum()),
            "vx_slope": float(np.polyfit(command[:, 0], velocity[:, 0], 1)[0]),
            "vy_slope": float(np.polyfit(command[:, 1], velocity[:, 1], 1)[0])}


def main(robots: list[str]) -> None:
    print(f"| robot | error, commands > {FAST} m/s | error, slower | vx slope | vy slope | clipped hip / thigh / knee |")
    print("|---|---:|---:|---:|---:|---|")
    for robot in robots:
        p = speed_profile(robot)
        s = evaluate_trot(robot, None, range(VALIDATION_SEED, VALIDATION_SEED + 50))["saturated"]
        print(f"| `{robot}` | {p['error_fast']:.3f} ({p['fast_episodes']} episodes) | {p['error_slow']:.3f} | "
              f"{p['vx_slope']:.2f} | {p['vy_slope']:.2f} | {s['hip']:.0%} / {s['thigh']:.0%} / {s['knee']:.0%} |")


if __name__ == "__main__":
    main(sys.argv[1:] or ["openclaw_go1", "go1", "go2", "aliengo", "mini_cheetah"])
