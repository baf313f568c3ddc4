"""Where training time goes: cProfile over short PPO (quadruped) and SAC (claw) runs, grouped into buckets.

The learners are built as ``train.py`` builds them: the Hydra config is composed from ``configs/``
(``env=quadruped agent=ppo`` picks ``configs/tuned/quadruped_ppo.yaml``: 16 envs, n_steps 256,
batch 1024, 5 epochs, [256, 256] ELU; ``env=claw agent=sac`` picks ``configs/tuned/claw_sac.yaml``),
then ``agents.training.runner``'s training envs (``VecNormalize`` over ``DummyVecEnv`` of ``Monitor``-wrapped
envs), ``agents.factory.build_agent``, SB3's CSV + TensorBoard logger and the ``InfoTermLogger``
callback. Evaluation, checkpoints and the progress bar are off: only ``model.learn`` is profiled.

For each run it prints

* the self time of every function, attributed to a bucket (physics, env step Python, observation +
  reward, vec-env wrappers, buffer, policy forward, optimizer/backward, logging/callbacks, algorithm
  loop, other). Library code without a bucket of its own (numpy, torch ops, builtins) is charged to
  the bucket of its nearest caller that has one, in proportion to the time each caller spent in it,
  so the buckets add up to the profiled time;
* the phases (rollout collection vs. gradient updates) by cumulative time;
* the top functions by cumulative and by self (total) time.

Then, without the profiler, it times the same runs with ``torch.set_num_threads(1)`` and ``(2)``,
interleaved (``--repeats`` each), and prints env steps/s side by side.

Usage::

    python benchmarks/profile_training.py                        # PPO 3 rollouts, SAC 3000 steps
    python benchmarks/profile_training.py --ppo-steps 8192 --sac-steps 2000 --repeats 1
    python benchmarks/profile_training.py --only ppo --top 40 --out /tmp/prof   # keep .prof files

Results and the machine they were measured on live in ``benchmarks/RESULTS.md``.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import platform
import pstats
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402
from hydra import compose, initialize_config_dir  # noqa: E402
from hydra.core.global_hydra import GlobalHydra  # noqa: E402
from omegaconf import DictConfig, open_dict  # noqa: E402

from agents.config.schema import register_configs  # noqa: E402
from agents.training.checks import validate  # noqa: E402

BUCKETS = (
    "physics (mj_*)",
    "env step Python",
    "observation + reward",
    "vec-env wrappers",
    "buffer",
    "policy forward",
    "optimizer/backward",
    "logging/callbacks",
    "algorithm loop",
    "other",
)

# (bucket, path fragment or None, function names or None); the first match wins.
_OBS_REWARD = {"_observe", "_step_outcome", "compute_reward", "_info_term", "_reset_info", "_blowup_reward", "command"}
_BACKWARD = {"backward", "clip_grad_norm_", "zero_grad", "_engine_run_backward", "step"}


def bucket_of(func: tuple[str, int, str]) -> str | None:
    """The bucket of a profiled function, or ``None`` to charge its time to its callers."""
    filename, _, name = func
    path = filename.replace("\\", "/")
    if filename == "~":  # builtins and C extensions: only MuJoCo's own calls get a bucket
        if "mujoco" in name and ("mj_" in name or "mjv_" in name):
            return "physics (mj_*)"
        if "run_backward" in name:
            return "optimizer/backward"
        return None
    if "/envs/" in path and "/site-packages/" not in path:
        return "observation + reward" if name in _OBS_REWARD else "env step Python"
    if "/torch/optim/" in path or "/torch/autograd/" in path or "/torch/nn/utils/clip_grad" in path:
        return "optimizer/backward"
    if path.endswith("torch/_tensor.py") and name == "backward":
        return "optimizer/backward"
    if "/torch/nn/modules/" in path or "/torch/nn/functional" in path or "/torch/distributions/" in path:
        return "policy forward"
    if "stable_baselines3/common/" in path:
        tail = path.split("stable_baselines3/common/", 1)[1]
        if tail.startswith("vec_env/") or tail.startswith("monitor") or tail.startswith("running_mean_std"):
            return "vec-env wrappers"
        if tail.startswith("buffers") or "her/" in tail:
            return "buffer"
        if tail.startswith(("policies", "torch_layers", "distributions", "preprocessing")):
            return "policy forward"
        if tail.startswith(("logger", "callbacks")):
            return "logging/callbacks"
        if tail.startswith(("on_policy_algorithm", "off_policy_algorithm", "base_class")):
            return "algorithm loop"
        return None  # utils (obs_as_tensor, polyak_update, ...): charged to callers
    if "stable_baselines3/" in path:  # ppo/ppo.py, sac/sac.py, sac/policies.py
        if "/policies" in path:
            return "policy forward"
        return "algorithm loop"
    if "/agents/" in path and "/site-packages/" not in path:
        if path.endswith("callbacks.py"):
            return "logging/callbacks"
        if path.endswith("vec_env.py"):
            return "vec-env wrappers"
        return "algorithm loop"  # agents/students/*: the overridden train()/collect_rollouts()
    if "/gymnasium/" in path:
        return "vec-env wrappers"  # gymnasium wrappers (TimeLimit, OrderEnforcing, PassiveEnvChecker)
    if "/tensorboard/" in path or "/torch/utils/tensorboard/" in path or "/csv.py" in path:
        return "logging/callbacks"
    return None


def attribute(stats: pstats.Stats) -> tuple[dict[str, float], float]:
    """Self time per bucket (seconds); library self time goes to its callers' buckets pro rata."""
    raw = stats.stats  # func -> (cc, nc, tt, ct, callers{caller: (cc, nc, tt, ct)})
    memo: dict[tuple, dict[str, float]] = {}
    visiting: set[tuple] = set()

    def share(func: tuple) -> dict[str, float]:
        """Fractions of ``func``'s time that belong to each bucket (recursion edges are skipped)."""
        if func in memo:
            return memo[func]
        own = bucket_of(func)
        if own is not None:
            memo[func] = {own: 1.0}
            return memo[func]
        if func in visiting:  # a recursive call (e.g. deepcopy): its outer frames decide
            return {}
        visiting.add(func)
        callers = raw[func][4] if func in raw else {}
        result: dict[str, float] = defaultdict(float)
        for caller, edge in callers.items():
            weight = edge[3] or edge[2]  # cumulative (else self) time spent in func via that caller
            for bucket, frac in share(caller).items():
                result[bucket] += frac * weight
        visiting.discard(func)
        total = sum(result.values())
        if total <= 0:
            if callers and visiting:  # reached only through a recursion in progress: not final yet
                return {}
            result = {"other": 1.0}
        else:
            result = {b: v / total for b, v in result.items()}
        memo[func] = result
        return result

    seconds: dict[str, float] = defaultdict(float)
    for func, (_, _, tt, _, _) in raw.items():
        for bucket, frac in (share(func) or {"other": 1.0}).items():
            seconds[bucket] += tt * frac
    return dict(seconds), sum(v[2] for v in raw.values())


