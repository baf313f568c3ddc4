"""End-of-run artefacts: the learning-curve PNG and ``summary.json``."""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from agents.training.run_dir import SUMMARY  # noqa: E402
from envs.declarations import Metric  # noqa: E402


def _read_csv(path: Path) -> list[dict[str, str]]:
    if not path.is_file():
        return []
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def _series(rows: list[dict[str, str]], x: str, y: str) -> tuple[list[float], list[float]]:
    xs, ys = [], []
    for row in rows:
        if row.get(x) and row.get(y):
            xs.append(float(row[x]))
            ys.append(float(row[y]))
    return xs, ys


def plot_learning_curve(run_dir: str | Path, metrics: Sequence[Metric] = (), title: str = "") -> Path:
    """Plot training episode return (rollout/ep_rew_mean) and evaluation return against env steps.

    ``metrics``: the env's declared metrics; those that are fractions of episodes (e.g. success rate,
    ``eval.csv`` columns of their names) go on a second axis in [0, 1].
    """
    run_dir = Path(run_dir)
    progress = _read_csv(run_dir / "progress.csv")
    evals = _read_csv(run_dir / "eval.csv")
    fig, ax = plt.subplots(figsize=(7, 4), dpi=110)
    x, y = _series(progress, "time/total_timesteps", "rollout/ep_rew_mean")
    if x:
        ax.plot(x, y, label="training episodes (mean of last 100)", color="tab:blue", alpha=0.7)
    x, y = _series(evals, "step", "mean_return")
    if x:
        ax.plot(x, y, "o-", label="deterministic evaluation", color="tab:orange")
    rates = [(m.label, _series(evals, "step", m.name)) for m in metrics if m.unit == "fraction"]
    rates = [(label, xy) for label, xy in rates if xy[0]]
    if rates:
        twin = ax.twinx()
        for i, (label, xy) in enumerate(rates):
            twin.plot(*xy, "s--", color=f"C{(2 + i) % 10}", label=f"eval {label}")  # C0, C1: the returns
        twin.set_ylim(-0.05, 1.05)
        twin.set_ylabel("fraction of eval episodes")
        twin.legend(loc="upper left", fontsize=8)
    ax.set_xlabel("environment steps")
    ax.set_ylabel("episode return")
    ax.set_title(title or run_dir.name)
    ax.grid(alpha=0.3)
    if ax.get_lines():
        ax.legend(loc="lower right", fontsize=8)
    else:  # a short run without evaluations (train.eval_freq=0) in which no episode ended: nothing to plot
        ax.text(0.5, 0.5, "no episode ended and no evaluation ran", ha="center", va="center", transform=ax.transAxes)
    fig.tight_layout()
    out = run_dir / "learning_curve.png"
    fig.savefig(out)
    plt.close(fig)
    return out


def write_summary(run_dir: str | Path, summary: dict[str, Any]) -> Path:
    out = Path(run_dir) / SUMMARY
    tmp = out.with_name(".summary.json.tmp")  # written whole, then renamed: never a truncated summary
    tmp.write_text(json.dumps(summary, indent=2))
    os.replace(tmp, out)
    return out


def format_summary(summary: dict[str, Any]) -> str:
    """A few aligned lines for the console."""
    shown = {key: value for key, value in summary.items() if not isinstance(value, (dict, list))}
    width = max(map(len, shown), default=0)
    lines = ["", "summary"]
    for key, value in shown.items():
        lines.append(f"  {key:{width}s} {f'{value:.4g}' if isinstance(value, float) else value}")
    return "\n".join(lines)
