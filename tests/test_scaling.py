"""Scaling past one machine: a Hydra multirun on a local Ray instance (the CI stand-in for a cluster).

``hydra/launcher=ray_local`` (configs/hydra/launcher/) starts Ray on this machine with 2 CPUs; the two
seeds of the smoke preset run as two Ray tasks at the same time, each in its own worker process.
The same runs go to a real cluster with ``hydra/launcher=ray_cluster`` (docs/scaling.md).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent

if not os.environ.get("CI"):  # CI installs the scale extra (setup.sh) and must run this test
    pytest.importorskip("ray", reason='needs the scale extra: pip install -e ".[scale]"')
    pytest.importorskip("hydra_plugins.hydra_ray_launcher", reason='needs the scale extra: pip install -e ".[scale]"')


def test_ray_multirun_two_seeds_in_parallel(tmp_path):
    sweep_dir = tmp_path / "sweep"
    env = {
        **os.environ,
        "HYDRA_FULL_ERROR": "1",
        "RAY_USAGE_STATS_ENABLED": "0",
        "RAY_DEDUP_LOGS": "0",
    }
    result = subprocess.run(
        [
            sys.executable, str(ROOT / "train.py"), "-m",
            "hydra/launcher=ray_local", "hydra.launcher.ray.init.num_cpus=2",
            "seed=0,1", "train=smoke", "train.progress_bar=false",
            f"hydra.sweep.dir={sweep_dir}",
        ],
        cwd=ROOT, capture_output=True, text=True, timeout=240, env=env,
    )
    assert result.returncode == 0, (result.stdout[-2000:], result.stderr[-3000:])
    assert "Ray Launcher is launching 2 jobs" in result.stdout + result.stderr

    runs = sorted(p for p in sweep_dir.iterdir() if p.is_dir())
    assert [p.name for p in runs] == ["0", "1"]
    seeds, spans = [], []
    for run_dir in runs:
        config = yaml.safe_load((run_dir / "config.yaml").read_text())
        summary = json.loads((run_dir / "summary.json").read_text())
        assert summary["steps"] >= 4096 and summary["final_eval_episodes"] == 2
        assert summary["seed"] == config["seed"]
        assert config["run_dir"] == str(run_dir)
        seeds.append(config["seed"])
        # config.yaml is written when a run starts, summary.json when it ends.
        spans.append(((run_dir / "config.yaml").stat().st_mtime, (run_dir / "summary.json").stat().st_mtime))
    assert sorted(seeds) == [0, 1]
    # Two Ray workers: the runs overlapped in time rather than one after the other.
    (start0, end0), (start1, end1) = spans
    assert start0 < end1 and start1 < end0, f"runs did not overlap: {spans}"
