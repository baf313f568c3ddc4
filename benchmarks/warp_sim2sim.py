"""A trained policy on MuJoCo Warp worlds and on C MuJoCo copies of the same env, side by side: the episode statistics
of each (issue 80: the Warp env is the C env's task for a policy, not only for one step; ``tests/test_warp.py``
checks the step).

For each run directory: its latest checkpoint's deterministic actor (the exported maths, as ``terrain.py`` evaluates
it) on ``--worlds`` Warp worlds of its env (its evaluation arguments; on the terrain, the held-out terrain seed and
``--types``) and on as many copies of the C env (the batched vector env), both seeded ``--seed``, ``--seed + 1``, ...
(on the terrain, copy ``k`` starts on the same tile on both sides: :func:`places`), for ``--steps`` control steps,
episodes restarting as they end.
Per side: the episodes that ended, the share of them that fell, on the terrain the share that left their tile, and the
mean tracking error (m/s) over every step. Warp's CPU device is enough (``--device cpu``): it is a check of the task,
not a speed.

    PYTHONPATH=. python benchmarks/warp_sim2sim.py --runs <run dir> --worlds 32 --steps 1000 --types stairs_up
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import torch

from terrain import policy_act  # benchmarks/terrain.py


def warp_side(act, env_id: str, kwargs: dict, worlds: int, steps: int, seed: int, device: str) -> dict[str, float]:
    from envs.quadruped.warp_sim import WarpQuadruped

    sim = WarpQuadruped(env_id, worlds, device=device, seed=seed, **kwargs)
    if sim.tiles is not None:
        for world, place in enumerate(places(sim.env, worlds)):
            sim.tiles.set_curriculum_state(world, place)
        sim.reset_worlds(torch.ones(worlds, dtype=torch.bool, device=sim.device))
    tally = _Tally()
    obs = sim.observe_reset()
    for _ in range(steps):
        obs, _, fell, truncated, info = sim.step(torch.as_tensor(act(obs.cpu().numpy()), device=sim.device))
        done = (fell | truncated).cpu().numpy()
        tally.add(info["tracking_error"].cpu().numpy(), done, fell.cpu().numpy(),
                  info["left_tile"].cpu().numpy() if "left_tile" in info else None)
    return tally.figures()


def c_side(act, env_id: str, kwargs: dict, copies: int, steps: int, seed: int) -> dict[str, float]:
    from agents.vec_env import make_vec_env

    venv = make_vec_env(env_id, kwargs, copies, "batched")
    venv.seed(seed)
    if venv.has_attr("set_curriculum_state"):
        env = venv.get_attr("unwrapped", indices=[0])[0]
        for copy, place in enumerate(places(env, copies)):
            venv.env_method("set_curriculum_state", place, indices=[copy])
    obs, tally = venv.reset(), _Tally()
    for _ in range(steps):
        obs, _, dones, infos = venv.step(act(obs))
        fell = np.array([bool(i["fell"]) for i in infos])
        left = np.array([bool(i["left_tile"]) for i in infos]) if "left_tile" in infos[0] else None
        tally.add(np.array([i["tracking_error"] for i in infos]), dones, fell, left)
    venv.close()
    return tally.figures()


def places(env, copies: int) -> list[dict[str, int]]:
    """The tiles the copies start on, the same on both sides: copy ``k`` on the ``k``-th of the env's drawn columns
    (its ``terrain_types``, cycled) at level ``k % 6`` (levels 0-5)."""
    columns = env._drawn_columns
    return [{"column": columns[k % len(columns)], "level": k % 6} for k in range(copies)]


class _Tally:
    """The episodes' ends and the steps' tracking errors of one side."""

    def __init__(self) -> None:
        self.errors: list[float] = []
        self.ended = self.fell = self.left = 0
        self.tiles = False

    def add(self, error: np.ndarray, done: np.ndarray, fell: np.ndarray, left: np.ndarray | None) -> None:
        self.errors.append(float(error.mean()))
        self.ended += int(done.sum())
        self.fell += int((done & fell).sum())
        if left is not None:
            self.tiles = True
            self.left += int((done & left).sum())

    def figures(self) -> dict[str, float]:
        out = {"episodes": self.ended, "falls": self.fell / max(self.ended, 1),
               "tracking_error": float(np.mean(self.errors))}
        if self.tiles:
            out["left_tile"] = self.left / max(self.ended, 1)
        return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=Path, nargs="+", required=True)
    p.add_argument("--worlds", type=int, default=32)
    p.add_argument("--steps", type=int, default=1000, help="control steps per side (1000: one 20 s episode)")
    p.add_argument("--seed", type=int, default=10_000)
    p.add_argument("--types", nargs="*", help="the terrain's types (terrain_types); default: the run's")
    p.add_argument("--device", default="cpu")
    a = p.parse_args()
    import envs  # noqa: F401  (registers OpenClaw/*)
    from agents.evaluation.tiles import held_out_kwargs

    for run in a.runs:
        act, kwargs, step = policy_act(run)
        from omegaconf import OmegaConf

        env_id = OmegaConf.load(run / "config.yaml").env.id
        if "terrain_seed" in kwargs or "Terrain" in env_id:
            kwargs = held_out_kwargs(kwargs)
            if a.types:
                kwargs["terrain_types"] = a.types
        print(f"## {run.name} (step {step}) on {env_id}, {a.worlds} copies x {a.steps} steps, seeds {a.seed}+")
        rows = {"MuJoCo Warp": warp_side(act, env_id, kwargs, a.worlds, a.steps, a.seed, a.device),
                "C MuJoCo": c_side(act, env_id, kwargs, a.worlds, a.steps, a.seed)}
        keys = list(rows["C MuJoCo"])
        print("| side | " + " | ".join(keys) + " |\n|---|" + "---|" * len(keys))
        for side, figures in rows.items():
            print(f"| {side} | " + " | ".join(f"{figures[k]:.3f}" if isinstance(figures[k], float) else str(figures[k])
                                              for k in keys) + " |")


if __name__ == "__main__":
    main()
