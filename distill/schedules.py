"""Schedules for the distillation weight alpha as a function of training progress.

``progress`` runs from 0 (first update) to 1 (end of ``total_timesteps``).
"""

from __future__ import annotations

import math
from collections.abc import Callable

AlphaSchedule = Callable[[float], float]

SCHEDULES = ("constant", "linear", "cosine", "exponential")


def make_schedule(
    kind: str, alpha: float, final_alpha: float = 0.0, decay_rate: float = 5.0, end: float = 1.0
) -> AlphaSchedule:
    """alpha(progress) for ``kind`` in :data:`SCHEDULES`, run over progress [0, ``end``] and constant after.

    ``end`` in (0, 1] is the training progress at which the schedule ends (e.g. 0.04 = the first 200 k
    steps of a 5 M-step run); 1 spreads it over the whole run.

    * ``constant``: alpha.
    * ``linear``: alpha -> final_alpha linearly.
    * ``cosine``: alpha -> final_alpha along a half cosine.
    * ``exponential``: final_alpha + (alpha - final_alpha) * exp(-decay_rate * progress).
    """
    if alpha < 0 or final_alpha < 0:
        raise ValueError(f"alpha={alpha} and final_alpha={final_alpha} must be >= 0")
    if not 0.0 < end <= 1.0:
        raise ValueError(f"end={end} must be in (0, 1]: the training progress at which the schedule ends")

    def clamp(p: float) -> float:
        return min(max(p / end, 0.0), 1.0)

    if kind == "constant":
        return lambda p: alpha
    if kind == "linear":
        return lambda p: alpha + (final_alpha - alpha) * clamp(p)
    if kind == "cosine":
        return lambda p: final_alpha + (alpha - final_alpha) * 0.5 * (1.0 + math.cos(math.pi * clamp(p)))
    if kind == "exponential":
        if decay_rate <= 0:
            raise ValueError(f"decay_rate={decay_rate} must be > 0 for the exponential schedule")
        return lambda p: final_alpha + (alpha - final_alpha) * math.exp(-decay_rate * clamp(p))
    raise ValueError(f"alpha schedule {kind!r} is unknown; choose one of: {', '.join(SCHEDULES)}")
