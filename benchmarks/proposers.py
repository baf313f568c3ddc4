"""Proposers where the controller's defaults fail: the teacher phase at one budget of verified proposals.

Three "default fails" cases (``CASES``), each an env, the controller's starting parameters there and the
episodes its validation plays:

``go2``        the trot with its class defaults (tuned by hand for ``openclaw_go1``) on the Go2, flat ground, the
               default commands; offline-tuned reference: ``envs/controllers/trot_params/go2.json``
``stairs``     the terrain trot (``trot_params/openclaw_go1_terrain.json``) on ``stairs_up`` tiles, level
               ``--level`` (3: 7.1 cm risers for ``openclaw_go1``); one task context
``claw_hard``  the grasp with ``GraspParams()`` on ``configs/env/claw_hard.yaml``'s heavy, slippery cubes of varied
               size: eight task contexts (object classes), one parameter set each

Per arm the teacher phase runs the adaptive teacher's parts as training runs them, without a student: the
controller acts alone in the case's env; every finished segment (``--segment-steps`` steps or an episode)
becomes a request for its context (:func:`coach.llm.hints.build_request` with that segment's summary), which
the arm's proposer answers through :class:`coach.proposals.ProposalService` with the run's verifier
(:class:`coach.verifier.ShadowVerifier`, ``distill`` defaults of ``configs/distill/adaptive.yaml``
unless ``--verify-rollouts``/``--verify-steps``/``--verify-confirm`` say otherwise; ``--verify-confirm N``: the
held-out confirmation on N episodes per parameter set, seeds from 1000000, never the validation's), and the
outcome goes into a :class:`coach.contexts.ContextTable`. One proposal is in flight at a time, until ``--budget`` proposals were
verified. After every ``--every`` verified proposals the table is validated: ``--episodes`` episodes (seeds
1000, 1001, ...: never the verifier's seeds 0, 1) in which each episode's controller takes its context's
parameters; the score is the verifier's (quadruped: minus tracking error in m/s minus falls; claw: success minus
final distance in m), with the falls / success rate beside it.

Arms: ``untuned`` (the starting parameters, never changed), ``tuned`` (the offline reference: the robot's parameter
file for ``go2``; elsewhere an offline CMA-ES on the validation protocol with other seeds, :func:`offline_tuned`), ``coach``, ``random``, ``cma``, ``llm`` (the ``llm`` channel: pass ``llm.*`` overrides after ``--``, e.g.
the ones ``benchmarks/llama_server.sh`` prints) and ``llm_cma``. Results: ``runs/benchmarks/proposers/<case>/
<arm>_s<seed>.json`` (the curve, the proposal counts, the verifier's CPU seconds and the wall clock);
``report`` prints the table. ``--pooled``: one parameter set for every context (``distill.per_context=false``).

Usage::

    python benchmarks/proposers.py teacher --case go2 --arms untuned tuned coach random cma llm_cma
    python benchmarks/proposers.py teacher --case stairs --arms random --seeds 0 1 2
    python benchmarks/proposers.py teacher --case go2 --arms cma --budget 200 --every 20 --verify-confirm 4 --tag b200_c4
    python benchmarks/proposers.py teacher --case claw_hard --arms llm --budget 12 -- $(bash benchmarks/llama_server.sh ...)
    python benchmarks/proposers.py teacher --case claw_hard --arms cma --pooled --verify-rollouts 8 --verify-confirm 8
    python benchmarks/proposers.py report --case go2
    python benchmarks/proposers.py replay --case go2 --run runs/benchmarks/go2/teachers-go2-cma_untuned-seed0

``replay`` validates a training run's teacher over the run (:func:`replay`): the student's steps to the threshold
come from the run itself (``benchmarks/learning.py teachers --env go2 --arms cma_untuned ...``).

``noise`` validates parameter sets whose actions are executed with Gaussian noise (std per ``--noise``, clipped to
the action bounds), as an imperfect student would execute them: ``--tables untuned tuned <result name> ...`` (a
result name is a ``teacher`` result file's stem, e.g. ``cma_s0_pooled_v8c8``: its final table)::

    python benchmarks/proposers.py noise --case claw_hard --tables untuned tuned cma_s0_pooled_v8c8 --episodes 30
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import envs  # noqa: F401, I001  (first: registers the ids, picks a headless GL backend before mujoco loads)
import gymnasium as gym
import numpy as np
from omegaconf import OmegaConf

from agents.teachers.adaptive import make_proposer, parameter_schema, teaching_context, verify_start
from coach.verifier import ShadowVerifier, rollout_metrics, start_episode
from coach.contexts import ContextTable
from coach.llm.hints import build_request
from coach.proposals import ProposalService
from coach.search import ParameterBox
from envs.controllers import FAMILIES, ControllerFamily
from envs.controllers.params_file import read_params
from envs.controllers.grasp import GraspParams
from envs.controllers.trot import TrotParams
from envs.declarations import TaskContext

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "runs" / "benchmarks" / "proposers"
ARMS = ("untuned", "tuned", "coach", "random", "cma", "llm", "llm_cma")
VALIDATION_SEED = 1000
DISTILL = OmegaConf.load(ROOT / "configs" / "distill" / "adaptive.yaml")
LLM = OmegaConf.load(ROOT / "configs" / "llm" / "default.yaml")


@dataclass
class Case:
    """One "default fails" case (module docstring)."""

    env_id: str
    kwargs: dict[str, Any]
    family: ControllerFamily
    start: Callable[[], Any]  # the starting parameters (the untuned arm)
    tuned: Callable[[], Any] | None = None  # the offline-tuned reference
    options: dict[str, Any] = field(default_factory=dict)  # reset options of every episode


def case_spec(case: Case) -> Any:
    """What the case's env tells its controller (``env.controller_spec``)."""
    env = gym.make(case.env_id, **case.kwargs)
    spec = env.unwrapped.controller_spec
    env.close()
    return spec


