"""Export a trained policy for deployment: ONNX (and optionally TorchScript), normalisation folded in.

    python export.py run=runs/quadruped-ppo/2026-11-29_14-00-00     # -> <run>/export/policy.onnx
    python export.py checkpoint=<run>/checkpoints/step_000100000    # a particular checkpoint
    python export.py run=<run> torchscript=true out_dir=deploy/     # also policy.pt
    python evaluate.py checkpoint=<run>/export/policy.onnx          # evaluate the exported file

The file maps a raw observation (the claw's dict flattened in ``gymnasium.spaces.flatten`` order) to
an action in ``[-1, 1]``; its metadata, input and output are described in :mod:`agents.export.run`, and
:class:`agents.export.onnx_policy.OnnxPolicy` runs it. Options: ``configs/export.yaml``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import hydra
from omegaconf import DictConfig

import envs  # noqa: F401  (registers the env ids; picks a headless GL backend before mujoco is imported)
from agents.errors import ConfigError
from agents.export.run import register_config, run, validate
from agents.overrides import exit_if_invalid

CONFIG_DIR = str(Path(__file__).resolve().parent / "configs")
register_config()


@hydra.main(config_path="configs", config_name="export", version_base="1.3")
def main(cfg: DictConfig) -> None:
    try:
        paths = run(cfg)
    except ConfigError as err:
        print(f"error: {err}", file=sys.stderr)
        raise SystemExit(2) from None
    for kind, path in paths.items():
        print(f"{kind}: {path} ({path.stat().st_size / 1024:.1f} KiB)")


if __name__ == "__main__":
    exit_if_invalid(CONFIG_DIR, "export", sys.argv[1:], validate)
    main()
