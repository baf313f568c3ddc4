"""Training callbacks: progress bar, per-term reward logging, periodic evaluation and checkpoints."""

from __future__ import annotations

import csv
import time
from collections import defaultdict
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field
from numbers import Real
from pathlib import Path
from typing import Any

import numpy as np
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.logger import Logger
from stable_baselines3.common.vec_env import VecEnv
from tqdm import tqdm

from agents import checkpoint
from agents.evaluation.protocol import EvalResult, declared_metrics, evaluate, step_term_filter
from agents.vec_env import copy_normalization
from agents.evaluation.video import recording
from agents.signals import signals_deferred
from agents.training.tracking import CLIP_KEY, NOT_FOR_CLIPS, EvalClips


class ProgressBar(BaseCallback):
    """A tqdm bar over environment steps showing steps/s and the mean return of recent episodes."""

    def __init__(self, total_timesteps: int, refresh_s: float = 0.5) -> None:
        super().__init__()
        self.total = total_timesteps
        self.refresh_s = refresh_s
        self._bar: tqdm | None = None
        self._last = 0.0

    def _on_training_start(self) -> None:
        self._bar = tqdm(total=self.total, initial=self.num_timesteps, unit="step", dynamic_ncols=True, smoothing=0.1)

    def _on_step(self) -> bool:
        now = time.monotonic()
        if now - self._last >= self.refresh_s and self._bar is not None:
            self._last = now
            self._bar.n = min(self.num_timesteps, self.total)
            episodes = self.model.ep_info_buffer
            if episodes:
                self._bar.set_postfix(ret=f"{np.mean([e['r'] for e in episodes]):.1f}", refresh=False)
            self._bar.refresh()
        return True

    def _on_training_end(self) -> None:
        if self._bar is not None:
            self._bar.n = min(self.num_timesteps, self.total)
            self._bar.close()
            self._bar = None

    def write(self, line: str) -> None:
        (self._bar.write if self._bar is not None else print)(line)


class InfoTermLogger(BaseCallback):
    """Average every ``reward_*`` term and per-step metric (e.g. ``tracking_error``) from ``info``; log them under ``env/``.

    The per-step metrics are those the env declares with ``per_episode="mean"`` (:class:`envs.declarations.Metric`).

    Means are taken over all env steps since the last record, made at each PPO rollout end or, for
    off-policy learners, every ``every_steps`` env steps (SB3 writes them at its next log dump).
    Also logs ``time/fps_recent`` over that span. A learner on the device hands each reading as one (n_envs,) tensor
    (``info_terms``) instead of per-env infos.
    """

    def __init__(self, every_steps: int = 1000) -> None:
        super().__init__()
        self.every_steps = every_steps
        self._sums: dict[str, float] = defaultdict(float)
        self._count = 0
        self._last_dump_step = 0
        self._last_dump_time = time.monotonic()
        self._is_step_term: Callable[[str], bool] = step_term_filter(())

    def _on_training_start(self) -> None:
        self._is_step_term = step_term_filter(declared_metrics(self.training_env))
        self._last_dump_step = self.num_timesteps
        self._last_dump_time = time.monotonic()

    def _on_step(self) -> bool:
        sums = self._sums
        terms = self.locals.get("info_terms")  # a learner on the device: each reading's (n_envs,) tensor
        if terms is not None:
            for key, value in terms.items():
                if self._is_step_term(key):
                    sums[key] = sums[key] + value.sum()  # stays on the device until the record
            self._count += len(next(iter(terms.values()))) if terms else 0
        else:
            for info in self.locals["infos"]:
                for key, value in info.items():
                    if self._is_step_term(key):
                        sums[key] += value
            self._count += len(self.locals["infos"])
        if self.locals.get("rollout_buffer") is None and self.num_timesteps - self._last_dump_step >= self.every_steps:
            self._dump()
        return True

    def _on_rollout_end(self) -> None:
        if self.locals.get("rollout_buffer") is not None:
            self._dump()

    def _dump(self) -> None:
        if self._count:
            for key, total in self._sums.items():
                self.logger.record(f"env/{key}", float(total) / self._count)
        now = time.monotonic()
        steps = self.num_timesteps - self._last_dump_step
        if steps > 0:
            self.logger.record("time/fps_recent", steps / max(now - self._last_dump_time, 1e-9))
        self._sums.clear()
        self._count = 0
        self._last_dump_step, self._last_dump_time = self.num_timesteps, now