def cases(level: int) -> dict[str, Case]:
    claw_hard = OmegaConf.to_container(OmegaConf.load(ROOT / "configs" / "env" / "claw_hard.yaml").kwargs)
    return {
        "go2": Case("OpenClaw/Quadruped-v1", {"robot": "go2"}, FAMILIES["quadruped"], TrotParams,
                    lambda: TrotParams.for_robot("go2")),
        "stairs": Case("OpenClaw/QuadrupedTerrain-v1", {"curriculum": False}, FAMILIES["quadruped"],
                       lambda: TrotParams.for_robot("openclaw_go1", terrain=True),
                       options={"terrain_type": "stairs_up", "terrain_level": level}),
        "claw_hard": Case("OpenClaw/Claw-v0", claw_hard, FAMILIES["claw"], GraspParams),
    }


class Teacher:
    """The case's env driven by the controller with its context's parameters from ``table``."""

    def __init__(self, case: Case, table: ContextTable) -> None:
        self.case, self.table = case, table
        self.env = gym.make(case.env_id, **case.kwargs)
        self.spec = self.env.unwrapped.controller_spec
        self.controller = case.family.controller(spec=self.spec)

    def episode(self, seed: int | None) -> tuple[Any, Any]:
        """Reset (seeded or not); the controller takes the episode's context's parameters. (obs, context)."""
        return start_episode(self.env, self.controller, self.case.family, table_params(self.table), seed,
                             self.case.options)

    def step(self, obs: Any) -> tuple[Any, dict, bool]:
        obs, _, terminated, truncated, info = self.env.step(self.controller.act(obs))
        return obs, info, terminated or truncated


def table_params(table: ContextTable) -> Callable[[TaskContext], dict[str, Any]]:
    """An episode's parameters: its task context's in ``table``."""
    return lambda context: table.params_for(context.name)


class NoisyActions(gym.ActionWrapper):
    """Executes the controller's action plus Gaussian noise of std ``std`` (action units), clipped to the bounds."""

    def __init__(self, env: gym.Env, std: float, seed: int) -> None:
        super().__init__(env)
        self.std, self.rng = std, np.random.default_rng(seed)

    def action(self, action: np.ndarray) -> np.ndarray:
        noisy = action + self.std * self.rng.standard_normal(np.shape(action))
        return np.clip(noisy, self.action_space.low, self.action_space.high)


