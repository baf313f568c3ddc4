"""Where an exported quadruped policy's stance slip comes from: touchdown, mid-stance and lift-off steps.

The env's ``stance_slip`` (``envs.quadruped.gait``) is the mean horizontal speed of a foot's contact point over
the control steps (50 Hz) its touch sensor reads above ``CONTACT_FORCE_THRESHOLD``, the touchdown step included.
This splits every foot's stance into its first step (touchdown: the foot still carries its swing's speed), its
last (lift-off) and the steps between (mid-stance: a foot that skates shows here), and prints for each its share
of the stance steps, its mean slip (m/s) and what it adds to the mean (m/s; the three add up to the slip,
pooled over the four legs where the env's metric averages the legs' own means).

Usage::

    python benchmarks/stance_slip.py runs/go1-ppo/<date>/export/policy.onnx [--episodes 2 --seconds 20]

The policy runs in its training env (``gym.make`` of the file's ``env_id`` and ``env_kwargs``) at the commands of
``examples/deploy_mujoco.py``; episode ``i`` is seeded ``i``. Results: ``benchmarks/RESULTS.md`` (issue 37).
"""

from __future__ import annotations

import argparse

import envs  # noqa: F401, I001  (first: picks a headless GL backend before mujoco is imported)
import gymnasium as gym
import numpy as np

from agents.export.onnx_policy import OnnxPolicy
from envs.quadruped.gait import foot_motion

COMMANDS = ("0.5,0,0", "0.3,0.2,0", "0,0,0.5", "0.8,0,0", "-0.3,0,0")  # (vx m/s, vy m/s, wz rad/s), the deploy example's


def stance_steps(env: gym.Env, policy: OnnxPolicy, command: np.ndarray, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """One episode at ``command``: per control step and foot (FR FL RR RL), the contact flags (T, 4) and the
    contact point's horizontal speed (T, 4) (m/s, world frame)."""
    base = env.unwrapped
    obs, _ = env.reset(seed=seed, options={"command": command})
    contact, slip, done = [], [], False
    while not done:
        obs, _, terminated, truncated, _ = env.step(policy.act(obs))
        readings = base.data.sensordata
        _, _, slip2 = foot_motion(readings[base._sensor_slices[-1]].tolist(), base.foot_radius)
        contact.append(readings[base._sensor_slices[2]][:4] > base.CONTACT_FORCE_THRESHOLD)
        slip.append(np.sqrt(slip2))
        done = terminated or truncated
    return np.array(contact), np.array(slip)


def phases(contact: np.ndarray) -> dict[str, np.ndarray]:
    """Masks (T, 4) of the stance steps that start a stance (touchdown), end one (lift-off: the next step is in
    the air or the episode ends) or neither (mid-stance). A one-step stance counts as a touchdown. The episode's
    first stance counts its first step as a touchdown too (the feet start on the ground)."""
    before = np.vstack([np.zeros((1, 4), bool), contact[:-1]])
    after = np.vstack([contact[1:], np.zeros((1, 4), bool)])
    touchdown = contact & ~before
    liftoff = contact & ~after & ~touchdown
    return {"touchdown": touchdown, "mid-stance": contact & ~touchdown & ~liftoff, "lift-off": liftoff}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("policy", help="policy.onnx written by export.py")
    p.add_argument("--commands", nargs="+", default=COMMANDS, metavar="VX,VY,WZ")
    p.add_argument("--episodes", type=int, default=2)
    p.add_argument("--seconds", type=float, default=20.0)
    args = p.parse_args()
    policy = OnnxPolicy(args.policy)
    steps = int(round(args.seconds * float(policy.metadata["control_rate_hz"])))
    env = gym.make(policy.env_id, **{**policy.env_kwargs, "max_episode_steps": steps})
    print(f"{args.policy}: {args.episodes} x {args.seconds:g} s per command; per phase: share of stance steps, "
          "mean slip (m/s), adds (m/s)")
    for text in args.commands:
        command = np.array([float(v) for v in text.split(",")])
        runs = [stance_steps(env, policy, command, seed) for seed in range(args.episodes)]
        masks = [phases(contact) for contact, _ in runs]
        stance = sum(int(contact.sum()) for contact, _ in runs)
        total = sum(float(slip[contact].sum()) for contact, slip in runs)
        cells = []
        for name in ("touchdown", "mid-stance", "lift-off"):
            n = sum(int(m[name].sum()) for m in masks)
            summed = sum(float(slip[m[name]].sum()) for (_, slip), m in zip(runs, masks))
            cells.append(f"{name} {n / stance:4.0%} {summed / max(n, 1):.3f} {summed / stance:.3f}")
        print(f"({text:>10}) slip {total / stance:.3f} | " + " | ".join(cells))
    env.close()


if __name__ == "__main__":
    main()