class CurriculumLogger(BaseCallback):
    """For an env with a curriculum (its ``CURRICULUM``, :class:`envs.declarations.Curriculum`): the env copies' levels
    at each PPO rollout end (off-policy: every ``every_steps`` env steps) under ``curriculum/``: ``mean_level``,
    ``max_level``, and per group ``level_<group>`` (the mean over the copies in it; absent while none is) and
    a TensorBoard histogram ``levels_<group>`` (from the step's infos, or a learner on the device's ``info_terms``).
    Nothing for other envs."""

    NOT_TEXT = ("stdout", "log", "json", "csv")  # histograms go to TensorBoard only

    def __init__(self, every_steps: int = 1000) -> None:
        super().__init__()
        self.every_steps = every_steps
        self.declared = None
        self._last = 0

    def _on_training_start(self) -> None:
        env = self.training_env
        self.declared = env.get_attr("CURRICULUM", indices=[0])[0] if env.has_attr("CURRICULUM") else None
        self._last = self.num_timesteps

    def _on_step(self) -> bool:
        if (self.declared is not None and self.locals.get("rollout_buffer") is None
                and self.num_timesteps - self._last >= self.every_steps):
            self._record()
        return True

    def _on_rollout_end(self) -> None:
        if self.declared is not None and self.locals.get("rollout_buffer") is not None:
            self._record()

    def _record(self) -> None:
        import torch

        c, terms = self.declared, self.locals.get("info_terms")  # a learner on the device: (n_envs,) tensors
        if terms is not None:
            levels, groups = terms[c.level_key].cpu().numpy().astype(float), terms[c.group_key].cpu().numpy()
        else:
            levels = np.array([info[c.level_key] for info in self.locals["infos"]], dtype=float)
            groups = np.array([info[c.group_key] for info in self.locals["infos"]])
        self.logger.record("curriculum/mean_level", float(levels.mean()))
        self.logger.record("curriculum/max_level", float(levels.max()))
        for g, name in enumerate(c.groups):
            mine = levels[groups == g]
            if len(mine):
                self.logger.record(f"curriculum/level_{name}", float(mine.mean()))
                self.logger.record(f"curriculum/levels_{name}", torch.as_tensor(mine), exclude=self.NOT_TEXT)
        self._last = self.num_timesteps


def pending_log(logger: Logger) -> dict[str, list[Any]]:
    """The numbers ``logger`` holds for its next dump (the next ``progress.csv`` row), JSON-ready: ``{key: [value,
    excluded formats]}``. Histograms and clips (TensorBoard only) are left out."""
    return {key: [value.item() if isinstance(value, np.generic) else value, list(logger.name_to_excluded[key])]
            for key, value in logger.name_to_value.items() if isinstance(value, Real)}


def record_pending(logger: Logger, pending: dict[str, list[Any]]) -> None:
    """Record in ``logger`` what :func:`pending_log` read (a resume: what its checkpoint's run had still to write)."""
    for key, (value, excluded) in pending.items():
        logger.record(key, value, tuple(excluded))


@dataclass(frozen=True)
class WholeUpdate:
    """Where a run stood after its learner's last whole update (SB3 calls ``on_rollout_start`` right after each
    update and ``on_training_end`` after the last), as a checkpoint saves it so that a resume goes on from there as
    the run did: ``step`` (env steps) and the checkpoint's ``meta`` (:func:`pending_log`, the runner's state)."""

    step: int
    meta: dict[str, Any] = field(default_factory=dict)