def validate(case: Case, table: ContextTable, episodes: int, first_seed: int = VALIDATION_SEED,
             noise: float = 0.0) -> dict[str, float]:
    """Mean metrics of the case's score over ``episodes`` seeded validation episodes (module docstring); with
    ``noise`` > 0 the actions are executed with that much Gaussian noise (:class:`NoisyActions`, seeded)."""
    env = gym.make(case.env_id, **case.kwargs)
    if noise > 0:
        env = NoisyActions(env, noise, first_seed)
    metrics = rollout_metrics(env, case.family, env.unwrapped.controller_spec, table_params(table),
                              range(first_seed, first_seed + episodes), case.options, digits=4)
    env.close()
    return metrics


def offline_tuned(case: Case, args: argparse.Namespace) -> dict[str, Any]:
    """The offline reference where the case has no tuned parameters: CMA-ES (``--offline-evals`` candidates, step
    0.2 of each bound's width, from the starting parameters) whose fitness is minus the validation score on
    ``--offline-episodes`` episodes of seeds 2000, ... (never the validation seeds); one parameter set for every
    context. Cached in ``<case>/offline_params.json``."""
    import cma

    cached = OUT / args.case / "offline_params.json"
    if cached.is_file():
        return read_params(cached)
    start = json.loads(json.dumps(case.start().to_dict()))
    box = ParameterBox(parameter_schema(case.family, case_spec(case)), start)
    es = cma.CMAEvolutionStrategy(box.to_unit(start), 0.2, {"bounds": [0.0, 1.0], "seed": 1, "verbose": -9})
    best, best_fitness, evaluations, t0 = start, float("inf"), 0, time.process_time()
    while evaluations < args.offline_evals:
        candidates = es.ask()
        fitness = [-validate(case, ContextTable(box.from_unit(x)), args.offline_episodes, 2000)["score"]
                   for x in candidates]
        es.tell(candidates, fitness)
        evaluations += len(candidates)
        k = int(np.argmin(fitness))
        if fitness[k] < best_fitness:
            best, best_fitness = box.from_unit(candidates[k]), fitness[k]
        print(f"  offline: {evaluations} candidates, best score {-best_fitness:.3f}", flush=True)
    cached.parent.mkdir(parents=True, exist_ok=True)
    cached.write_text(json.dumps({"params": best, "score": -best_fitness, "evaluations": evaluations,
                                  "episodes": args.offline_episodes, "cpu_s": round(time.process_time() - t0, 1)},
                                 indent=1))
    return best


