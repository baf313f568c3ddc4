"""The quadruped's contact physics, side by side: the scripted trot's gait measures and the env's speed per setting.

For each robot and contact setting (foot-ground friction, friction cone, ``impratio``; set on the built
model, so the settings are explicit whatever the env's defaults), runs the robot's tuned scripted trot
(``envs.controllers.trot``) on ``OpenClaw/Quadruped-v1`` for seeded episodes with commands from the default
ranges, and prints the tracking error, falls, stance slip, swing apex and duty factor (the env's gait
measures, ``envs.quadruped.gait``), then the env's steps/s per setting, measured interleaved (round-robin
blocks of random actions), as ratios to the first setting.

    PYTHONPATH=. python benchmarks/gait_physics.py [--robots go2 go1] [--episodes 8] [--steps 500]
        [--rounds 5] [--block 400]          # --episodes 0: the timing only
"""

from __future__ import annotations

import argparse
import time

import gymnasium as gym
import mujoco
import numpy as np

import envs  # noqa: F401  (registers OpenClaw/*)
from envs.controllers.trot import TrotController
from envs.quadruped.robots import package_model_path, robot_model, robot_named

PYRAMIDAL, ELLIPTIC = mujoco.mjtCone.mjCONE_PYRAMIDAL, mujoco.mjtCone.mjCONE_ELLIPTIC
# name -> (foot-ground friction: a number, "old" (the feet's own friction in the package's file, which our
# scene used before issue 37: its feet have priority) or None (the env's as built); cone; impratio;
# ls_iterations), None: the env's defaults as built
SETTINGS = {
    "old (feet's own mu, pyramidal)": ("old", PYRAMIDAL, 1.0, 10),
    "mu 1.0, pyramidal": (1.0, PYRAMIDAL, 1.0, 10),
    "old mu, elliptic impratio 100": ("old", ELLIPTIC, 100.0, 50),
    "mu 1.0, elliptic impratio 100": (1.0, ELLIPTIC, 100.0, 50),
    "new default (as built)": None,
}
GAIT_KEYS = ("stance_slip", "swing_apex", "duty_factor")


def old_foot_friction(robot: str) -> float:
    """The foot friction our scene used for ``robot`` before issue 37: its package file's foot geom's
    (``openclaw_go1``: its own model's, unchanged)."""
    info = robot_named(robot)
    if info.package_model is None:
        return float(robot_model(robot).geom_friction[robot_model(robot).geom("FR_foot").id, 0])
    return float(mujoco.MjModel.from_xml_path(str(package_model_path(info))).geom("FR").friction[0])


def make(robot: str, setting: tuple | None, **kwargs) -> gym.Env:
    """``OpenClaw/Quadruped-v1`` with ``robot`` and the contact ``setting`` written into its model."""
    env = gym.make("OpenClaw/Quadruped-v1", robot=robot, **kwargs)
    if setting is None:
        return env
    friction, cone, impratio, ls_iterations = setting
    model, task = env.unwrapped.model, env.unwrapped
    model.geom_friction[task._foot_geoms, 0] = old_foot_friction(robot) if friction == "old" else friction
    model.opt.cone, model.opt.impratio, model.opt.ls_iterations = cone, impratio, ls_iterations
    return env


def trot_rollouts(robot: str, setting: tuple, episodes: int, steps: int) -> dict[str, float]:
    """Mean tracking error (m/s), fall fraction and gait measures of the robot's scripted trot."""
    env = make(robot, setting, max_episode_steps=steps)
    trot = TrotController(spec=env.unwrapped.controller_spec)
    env.unwrapped.set_gait_frequency(trot.params.frequency_hz)
    totals = {"tracking_error": 0.0, "falls": 0.0, **{k: 0.0 for k in GAIT_KEYS}, "vx_error": 0.0}
    for episode in range(episodes):
        obs, _ = env.reset(seed=1000 + episode)
        error, n = 0.0, 0
        while True:
            obs, _, terminated, truncated, info = env.step(trot.act(obs))
            error += info["tracking_error"]
            n += 1
            if terminated or truncated:
                break
        totals["tracking_error"] += error / n
        totals["falls"] += float(info["fell"])
        for key in GAIT_KEYS:
            totals[key] += info[key]
    env.close()
    return {k: v / episodes for k, v in totals.items()}


def throughput(robot: str, rounds: int, block: int) -> dict[str, float]:
    """Steps/s of each setting's env under random actions, interleaved block by block (median of ``rounds``)."""
    rng = np.random.default_rng(0)
    made = {name: make(robot, setting) for name, setting in SETTINGS.items()}
    for env in made.values():
        env.reset(seed=0)
    rates: dict[str, list[float]] = {name: [] for name in made}
    actions = rng.uniform(-0.3, 0.3, size=(block, 12))
    for _ in range(rounds):
        for name, env in made.items():
            start = time.perf_counter()
            for action in actions:
                _, _, terminated, truncated, _ = env.step(action)
                if terminated or truncated:
                    env.reset()
            rates[name].append(block / (time.perf_counter() - start))
    return {name: float(np.median(r)) for name, r in rates.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--robots", nargs="+", default=["go2", "go1", "aliengo", "mini_cheetah", "openclaw_go1"])
    parser.add_argument("--episodes", type=int, default=8)
    parser.add_argument("--steps", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=5, help="interleaved timing rounds per setting")
    parser.add_argument("--block", type=int, default=400, help="env steps per timing")
    args = parser.parse_args()
    for robot in args.robots:
        print(f"== {robot}: scripted trot, {args.episodes} episodes x {args.steps} steps (seeds 1000+)")
        for name, setting in SETTINGS.items() if args.episodes > 0 else ():
            r = trot_rollouts(robot, setting, args.episodes, args.steps)
            print(f"  {name:30s} tracking {r['tracking_error']:.3f} m/s  falls {r['falls']:.2f}  "
                  f"slip {r['stance_slip']:.3f} m/s  apex {r['swing_apex']:.1f} cm  duty {r['duty_factor']:.2f}")
        rates = throughput(robot, args.rounds, args.block)
        first = next(iter(rates.values()))
        print("  env steps/s (interleaved): " + ", ".join(f"{n}: {v:.0f} ({v / first:.2f}x)" for n, v in rates.items()))


if __name__ == "__main__":
    main()
