"""Helpers shared by the learning benchmarks: run ``train.py`` and read what it wrote."""

from __future__ import annotations

import csv
import json
import math
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Criterion:
    """A learning benchmark's threshold on one ``eval.csv`` row, fixed before running."""

    passed: Callable[[dict[str, str]], bool]
    text: str


# The quadruped tasks' (20 evaluation episodes) and the claw tasks' (50 episodes) thresholds.
TRACKING = Criterion(lambda row: float(row["tracking_error"]) <= 0.15 and float(row["fall_rate"]) <= 0.05,
                     "tracking error <= 0.15 m/s and falls <= 5% over 20 episodes")
SUCCESS = Criterion(lambda row: float(row["success_rate"]) >= 0.9, "success >= 90% over 50 episodes")


def train(overrides: Sequence[str], run_dir: Path) -> float:
    """Run ``train.py`` with ``overrides`` into ``run_dir``; return the wall-clock seconds."""
    cmd = [sys.executable, str(ROOT / "train.py"), *overrides, f"hydra.run.dir={run_dir}", "train.progress_bar=false"]
    print("$", " ".join(cmd), flush=True)
    t0 = time.time()
    subprocess.run(cmd, cwd=ROOT, check=True)
    return time.time() - t0


def eval_rows(run_dir: Path) -> list[dict[str, str]]:
    with (run_dir / "eval.csv").open() as f:
        return list(csv.DictReader(f))


def first_passing(run_dir: Path, passed: Callable[[dict[str, str]], bool]) -> dict[str, str] | None:
    """The first evaluation row of a run that meets the criterion, or None."""
    return next((row for row in eval_rows(run_dir) if passed(row)), None)


def summary(run_dir: Path) -> dict:
    return json.loads((run_dir / "summary.json").read_text())


def mean_ci95(values: Sequence[float]) -> tuple[float, float]:
    """Mean and the half-width of a 95% Student-t confidence interval (0 for a single value)."""
    n = len(values)
    mean = statistics.fmean(values)
    if n < 2:
        return mean, 0.0
    t = {2: 12.706, 3: 4.303, 4: 3.182, 5: 2.776, 6: 2.571, 7: 2.447, 8: 2.365, 9: 2.306, 10: 2.262}.get(n, 1.96)
    return mean, t * statistics.stdev(values) / math.sqrt(n)


def interleaved_medians(timers: dict[str, Callable[[], float]], repeats: int) -> dict[str, float]:
    """Median of ``repeats`` calls of each timer (a rate, e.g. steps/s), the timers taking turns."""
    rates: dict[str, list[float]] = {name: [] for name in timers}
    for _ in range(repeats):
        for name, timer in timers.items():
            rates[name].append(timer())
    return {name: statistics.median(values) for name, values in rates.items()}


def ratio_table(medians: dict[str, float], unit: str, baseline: str, digits: int) -> str:
    """A Markdown table of ``medians`` (``unit``) and each one's ratio to ``medians[baseline]``."""
    lines = [f"| learner | {unit} | / {baseline} |", "|---|---:|---:|"]
    lines += [f"| {name} | {value:.{digits}f} | {value / medians[baseline]:.2f}x |" for name, value in medians.items()]
    return "\n".join(lines)
