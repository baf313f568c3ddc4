"""SAC gradient steps per second, side by side in one run: SB3's ``SAC.train`` against our student's.

Three learners with the same network, batch and replay data (one buffer they share, filled with
random-action transitions of the env) run ``train(gradient_steps, batch_size)`` in turn:

* ``sb3``     ``stable_baselines3.SAC``;
* ``parity``  ``SACStudent(fast_update=False)``: bit-identical to SB3 (SB3's Adam);
* ``fast``    ``SACStudent()`` as ``train.py`` builds it (fused Adam).

Each repeat times ``--calls`` calls of every learner, interleaved; the table gives the median gradient
steps/s over the repeats and each learner's median over SB3's. The defaults are the claw recipe
(``tuned/claw_sac.yaml``: Dict observations, 4 envs, [256, 256] ReLU networks, batch 256, 2 gradient
steps per call).

Usage::

    python benchmarks/sac_update.py             # 7 repeats of 25 calls
    python benchmarks/sac_update.py --quick     # 3 repeats of 10 calls
    python benchmarks/sac_update.py --env OpenClaw/Quadruped-v0 --threads 1
"""

from __future__ import annotations

import argparse
import platform
import time

import numpy as np
import torch
from stable_baselines3 import SAC
from stable_baselines3.common.env_util import make_vec_env

import envs  # noqa: F401  (registers OpenClaw/*)
from agents.factory import policy_name
from agents.students import SACStudent

import runs  # benchmarks/runs.py

LEARNERS = {
    "sb3": (SAC, {}),
    "parity": (SACStudent, {"fast_update": False}),
    "fast": (SACStudent, {}),
}


def build(args: argparse.Namespace) -> dict[str, SAC]:
    """The three learners on one vector env, sharing one replay buffer of ``--transitions`` per env."""
    venv = make_vec_env(args.env, n_envs=args.num_envs, seed=0)
    learners = {
        name: cls(policy_name(venv), venv, batch_size=args.batch, gamma=0.95, tau=0.01, learning_rate=1e-3,
                  buffer_size=args.transitions, seed=0, device="cpu",
                  policy_kwargs=dict(net_arch=args.net, activation_fn=torch.nn.ReLU), **kwargs)
        for name, (cls, kwargs) in LEARNERS.items()
    }
    buffer = learners["sb3"].replay_buffer
    rng = np.random.default_rng(0)
    obs = venv.reset()
    for _ in range(args.transitions):
        actions = rng.uniform(-1, 1, size=(args.num_envs, *venv.action_space.shape)).astype(np.float32)
        next_obs, rewards, dones, infos = venv.step(actions)
        buffer.add(obs, next_obs, actions, rewards, dones, infos)
        obs = next_obs
    for learner in learners.values():
        learner.replay_buffer = buffer
        learner._setup_learn(total_timesteps=1)  # a logger for train()'s records
    return learners


def steps_per_second(learner: SAC, calls: int, gradient_steps: int, batch: int) -> float:
    """Gradient steps/s of ``calls`` calls of ``learner.train``."""
    start = time.perf_counter()
    for _ in range(calls):
        learner.train(gradient_steps=gradient_steps, batch_size=batch)
    return calls * gradient_steps / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env", default="OpenClaw/Claw-v0")
    parser.add_argument("--num-envs", type=int, default=4)
    parser.add_argument("--net", type=int, nargs="+", default=[256, 256], help="hidden layer widths")
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--gradient-steps", type=int, default=2, help="per train() call")
    parser.add_argument("--transitions", type=int, default=2000, help="per env in the replay buffer")
    parser.add_argument("--calls", type=int, default=25, help="train() calls per timing")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    parser.add_argument("--quick", action="store_true", help="10 calls, 3 repeats")
    args = parser.parse_args()
    if args.quick:
        args.calls, args.repeats = 10, 3
    if args.threads:
        torch.set_num_threads(args.threads)

    learners = build(args)
    for learner in learners.values():  # warm-up: allocations, optimiser state
        steps_per_second(learner, 2, args.gradient_steps, args.batch)
    medians = runs.interleaved_medians(
        {name: (lambda learner=learner: steps_per_second(learner, args.calls, args.gradient_steps, args.batch))
         for name, learner in learners.items()},
        args.repeats)

    print(f"{platform.processor() or platform.machine()}, torch {torch.__version__}, "
          f"{torch.get_num_threads()} torch threads; {args.env} x{args.num_envs}, net {args.net}, batch {args.batch}, "
          f"{args.gradient_steps} gradient steps per call, median of {args.repeats} x {args.calls} calls")
    print(runs.ratio_table(medians, "gradient steps/s", "sb3", digits=1))


if __name__ == "__main__":
    main()
