"""PPO update time, side by side in one run: SB3's ``PPO.train`` against our student's, with SB3's Adam
and with torch's fused Adam (what ``agent.fast_update`` gives the SAC student).

Three learners with the same network, rollout size and data (each collects one rollout of the same
seeded env, so the buffers are equal) run ``train()`` (``n_epochs`` passes over the rollout) in turn:

* ``sb3``      ``stable_baselines3.PPO``;
* ``student``  ``PPOStudent`` as ``train.py`` builds it (SB3's Adam, bit-identical to SB3);
* ``fused``    ``PPOStudent`` with fused Adam (not an option of ``train.py``: it did not speed the
  update up measurably, see ``benchmarks/RESULTS.md``);
* ``kl``       ``PPOStudent`` distilling from the scripted trot (``distill=scripted``: its actions in the
  rollout buffer, alpha 0.5); the KL reads the student's Gaussian from the minibatch's own forward pass;
* ``kl_reforward`` the same with the KL's student Gaussian from a second actor forward pass (what the
  student did before it passed ``student_dist``), for the speed-up of that change.

Each repeat times ``--calls`` calls of every learner, interleaved; the table gives the median
updates/s over the repeats and each learner's median over SB3's. The defaults are the quadruped
recipe (``tuned/quadruped_ppo.yaml``: 16 envs x 256 steps, minibatch 1024, 5 epochs, [256, 256] ELU).

Usage::

    python benchmarks/ppo_update.py             # 5 repeats of 3 calls
    python benchmarks/ppo_update.py --quick     # 3 repeats of 1 call
"""

from __future__ import annotations

import argparse
import platform
import time

import torch
from stable_baselines3 import PPO
from stable_baselines3.common.env_util import make_vec_env

import envs  # noqa: F401  (registers OpenClaw/*)
from agents.students import PPOStudent, policy_entry
from agents.teachers.controller import ControllerTeacher
from distill.opd import OnlinePolicyDistillation
from distill.policy import PolicyEntry
from distill.sequence import TeacherSequence
from distill.schedules import make_schedule
from distill.teachers import RecordedActionTeacher
from envs.controllers import family_of

import runs  # benchmarks/runs.py
from agents.students.distilling import fused_adam


class ReforwardPPOStudent(PPOStudent):
    """The KL's student Gaussian from a second actor forward pass (the student before it passed ``student_dist``)."""

    def _distill_term(self, batch, progress):
        opd = self.distillation
        loss, alpha = opd.distill_loss(batch.observations, progress, teacher_actions=batch.teacher_actions)
        return alpha * loss


#: name: (class, fused Adam, distilling from the trot)
LEARNERS = {"sb3": (PPO, False, False), "student": (PPOStudent, False, False), "fused": (PPOStudent, True, False),
            "kl": (PPOStudent, False, True), "kl_reforward": (ReforwardPPOStudent, False, True)}


def build(args: argparse.Namespace) -> dict[str, PPO]:
    """The learners, each after collecting (and learning from) one rollout of the same env seed."""
    learners = {}
    for name, (cls, fused, distilling) in LEARNERS.items():
        venv = make_vec_env(args.env, n_envs=args.num_envs, seed=0)
        if distilling:
            env = venv.get_attr("unwrapped", indices=[0])[0]
            venv = teacher = ControllerTeacher(venv, family_of(env), env.controller_spec)
        kwargs = dict(n_steps=args.n_steps, batch_size=args.batch, n_epochs=args.epochs, seed=0, device="cpu",
                      policy_kwargs=dict(net_arch=dict(pi=args.net, vf=args.net), activation_fn=torch.nn.ELU))
        learner = cls("MlpPolicy", venv, **(fused_adam(kwargs) if fused else kwargs))
        if distilling:
            entry = policy_entry(learner)
            student = PolicyEntry(entry.module, entry.distribution_fn)
            learner.attach_distillation(OnlinePolicyDistillation(student, TeacherSequence.alone(
                RecordedActionTeacher(0.3), make_schedule("constant", 0.5))), acting_teacher=teacher)
        learners[name] = learner.learn(args.n_steps * args.num_envs)
    return learners


def updates_per_second(learner: PPO, calls: int) -> float:
    """``train()`` calls per second (each: ``n_epochs`` passes over the rollout)."""
    start = time.perf_counter()
    for _ in range(calls):
        learner.train()
    return calls / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env", default="OpenClaw/Quadruped-v1")
    parser.add_argument("--num-envs", type=int, default=16)
    parser.add_argument("--n-steps", type=int, default=256, help="rollout length per env")
    parser.add_argument("--batch", type=int, default=1024, help="minibatch size")
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--net", type=int, nargs="+", default=[256, 256], help="hidden layer widths")
    parser.add_argument("--calls", type=int, default=3, help="train() calls per timing")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    parser.add_argument("--quick", action="store_true", help="1 call, 3 repeats")
    args = parser.parse_args()
    if args.quick:
        args.calls, args.repeats = 1, 3
    if args.threads:
        torch.set_num_threads(args.threads)

    learners = build(args)
    medians = runs.interleaved_medians(
        {name: (lambda learner=learner: updates_per_second(learner, args.calls)) for name, learner in learners.items()},
        args.repeats)

    samples = args.n_steps * args.num_envs
    print(f"{platform.processor() or platform.machine()}, torch {torch.__version__}, "
          f"{torch.get_num_threads()} torch threads; {args.env} x{args.num_envs}, {samples} samples per update, "
          f"minibatch {args.batch}, {args.epochs} epochs, net {args.net}, median of {args.repeats} x {args.calls} calls")
    print(runs.ratio_table(medians, "updates/s", "sb3", digits=2))


if __name__ == "__main__":
    main()
