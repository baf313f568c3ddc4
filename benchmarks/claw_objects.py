"""How often the default scripted grasp fails when the cube is heavier, more slippery or smaller.

Runs :class:`~envs.controllers.grasp.GraspController` (default :class:`~envs.controllers.grasp.GraspParams`,
or ``--params``) for ``--episodes`` seeded episodes (seeds 0, 1, ...) of ``OpenClaw/Claw-v0`` with the
default cube and with the hard object range of ``configs/env/claw_hard.yaml``, and prints per env and per
object class (``env.task_context()``) the success rate and how the other episodes failed: *missed* (the
cube was never held) or *dropped* (held, but not at the goal at the end).

Usage::

    python benchmarks/claw_objects.py                   # 50 episodes per env
    python benchmarks/claw_objects.py --episodes 20
    python benchmarks/claw_objects.py --params '{"close_steps": 20, "grasp_height_offset": -0.006}'
    python benchmarks/claw_objects.py --arm panda       # the same with the Franka Panda
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

import envs  # noqa: F401, I001  (first: registers the ids, picks a headless GL backend before mujoco loads)
import gymnasium as gym
from omegaconf import OmegaConf

from envs.claw import ClawEnv
from envs.controllers.grasp import GraspController, GraspParams

ENV_ID = "OpenClaw/Claw-v0"
HARD = Path(__file__).resolve().parent.parent / "configs" / "env" / "claw_hard.yaml"


def hard_kwargs() -> dict:
    """The object arguments of ``configs/env/claw_hard.yaml`` (its other kwargs are ``claw.yaml``'s, the defaults)."""
    kwargs = OmegaConf.to_container(OmegaConf.load(HARD).kwargs)
    return {k: v for k, v in kwargs.items() if k.startswith("object_")}


def outcomes(kwargs: dict, episodes: int, params: GraspParams) -> list[tuple[str, str]]:
    """``(object class, "success" | "missed" | "dropped")`` of each seeded episode."""
    env = gym.make(ENV_ID, **kwargs)
    ctrl = GraspController(params, spec=env.unwrapped.controller_spec)
    results = []
    for seed in range(episodes):
        obs, _ = env.reset(seed=seed)
        ctrl.reset()
        held = done = False
        while not done:
            obs, _, terminated, truncated, info = env.step(ctrl.act(obs))
            held |= bool(info["grasped"])
            done = terminated or truncated
        outcome = "success" if info["is_success"] else "dropped" if held else "missed"
        results.append((env.unwrapped.task_context().name, outcome))
    env.close()
    return results


def report(label: str, results: list[tuple[str, str]]) -> None:
    """One row for ``label`` and one per object class when there are several."""
    groups = defaultdict(list)
    for name, outcome in results:
        groups[name].append(outcome)
    rows = [(label, [o for _, o in results])] + (sorted(groups.items()) if len(groups) > 1 else [])
    for name, outs in rows:
        n = len(outs)
        rates = "  ".join(f"{k} {outs.count(k) / n:4.0%}" for k in ("success", "missed", "dropped"))
        print(f"{name:<48} {n:>3} episodes  {rates}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=50, help="seeded episodes per env (seeds 0, 1, ...)")
    parser.add_argument("--params", default="{}", help="GraspParams fields as JSON (default: the defaults)")
    parser.add_argument("--arm", default="gantry", choices=ClawEnv.ARMS, help="the claw's arm (ClawEnv's arm=)")
    args = parser.parse_args()
    params = GraspParams.from_dict(json.loads(args.params))
    hard = hard_kwargs()
    print(f"{ENV_ID} arm={args.arm}, GraspParams {json.loads(args.params) or 'defaults'}; "
          f"hard range (claw_hard.yaml): {hard}")
    report("default cube", outcomes({"arm": args.arm}, args.episodes, params))
    report("hard range", outcomes({"arm": args.arm, **hard}, args.episodes, params))


if __name__ == "__main__":
    main()
