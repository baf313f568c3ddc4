"""``train.wandb=true``: a Weights & Biases run (offline, no network) with the resolved config, scalars and clips."""

from __future__ import annotations

import csv
import json
import os
import struct
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import imageio.v3 as iio
from omegaconf import OmegaConf
from wandb.proto import wandb_internal_pb2

ROOT = Path(__file__).resolve().parent.parent


def wandb_records(path: Path) -> Iterator[wandb_internal_pb2.Record]:
    """The records of an offline run file (``run-<id>.wandb``): W&B's LevelDB-log framing of protobufs.

    A 7-byte file header (``:W&B``, magic, version), then 32 KiB blocks of chunks, each with a 7-byte
    header (CRC32, length, type: 1 full, 2 first, 3 middle, 4 last); a block's tail shorter than a
    header is padding.
    """
    data = path.read_bytes()
    assert data[:4] == b":W&B", f"{path} is not a W&B run file"
    pos, record = 7, b""
    while pos + 7 <= len(data):
        left = 32768 - pos % 32768
        _, length, kind = struct.unpack("<IHB", data[pos : pos + 7]) if left >= 7 else (0, 0, 0)
        if kind == 0:  # padding to the end of the block
            pos += left
            continue
        chunk = data[pos + 7 : pos + 7 + length]
        pos += 7 + length
        record = chunk if kind in (1, 2) else record + chunk
        if kind in (1, 4):
            parsed = wandb_internal_pb2.Record()
            parsed.ParseFromString(record)
            yield parsed


def test_offline_wandb_run_has_the_resolved_config_scalars_and_clips(tmp_path):
    run_path = tmp_path / "run"
    args = ["env=claw", "train=smoke", "train.total_timesteps=2048", "train.video=true", "train.video_width=64",
            "train.video_height=48", "train.wandb=true", "train.wandb_project=openclaw-test", f"hydra.run.dir={run_path}"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("WANDB_")}
    result = subprocess.run([sys.executable, str(ROOT / "train.py"), *args], cwd=ROOT, capture_output=True, text=True,
                            timeout=300, env={**env, "WANDB_MODE": "offline", "HYDRA_FULL_ERROR": "0"})
    assert result.returncode == 0, result.stderr[-3000:]
    (offline,) = (run_path / "wandb").glob("offline-run-*")
    records = list(wandb_records(next(offline.glob("run-*.wandb"))))

    (run,) = [r.run for r in records if r.HasField("run")]
    assert run.project == "openclaw-test" and run.display_name == "claw-ppo-run"
    config = {item.key: json.loads(item.value_json) for item in run.config.update}
    saved = OmegaConf.to_container(OmegaConf.load(run_path / "config.yaml"))
    assert {k: config[k] for k in saved} == saved  # the resolved config, as config.yaml holds it

    history = [{i.key or "/".join(i.nested_key): json.loads(i.value_json) for i in r.history.item}
               for r in records if r.HasField("history")]
    final = next(h for h in history if h.get("_step") == 2048)
    with (run_path / "eval.csv").open(newline="") as f:
        evals = list(csv.DictReader(f))
    assert final["eval/mean_return"] == float(evals[-1]["mean_return"])
    assert {"train/value_loss", "time/fps", "env/reward_reach", "rollout/ep_rew_mean"} <= set(final)

    clip = run_path / "videos" / "step_000000002048_env1_ep0.mp4"
    assert final["eval/video/env1_ep0/_type"] == "video-file"
    logged = offline / "files" / final["eval/video/env1_ep0/path"]
    assert logged.read_bytes() == clip.read_bytes()
    assert iio.imread(logged).shape == (101, 48, 64, 3)