def phase_times(stats: pstats.Stats) -> dict[str, float]:
    """Cumulative time of the learner's two phases (the outermost matching function of each)."""
    found: dict[str, float] = {}
    for (filename, _, name), (_, _, _, ct, _) in stats.stats.items():
        path = filename.replace("\\", "/")
        if name == "collect_rollouts" and ("algorithm.py" in path or "/agents/students/" in path):
            found["rollout collection"] = max(found.get("rollout collection", 0.0), ct)
        elif name == "train" and ("/agents/students/" in path or "stable_baselines3/" in path):
            found["gradient updates (train)"] = max(found.get("gradient updates (train)", 0.0), ct)
        elif name == "step" and path.endswith("envs/base.py"):
            found["env.step (all copies)"] = ct
        elif name == "mj_step" or (filename == "~" and "mj_step" in name):
            found["mj_step"] = found.get("mj_step", 0.0) + ct
    return found


# Spots worth watching: (label, path suffix, function name); cumulative time of each.
HOT_SPOTS = (
    ("DummyVecEnv.step_wait", "vec_env/dummy_vec_env.py", "step_wait"),
    ("  deepcopy(infos) in it", "copy.py", "deepcopy"),
    ("Monitor.step", "common/monitor.py", "step"),
    ("VecNormalize.step_wait", "vec_env/vec_normalize.py", "step_wait"),
    ("VecNormalize.normalize_obs", "vec_env/vec_normalize.py", "normalize_obs"),
    ("RunningMeanStd.update", "common/running_mean_std.py", "update"),
    ("gymnasium wrappers (self time)", "gymnasium/", "step"),
    ("env._validate_action", "envs/base.py", "_validate_action"),
    ("env._observe", "", "_observe"),
    ("env._step_outcome", "", "_step_outcome"),
    ("torch Distribution validation", "torch/distributions/distribution.py", "_validate_sample"),
    ("torch Distribution.__init__", "torch/distributions/distribution.py", "__init__"),
    ("obs_as_tensor", "common/utils.py", "obs_as_tensor"),
    ("InfoTermLogger._on_step", "agents/training/callbacks.py", "_on_step"),
    ("logger.dump", "common/logger.py", "dump"),
    ("buffer add", "common/buffers.py", "add"),
    ("buffer sample", "common/buffers.py", "sample"),
    ("replay_batches (SAC student's sampling)", "agents/students/replay_sampling.py", "replay_batches"),
    ("polyak_update", "common/utils.py", "polyak_update"),
    ("soft_update (SAC student's Polyak update)", "agents/students/sac.py", "soft_update"),
)


