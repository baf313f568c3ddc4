"""Train a PPO or SAC student on an OpenClaw env.

    python train.py                                  # PPO on the quadruped (configs/train.yaml)
    python train.py env=claw agent=sac               # SAC on the claw (tuned: dense reward)
    python train.py distill=adaptive                 # adaptive teacher (LLM proposer: bundled offline coach)
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
from hydra.core.override_parser.overrides_parser import OverridesParser
from omegaconf import DictConfig, OmegaConf, open_dict

from agents.config.schema import register_configs
from agents.errors import ConfigError
from agents.overrides import exit_if_invalid, resume_argv
from agents.training.checks import Checked, validate
from agents.training.inputs import pin

CONFIG_DIR = str(Path(__file__).resolve().parent / "configs")
register_configs()


def _given(argv: list[str], key: str) -> str | None:
    """The value of ``key=value`` in ``argv`` as Hydra reads it (a quoted path without its quotes), or None."""
    given = next((a for a in argv if a.startswith(f"{key}=")), None)
    return None if given is None else str(OverridesParser.create().parse_override(given).value())


def prepare(cfg: DictConfig, argv: list[str]) -> DictConfig:
    """The config that will run: with ``resume=``, the saved config with this command's overrides
    (those a resume may change; others are refused); otherwise ``cfg``, once ``hydra.run.dir`` (when
    given) is known to hold no other run. Either way the run directory (and a sweep's ``hydra.sweep.dir``)
    must be one this process can create and write. ``run_dir=`` is refused: Hydra's output directory sets it."""
    from agents import saved_config
    from agents.training.run_dir import check_new, resumed_config

    if any(a.lstrip("+").startswith("run_dir=") for a in argv):
        raise ConfigError("run_dir is where this run writes, and train.py sets it from Hydra's output directory, so "
                          "run_dir=<dir> would be ignored: give hydra.run.dir=<dir> instead")
    run_dir = _given(argv, "hydra.run.dir")
    if cfg.resume:
        resumed = resumed_config(cfg, argv)  # a damaged config.yaml is named first
        option = "resume" if run_dir in (None, cfg.resume) else "hydra.run.dir"
        saved_config.check_output_dir(option, run_dir or cfg.resume)
        return resumed
    if run_dir:
        saved_config.check_output_dir("hydra.run.dir", run_dir)
        check_new(run_dir)
    else:  # the default, runs/<env>-<agent>/<date> under the working directory
        default = Path("runs") / f"{cfg.env.name}-{cfg.agent.name}"
        saved_config.check_output_dir("hydra.run.dir", default / "<date>", f"{default}/<date> (the default)")
    sweep_dir = _given(argv, "hydra.sweep.dir")
    if sweep_dir:
        saved_config.check_output_dir("hydra.sweep.dir", sweep_dir)
    return cfg


# what the check before Hydra starts (exit_if_invalid) loaded validating a single run's config: (that config's values as
# _checked_values gives them, validate's Checked), taken by the run instead of validating and loading it all again
_PRECHECKED: list[tuple[dict, Checked]] = []


def _checked_values(cfg: DictConfig) -> dict:
    """``cfg``'s values but those the run sets itself after the check (``run_dir``, ``distill.recipe``)."""
    values = OmegaConf.to_container(cfg, resolve=True)
    values.pop("run_dir", None)
    values["distill"].pop("recipe", None)
    return values


def _check(cfg: DictConfig) -> Checked:
    """:func:`validate` for the check before Hydra starts, keeping what it loaded (a checkpoint teacher) for the run."""
    checked = validate(cfg)
    _PRECHECKED.append((_checked_values(cfg), checked))
    return checked


def _validated(cfg: DictConfig) -> Checked:
    """What validating ``cfg`` loaded: the check's, when it checked this config; else ``validate(cfg)``."""
    if _PRECHECKED and _PRECHECKED[0][0] == _checked_values(cfg):
        return _PRECHECKED.pop()[1]
    _PRECHECKED.clear()
    return validate(cfg)


@hydra.main(config_path="configs", config_name="train", version_base="1.3")
def main(cfg: DictConfig) -> None:
    from agents.training.runner import EXIT_INTERRUPTED, TrainingFailed, TrainingInterrupted, train

    try:
        if cfg.resume:
            cfg = prepare(cfg, list(HydraConfig.get().overrides.task))
        with open_dict(cfg):
            cfg.run_dir = HydraConfig.get().runtime.output_dir
        if not cfg.resume:  # the recipe (configs/distill/<recipe>.yaml) this command composed; a resume keeps its own
            cfg.distill.recipe = HydraConfig.get().runtime.choices["distill"]
        checked = _validated(cfg)
        if not cfg.resume:  # the files it reads, as config.yaml records them: absolute, the parameter file's digest
            pin(cfg)
        from agents.training.report import format_summary

        summary = train(cfg, checked)
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
    sweep = any(a in ("-m", "--multirun") for a in sys.argv[1:])  # each job validated when it runs: nothing kept
    exit_if_invalid(CONFIG_DIR, "train", sys.argv[1:], validate if sweep else _check, prepare)
    main()