class EvalAndCheckpoint(BaseCallback):
    """Every ``eval_freq`` steps: evaluate deterministically and keep the best; every ``checkpoint_freq``: save.

    With ``eval_seed`` every evaluation re-seeds the eval envs with it first, so each runs the same episodes (the same
    tiles, commands and reset noise): the returns compare the policies, and the best checkpoint is the best on those
    episodes, not the one that drew the easiest ones.

    Evaluation results are appended to ``<run_dir>/eval.csv`` (:attr:`FIELDS`, then the metrics the env
    declares; ``wall_time_s`` is the run's training time, continued across resumes) and logged under ``eval/``.
    Checkpoints go through :mod:`agents.checkpoint` (atomic, prunes old ones); each is written at a whole update
    (:class:`WholeUpdate`: the one due in a rollout once its update is made), and from a rollout's end
    to the next one's start (the progress row, the update) Ctrl-C and SIGTERM wait. With
    ``video_episodes`` > 0 (eval envs wrapped in :class:`agents.evaluation.video.ClipRecorder`) the first episodes of
    each evaluation go to ``<run_dir>/videos/step_<n>_env<i>_ep<k>.mp4`` and to the logger as
    ``eval/video`` (:class:`agents.training.tracking.EvalClips`: animated GIFs in TensorBoard).
    """

    FIELDS = ("step", checkpoint.WALL_KEY, "mean_return", "std_return", "mean_length")

    def __init__(
        self,
        run_dir: Path,
        eval_env: VecEnv | None,
        eval_freq: int,
        eval_episodes: int,
        checkpoint_freq: int,
        keep_checkpoints: int,
        progress: ProgressBar | None = None,
        start_time: float | None = None,
        video_episodes: int = 0,
        eval_seed: int | None = None,
        run_state: Callable[[], dict[str, Any]] = dict,
    ) -> None:
        super().__init__()
        self.run_dir = Path(run_dir)
        self.eval_env = eval_env
        self.eval_freq = eval_freq
        self.eval_episodes = eval_episodes
        self.checkpoint_freq = checkpoint_freq
        self.keep = keep_checkpoints
        self.progress = progress
        self.video_episodes = video_episodes  # recorded per evaluation (eval envs must be ClipRecorders)
        self.eval_seed = eval_seed
        self.start_time = start_time if start_time is not None else time.time()  # of the run: earlier on a resume
        self.best_return = -np.inf
        self.last_result: EvalResult | None = None
        self.last_eval_step = -1
        self.returns: list[float] = []
        self._next_eval = 0
        self._next_checkpoint = 0
        self._checkpoint_due = False
        self.run_state = run_state  # checkpoint meta of the rest of the run (the runner's: a retired teacher's step)
        self.whole: WholeUpdate | None = None  # where the run stood after the learner's last whole update
        self._hold: ExitStack | None = None
        self._arrived: list[int] = []

    def _on_training_start(self) -> None:
        best = checkpoint.best(self.run_dir)
        if best is not None:  # resumed run: keep beating the previous best
            self.best_return = best.meta.get("mean_return", -np.inf)
        self._next_eval = self._after(self.num_timesteps, self.eval_freq)
        self._next_checkpoint = self._after(self.num_timesteps, self.checkpoint_freq)
        self.whole = self._whole_update()

    @staticmethod
    def _after(step: int, every: int) -> int:
        return (step // every + 1) * every if every > 0 else np.iinfo(np.int64).max

    def _on_step(self) -> bool:
        if self.num_timesteps >= self._next_eval:
            self._next_eval = self._after(self.num_timesteps, self.eval_freq)
            self.run_evaluation()
        if self.num_timesteps >= self._next_checkpoint:
            self._next_checkpoint = self._after(self.num_timesteps, self.checkpoint_freq)
            self._checkpoint_due = True  # saved once this rollout's update is made: nothing is pending then
        return True

    def _on_rollout_end(self) -> None:
        # SB3 now writes the progress row and updates the learner: a Ctrl-C or SIGTERM waits until both are whole
        self._hold = ExitStack()
        self._arrived = self._hold.enter_context(signals_deferred())

    def _on_rollout_start(self) -> None:  # SB3 calls it right after an update
        self.whole = self._whole_update()
        self.release()
        if self._checkpoint_due:  # nothing is pending now: the checkpoint is of this whole update
            self._checkpoint_due = False
            checkpoint.save(self.run_dir, self.model, self.training_env, keep=self.keep, **self.clock(),
                            **self.whole.meta)

    def _on_training_end(self) -> None:  # after the last update
        self.whole = self._whole_update()
        self.release()

    def release(self, interrupt: bool = True) -> None:
        """End the hold of Ctrl-C and SIGTERM begun at the rollout's end; with ``interrupt``, raise
        :class:`KeyboardInterrupt` when one arrived during it."""
        hold, self._hold = self._hold, None
        if hold is not None:
            hold.close()
            if interrupt and self._arrived:
                raise KeyboardInterrupt

    def _whole_update(self) -> WholeUpdate:
        return WholeUpdate(int(self.num_timesteps), {checkpoint.PENDING_LOG_KEY: pending_log(self.logger),
                                                     **self.run_state()})

    def run_evaluation(self) -> EvalResult | None:
        """Evaluate now (or return the evaluation already made at this step)."""
        if self.eval_env is None:
            return None
        if self.last_eval_step == self.num_timesteps and self.last_result is not None:
            return self.last_result
        copy_normalization(self.training_env, self.eval_env)
        if self.eval_seed is not None:
            self.eval_env.seed(self.eval_seed)
        prefix = f"step_{self.num_timesteps:012d}"
        with recording(self.eval_env, self.run_dir / "videos", prefix, self.video_episodes) as clips:
            result = evaluate(self.model, self.eval_env, self.eval_episodes)
        if clips:
            self.logger.record(CLIP_KEY, EvalClips(tuple(clips)), exclude=NOT_FOR_CLIPS)
        self.last_result, self.last_eval_step = result, self.num_timesteps
        self.returns.append(result.mean_return)
        self._log(result)
        if result.mean_return > self.best_return:
            self.best_return = result.mean_return
            checkpoint.save_best(self.run_dir, self.model, self.training_env, mean_return=result.mean_return,
                                 **self.clock())
        return result

    def clock(self) -> dict[str, float]:
        """The run's training wall clock so far (s, counting the time before a resume), as checkpoint meta."""
        return {checkpoint.WALL_KEY: round(time.time() - self.start_time, 1)}

    def not_worse(self) -> bool:
        """True unless the latest evaluation returned less than the one before it."""
        return len(self.returns) < 2 or self.returns[-1] >= self.returns[-2]

    def _log(self, r: EvalResult) -> None:
        row = {
            "step": self.num_timesteps,
            **self.clock(),
            **{k: getattr(r, k) for k in self.FIELDS[2:]},
            **r.metrics,
        }
        for key, value in row.items():
            if value is not None and key not in ("step", checkpoint.WALL_KEY):
                self.logger.record(f"eval/{key}", value)
        for key, value in r.reward_terms.items():
            self.logger.record(f"eval/{key}", value)
        path = self.run_dir / "eval.csv"
        new = not path.exists()
        with path.open("a", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(row))
            if new:
                writer.writeheader()
            writer.writerow(row)
        parts = [f"step {self.num_timesteps}", f"eval return {r.mean_return:.1f} ± {r.std_return:.1f}"]
        parts += [m.format(r.metrics[m.name]) for m in r.declared if r.metrics[m.name] is not None]
        line = " | ".join(parts)
        (self.progress.write if self.progress is not None else print)(line)