def teacher_phase(case: Case, arm: str, seed: int, args: argparse.Namespace, llm: list[str]) -> dict[str, Any]:
    """One arm's teacher phase (module docstring)."""
    table = named_table(case, "tuned", args) if arm == "tuned" else ContextTable(case.start().to_dict(),
                                                                                  per_context=not args.pooled)
    t0, cpu0 = time.monotonic(), time.process_time()
    curve = [{"verified": 0, "adopted": 0, **validate(case, table, args.episodes)}]
    record: dict[str, Any] = {"case": args.case, "arm": arm, "seed": seed, "tag": args.tag, "budget": args.budget,
                              "verify_rollouts": args.verify_rollouts, "verify_steps": args.verify_steps,
                              "verify_on": args.verify_on, "verify_confirm": args.verify_confirm,
                              "per_context": not args.pooled,
                              "curve": curve}
    if arm in ("untuned", "tuned"):
        return {**record, "final": curve[-1], "params": table.start, "wall_s": round(time.monotonic() - t0, 1)}
    cfg = OmegaConf.create({"seed": seed, "distill": {**OmegaConf.to_container(DISTILL), "proposer": arm},
                            "llm": OmegaConf.merge(LLM, OmegaConf.from_dotlist([o.removeprefix("llm.") for o in llm]))})
    resources: list[Any] = []
    teacher = Teacher(case, table)
    schema = parameter_schema(case.family, teacher.spec)
    proposer = make_proposer(cfg, schema, resources)
    verifier = ShadowVerifier(case.env_id, case.kwargs, case.family, teacher.spec, args.verify_rollouts,
                              args.verify_steps, DISTILL.verify_margin, args.verify_confirm)
    records = OUT / args.case / f"{run_name(arm, seed, args.tag)}.jsonl"
    records.unlink(missing_ok=True)
    service = ProposalService(proposer, records_path=records, verifier=verifier, max_verified=args.budget)
    decisions: dict[str, int] = {}
    proposals = 0
    obs, context = teacher.episode(seed)
    start_obs = obs
    while service.stats()["verified"] < args.budget and proposals < 4 * args.budget:
        segment, done = case.family.segment(), False
        while not done and segment.steps < args.segment_steps:
            obs, info, done = teacher.step(obs)
            segment.add(obs, info)
        summary, outcome = segment.summary()
        context = teaching_context(table, context)
        entry = table.entry(context.name)
        start = verify_start(case.family, args.verify_on, start_obs, context)
        if service.submit(context.name, entry.version, build_request(schema, entry.params, summary, outcome), start):
            proposals += 1
            service.wait_idle(args.timeout)
            for result in service.poll():
                decision = table.apply(result, proposals, 3)
                decisions[decision] = decisions.get(decision, 0) + 1
        verified = int(service.stats()["verified"])
        if verified >= curve[-1]["verified"] + args.every or verified >= args.budget:
            adopted = sum(e.version for e in table.entries.values())
            curve.append({"verified": verified, "adopted": adopted, **validate(case, table, args.episodes)})
            print(f"  {arm} s{seed}: {verified} verified, {adopted} adopted: score {curve[-1]['score']:.3f}", flush=True)
        obs, context = teacher.episode(None)  # every segment starts an episode, with its context's parameters
        start_obs = obs
    stats = service.stats()
    service.close()
    for resource in resources:
        resource.close()
    teacher.env.close()
    return {**record, "final": curve[-1], "best": max(curve, key=lambda c: c["score"]), "proposals": proposals,
            "decisions": decisions, "table": table.to_json(),
            "stats": {k: stats[k] for k in ("queries", "accepted", "verified", "adopted", "not_confirmed", "verify_cpu_s")
                      if k in stats},
            "latency_p50_s": stats.get("latency_p50_s"), "wall_s": round(time.monotonic() - t0, 1),
            "cpu_s": round(time.process_time() - cpu0, 1)}


def run_name(arm: str, seed: int, tag: str) -> str:
    return f"{arm}_s{seed}" + (f"_{tag}" if tag else "")


def rate_key(case: str) -> str:
    """The rate reported beside a case's score: the claw's success, the quadruped's falls."""
    return "success" if case == "claw_hard" else "fall"


def report(case: str) -> None:
    rows = [json.loads(p.read_text()) for p in sorted((OUT / case).glob("*_s[0-9]*.json"))]
    key = rate_key(case)
    print(f"{case}: arm, seed, verified/adopted, score start -> final (best), {key} start -> final, verify CPU s, wall s")
    for r in rows:
        first, final = r["curve"][0], r["final"]
        s = r.get("stats", {})
        print(f"  {r['arm'] + (' ' + r['tag'] if r.get('tag') else ''):<16} s{r['seed']}  {int(s.get('verified', 0)):>3}/{int(s.get('adopted', 0)):<3} "
              f"{first['score']:7.3f} -> {final['score']:7.3f} ({r.get('best', final)['score']:7.3f})  "
              f"{first[key]:.2f} -> {final[key]:.2f}  {s.get('verify_cpu_s', 0):6.1f}  {r['wall_s']:6.0f}")


def replay(case: Case, run: Path, episodes: int) -> list[dict[str, Any]]:
    """The validation score of a training run's teacher over the run: its table's starting parameters and then every
    adoption in its final checkpoint's ``context_params.json`` (each context's history), at the env step it came."""
    from agents import checkpoint

    saved = json.loads(checkpoint.latest(run).context_params.read_text())
    events = sorted((h["step"], key, h["params"]) for key, e in saved["contexts"].items() for h in e["history"])
    table = ContextTable(saved["start"])
    curve = [{"step": 0, **validate(case, table, episodes)}]
    for step, key, params in events:
        table.entry(key).params = params
        curve.append({"step": step, "context": key, **validate(case, table, episodes)})
        print(f"  step {step}: {key} score {curve[-1]['score']:.3f}", flush=True)
    return curve


