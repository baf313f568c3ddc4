"""Tune the scripted trot for one robot, offline, with CMA-ES: ``python -m envs.controllers.tune robot=go2``.

The search runs over every :class:`~envs.controllers.trot.TrotParams` field within its ``BOUNDS``
(normalised to [0, 1] for CMA-ES, from the maintained ``cma`` package, a core dependency),
starting from the class defaults (hand-tuned for ``openclaw_go1``). A candidate's fitness is the mean,
over ``episodes`` seeded episodes of ``steps`` control steps on ``OpenClaw/Quadruped-v1`` with the default
command ranges (seeds 0 .. episodes-1), of the episode's mean tracking error (m/s) plus its stance slip (m/s,
the env's gait measure) plus 1 if the robot fell: minus :class:`~envs.controllers.trot.QuadrupedScore`'s score, lower is better. Episodes run together
in one :class:`~envs.batched.BatchedSimulation` (the trot acts on the whole batch in one call).

The best candidate is then validated beside the untuned defaults on ``validation`` other episodes of
the full 20 s (seeds 1000 ..), and written, with both validations and the search's settings and CPU
time, to ``envs/controllers/trot_params/<robot>.json``: :meth:`TrotParams.for_robot` reads it as the
robot's defaults (``distill=scripted``, ``evaluate.py policy=trot``, the adaptive teacher's start).

Arguments (``key=value``): ``robot`` (required), ``generations`` (30), ``popsize`` (12), ``episodes``
(12), ``steps`` (500 = 10 s), ``validation`` (50), ``sigma`` (0.2, of the normalised range), ``seed`` (0),
``start`` (``defaults``, or ``tuned``: continue from the robot's parameter file, whose earlier searches the
new file keeps under ``previous``), ``out`` (the parameter file). Progress: one line per generation (best and mean fitness, elapsed and CPU
time).
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import fields
from pathlib import Path
from typing import Any

import numpy as np

import envs  # noqa: F401  (registers the OpenClaw ids)
from envs.batched import BatchedSimulation
from envs.controllers.trot import PARAMS_DIR, QuadrupedScore, TrotController, TrotParams
from envs.quadruped import robot_named

ENV_ID = "OpenClaw/Quadruped-v1"
VALIDATION_SEED = 1000
DEFAULTS = {"generations": 30, "popsize": 12, "episodes": 12, "steps": 500, "validation": 50, "sigma": 0.2,
            "seed": 0, "start": "defaults"}
STARTS = ("defaults", "tuned")
NAMES = [f.name for f in fields(TrotParams) if f.name not in TrotParams.TERRAIN_FIELDS]  # the flat envs' trot
LOW = np.array([TrotParams.BOUNDS[n][0] for n in NAMES], dtype=float)
HIGH = np.array([TrotParams.BOUNDS[n][1] for n in NAMES], dtype=float)


def evaluate_trot(robot: str, params: TrotParams | None, seeds: range | list[int], steps: int = 1000,
                  **env_kwargs: Any) -> dict[str, float]:
    """The trot with ``params`` (``None``: the robot's defaults) on seeded episodes of ``ENV_ID``, all at once.

    Returns ``episodes``, ``falls``, ``fall_rate``, ``tracking_error`` (m/s: the mean over episodes of
    each episode's mean |v_xy - cmd_xy|, body frame, as the evaluations report it), ``stance_slip`` (m/s) and
    ``swing_apex`` (cm) (the env's gait measures, mean over episodes), ``fitness`` (the mean of tracking error
    + stance slip + fell per episode; lower is better) and ``saturated``: per joint kind (hip, thigh,
    knee; the four legs together) the fraction of control steps whose action is at the +-1 limit.
    """
    seeds = list(seeds)
    sim = BatchedSimulation(ENV_ID, len(seeds), robot=robot, **env_kwargs)
    try:
        trot = TrotController(params, spec=sim.tasks[0].controller_spec)
        for task in sim.tasks:
            task.set_gait_frequency(trot.params.frequency_hz)
        for i, seed in enumerate(seeds):
            sim.reset(i, seed=seed)
        scores = [QuadrupedScore() for _ in seeds]
        apex = np.zeros(len(seeds))  # each episode's swing apex (cm)
        running = np.arange(len(seeds))
        clipped, acted = np.zeros(3), 0
        for _ in range(steps):
            actions = np.zeros((len(seeds), 12), dtype=np.float32)
            actions[running] = trot.act(sim.obs[running])
            clipped += (np.abs(actions[running]) >= 1.0).reshape(-1, 4, 3).sum(axis=(0, 1))
            acted += 4 * len(running)
            result = sim.step(actions, running)
            info = result.infos.arrays()
            for j, i in enumerate(running.tolist()):
                scores[i].add(None, {key: info[key][j] for key in ("tracking_error", "fell", "stance_slip")})
                apex[i] = info["swing_apex"][j]
            running = running[~(result.terminated | result.truncated)]
            if not len(running):
                break
    finally:
        sim.close()
    metrics = [s.metrics() for s in scores]
    falls = int(sum(m["fall"] for m in metrics))
    return {"episodes": len(seeds), "falls": falls, "fall_rate": falls / len(seeds),
            "tracking_error": float(np.mean([m["tracking_error"] for m in metrics])),
            "stance_slip": float(np.mean([m["stance_slip"] for m in metrics])), "swing_apex": float(np.mean(apex)),
            "fitness": float(np.mean([-m["score"] for m in metrics])),
            "saturated": dict(zip(("hip", "thigh", "knee"), (clipped / acted).round(4).tolist()))}


def to_params(x: np.ndarray) -> TrotParams:
    """The parameters at a point of the normalised search box [0, 1]^n."""
    values = LOW + np.clip(x, 0.0, 1.0) * (HIGH - LOW)
    return TrotParams(**{n: float(v) for n, v in zip(NAMES, values)}).validate()


def to_unit(params: TrotParams) -> np.ndarray:
    values = np.array([getattr(params, n) for n in NAMES], dtype=float)
    return np.clip((values - LOW) / (HIGH - LOW), 0.0, 1.0)


def tune(robot: str, generations: int, popsize: int, episodes: int, steps: int, sigma: float, seed: int,
         start: TrotParams, log=print) -> tuple[TrotParams, dict[str, Any]]:
    """CMA-ES over the normalised parameters; returns the best parameters found and the search's record."""
    import cma
    es = cma.CMAEvolutionStrategy(to_unit(start), sigma, {
        "bounds": [0.0, 1.0], "popsize": popsize, "seed": seed + 1, "verbose": -9})
    best, best_fitness = start, evaluate_trot(robot, start, range(episodes), steps)["fitness"]
    log(f"tune {robot}: start fitness {best_fitness:.3f}")
    wall0, cpu0 = time.monotonic(), time.process_time()
    history = []
    for generation in range(1, generations + 1):
        candidates = es.ask()
        fitness = [evaluate_trot(robot, to_params(x), range(episodes), steps)["fitness"] for x in candidates]
        es.tell(candidates, fitness)
        k = int(np.argmin(fitness))
        if fitness[k] < best_fitness:
            best, best_fitness = to_params(candidates[k]), fitness[k]
        history.append({"generation": generation, "best": best_fitness, "mean": float(np.mean(fitness))})
        log(f"  generation {generation:3d}/{generations}: best {best_fitness:.3f}  generation mean "
            f"{np.mean(fitness):.3f}  ({time.monotonic() - wall0:.0f} s, CPU {time.process_time() - cpu0:.0f} s)")
    record = {"generations": generations, "popsize": popsize, "episodes": episodes, "steps": steps,
              "sigma": sigma, "seed": seed, "evaluations": generations * popsize, "fitness": best_fitness,
              "wall_s": round(time.monotonic() - wall0, 1), "cpu_s": round(time.process_time() - cpu0, 1),
              "history": history}
    return best, record


def parse(argv: list[str]) -> dict[str, Any]:
    """``key=value`` arguments (the module docstring); ``SystemExit`` naming a bad one."""
    settings: dict[str, Any] = dict(DEFAULTS, robot=None, out=None)
    for arg in argv:
        key, sep, value = arg.partition("=")
        if not sep or key not in settings:
            raise SystemExit(f"tune: bad argument {arg!r}; use key=value with keys {', '.join(settings)}")
        settings[key] = value if key in ("robot", "out") else type(DEFAULTS[key])(value)
    if settings["start"] not in STARTS:
        raise SystemExit(f"tune: start={settings['start']!r}; use one of {', '.join(STARTS)}")
    if settings["robot"] is None:
        raise SystemExit("tune: robot= is required, e.g. python -m envs.controllers.tune robot=go2")
    try:
        robot_named(settings["robot"])
    except ValueError as err:
        raise SystemExit(f"tune: {err}") from None
    return settings


def main(argv: list[str]) -> None:
    s = parse(argv)
    robot = s["robot"]
    out = Path(s["out"]) if s["out"] else PARAMS_DIR / f"{robot}.json"
    previous = []
    if s["start"] == "tuned":
        earlier = json.loads((PARAMS_DIR / f"{robot}.json").read_text())
        previous = earlier.get("previous", []) + [earlier["search"]]
    start = TrotParams.for_robot(robot) if s["start"] == "tuned" else TrotParams()
    best, record = tune(robot, s["generations"], s["popsize"], s["episodes"], s["steps"], s["sigma"], s["seed"],
                        start)
    record["start"] = s["start"]
    seeds = range(VALIDATION_SEED, VALIDATION_SEED + s["validation"])
    validation = {"seeds": [seeds.start, seeds.stop - 1], "steps": 1000,
                  "untuned": evaluate_trot(robot, TrotParams(), seeds), "tuned": evaluate_trot(robot, best, seeds)}
    for arm in ("untuned", "tuned"):
        v = validation[arm]
        print(f"validation {arm}: {v['falls']}/{v['episodes']} falls, tracking error {v['tracking_error']:.3f} m/s, "
              f"stance slip {v['stance_slip']:.3f} m/s, swing apex {v['swing_apex']:.1f} cm")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"robot": robot, "params": best.to_dict(), "search": record, "previous": previous,
                               "validation": validation}, indent=1) + "\n")
    print(f"wrote {out} (search: {record['evaluations']} candidates, {record['wall_s']:.0f} s, "
          f"CPU {record['cpu_s']:.0f} s)")


if __name__ == "__main__":
    main(sys.argv[1:])