def hot_spots(stats: pstats.Stats) -> list[tuple[str, float, int]]:
    """(label, cumulative seconds, calls) of each entry of ``HOT_SPOTS`` present in the profile."""
    rows = []
    for label, suffix, name in HOT_SPOTS:
        ct, calls = 0.0, 0
        for (filename, _, fname), (_, nc, ftt, fct, callers) in stats.stats.items():
            path = filename.replace("\\", "/")
            if fname != name or (suffix and suffix not in path) or (not suffix and "/envs/" not in path):
                continue
            if label.strip().startswith("deepcopy"):  # only the edge from DummyVecEnv.step_wait
                for (cfile, _, cname), edge in callers.items():
                    if cname == "step_wait" and "dummy_vec_env" in cfile:
                        ct, calls = ct + edge[3], calls + edge[1]
                continue
            if "self time" in label:  # nested wrappers: cumulative times would overlap
                ct, calls = ct + ftt, calls + nc
                continue
            ct, calls = ct + fct, calls + nc
        if calls:
            rows.append((label, ct, calls))
    return rows


def compose_cfg(env: str, agent: str, run_dir: str, overrides: list[str]) -> DictConfig:
    register_configs()
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(ROOT / "configs"), version_base="1.3"):
        cfg = compose(
            "train",
            overrides=[
                f"env={env}", f"agent={agent}", "train.progress_bar=false", "train.eval_freq=0",
                "train.video=false", *overrides,
            ],
        )
    GlobalHydra.instance().clear()
    with open_dict(cfg):
        cfg.run_dir = run_dir
    validate(cfg)
    return cfg


def build(cfg: DictConfig):
    """Training envs, learner, logger and callbacks as ``agents.training.runner.train`` makes them."""
    from stable_baselines3.common.logger import configure

    from agents.training.callbacks import InfoTermLogger
    from agents.factory import build_agent
    from agents.training.runner import _train_envs

    venv, _ = _train_envs(cfg)
    model = build_agent(cfg, venv, tensorboard_dir=None)
    formats = ["csv", "tensorboard"] if cfg.train.tensorboard else ["csv"]
    model.set_logger(configure(cfg.run_dir, formats))
    return model, venv, [InfoTermLogger()]


def run_once(cfg: DictConfig, threads: int, profile: bool) -> tuple[float, int, pstats.Stats | None]:
    """Build, then time ``model.learn`` (optionally under cProfile); wall seconds, steps, stats."""
    torch.set_num_threads(threads)
    model, venv, callbacks = build(cfg)
    profiler = cProfile.Profile() if profile else None
    t0 = time.perf_counter()
    if profiler is not None:
        profiler.enable()
    model.learn(total_timesteps=cfg.train.total_timesteps, callback=callbacks, log_interval=cfg.train.log_interval)
    if profiler is not None:
        profiler.disable()
    wall = time.perf_counter() - t0
    steps = int(model.num_timesteps)
    model.logger.close()  # stops TensorBoard's writer thread
    venv.close()
    stats = pstats.Stats(profiler) if profiler is not None else None
    return wall, steps, stats


def top_table(stats: pstats.Stats, key: str, n: int) -> str:
    out = io.StringIO()
    stats.stream = out
    stats.sort_stats(key).print_stats(n)
    stats.stream = sys.stdout
    text = out.getvalue()
    start = text.find("   ncalls")
    return text[start:] if start >= 0 else text