def named_table(case: Case, name: str, args: argparse.Namespace) -> ContextTable:
    """``untuned`` (the starting parameters), ``tuned`` (the offline reference) or a ``teacher`` result's final table."""
    if name == "untuned":
        return ContextTable(case.start().to_dict())
    if name == "tuned":
        return ContextTable(case.tuned().to_dict() if case.tuned is not None else offline_tuned(case, args))
    return ContextTable.from_json(json.loads((OUT / args.case / f"{name}.json").read_text())["table"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("task", choices=["teacher", "report", "replay", "noise"])
    parser.add_argument("--tables", nargs="+", default=["untuned", "tuned"], help="noise: the parameter sets")
    parser.add_argument("--noise", nargs="+", type=float, default=[0.0, 0.1, 0.2, 0.4], help="noise: action std")
    parser.add_argument("--run", help="replay: a training run directory taught by distill=adaptive")
    parser.add_argument("--case", choices=["go2", "stairs", "claw_hard"], required=True)
    parser.add_argument("--arms", nargs="+", choices=ARMS, default=list(ARMS))
    parser.add_argument("--seeds", nargs="+", type=int, default=[0])
    parser.add_argument("--budget", type=int, default=40, help="verified proposals per arm")
    parser.add_argument("--every", type=int, default=5, help="validate after this many more verified proposals")
    parser.add_argument("--episodes", type=int, default=20, help="validation episodes (seeds 1000, ...)")
    parser.add_argument("--level", type=int, default=3, help="stairs: the tiles' level")
    parser.add_argument("--segment-steps", type=int, default=int(DISTILL.segment_steps))
    parser.add_argument("--verify-rollouts", type=int, default=int(DISTILL.verify_rollouts))
    parser.add_argument("--verify-steps", type=int, default=int(DISTILL.verify_steps))
    parser.add_argument("--verify-on", choices=["context", "segment"], default=DISTILL.verify_on)
    parser.add_argument("--verify-confirm", type=int, default=int(DISTILL.verify_confirm_rollouts),
                        help="held-out confirmation: episodes per parameter set on other seeds (0: off; "
                             "distill.verify_confirm_rollouts)")
    parser.add_argument("--pooled", action="store_true",
                        help="one parameter set for all contexts (distill.per_context=false)")
    parser.add_argument("--timeout", type=float, default=600.0, help="s to wait for one proposal")
    parser.add_argument("--offline-evals", type=int, default=120, help="tuned (no parameter file): CMA-ES candidates")
    parser.add_argument("--offline-episodes", type=int, default=10, help="tuned: episodes per candidate")
    parser.add_argument("--tag", default="", help="a name for this variant of the settings, added to the file names")
    args, llm = parser.parse_known_args()
    llm = [o for o in llm if o != "--"]
    if args.task == "report":
        report(args.case)
        return
    case = cases(args.level)[args.case]
    if args.task == "noise":
        for name in args.tables:
            table = named_table(case, name, args)
            cells = [validate(case, table, args.episodes, noise=std) for std in args.noise]
            key = rate_key(args.case)
            noise = " / ".join(f"{std:g}" for std in args.noise)
            rates = " / ".join(f"{c[key]:.0%}" for c in cells)
            scores = " / ".join(f"{c['score']:.3f}" for c in cells)
            print(f"{name}: {key} at action noise {noise}: {rates}; score {scores}", flush=True)
        return
    if args.task == "replay":
        curve = replay(case, Path(args.run), args.episodes)
        (Path(args.run) / "teacher_validation.json").write_text(json.dumps(curve, indent=1))
        print(f"{args.run}: teacher score {curve[0]['score']:.3f} -> {curve[-1]['score']:.3f} "
              f"(best {max(c['score'] for c in curve):.3f}) over {len(curve) - 1} adoptions")
        return
    for arm in args.arms:
        for seed in args.seeds:
            result = teacher_phase(case, arm, seed, args, llm)
            out = OUT / args.case / f"{run_name(arm, seed, args.tag)}.json"
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(json.dumps(result, indent=1))
            print(f"{args.case} {arm} s{seed}: score {result['curve'][0]['score']:.3f} -> {result['final']['score']:.3f} "
                  f"({result['wall_s']:.0f} s) -> {out}", flush=True)


if __name__ == "__main__":
    main()
