"""A real model through a real third-party OpenAI-compatible server (issue 14 item 4; long, not run in CI).

Start the server first (``bash benchmarks/llama_server.sh [gemma|smollm2]``: llama.cpp's llama-server on
127.0.0.1:8080, started without a key: ``--base-url`` runs pass ``llm.api_key_env=null``), then (figures:
``benchmarks/RESULTS.md``)::

    python benchmarks/real_llm.py channel --base-url http://127.0.0.1:8080/v1 --timeout 120 --queries 8
    python benchmarks/real_llm.py train --base-url http://127.0.0.1:8080/v1 --model smollm2-135m-instruct --timeout 120

Without ``--base-url`` both run against the bundled coach. ``--model`` is only a label for llama-server, which
ignores model names (default ``gemma-3-270m``).

``channel``: claw hint requests (random-action episodes, as an untrained student's, with the default grasp
parameters) go through our channel and :class:`coach.llm.proposer.LLMProposer` (m answers, vote) in a :class:`coach.proposals.ProposalService`, once per
``llm.structured_output`` mode (``json_schema``: a response_format with the answer's schema; ``off``: the plain
prompt). Every accepted proposal that changes the parameters is checked by the
:class:`coach.verifier.ShadowVerifier` (the training defaults), so the same answers give both arms: without
verification every accepted change would teach; with it only those that beat the current parameters do. Prints
parse rate, acceptance, adoption with and without verification and the verifier's score change of what would be
adopted, latency p50/p95 per answer and per query, and a few answers.

``train``: short claw SAC runs with ``distill=adaptive`` on the bundled coach and on the server (verified and
not): env steps/s (SB3's ``time/fps``, logged before the end-of-training wait for hints in flight), the wall
time and the hint counters.
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import gymnasium as gym
from omegaconf import OmegaConf

import runs
from hints import last_hint_stats

sys.path.insert(0, str(runs.ROOT))
import envs  # noqa: E402,F401  (registers the OpenClaw ids)
from agents.teachers.adaptive import parameter_schema  # noqa: E402
from envs.controllers import FAMILIES  # noqa: E402
from coach.verifier import ShadowVerifier  # noqa: E402
from coach.llm.client import open_channel  # noqa: E402
from coach.llm.settings import load_config  # noqa: E402
from coach.llm.hints import build_request  # noqa: E402
from coach.llm.proposer import LLMProposer  # noqa: E402
from coach.proposals import ProposalService  # noqa: E402
from envs.controllers.grasp import GraspParams  # noqa: E402

ENV_ID, ENV_KWARGS = "OpenClaw/Claw-v0", {"reward_type": "dense"}  # the tuned claw (configs/tuned/claw_sac.yaml)
DISTILL = OmegaConf.load(runs.ROOT / "configs" / "distill" / "adaptive.yaml")


def claw_requests(n: int) -> list[tuple[dict, dict]]:
    """``n`` (hint request, first observation) pairs from random-action claw episodes (seeds 0..n-1)."""
    family, env = FAMILIES["claw"], gym.make(ENV_ID, **ENV_KWARGS)
    env.action_space.seed(0)
    out = []
    for seed in range(n):
        obs, _ = env.reset(seed=seed)
        start, segment = obs, family.segment()
        for _ in range(DISTILL.segment_steps):
            obs, _, terminated, truncated, info = env.step(env.action_space.sample())
            segment.add(obs, info)
            if terminated or truncated:
                break
        summary, outcome = segment.summary()
        out.append((build_request(parameter_schema(family, env.unwrapped.controller_spec), GraspParams().to_dict(),
                                  summary, outcome), start))
    env.close()
    return out


def channel_arm(overrides: list[str], requests: list[tuple[dict, dict]], records: Path) -> dict:
    """Run ``requests`` through the LLM proposer with the verifier; figures from its stats and records."""
    cfg = load_config(None, overrides).with_env_overrides()
    channel, server = open_channel(cfg)
    family = FAMILIES["claw"]
    probe = gym.make(ENV_ID, **ENV_KWARGS)
    spec = probe.unwrapped.controller_spec
    probe.close()
    verifier = ShadowVerifier(ENV_ID, ENV_KWARGS, family, spec, DISTILL.verify_rollouts, DISTILL.verify_steps,
                              DISTILL.verify_margin)
    records.unlink(missing_ok=True)
    service = ProposalService(LLMProposer(channel, cfg, parameter_schema(family, spec)), records_path=records,
                              verifier=verifier)
    t0 = time.monotonic()
    for i, (request, start) in enumerate(requests):
        service.submit(str(i), 0, request, family.episode_start(start))
    service.wait_idle(len(requests) * cfg.num_answers * cfg.timeout_s * (cfg.max_retries + 1))
    wall = time.monotonic() - t0
    stats, chan = service.stats(), channel.stats()
    service.close()
    channel.close()
    if server is not None:
        server.close()
    lines = [json.loads(line) for line in records.read_text().splitlines()]
    answers = [a for line in lines for a in line["answers"]]
    answered = [a for a in answers if a.get("text") is not None]
    valid = sum(v is not None for line in lines for v in line["votes"])
    checked = [line["verification"] for line in lines if line.get("verification", {}).get("proposed")]
    gains = [v["proposed"]["score"] - v["current"]["score"] for v in checked]
    adopted_gains = [g for g, v in zip(gains, checked) if v["adopted"]]
    return {
        "queries": len(lines), "answers": len(answers), "answered": len(answered),
        "parse_rate": valid / len(answered) if answered else None,
        "accepted": int(stats["accepted"]), "acceptance_rate": stats["acceptance_rate"],
        "unchanged": int(stats.get("unchanged", 0)), "verified": int(stats.get("verified", 0)),
        "adopted_unverified": len(checked),  # every accepted change (verify_budget unbounded here: all checked)
        "adopted_verified": int(stats.get("adopted", 0)),
        "score_gain_unverified_mean": statistics.fmean(gains) if gains else None,
        "score_gain_unverified_min": min(gains) if gains else None,
        "score_gain_verified_mean": statistics.fmean(adopted_gains) if adopted_gains else 0.0,
        "timeouts": int(stats["timeouts"]), "errors": int(stats["errors"]),
        "structured_fallbacks": int(stats["structured_fallbacks"]),
        "answer_latency_p50_s": chan.get("latency_p50_s"), "answer_latency_p95_s": chan.get("latency_p95_s"),
        "query_latency_p50_s": stats.get("latency_p50_s"), "query_latency_p95_s": stats.get("latency_p95_s"),
        "completion_tokens": chan["completion_tokens"], "wall_s": round(wall, 1),
        "examples": [a["text"][:160] for a in answered[:4]],
    }


def fps(run_dir: Path) -> float | None:
    """SB3's last ``time/fps`` (env steps/s since the start, before the end-of-training wait)."""
    with (run_dir / "progress.csv").open() as f:
        values = [r["time/fps"] for r in csv.DictReader(f) if r.get("time/fps")]
    return float(values[-1]) if values else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", choices=["channel", "train"])
    parser.add_argument("--base-url", default=None, help="the server's API root (default: the bundled coach)")
    parser.add_argument("--model", default=None, help="llm.hint_model (default: gemma-3-270m with --base-url)")
    parser.add_argument("--timeout", type=float, default=60.0, help="llm.timeout_s")
    parser.add_argument("--queries", type=int, default=12, help="channel: hint requests per mode")
    parser.add_argument("--modes", nargs="+", default=["json_schema", "off"], help="channel: llm.structured_output")
    parser.add_argument("--steps", type=int, default=5000, help="train: env steps per run")
    parser.add_argument("--arms", nargs="+", default=["coach", "llama", "llama_unverified"])
    parser.add_argument("--out", default=str(runs.ROOT / "runs" / "benchmarks" / "real_llm"))
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    model = args.model or ("gemma-3-270m" if args.base_url else "openclaw-coach")
    server = [f"llm.hint_model={model}", f"llm.timeout_s={args.timeout:g}"]
    server += [f"llm.base_url={args.base_url}", "llm.api_key_env=null"] if args.base_url else []
    if args.what == "channel":
        requests = claw_requests(args.queries)
        result = {mode: channel_arm([*server, f"llm.structured_output={mode}"], requests,
                                    out / f"channel-{mode}.jsonl") for mode in args.modes}
    else:
        arms = {"coach": ["distill=adaptive"], "llama": ["distill=adaptive", *server],
                "llama_unverified": ["distill=adaptive", *server, "distill.verify_hints=false"],
                "scripted": ["distill=scripted"]}
        common = ["env=claw", "agent=sac", "seed=0", f"train.total_timesteps={args.steps}", "train.eval_freq=1000000",
                  "train.checkpoint_freq=1000000", "train.eval_episodes=10", "train.eval_envs=5", "train.video=false"]
        result = {}
        for arm in args.arms:
            run_dir = out / f"train-{arm}"
            try:
                wall = runs.train([*common, *arms[arm], f"distill.records_dir={run_dir / 'records'}"], run_dir)
            except subprocess.CalledProcessError as err:  # e.g. the channel check refused the model (see its output)
                result[arm] = {"failed": f"train.py exited {err.returncode}"}
                continue
            summary = runs.summary(run_dir)
            result[arm] = {"fps": fps(run_dir), "summary_fps": summary.get("fps"), "wall_s": round(wall, 1),
                           "learn_wall_s": summary.get("wall_time_s"), "hints": last_hint_stats(run_dir),
                           "teacher_hint_warning": summary.get("teacher_hint_warning")}
    print(json.dumps(result, indent=2, default=float))
    (out / f"{args.what}.json").write_text(json.dumps(result, indent=2, default=float))


if __name__ == "__main__":
    main()