def report_profile(label: str, cfg: DictConfig, wall: float, steps: int, stats: pstats.Stats, top: int) -> None:
    seconds, total = attribute(stats)
    print(f"\n=== {label}: {steps} env steps in {wall:.1f} s under cProfile ({steps / wall:,.0f} steps/s; "
          f"profiled self time {total:.1f} s) ===")
    print(f"{'bucket':<24} {'s':>8} {'%':>6} {'us/env step':>12}")
    for bucket in BUCKETS:
        s = seconds.get(bucket, 0.0)
        print(f"{bucket:<24} {s:8.2f} {100 * s / total:6.1f} {1e6 * s / steps:12.1f}")
    print("\nphases (cumulative):")
    for name, ct in phase_times(stats).items():
        print(f"  {name:<28} {ct:8.2f} s  {100 * ct / total:5.1f} %  {1e6 * ct / steps:8.1f} us/env step")
    print("\nhot spots (cumulative; overlapping):")
    for name, ct, calls in hot_spots(stats):
        print(f"  {name:<30} {ct:8.3f} s  {100 * ct / total:5.1f} %  {1e6 * ct / steps:8.1f} us/env step  {calls:>9} calls")
    print(f"\ntop {top} by cumulative time:")
    stats.strip_dirs()  # after the bucket attribution, which reads the paths
    print(top_table(stats, "cumulative", top))
    print(f"top {top} by total (self) time:")
    print(top_table(stats, "tottime", top))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", choices=("ppo", "sac"), default=None)
    parser.add_argument("--ppo-steps", type=int, default=3 * 16 * 256, help="PPO env steps (16 x 256 per rollout)")
    parser.add_argument("--sac-steps", type=int, default=3000, help="SAC env steps, warm-up included")
    parser.add_argument("--sac-learning-starts", type=int, default=500,
                        help="SAC random warm-up steps (tuned: 2000); smaller profiles more updates")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2], help="torch thread counts to time")
    parser.add_argument("--repeats", type=int, default=2, help="timed runs per thread count (interleaved)")
    parser.add_argument("--profile-threads", type=int, default=1, help="torch threads in the profiled run")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--out", default=None, help="folder for the .prof files and run logs (default: a temp dir)")
    args = parser.parse_args()

    out = Path(args.out or tempfile.mkdtemp(prefix="profile_training_"))
    out.mkdir(parents=True, exist_ok=True)
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, load average {load}, "
          f"python {platform.python_version()}, torch {torch.__version__}; outputs in {out}")

    jobs = []
    if args.only in (None, "ppo"):
        jobs.append(("PPO OpenClaw/Quadruped-v0", "quadruped", "ppo", [f"train.total_timesteps={args.ppo_steps}"]))
    if args.only in (None, "sac"):
        jobs.append(("SAC OpenClaw/Claw-v0", "claw", "sac",
                     [f"train.total_timesteps={args.sac_steps}", f"agent.learning_starts={args.sac_learning_starts}"]))

    timings: dict[str, dict[int, list[float]]] = {}
    for label, env, agent, overrides in jobs:
        tag = f"{env}-{agent}"
        cfg = compose_cfg(env, agent, str(out / f"{tag}-profiled"), overrides)
        print(f"\n{label}: num_envs={cfg.train.num_envs} vec_mode={cfg.train.vec_mode} "
              f"agent={dict((k, v) for k, v in cfg.agent.items() if k in ('n_steps', 'batch_size', 'n_epochs', 'net_arch', 'activation', 'buffer_size', 'learning_starts', 'train_freq', 'gradient_steps'))}")
        wall, steps, stats = run_once(cfg, args.profile_threads, profile=True)
        stats.dump_stats(str(out / f"{tag}.prof"))
        report_profile(label, cfg, wall, steps, stats, args.top)

        timings[label] = {t: [] for t in args.threads}
        for r in range(args.repeats):
            for t in args.threads:  # interleaved so that load changes hit every setting alike
                cfg_t = compose_cfg(env, agent, str(out / f"{tag}-t{t}-r{r}"), overrides)
                wall_t, steps_t, _ = run_once(cfg_t, t, profile=False)
                timings[label][t].append(steps_t / wall_t)
                print(f"  timing {label} torch threads={t} repeat {r}: {steps_t / wall_t:,.0f} env steps/s", flush=True)

    print("\n=== torch.set_num_threads, env steps/s without the profiler (median; all runs) ===")
    for label, per_thread in timings.items():
        cells = "  ".join(
            f"threads={t}: {statistics.median(v):,.0f} ({' / '.join(f'{x:,.0f}' for x in v)})" for t, v in per_thread.items()
        )
        print(f"{label:<28} {cells}")
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    print(f"load average at the end: {load}")


if __name__ == "__main__":
    main()
