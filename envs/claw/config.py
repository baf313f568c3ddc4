""":class:`ClawConfig`: ``ClawEnv``'s constructor arguments, every default in one place, and their checks
(units and meaning: the Arguments table of ``ClawEnv``'s docstring)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar, Literal, get_args

from envs.base import EnvConfig
from envs.claw.gantry import ARMS
from envs.claw.scene import (
    OBJECT_HALF_SIZE,
    OBJECT_MASS,
    OBJECT_PROPERTIES,
    OBJECT_XY_LIMIT,
    PAD_FRICTION,
    ObjectProperty,
)

Task = Literal["lift", "place"]
RewardType = Literal["dense", "sparse"]
TASKS = get_args(Task)  # the task= choices
REWARD_TYPES = get_args(RewardType)  # the reward_type= choices
CAMERAS = ("overview", "front", "closeup")  # the camera names of the claw scene


@dataclass(kw_only=True)
class ClawConfig(EnvConfig):
    """``ClawEnv``'s constructor arguments, their defaults and their checks (the Arguments table of its
    docstring; units there). After the checks (the declared kinds first: :mod:`envs.typed`) the numbers are
    floats, the height ranges float pairs and each object property (``object_mass``, ``object_friction``,
    ``object_size``) a float or a ``(low, high)`` float pair."""

    task: Task = "lift"
    arm: str = "gantry"
    reward_type: RewardType = "sparse"
    distance_threshold: float = 0.025
    object_range: float = 0.15
    object_yaw_range: float = math.pi / 4
    lift_height_range: tuple[float, float] = (0.10, 0.20)
    target_range: float = 0.15
    target_height_range: tuple[float, float] = (0.0, 0.0)
    min_target_distance: float = 0.10
    object_mass: float | tuple[float, float] = OBJECT_MASS
    object_friction: float | tuple[float, float] = PAD_FRICTION
    object_size: float | tuple[float, float] = OBJECT_HALF_SIZE
    camera: str | int | None = "overview"

    MODELS: ClassVar[dict[str, tuple[str, ...]]] = {"arm": ARMS}

    def check(self) -> None:
        super().check()
        if self.arm not in ARMS:
            raise ValueError(f"arm={self.arm!r} is not supported; use arm='gantry' (the default) or arm='panda'")
        if not 0.0 < self.distance_threshold <= 0.2:
            raise ValueError(f"distance_threshold={self.distance_threshold} m must be in (0, 0.2]; Fetch uses 0.05")
        _check_range("object_range", self.object_range, 0.0, OBJECT_XY_LIMIT)
        _check_range("target_range", self.target_range, 0.0, 0.22)
        _check_range("object_yaw_range", self.object_yaw_range, 0.0, math.pi / 4 + 1e-9)
        _check_interval("lift_height_range", self.lift_height_range, 0.0, 0.30)
        _check_interval("target_height_range", self.target_height_range, 0.0, 0.30)
        d, r = self.min_target_distance, self.target_range
        if not 0.0 <= d <= max(r, 0.0) * math.sqrt(2) or (d > 0 and r == 0):
            raise ValueError(
                f"min_target_distance={d} m cannot always be met with target_range="
                f"{r} m; use 0 <= min_target_distance <= target_range"
            )
        if isinstance(self.camera, str) and self.camera not in CAMERAS:
            raise ValueError(
                f"camera={self.camera!r} is unknown; use 'overview', 'front', 'closeup', an id or -1 (free camera)"
            )
        for prop in OBJECT_PROPERTIES.values():
            _check_object_property(prop, getattr(self, prop.argument))


def _check_range(name: str, value: float, lo: float, hi: float) -> None:
    if not lo <= value <= hi:
        raise ValueError(f"{name}={value!r} must be a number in [{lo}, {hi:.3f}]")


def _check_object_property(prop: ObjectProperty, value: float | tuple[float, float]) -> None:
    """``ValueError`` naming argument ``prop.argument`` and the fix unless ``value`` (a number or a pair of
    numbers already) is within ``prop.limits``, a pair with ``low < high``."""
    lo, hi = prop.limits
    unit = f" {prop.unit}" if prop.unit else ""
    entries = value if isinstance(value, tuple) else (value,)
    if not all(lo <= v <= hi for v in entries) or (isinstance(value, tuple) and not value[0] < value[1]):
        raise ValueError(f"{prop.argument}={value!r} must be a number in [{lo}, {hi}]{unit} (fixed) or a [low, high] "
                         f"pair with {lo} <= low < high <= {hi} (drawn per episode)")


def _check_interval(name: str, value: tuple[float, float], lo: float, hi: float) -> None:
    a, b = value
    if not lo <= a <= b <= hi:
        raise ValueError(f"{name}={value!r} must satisfy {lo} <= low <= high <= {hi}")
