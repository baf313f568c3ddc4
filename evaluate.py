"""Evaluate a trained policy (or a scripted controller) and record videos, headless.

    python evaluate.py run=runs/quadruped-ppo/2026-11-29_14-00-00     # -> <run>/eval/: mp4s, metrics.json, PNGs
    python evaluate.py checkpoint=<run>/checkpoints/step_000100000    # a particular checkpoint
    python evaluate.py run=<run> checkpoint=step_000100000            # the same, named within the run
    python evaluate.py checkpoint=<run>/export/policy.onnx           # a file written by export.py (onnxruntime)
    python evaluate.py run=<run> episodes=20 envs=4 videos=1 width=640 height=360 camera=closeup
    python evaluate.py run=<run> env_id=OpenClaw/QuadrupedRough-v1 out_dir=<run>/eval_rough
    python evaluate.py policy=trot                                   # scripted controllers: trot, grasp

Options and their meanings: ``configs/evaluate.yaml`` and :class:`agents.evaluation.run.EvalConfig`.
The logic lives in :mod:`agents.evaluation.run`; this file composes the Hydra config and reports errors.
"""

from __future__ import annotations

import sys
from pathlib import Path

import hydra
from omegaconf import DictConfig

import envs  # noqa: F401  (picks a headless GL backend before mujoco is imported)
from agents.errors import ConfigError
from agents.evaluation.run import format_metrics, register_config, run, validate
from agents.overrides import exit_if_invalid

CONFIG_DIR = str(Path(__file__).resolve().parent / "configs")
register_config()


@hydra.main(config_path="configs", config_name="evaluate", version_base="1.3")
def main(cfg: DictConfig) -> None:
    try:
        metrics = run(cfg)
    except (ConfigError, RuntimeError) as err:  # RuntimeError: no working OpenGL backend (with the fix)
        print(f"error: {err}", file=sys.stderr)
        raise SystemExit(2) from None
    print(format_metrics(metrics))


if __name__ == "__main__":
    exit_if_invalid(CONFIG_DIR, "evaluate", sys.argv[1:], validate)
    main()
