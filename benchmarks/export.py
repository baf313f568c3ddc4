"""Size and per-call latency (batch 1) of exported policies: ONNX (onnxruntime) and TorchScript vs eager torch.

For each run directory given, exports its best checkpoint with :mod:`agents.export.run` into a temporary
directory, then times one call on one raw observation (median over ``--calls`` calls after a warm-up,
single-threaded, in this process):

* ``onnxruntime``: :class:`agents.export.onnx_policy.OnnxPolicy` (one intra-op thread);
* ``torchscript``: the traced ``policy.pt`` under ``torch.no_grad()``;
* ``torch eager``: the same :class:`agents.export.run.DeployedActor` module before export;
* ``sb3 predict``: ``model.predict`` on a normalised observation (what ``evaluate.py`` calls per step).

Usage::

    python benchmarks/export.py runs/quadruped-ppo/<date> runs/claw-sac/<date> [--calls 2000]

Results and the machine they were measured on live in ``benchmarks/RESULTS.md``.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import envs  # noqa: F401, I001  (first: picks a headless GL backend before mujoco is imported)
import torch
from omegaconf import OmegaConf
from stable_baselines3.common.vec_env import VecNormalize

from agents.export.run import ExportConfig, deployed_actor, load_learned, run
from agents.export.onnx_policy import OnnxPolicy, flatten_observation


def latency_us(call: Callable[[], object], calls: int) -> float:
    """Median wall time of one ``call()`` in microseconds (after ``calls // 10`` warm-up calls)."""
    for _ in range(max(calls // 10, 1)):
        call()
    times = []
    for _ in range(calls):
        t0 = time.perf_counter()
        call()
        times.append(time.perf_counter() - t0)
    return 1e6 * statistics.median(times)


def bench(run_dir: Path, calls: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        cfg = OmegaConf.merge(OmegaConf.structured(ExportConfig), {"run": str(run_dir), "out_dir": tmp, "torchscript": True})
        paths = run(cfg)
        learned = load_learned(cfg)
        saved, model, venv = learned.saved, learned.model, learned.venv
        actor = deployed_actor(model, venv)
        obs = venv.reset()
        raw = venv.get_original_obs() if isinstance(venv, VecNormalize) else obs
        onnx_policy = OnnxPolicy(paths["onnx"])
        flat = flatten_observation(raw, onnx_policy.observation_keys)
        scripted = torch.jit.load(str(paths["torchscript"]))
        tensor = torch.as_tensor(flat)
        with torch.no_grad():
            rows = {
                "onnxruntime": latency_us(lambda: onnx_policy(flat), calls),
                "torchscript": latency_us(lambda: scripted(tensor), calls),
                "torch eager": latency_us(lambda: actor(tensor), calls),
                "sb3 predict": latency_us(lambda: model.predict(obs, deterministic=True), calls),
            }
        venv.close()
        sizes = {kind: path.stat().st_size / 1024 for kind, path in paths.items()}
    print(f"{saved.env.id} {saved.agent.name} ({run_dir}): policy.onnx {sizes['onnx']:.1f} KiB, policy.pt {sizes['torchscript']:.1f} KiB")
    for name, us in rows.items():
        print(f"  {name:12s} {us:8.1f} us per call (batch 1)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("runs", nargs="+", type=Path, help="run directories made by train.py")
    parser.add_argument("--calls", type=int, default=2000, help="timed calls per runtime")
    args = parser.parse_args()
    torch.set_num_threads(1)
    print(f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, torch {torch.__version__}, 1 thread")
    for run_dir in args.runs:
        bench(run_dir, args.calls)


if __name__ == "__main__":
    main()
