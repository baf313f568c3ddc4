"""Single-env ``env.step`` speed of this tree against another checkout, side by side in one run.

Each timing runs in a fresh subprocess whose working directory (and ``sys.path[0]``) is one of the two
trees; the trees alternate for ``--repeats`` rounds and the medians are compared. Typical use, against
the commit before a change::

    git worktree add /tmp/old <commit>
    python benchmarks/step_vs_commit.py /tmp/old --envs OpenClaw/Quadruped-v0 OpenClaw/Claw-v0

Prints steps/s (unwrapped env, uniform random actions, reset on termination) per tree and the ratio
this tree / other tree.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]

PROBE = """
import sys, time
sys.path.insert(0, '.')
import gymnasium as gym, numpy as np
import envs
env = gym.make({env_id!r}).unwrapped
rng = np.random.default_rng(0)
actions = rng.uniform(env.action_space.low, env.action_space.high, size=({steps}, *env.action_space.shape))
actions = actions.astype(env.action_space.dtype)
env.reset(seed=0)
t0 = time.perf_counter()
for a in actions:
    _, _, terminated, truncated, _ = env.step(a)
    if terminated or truncated:
        env.reset()
print({steps} / (time.perf_counter() - t0))
"""


def steps_per_second(tree: Path, env_id: str, steps: int) -> float:
    out = subprocess.run([sys.executable, "-c", PROBE.format(env_id=env_id, steps=steps)], cwd=tree,
                         capture_output=True, text=True, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("other", type=Path, help="the other checkout (e.g. a git worktree of the old commit)")
    parser.add_argument("--envs", nargs="+", default=["OpenClaw/Quadruped-v0", "OpenClaw/Claw-v0"])
    parser.add_argument("--steps", type=int, default=5000)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    print("| env | this tree (steps/s) | other tree (steps/s) | this / other |\n|---|---:|---:|---:|")
    for env_id in args.envs:
        rates: dict[str, list[float]] = {"this": [], "other": []}
        for _ in range(args.repeats):
            rates["this"].append(steps_per_second(HERE, env_id, args.steps))
            rates["other"].append(steps_per_second(args.other.resolve(), env_id, args.steps))
        this, other = statistics.median(rates["this"]), statistics.median(rates["other"])
        print(f"| {env_id} | {this:,.0f} | {other:,.0f} | {this / other:.3f} |")


if __name__ == "__main__":
    main()
