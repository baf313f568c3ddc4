"""Train a PPO or SAC student on an OpenClaw env.

    python train.py                                  # PPO on the quadruped (configs/train.yaml)
    python train.py env=claw agent=sac               # SAC on the claw (tuned: dense reward)
    python train.py distill=llm_hint                 # LLM-hint teacher (bundled offline coach server)
    python train.py train=smoke                      # about a minute, end to end
    python train.py env=quadruped train.num_envs=8 seed=3
    python train.py resume=runs/quadruped-ppo/2026-11-29_14-00-00   # continue an interrupted run
    python train.py --help                           # config groups and options
    python train.py -m seed=0,1,2                    # Hydra multirun (one run per seed)

The logic lives in ``agents/``; this file composes the Hydra config, checks it and hands over.
"""

from __future__ import annotations

import sys
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, open_dict

from agents.errors import ConfigError
from agents.training.config import register_configs, validate
from agents.overrides import exit_if_invalid, resume_argv

CONFIG_DIR = str(Path(__file__).resolve().parent / "configs")
register_configs()


def prepare(cfg: DictConfig, argv: list[str]) -> DictConfig:
    """The config that will run: with ``resume=``, the saved config with this command's overrides
    (those a resume may change; others are refused); otherwise ``cfg``, once ``hydra.run.dir`` (when
    given) is known to hold no other run."""
    from agents.training.run_dir import check_new, resumed_config

    if cfg.resume:
        return resumed_config(cfg, argv)
    run_dir = next((a.split("=", 1)[1] for a in argv if a.startswith("hydra.run.dir=")), None)
    if run_dir:
        check_new(run_dir)
    return cfg


@hydra.main(config_path="configs", config_name="train", version_base="1.3")
def main(cfg: DictConfig) -> None:
    from agents.training.runner import EXIT_INTERRUPTED, TrainingFailed, TrainingInterrupted, train

    try:
        if cfg.resume:
            cfg = prepare(cfg, list(HydraConfig.get().overrides.task))
        with open_dict(cfg):
            cfg.run_dir = HydraConfig.get().runtime.output_dir
        validate(cfg)
        from agents.training.report import format_summary

        summary = train(cfg)
        print(format_summary(summary))
        print(f"\nrun directory: {cfg.run_dir}")
        if "teacher_warning" in summary:  # the last word, where it is seen
            print(f"warning: {summary['teacher_warning']}", file=sys.stderr)
    except ConfigError as err:
        print(f"error: {err}", file=sys.stderr)
        raise SystemExit(2) from None
    except TrainingFailed as err:
        print(f"error: {err}", file=sys.stderr)
        raise SystemExit(1) from None
    except TrainingInterrupted as stop:
        print(f"\n{stop}", file=sys.stderr)
        raise SystemExit(EXIT_INTERRUPTED) from None


if __name__ == "__main__":
    sys.argv = [sys.argv[0], *resume_argv(sys.argv[1:])]
    exit_if_invalid(CONFIG_DIR, "train", sys.argv[1:], validate, prepare)
    main()
