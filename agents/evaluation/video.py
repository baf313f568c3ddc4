"""Evaluation videos: render chosen episodes to mp4 with a text overlay, and contact sheets of them.

:class:`ClipRecorder` wraps one env (inside SB3's ``Monitor``, below any ``VecNormalize``, so it sees
raw observations). It renders nothing until :meth:`ClipRecorder.arm` asks for the next ``k`` episodes;
each of those is streamed to its own mp4 (H.264 through imageio-ffmpeg, so memory stays flat however
long the episode) and the recorder goes idle again, so steps that are not recorded never render.
:func:`recording` arms the recorders of a vector env around a rollout, e.g. one of
:func:`agents.evaluation.protocol.evaluate`, and hands back the :class:`Clip` s.

A clip of an episode of ``T`` steps has ``T + 1`` frames: the state after ``reset`` and after each
step. Frames are RGB ``uint8`` arrays ``(height, width, 3)``; the frame rate defaults to the env's
control rate (``metadata["render_fps"]``: 50 Hz quadruped, 25 Hz claw), so videos play in real time.

The overlay (top left) shows the step, simulated time and return so far, and the lines the env
declares (:meth:`envs.base.MujocoTaskEnv.overlay_lines`: e.g. the commanded and measured body-frame
velocity of the quadruped, the cube's distance to the goal of the claw).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import lru_cache, partial
from pathlib import Path
from typing import Any

import gymnasium as gym
import imageio
import matplotlib
import numpy as np
from PIL import Image, ImageDraw, ImageFont
from stable_baselines3.common.vec_env import VecEnv

from agents.evaluation.protocol import split_episodes

THUMBNAIL_STRIDE = 2  # thumbnails keep every 2nd pixel row and column (half resolution)


@dataclass
class Clip:
    """One recorded episode: its mp4 and a few half-resolution frames evenly spread over it."""

    path: Path
    frames: int
    episode_return: float
    length: int  # env steps
    thumbnails: list[np.ndarray] = field(default_factory=list, repr=False)


@lru_cache(maxsize=8)
def _glyphs(size: int) -> np.ndarray:
    """A monospaced bitmap font: ``(128, h, w)`` uint8 coverage of each ASCII character, ``size`` px.

    Rendered once per size with FreeType (DejaVu Sans Mono, shipped with matplotlib), so that drawing a
    line is one fancy-indexing copy (~0.1 ms per frame instead of ~1 ms with PIL's text drawing) and
    digits keep their columns from frame to frame.
    """
    path = Path(matplotlib.get_data_path()) / "fonts" / "ttf" / "DejaVuSansMono.ttf"
    font = ImageFont.truetype(str(path), size) if path.is_file() else ImageFont.load_default(size=size)
    ascent, descent = font.getmetrics()
    h, w = ascent + descent, int(round(font.getlength("M")))
    atlas = np.zeros((128, h, w), dtype=np.uint8)
    for code in range(32, 127):
        glyph = Image.new("L", (w, h))
        ImageDraw.Draw(glyph).text((0, 0), chr(code), fill=255, font=font)
        atlas[code] = np.asarray(glyph)
    return atlas


def draw_text(frame: np.ndarray, lines: Sequence[str]) -> np.ndarray:
    """Write ``lines`` (ASCII) in white on a darkened box in the top-left corner of ``frame`` (in place)."""
    if not lines:
        return frame
    atlas = _glyphs(max(10, frame.shape[0] // 34))
    _, h, w = atlas.shape
    pad = max(2, h // 4)
    box = frame[: 2 * pad + h * len(lines), : 2 * pad + w * max(len(line) for line in lines)]
    np.right_shift(box, 1, out=box)  # darken the box only: cheaper than blending the whole frame
    for i, line in enumerate(lines):
        codes = np.frombuffer(line.encode("ascii", "replace"), dtype=np.uint8) & 127
        text = atlas[codes].transpose(1, 0, 2).reshape(h, -1)  # glyphs side by side: (h, len * w)
        region = box[pad + i * h : pad + (i + 1) * h, pad : pad + text.shape[1]]
        np.maximum(region, text[: region.shape[0], : region.shape[1], None], out=region)
    return frame


def open_writer(path: Path, fps: float) -> Any:
    """An H.264 mp4 writer (``append_data(frame)``, ``close()``) playable in browsers and players."""
    return imageio.get_writer(
        path,
        format="FFMPEG",
        mode="I",
        fps=fps,
        codec="libx264",
        pixelformat="yuv420p",
        macro_block_size=2,  # yuv420p needs even sizes; 480x480, 320x240 ... are encoded as they are
        ffmpeg_params=["-preset", "veryfast"],  # ~1.5x faster than the default "medium", same size here
        ffmpeg_log_level="error",
    )


class ClipRecorder(gym.Wrapper):
    """Record the next ``k`` episodes of a MuJoCo env (``render_mode="rgb_array"``) after :meth:`arm`.

    Args:
        env: the env, made with ``render_mode="rgb_array"`` (and its ``width``, ``height``, ``camera``).
        fps: video frame rate (Hz); ``None`` = the env's control rate, i.e. real time.
        overlay: draw step, time, return and the env's task lines (its ``overlay_lines(obs, info)``) on each frame.
        shadows: render shadows (about 2x slower with software OpenGL, see ``benchmarks/RESULTS.md``).
        thumbnails: frames per clip kept for contact sheets.
    """

    def __init__(
        self, env: gym.Env, fps: float | None = None, overlay: bool = True, shadows: bool = True, thumbnails: int = 6
    ) -> None:
        super().__init__(env)
        if env.render_mode != "rgb_array":
            raise ValueError(f"ClipRecorder needs render_mode='rgb_array', got {env.render_mode!r}")
        if not shadows:
            self.unwrapped.model.light_castshadow[:] = False  # a rendering-only field of the model
        self.fps = float(fps or env.metadata.get("render_fps", 30))
        self.dt = float(getattr(self.unwrapped, "dt", 1.0 / self.fps))  # simulated seconds per step
        self.overlay = overlay
        self.thumbnails = thumbnails
        max_steps = env.spec.max_episode_steps if env.spec is not None else None
        self._stride = max(1, (max_steps or 1000) // (4 * thumbnails))  # keep ~4x the thumbnails needed
        self._directory = Path(".")
        self._prefix = ""
        self._wanted = 0
        self._clips: list[Clip] = []
        self._writer: Any = None
        self._path = Path()
        self._kept: list[tuple[int, np.ndarray]] = []  # (step, half-resolution frame) for the contact sheet
        self._last: tuple[int, np.ndarray] = (0, np.zeros((0, 0, 3), dtype=np.uint8))
        self._steps = 0
        self._return = 0.0

    # ------------------------------------------------------------------ control
    def arm(self, directory: str | Path, prefix: str, episodes: int) -> None:
        """Record the next ``episodes`` episodes (starting at the next reset) as ``<prefix>_ep<k>.mp4``."""
        self._close_writer()
        self._directory, self._prefix, self._wanted = Path(directory), prefix, int(episodes)
        self._directory.mkdir(parents=True, exist_ok=True)
        self._clips = []

    def disarm(self) -> list[Clip]:
        """Stop recording (an unfinished episode's clip is kept as it is) and return the clips made."""
        self._close_writer()
        self._wanted = 0
        clips, self._clips = self._clips, []
        return clips

    # ------------------------------------------------------------------ gym API
    def reset(self, **kwargs):
        obs, info = self.env.reset(**kwargs)
        self._close_writer()
        if len(self._clips) < self._wanted:
            self._path = self._directory / f"{self._prefix}_ep{len(self._clips)}.mp4"
            self._writer = open_writer(self._path, self.fps)
            self._steps, self._return, self._kept = 0, 0.0, []
            self._capture(obs, info)
        return obs, info

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        if self._writer is not None:
            self._steps += 1
            self._return += float(reward)
            self._capture(obs, info)
            if terminated or truncated:
                self._close_writer()
        return obs, reward, terminated, truncated, info

    def close(self) -> None:
        self._close_writer()
        super().close()

    # ------------------------------------------------------------------ internals
    def _capture(self, obs: Any, info: dict[str, Any]) -> None:
        frame = self.env.render()
        self._last = (self._steps, frame[::THUMBNAIL_STRIDE, ::THUMBNAIL_STRIDE].copy())  # before the overlay
        if self._steps % self._stride == 0:
            self._kept.append(self._last)
        if self.overlay:
            head = f"step {self._steps:4d}  t {self._steps * self.dt:5.2f} s  return {self._return:8.2f}"
            draw_text(frame, [head, *self.unwrapped.overlay_lines(obs, info)])
        self._writer.append_data(frame)

    def _close_writer(self) -> None:
        if self._writer is None:
            return
        self._writer.close()
        self._writer = None
        kept = self._kept if self._kept[-1] is self._last else [*self._kept, self._last]  # end on the last frame
        picks = np.linspace(0, len(kept) - 1, min(self.thumbnails, len(kept))).round().astype(int)
        thumbnails = [draw_text(kept[i][1], [f"t {kept[i][0] * self.dt:.2f} s"]) for i in picks]
        self._clips.append(Clip(self._path, self._steps + 1, self._return, self._steps, thumbnails))


def recordable(
    kwargs: dict[str, Any], width: int, height: int, camera: str | None = None, **recorder: Any
) -> tuple[dict[str, Any], Callable[[gym.Env], gym.Env]]:
    """Env constructor arguments for ``width`` x ``height`` frames (``camera=None``: the env's default) and a
    picklable wrapper making each env a :class:`ClipRecorder` (``recorder``: its arguments), for ``make_vec_env``."""
    render = {"render_mode": "rgb_array", "width": width, "height": height}
    return {**kwargs, **render, **({"camera": camera} if camera else {})}, partial(ClipRecorder, **recorder)


@contextmanager
def recording(venv: VecEnv, directory: str | Path, prefix: str, episodes: int) -> Iterator[list[Clip]]:
    """Record the first ``episodes`` episodes of a rollout on ``venv`` whose envs are :class:`ClipRecorder` s.

    Episodes are spread over the envs as :func:`agents.evaluation.protocol.evaluate` spreads them, so every
    recorded episode is one that an evaluation of at least ``episodes`` episodes counts. Files are
    ``<directory>/<prefix>_env<i>_ep<k>.mp4``. The yielded list is filled when the block exits::

        with recording(venv, run_dir / "videos", "step_000100000", 2) as clips:
            evaluate(model, venv, 10)
    """
    clips: list[Clip] = []
    counts = split_episodes(episodes, venv.num_envs)
    armed = [i for i, k in enumerate(counts) if k > 0]
    for i in armed:
        venv.env_method("arm", directory, f"{prefix}_env{i}", counts[i], indices=[i])
    try:
        yield clips
    finally:
        for i in armed:
            clips.extend(venv.env_method("disarm", indices=[i])[0])


def contact_sheet(clips: Sequence[Clip], gap: int = 4) -> np.ndarray:
    """One row of thumbnails per clip, on a white background; an RGB ``uint8`` image."""
    rows = [np.concatenate(_with_gaps(c.thumbnails, gap, axis=1), axis=1) for c in clips if c.thumbnails]
    if not rows:
        raise ValueError("no frames to put on a contact sheet")
    width = max(r.shape[1] for r in rows)
    rows = [np.pad(r, ((0, 0), (0, width - r.shape[1]), (0, 0)), constant_values=255) for r in rows]
    return np.concatenate(_with_gaps(rows, gap, axis=0), axis=0)


def _with_gaps(images: Sequence[np.ndarray], gap: int, axis: int) -> list[np.ndarray]:
    """``images`` with white ``gap``-pixel spacers between them along ``axis`` (0 rows, 1 columns)."""
    out: list[np.ndarray] = []
    for image in images:
        if out:
            shape = list(image.shape)
            shape[axis] = gap
            out.append(np.full(shape, 255, dtype=np.uint8))
        out.append(image)
    return out
