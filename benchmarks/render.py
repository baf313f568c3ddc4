"""Rendering and video recording speed at 480x480, side by side in one run.

Prints frames per second (medians over interleaved repeats) for each env:

* ``render``: ``env.step`` + ``env.render()`` alone (MuJoCo's offscreen renderer);
* ``record``: the whole recording path of ``evaluate.py`` - step, render, text overlay and H.264
  encoding to an mp4 (:class:`agents.evaluation.video.ClipRecorder`), with shadows (the default);
* ``record_no_shadows``: the same with ``shadows=False``;

and for scale Gymnasium's ``Ant-v5`` with its default quality (4096 shadow map, 4x multisampling)
and with ours (1024 shadow map, no multisampling, the ``<quality>`` of ``assets/*.xml``).

Usage::

    python benchmarks/render.py            # 300 frames per timing, median of 3
    python benchmarks/render.py --quick    # 100 frames, 1 repeat

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

import envs  # noqa: F401, I001  (first: picks a headless GL backend before mujoco is imported)
import gymnasium as gym
import mujoco
import numpy as np

from agents.evaluation.video import ClipRecorder

SIZE = 480
ENVS = {"quadruped": "OpenClaw/Quadruped-v0", "claw": "OpenClaw/Claw-v0", "ant": "Ant-v5"}


def _make(env_id: str, our_quality: bool) -> gym.Env:
    env = gym.make(env_id, render_mode="rgb_array", width=SIZE, height=SIZE)
    if our_quality:  # must happen before the first render creates the GL buffers
        env.unwrapped.model.vis.quality.shadowsize = 1024
        env.unwrapped.model.vis.quality.offsamples = 0
    return env


def _actions(env: gym.Env, n: int) -> np.ndarray:
    """Mild uniform random actions in [-0.3, 0.3] (the robots move without falling at once)."""
    return np.random.default_rng(0).uniform(-0.3, 0.3, (n, *env.action_space.shape))


def bench_render(env_id: str, frames: int, our_quality: bool = True) -> float:
    """Frames/s of ``step`` + ``render``, resetting at episode ends."""
    env = _make(env_id, our_quality)
    env.reset(seed=0)
    env.render()  # create the renderer outside the timing
    t0 = time.perf_counter()
    for a in _actions(env, frames):
        _, _, terminated, truncated, _ = env.step(a)
        if terminated or truncated:
            env.reset()
        env.render()
    elapsed = time.perf_counter() - t0
    env.close()
    return frames / elapsed


def bench_record(env_id: str, frames: int, shadows: bool = True, our_quality: bool = True) -> float:
    """Frames/s of recording clips (step, render, overlay, encode, closing the files), one per episode."""
    env = ClipRecorder(_make(env_id, our_quality), shadows=shadows)
    env.reset(seed=0)
    env.render()
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        env.arm(tmp, "bench", frames)  # at most one episode per frame
        env.reset(seed=0)
        for a in _actions(env, frames):
            _, _, terminated, truncated, _ = env.step(a)
            if terminated or truncated:
                env.reset()
        clips = env.disarm()
        elapsed = time.perf_counter() - t0
    env.close()
    return sum(c.frames for c in clips) / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--frames", type=int, default=300, help="frames per timing")
    parser.add_argument("--repeats", type=int, default=3, help="interleaved repeats; the median is reported")
    parser.add_argument("--quick", action="store_true", help="100 frames, 1 repeat")
    args = parser.parse_args()
    if args.quick:
        args.frames, args.repeats = 100, 1

    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, {platform.system()}")
    print(f"mujoco {mujoco.__version__}, MUJOCO_GL={os.environ.get('MUJOCO_GL')}, {SIZE}x{SIZE}")
    print(f"{args.frames} frames per timing, median of {args.repeats} interleaved repeats\n")

    n = args.frames
    rows: dict[str, Callable[[], float]] = {}
    for name in ("quadruped", "claw"):
        env_id = ENVS[name]
        rows[f"{name}/render"] = lambda env_id=env_id: bench_render(env_id, n)
        rows[f"{name}/record"] = lambda env_id=env_id: bench_record(env_id, n)
        rows[f"{name}/record_no_shadows"] = lambda env_id=env_id: bench_record(env_id, n, shadows=False)
    rows["ant/render_gymnasium_default"] = lambda: bench_render(ENVS["ant"], n, our_quality=False)
    rows["ant/record_gymnasium_default"] = lambda: bench_record(ENVS["ant"], n, our_quality=False)
    rows["ant/render_our_quality"] = lambda: bench_render(ENVS["ant"], n)
    rows["ant/record_our_quality"] = lambda: bench_record(ENVS["ant"], n)

    samples: dict[str, list[float]] = {key: [] for key in rows}
    for _ in range(args.repeats):  # interleave so that machine noise hits every row alike
        for key, fn in rows.items():
            samples[key].append(fn())
    print(f"{'benchmark':34s} {'median':>8s}  unit")
    for key, values in samples.items():
        print(f"{key:34s} {statistics.median(values):8.1f}  frames/s")


if __name__ == "__main__":
    main()
