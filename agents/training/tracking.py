"""Where training logs go besides the CSV: playable evaluation clips in TensorBoard; Weights & Biases.

The evaluation callback records the clips of each evaluation through SB3's logger as one
:class:`EvalClips` value (key ``eval/video``). SB3's own writers skip it; :func:`add_trackers`
adds the writers that show it:

* :class:`TensorBoardClips`: every clip as an animated GIF image summary (``eval/video/env<i>_ep<k>``)
  in the run's TensorBoard event file. TensorBoard's Images dashboard plays animated GIFs; the summary
  is the one ``SummaryWriter.add_video`` writes, encoded here with Pillow instead of moviepy.
* :class:`WandbOutputFormat` (``train.wandb=true``, the ``wandb`` extra): a Weights & Biases run with
  the resolved config, every scalar SB3 logs and the clips as videos (``eval/video/env<i>_ep<k>``).
  ``WANDB_MODE=offline`` keeps it on disk (``<run>/wandb/offline-run-*``; ``wandb sync`` uploads it).
"""

from __future__ import annotations

import io
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import imageio.v3 as iio
import numpy as np
from omegaconf import DictConfig, OmegaConf
from PIL import Image
from stable_baselines3.common.logger import KVWriter, Logger, TensorBoardOutputFormat
from tensorboard.compat.proto.summary_pb2 import Summary

from agents.errors import ConfigError
from agents.evaluation.video import Clip

CLIP_KEY = "eval/video"
#: logger formats that must not see an :class:`EvalClips` value (they print or tabulate scalars)
NOT_FOR_CLIPS = ("stdout", "log", "json", "csv")


@dataclass(frozen=True)
class EvalClips:
    """The episodes recorded at one evaluation (their mp4 files), as a logger value."""

    clips: tuple[Clip, ...]


def clip_name(clip: Clip) -> str:
    """A clip's name without its step prefix: ``step_000000002048_env1_ep0.mp4`` -> ``env1_ep0``."""
    return re.sub(r"^step_\d+_", "", clip.path.stem)


def clip_gif(clip: Clip, max_frames: int = 150, max_width: int = 320) -> tuple[bytes, int, int]:
    """A clip's mp4 as an animated GIF (looping, real time): ``(gif bytes, height, width)``.

    Long clips keep every ``k``-th frame so at most ``max_frames`` remain (each shown ``k`` frame
    periods); frames wider than ``max_width`` are subsampled by an integer stride.
    """
    fps = float(iio.immeta(clip.path)["fps"])
    stride = -(-clip.frames // max_frames)
    frames = [f for i, f in enumerate(iio.imiter(clip.path)) if i % stride == 0]
    shrink = max(1, -(-frames[0].shape[1] // max_width))
    # each frame's own 256-colour palette by Pillow's fast octree, not the median cut Pillow picks for RGB frames: a
    # terrain evaluation's clip (1,001 frames read, 143 kept) in 0.6 s instead of 2.2 (benchmarks/RESULTS.md)
    images = [Image.fromarray(f[::shrink, ::shrink]).quantize(256, Image.Quantize.FASTOCTREE) for f in frames]
    out = io.BytesIO()
    images[0].save(out, format="GIF", save_all=True, append_images=images[1:], duration=round(1000 * stride / fps),
                   loop=0)
    return out.getvalue(), images[0].height, images[0].width


class TensorBoardClips(KVWriter):
    """Writes each :class:`EvalClips` value into a ``SummaryWriter`` as animated GIF image summaries."""

    def __init__(self, writer: Any, max_frames: int = 150, max_width: int = 320) -> None:
        self.writer = writer
        self.max_frames, self.max_width = max_frames, max_width

    def write(self, key_values: dict[str, Any], key_excluded: dict[str, tuple[str, ...]], step: int = 0) -> None:
        for key, value in key_values.items():
            if not isinstance(value, EvalClips) or "tensorboard" in (key_excluded.get(key) or ()):
                continue
            for clip in value.clips:
                gif, height, width = clip_gif(clip, self.max_frames, self.max_width)
                image = Summary.Image(height=height, width=width, colorspace=3, encoded_image_string=gif)
                summary = Summary(value=[Summary.Value(tag=f"{key}/{clip_name(clip)}", image=image)])
                self.writer.file_writer.add_summary(summary, step)
        self.writer.flush()

    def close(self) -> None:
        """Nothing to release: the ``SummaryWriter`` belongs to SB3's TensorBoard format, which closes it."""


class WandbOutputFormat(KVWriter):
    """Logs SB3's scalars and :class:`EvalClips` (mp4 videos) to a new Weights & Biases run.

    The run (``project``, ``name``, files under ``directory/wandb``) is started with ``config`` as its
    config; :meth:`close` finishes it. Values excluded for ``"wandb"`` are skipped.
    """

    def __init__(self, project: str, name: str, directory: Path, config: dict[str, Any]) -> None:
        try:
            import wandb
        except ImportError:
            raise ConfigError("train.wandb=true needs Weights & Biases: pip install -e '.[wandb]'") from None
        self._wandb = wandb
        self.run = wandb.init(project=project, name=name, dir=str(directory), config=config)

    def write(self, key_values: dict[str, Any], key_excluded: dict[str, tuple[str, ...]], step: int = 0) -> None:
        data: dict[str, Any] = {}
        for key, value in key_values.items():
            if "wandb" in (key_excluded.get(key) or ()):
                continue
            if isinstance(value, EvalClips):
                data.update({f"{key}/{clip_name(c)}": self._wandb.Video(str(c.path), format="mp4") for c in value.clips})
            elif isinstance(value, (int, float, np.integer, np.floating)):
                data[key] = value
        if data:
            self.run.log(data, step=step)

    def close(self) -> None:
        self.run.finish()


def add_trackers(logger: Logger, cfg: DictConfig) -> None:
    """Add to ``logger`` (SB3's, for the run ``cfg`` configures) the writers that show :class:`EvalClips`.

    A :class:`TensorBoardClips` on its TensorBoard event file, if it writes one; a
    :class:`WandbOutputFormat` with ``train.wandb=true`` (project ``train.wandb_project``, run name
    ``<env>-<agent>-<run dir name>``). ``logger.close()`` finishes them.
    """
    boards: Sequence[TensorBoardOutputFormat] = [f for f in logger.output_formats if isinstance(f, TensorBoardOutputFormat)]
    logger.output_formats.extend(TensorBoardClips(board.writer) for board in boards)
    if cfg.train.wandb:
        run_dir = Path(cfg.run_dir)
        name = f"{cfg.env.name}-{cfg.agent.name}-{run_dir.name}"
        config = OmegaConf.to_container(cfg, resolve=True)
        logger.output_formats.append(WandbOutputFormat(cfg.train.wandb_project, name, run_dir, config))
