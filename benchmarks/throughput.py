"""Simulation throughput, side by side in one run.

Prints steps per second (medians over interleaved repeats) for:

* raw ``mujoco.mj_step`` on each model, grouped ``frame_skip`` at a time (the physics floor);
* ``env.step`` of each env through ``gymnasium.make`` and unwrapped, and the ratio
  ``env.step time / frame_skip raw mj_steps`` (the Python overhead of our step);
* Gymnasium's ``Ant-v5`` for scale;
* ``gymnasium.make_vec`` sync and async vector envs with several copies.

``--batched`` prints the vector section instead: total env steps/s of ``N`` copies for every way to
vectorise (Gymnasium sync and async, SB3 ``DummyVecEnv`` and ``SubprocVecEnv`` over ``Monitor``-wrapped
envs as ``train.py`` builds them, and ours: ``envs.batched.BatchedVecEnv`` and the SB3
``BatchedDummyVecEnv``), next to one env through ``gymnasium.make``, and the ratio ours / one env;
``physics`` is the physical limit: the same ``N`` copies' ``mj_step``\\ s alone in one batch call on all
threads, from their reset states with the controls held (no Python per env), and ``batched / physics``
the fraction of it our vector env reaches.

``--terrain`` prints the terrain section instead: ``OpenClaw/QuadrupedTerrain-v1`` (height scan, curriculum)
beside ``OpenClaw/Quadruped-v1`` (flat), one env's and the x16 batch's steps/s while the scripted trot walks
both at 0.6 m/s across every terrain type at levels 0-5 (``terrain_section``; ``env.step`` timed alone), the
distances walked, and the terrain's step time over the flat one's; also the terrain's heightfield and box types
apart (``--leg-collisions``: also both envs with ``openclaw_go1``'s legs colliding).

``--arms`` prints the arms section instead: ``OpenClaw/Claw-v0`` with each ``arm=`` (``gantry``, ``panda``), the
same three figures as ``--robots`` (the overview camera; the Panda's meshes in view), each beside the gantry's.

``--robots`` prints the robots section instead: for each ``robot=`` of ``OpenClaw/Quadruped-v1``
(``envs.quadruped.ROBOTS``), one env's steps/s through ``gymnasium.make``, ``BatchedVecEnv`` x16 total
steps/s (``--vec`` sizes), and rgb frames/s at 480 x 480 from the tracking camera with the robot's meshes
in view, each beside ``openclaw_go1``'s.

Usage::

    python benchmarks/throughput.py                 # full table (a few minutes)
    python benchmarks/throughput.py --quick         # fewer steps and repeats
    python benchmarks/throughput.py --envs quadruped --vec 2 4 8 16 32
    python benchmarks/throughput.py --batched --quick --envs quadruped claw
    python benchmarks/throughput.py --robots --repeats 3
    python benchmarks/throughput.py --terrain --repeats 5
    python benchmarks/throughput.py --terrain --leg-collisions --repeats 5
    python benchmarks/throughput.py --arms --repeats 5

Results and the machine they were measured on live in ``benchmarks/RESULTS.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from collections.abc import Callable

import envs  # noqa: F401, I001  first: registers OpenClaw/* and picks the headless GL backend before mujoco loads

import gymnasium as gym
import mujoco
import numpy as np

from envs.batched import BatchedVecEnv

ENVS = {
    "quadruped": "OpenClaw/Quadruped-v0",
    "quadruped_v1": "OpenClaw/Quadruped-v1",  # the default job's env, as its evaluations make it (gait measures on)
    "quadruped_train": "OpenClaw/Quadruped-v1",  # ... and as its training envs do (configs/env/quadruped.yaml)
    "claw": "OpenClaw/Claw-v0",
    "ant": "Ant-v5",
}
ENV_KWARGS = {"quadruped_train": {"gait_measures": False}}  # the env arguments of an ENVS name, where it has any


def _actions(space: gym.Space, n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.uniform(space.low, space.high, size=(n, *space.shape)).astype(space.dtype)


def bench_env(env_id: str, steps: int, unwrapped: bool, seeds: int = 1, **kwargs) -> float:
    """Env steps/s with uniform random actions, resetting on termination/truncation (``kwargs``: the env's), over
    ``seeds`` stretches of ``steps / seeds`` steps (at least 50), each from an untimed ``reset(seed=k)``,
    k < ``seeds``."""
    env = gym.make(env_id, **kwargs)
    target = env.unwrapped if unwrapped else env
    per_seed = max(steps // seeds, 50)
    actions = _actions(env.action_space, per_seed)
    elapsed = 0.0
    for seed in range(seeds):
        target.reset(seed=seed)
        t0 = time.perf_counter()
        for a in actions:
            _, _, terminated, truncated, _ = target.step(a)
            if terminated or truncated:
                target.reset()
        elapsed += time.perf_counter() - t0
    env.close()
    return per_seed * seeds / elapsed


def bench_overhead(env_id: str, steps: int, **kwargs) -> tuple[float, float]:
    """(env.step time / frame_skip raw mj_steps, raw mj_step/s), from the same state with a zero action (``kwargs``:
    the env's).

    Both loops start from the state after ``reset(seed=0)``; the robot holds its default pose, so the
    contact set, and hence the physics cost, is the same in both.
    """
    env = gym.make(env_id, **kwargs).unwrapped
    zero = np.zeros(env.action_space.shape, dtype=np.float32)
    frame_skip = env.frame_skip
    env.reset(seed=0)
    env.step(zero)
    state = mujoco.MjData(env.model)
    mujoco.mj_copyData(state, env.model, env.data)

    t0 = time.perf_counter()
    for _ in range(steps):
        env.step(zero)
    env_time = time.perf_counter() - t0

    mujoco.mj_copyData(env.data, env.model, state)
    m, d = env.model, env.data
    t0 = time.perf_counter()
    for _ in range(steps):
        mujoco.mj_step(m, d, nstep=frame_skip)
    raw_time = time.perf_counter() - t0
    env.close()
    return env_time / raw_time, steps * frame_skip / raw_time


VECTOR_MODES = ("sync", "async", "sb3_subproc", "sb3_dummy", "batched", "sb3_batched")
PROCESS_MODES = ("async", "sb3_subproc")  # one process per copy


def make_vector(env_id: str, num_envs: int, mode: str, **kwargs):
    """A vector env of ``mode`` (one of ``VECTOR_MODES``; ``kwargs``: the env's); the SB3 ones as ``train.py`` makes
    them."""
    if mode in ("sync", "async"):
        return gym.make_vec(env_id, num_envs=num_envs, vectorization_mode=mode, **kwargs)
    if mode == "batched":
        return BatchedVecEnv(env_id, num_envs, **kwargs)
    from agents.vec_env import make_vec_env

    return make_vec_env(env_id, kwargs, num_envs, mode=mode.removeprefix("sb3_"))


def bench_vector(env_id: str, num_envs: int, mode: str, steps: int, **kwargs) -> float:
    """Total env steps/s of ``steps`` vector steps with uniform random actions (autoreset on; ``kwargs``: the
    env's)."""
    vec = make_vector(env_id, num_envs, mode, **kwargs)
    if mode.startswith("sb3_"):
        actions = _actions(vec.action_space, steps * num_envs).reshape(steps, num_envs, -1)
        vec.seed(0)
        vec.reset()
    else:
        actions = _actions(vec.action_space, steps)
        vec.reset(seed=0)
    t0 = time.perf_counter()
    for a in actions:
        vec.step(a)
    elapsed = time.perf_counter() - t0
    vec.close()
    return steps * num_envs / elapsed


def bench_physics(env_id: str, num_envs: int, steps: int, **kwargs) -> float:
    """Env steps/s of the physics alone for ``num_envs`` copies: ``frame_skip`` ``mj_step``\\ s of every
    copy per step in one ``mujoco.batch`` call on all threads, no Python per env (the physical limit
    of a batched vector env on this machine)."""
    sim = BatchedVecEnv(env_id, num_envs, **kwargs).sim
    for i in range(num_envs):
        sim.reset(i, seed=i)
        mujoco.mj_getState(sim.tasks[i].model, sim.tasks[i].data, sim._state[i], mujoco.mjtState.mjSTATE_INTEGRATION)
    t0 = time.perf_counter()
    for _ in range(steps):
        sim._batch.step(None, nstep=sim.frame_skip)
    elapsed = time.perf_counter() - t0
    sim.close()
    return steps * num_envs / elapsed


def vector_section(args: argparse.Namespace) -> dict[str, float]:
    """Run and print the ``--batched`` comparison; returns the medians by key."""
    sizes = args.vec or [2, 4, 8, 16, 32]
    names = [name for name in args.envs if name != "ant"]  # ours needs an OpenClaw (MujocoTaskEnv) env
    print(f"{len(os.sched_getaffinity(0))} cores, load average at start {os.getloadavg()[0]:.1f}")
    samples: dict[str, list[float]] = {}
    for _ in range(args.repeats):  # interleaved, so that machine noise hits every row alike
        for name in names:
            env_id, kwargs = ENVS[name], ENV_KWARGS.get(name, {})
            samples.setdefault(f"{name}/single", []).append(bench_env(env_id, args.steps, unwrapped=False, **kwargs))
            for n in sizes:
                for mode in VECTOR_MODES:
                    if mode in PROCESS_MODES and n > args.max_procs:
                        continue
                    rate = bench_vector(env_id, n, mode, max(args.steps // n, 50), **kwargs)
                    samples.setdefault(f"{name}/{mode}_x{n}", []).append(rate)
                rate = bench_physics(env_id, n, max(args.steps // n, 50), **kwargs)
                samples.setdefault(f"{name}/physics_x{n}", []).append(rate)
    results = {k: statistics.median(v) for k, v in samples.items()}
    print(f"load average at end {os.getloadavg()[0]:.1f}")
    for name in names:
        single = results[f"{name}/single"]
        print(f"\n{name}: env steps/s (median of {args.repeats}); one env via gym.make: {single:,.0f}")
        print("| N | " + " | ".join(VECTOR_MODES) + " | physics | batched / single | sb3_batched / single "
              "| physics / single | batched / physics |")
        print("|---:|" + "---:|" * (len(VECTOR_MODES) + 5))
        for n in sizes:
            cells = [f"{results[f'{name}/{m}_x{n}']:,.0f}" if f"{name}/{m}_x{n}" in results else "-"
                     for m in (*VECTOR_MODES, "physics")]
            ratios = [f"{results[f'{name}/{m}_x{n}'] / single:.2f}x" for m in ("batched", "sb3_batched", "physics")]
            fraction = results[f"{name}/batched_x{n}"] / results[f"{name}/physics_x{n}"]
            print(f"| {n} | " + " | ".join(cells + ratios) + f" | {fraction:.0%} |")
    return results


def bench_variant(env_id: str, steps: int, num_envs: int, frames: int = 60, seeds: int = 1,
                  **kwargs) -> dict[str, float]:
    """``env_id(**kwargs)``'s single-env steps/s, batched x``num_envs`` total steps/s and 480 x 480 render frames/s.
    The step figures run ``seeds`` stretches (:func:`bench_env`); the batch's k-th starts from an untimed
    ``reset(seed=k * num_envs)`` (copy i's seed is ``k * num_envs + i``), each ``steps / (num_envs * seeds)`` batch
    steps (at least 50)."""
    single = bench_env(env_id, steps, unwrapped=False, seeds=seeds, **kwargs)
    vec = BatchedVecEnv(env_id, num_envs, **kwargs)
    batch = _actions(vec.action_space, max(steps // (num_envs * seeds), 50))
    elapsed = 0.0
    for k in range(seeds):
        vec.reset(seed=k * num_envs)
        t0 = time.perf_counter()
        for a in batch:
            vec.step(a)
        elapsed += time.perf_counter() - t0
    batched = len(batch) * num_envs * seeds / elapsed
    vec.close()
    env = gym.make(env_id, render_mode="rgb_array", width=480, height=480, **kwargs)
    env.reset(seed=0)
    zero = np.zeros(env.action_space.shape, dtype=np.float32)
    env.render()  # the first frame builds the GL context
    t0 = time.perf_counter()
    for _ in range(frames):
        env.step(zero)
        env.render()
    render = frames / (time.perf_counter() - t0)
    env.close()
    return {"single": single, f"batched_x{num_envs}": batched, "render_480": render}


VARIANT_TITLES = ("env steps/s (one env)", "batched x{n} steps/s", "render 480x480 fps")  # bench_variant's keys


def compare_variants(args: argparse.Namespace, variants: dict[str, tuple[str, dict]], label: str,
                     bench: Callable[..., dict[str, float]] = bench_variant,
                     titles: tuple[str, ...] = VARIANT_TITLES, episodes: str | None = None) -> dict[str, float]:
    """Interleaved medians of ``bench(env id, args.steps, n, seeds=args.seeds, **kwargs)`` (:func:`bench_variant`
    unless told) for each ``name: (env id, kwargs)`` and a table of them, one column per key of ``bench``'s result
    (``titles``, in its order; ``{n}``: the batch size), each beside the first variant's (ratios: 0.5x = half the
    first's figure, for steps/s half its speed); ``episodes`` says which episodes ``bench`` runs (default
    :func:`bench_variant`'s seeds); returns the medians by key."""
    n = (args.vec or [16])[0]
    print(f"{len(os.sched_getaffinity(0))} cores, load average at start {os.getloadavg()[0]:.1f}")
    print(episodes or f"episodes from seeds 0 .. {args.seeds - 1} (one env), copies' seeds 0 .. {n * args.seeds - 1} "
          "(batched)")
    samples: dict[str, list[float]] = {}
    for _ in range(args.repeats):  # interleaved
        for name, (env_id, kwargs) in variants.items():
            for key, value in bench(env_id, args.steps, n, seeds=args.seeds, **kwargs).items():
                samples.setdefault(f"{name}/{key}", []).append(value)
    results = {k: statistics.median(v) for k, v in samples.items()}
    print(f"load average at end {os.getloadavg()[0]:.1f}\n")
    first = next(iter(variants))
    ref = {k.split("/")[1]: v for k, v in results.items() if k.startswith(f"{first}/")}
    print(f"| {label} | " + " | ".join(title.format(n=n) for title in titles) + f" | each / {first} |")
    print("|---|" + "---:|" * len(titles) + "---|")
    for name in variants:
        row = [results[f"{name}/{k}"] for k in ref]
        ratios = " / ".join(f"{v / r:.2f}x" for v, r in zip(row, ref.values()))
        print(f"| {name} | " + " | ".join(f"{v:,.0f}" if v >= 100 else f"{v:.2f}" for v in row) + f" | {ratios} |")
    return results


def robots_section(args: argparse.Namespace) -> dict[str, float]:
    """The ``--robots`` comparison: every ``robot=`` of ``OpenClaw/Quadruped-v1``."""
    from envs.quadruped import ROBOTS

    return compare_variants(args, {robot: ("OpenClaw/Quadruped-v1", {"robot": robot}) for robot in ROBOTS}, "robot")


def arms_section(args: argparse.Namespace) -> dict[str, float]:
    """The ``--arms`` comparison: ``OpenClaw/Claw-v0`` with each ``arm=`` (the gantry, the Panda's meshes and IK)."""
    from envs.claw import ClawEnv

    return compare_variants(args, {arm: ("OpenClaw/Claw-v0", {"arm": arm}) for arm in ClawEnv.ARMS}, "arm")


WALK_COMMAND = (0.6, 0.0, 0.0)  # the walking episodes' command: vx m/s, vy m/s, wz rad/s (forward, +x)
WALK_LEVELS = 6  # the walking episodes' terrain levels: 0 .. 5 (the curriculum's start, max_init_level)
WALK_EPISODES = 12  # --terrain's default --seeds: walking episodes per one-env figure, two per terrain type


def _walk_options(env: gym.Env, k: int) -> dict:
    """Reset options of walking episode ``k``: :data:`WALK_COMMAND`; on the terrain (an env with a
    ``terrain_type`` option) also heading +x and the tile of type ``k mod T`` of its ``T`` types
    (``terrain_types``, default all six) at level ``(k + k // T) mod WALK_LEVELS``: episodes 0 .. 2T - 1 walk
    every type at two levels and every level 0 .. 5."""
    u = env.unwrapped
    if "terrain_type" not in u.RESET_OPTIONS:
        return {"command": WALK_COMMAND}
    from envs.quadruped.terrain import TERRAIN_TYPES

    types = list(u.terrain_types or TERRAIN_TYPES)
    return {"command": WALK_COMMAND, "heading": 0.0, "terrain_type": types[k % len(types)],
            "terrain_level": (k + k // len(types)) % WALK_LEVELS}


def _trot(env: gym.Env, targets: list[gym.Env]):
    """The scripted trot for ``env``'s robot (terrain-aware where its ``controller_spec`` has a height scan; its
    parameters ``TrotParams.for_robot``'s, as the tests and ``evaluate.py policy=trot`` load them), its
    ``env_settings`` applied to each of ``targets``."""
    from envs.controllers.trot import TrotController

    trot = TrotController(spec=env.unwrapped.controller_spec)
    for method, settings in trot.env_settings().items():
        for each in targets:
            getattr(each.unwrapped, method)(*settings)
    return trot


def bench_walk(env_id: str, steps: int, num_envs: int, seeds: int = WALK_EPISODES, **kwargs) -> dict[str, float]:
    """``env_id(**kwargs)`` walked by the scripted trot (:func:`_trot`): one env's steps/s, batched x``num_envs``
    total steps/s, and the mean horizontal distance (m) of the trunk from its spawn when an episode ends (falls
    included), for each. Only ``env.step`` / ``vec.step`` is timed: the trot's actions, the resets and the distances
    are computed outside the timed region.

    One env walks ``seeds`` episodes k = 0 .. ``seeds - 1`` (:func:`_walk_options`, ``reset(seed=k)``) of
    ``steps / seeds`` steps each (at least 50); a fall ends the episode early. The batch walks one episode of as many
    steps, copy i walking episode i (reset one by one, seed i), a fallen copy going on from its autoreset."""
    per_episode = max(steps // seeds, 50)
    env = gym.make(env_id, **kwargs)
    trot = _trot(env, [env])
    elapsed, done, distances = 0.0, 0, []
    for k in range(seeds):
        obs, _ = env.reset(seed=k, options=_walk_options(env, k))
        spawn = env.unwrapped.data.qpos[0:2].copy()
        for _ in range(per_episode):
            action = trot.act(obs[None])[0]
            t0 = time.perf_counter()
            obs, _, terminated, truncated, _ = env.step(action)
            elapsed += time.perf_counter() - t0
            done += 1
            if terminated or truncated:
                break
        distances.append(float(np.linalg.norm(env.unwrapped.data.qpos[0:2] - spawn)))
    single, single_distance = done / elapsed, float(np.mean(distances))
    env.close()

    vec = BatchedVecEnv(env_id, num_envs, **kwargs)
    trot = _trot(vec.envs[0], vec.envs)
    for i in range(num_envs):
        mask = np.arange(num_envs) == i
        obs, _ = vec.reset(seed=[i] * num_envs, options={**_walk_options(vec.envs[i], i), "reset_mask": mask})

    def positions() -> np.ndarray:
        return np.array([each.unwrapped.data.qpos[0:2] for each in vec.envs])

    spawn, distances, restarting = positions(), [], np.zeros(num_envs, dtype=bool)
    elapsed = 0.0
    for _ in range(per_episode):
        actions = trot.act(obs)
        t0 = time.perf_counter()
        obs, _, terminated, truncated, _ = vec.step(actions)
        elapsed += time.perf_counter() - t0
        spawn[restarting] = positions()[restarting]  # these copies' autoreset step: their new spawn
        restarting = terminated | truncated
        distances += np.linalg.norm(positions()[restarting] - spawn[restarting], axis=1).tolist()
    distances += np.linalg.norm(positions()[~restarting] - spawn[~restarting], axis=1).tolist()
    vec.close()
    return {"single": single, f"batched_x{num_envs}": per_episode * num_envs / elapsed,
            "distance_m": single_distance, f"distance_x{num_envs}_m": float(np.mean(distances))}


def terrain_section(args: argparse.Namespace) -> dict[str, float]:
    """The ``--terrain`` comparison, while the scripted trot walks (:func:`bench_walk`): the terrain curriculum beside
    flat ground (``openclaw_go1``), and the terrain with only its heightfield types (rough ground and slopes) or
    only its box types (stairs, obstacles); with ``--leg-collisions`` also flat and terrain with the legs colliding
    (the env argument ``leg_collisions``). Then the terrain's step time over the flat one's, one env and batched.

    Both envs are driven by the trot at :data:`WALK_COMMAND` (0.6 m/s forward), the terrain's episodes each on a
    fixed tile (:func:`_walk_options`: every type, levels 0 .. 5), so that the timed steps walk off the spawn
    platform and over the tile (the distances in the table, m). Until 2026-12-07 this section timed uniform random
    actions from seeded resets (:func:`bench_variant`), under which the robots barely leave the spawn platforms
    (issue 78); those figures are in ``benchmarks/RESULTS.md``, and the random-action comparison is ``--robots``'s
    and ``--arms``'s only now. No render figure: rendering does not depend on where the robot walks."""
    from envs.quadruped.terrain import STEPPED_TYPES, TERRAIN_TYPES

    terrain = "OpenClaw/QuadrupedTerrain-v1"
    heightfield = [kind for kind in TERRAIN_TYPES if kind not in STEPPED_TYPES]
    variants = {"flat": ("OpenClaw/Quadruped-v1", {}), "terrain": (terrain, {}),
                "terrain: rough, slopes": (terrain, {"terrain_types": heightfield}),
                "terrain: stairs, obstacles": (terrain, {"terrain_types": list(STEPPED_TYPES)})}
    if args.leg_collisions:
        variants |= {f"{name}+legs": (variants[name][0], {"leg_collisions": True}) for name in ("flat", "terrain")}
    n = (args.vec or [16])[0]
    titles = ("env steps/s (one env)", "batched x{n} steps/s", "distance (m, one env)", "distance (m, x{n})")
    per_episode = max(args.steps // args.seeds, 50)
    episodes = (f"the trot walking at {WALK_COMMAND[0]} m/s: {args.seeds} episodes of {per_episode} steps (one env), "
                f"copy i of {n} walking episode i (batched); terrain levels 0 .. {WALK_LEVELS - 1}")
    results = compare_variants(args, variants, "env", bench=bench_walk, titles=titles, episodes=episodes)
    for name in variants:
        if name != "flat" and not name.startswith("flat+"):
            flat = "flat+legs" if name.endswith("+legs") else "flat"
            ratios = [results[f"{flat}/{k}"] / results[f"{name}/{k}"] for k in ("single", f"batched_x{n}")]
            print(f"{name}: step time / {flat}'s: one env {ratios[0]:.2f}x, x{n} {ratios[1]:.2f}x (target <= 1.3x)")
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--envs", nargs="+", default=["quadruped", "claw", "ant"], choices=sorted(ENVS))
    parser.add_argument("--vec", nargs="*", type=int, help="vector env sizes (default 2 4 8; --batched: 2 4 8 16 32)")
    parser.add_argument("--modes", nargs="*", default=["sync", "async"], choices=["sync", "async"])
    parser.add_argument("--steps", type=int, default=3000, help="env steps per timing")
    parser.add_argument("--repeats", type=int, default=5, help="interleaved repeats; the median is reported")
    parser.add_argument("--quick", action="store_true",
                        help="1000 steps, 3 repeats (--batched: process-based up to 8 copies)")
    parser.add_argument("--batched", action="store_true", help="the vector section: every vectorisation incl. ours")
    parser.add_argument("--robots", action="store_true", help="the robots section: every robot= of Quadruped-v1")
    parser.add_argument("--terrain", action="store_true", help="the terrain section: QuadrupedTerrain-v1 vs flat")
    parser.add_argument("--leg-collisions", action="store_true", help="--terrain: also both with leg_collisions=True")
    parser.add_argument("--seeds", type=int, help="--robots/--arms/--terrain: episodes from this many seeds per figure "
                        f"(default 1; --terrain: {WALK_EPISODES} walking episodes, two per terrain type)")
    parser.add_argument("--arms", action="store_true", help="the arms section: every arm= of Claw-v0")
    parser.add_argument("--max-procs", type=int, default=32, help="--batched: largest N for process-based vector envs")
    parser.add_argument("--json", help="also write the results to this file")
    args = parser.parse_args()
    if args.quick:
        args.steps, args.repeats, args.max_procs = 1000, 3, min(args.max_procs, 8)
    if args.seeds is not None and args.seeds < 1:
        parser.error(f"--seeds {args.seeds}: give a whole number >= 1")
    if args.seeds is not None and not (args.robots or args.arms or args.terrain):
        parser.error("--seeds applies to the --robots, --arms and --terrain sections; add one of them")
    if args.seeds is None:
        args.seeds = WALK_EPISODES if args.terrain else 1

    machine = platform.processor() or platform.machine()
    print(f"machine: {machine}, {platform.system()}, python {platform.python_version()}")
    print(f"mujoco {mujoco.__version__}, gymnasium {gym.__version__}, numpy {np.__version__}")
    print(f"steps per timing {args.steps}, median of {args.repeats} interleaved repeats\n")
    sections = {"batched": vector_section, "robots": robots_section, "terrain": terrain_section, "arms": arms_section}
    chosen = [section for name, section in sections.items() if getattr(args, name)]
    if chosen:
        section = chosen[0]
        results = section(args)
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"results": results, "args": vars(args)}, f, indent=2)
        return
    args.vec = [2, 4, 8] if args.vec is None else args.vec

    samples: dict[str, list[float]] = {}

    def record(key: str, value: float) -> None:
        samples.setdefault(key, []).append(value)

    for _ in range(args.repeats):  # interleave so that machine noise hits every row alike
        for name in args.envs:
            env_id, kwargs = ENVS[name], ENV_KWARGS.get(name, {})
            ratio, raw = bench_overhead(env_id, args.steps, **kwargs)
            record(f"{name}/raw_mj_step", raw)
            record(f"{name}/overhead_ratio", ratio)
            record(f"{name}/env_step", bench_env(env_id, args.steps, unwrapped=False, **kwargs))
            record(f"{name}/env_step_unwrapped", bench_env(env_id, args.steps, unwrapped=True, **kwargs))
            for mode in args.modes:
                for n in args.vec:
                    record(f"{name}/{mode}_x{n}", bench_vector(env_id, n, mode, max(args.steps // n, 50), **kwargs))

    results = {k: statistics.median(v) for k, v in samples.items()}
    print(f"{'benchmark':34s} {'median':>12s}  unit")
    for key, value in results.items():
        unit = "x (env.step / frame_skip raw steps)" if key.endswith("ratio") else "steps/s"
        print(f"{key:34s} {value:12.2f}  {unit}" if unit.startswith("x") else f"{key:34s} {value:12.0f}  {unit}")
    if "ant" in args.envs:
        ant = results["ant/env_step"]
        print()
        for name in args.envs:
            if name != "ant":
                print(f"{name} env_step / Ant-v5 env_step: {results[f'{name}/env_step'] / ant:.2f}x")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"results": results, "samples": samples, "args": vars(args)}, f, indent=2)


if __name__ == "__main__":
    main()
