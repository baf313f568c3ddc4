"""The quadruped envs' settings in one place: the task's constants and every constructor argument's default.

Like MuJoCo Playground's ``default_config()``: the control period, action scale, thresholds, gait clock,
observation noise scales and reward scales (from the table of terms, ``envs.quadruped.rewards``) are the
module's constants (:class:`~envs.quadruped.QuadrupedEnv`
exposes each as the class attribute of its name); :class:`QuadrupedConfig` (``OpenClaw/Quadruped-*``) and
:class:`QuadrupedTerrainConfig` (``OpenClaw/QuadrupedTerrain-v1``) are the constructors' arguments, their
defaults and their checks (the Arguments tables of the env classes' docstrings; units there).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import mujoco
import numpy as np

from envs.base import EnvConfig
from envs.quadruped.history import MAX_HISTORY_STEPS
from envs.quadruped.rewards import DEFAULT_REWARD_SCALES
from envs.quadruped.robots import LEGS, PARTS, ROBOTS, robot_named
from envs.quadruped.terrain import LEVELS, TERRAIN_TYPES
from envs.typed import checked

FRAME_SKIP = 5  # 0.004 s x 5 = 0.02 s control period (Playground Go1: sim_dt 0.004, ctrl_dt 0.02)
ACTION_SCALE = 0.5  # rad per unit action, every joint (Playground Go1 action_scale); the default of action_scale
AIR_TIME_THRESHOLD = 0.1  # s; Playground Go1 feet_air_time offset
CONTACT_FORCE_THRESHOLD = 1.0  # N of foot touch sensor reading that counts as contact
FOOT_CLEARANCE_TARGET = 0.08  # m: feet_clearance's swing height of a foot's lowest point (Playground Go1:
# max_foot_height 0.1 m of the foot centre, whose sphere is 0.023 m)
FOOT_STEP_MARGIN = 0.04  # m: feet_clearance_ahead's least height of a moving foot's lowest point over the ground ahead
FOOT_LOOKAHEAD = 0.1  # s: the ground ahead of a foot is where its horizontal velocity takes it in this time ...
FOOT_LOOKAHEAD_REACH = 0.1  # m: ... at most this far in x and in y (world)
MAX_SCAN_POINTS = 41  # most height-scan points along one axis (scan_grid)
MAX_SCAN_REACH = 1.5  # m, times the robot's size scale: farthest a scan point may lie from the trunk along x or y
TRUNK_MARGIN = 0.05  # m: trunk_clearance's least height of the trunk's touch zone over the ground under and ahead of it
FALL_GRAVITY_Z = -0.5  # projected gravity z above this = tilt > 60 deg

# domain_randomization's per-episode draws (uniform ranges): foot friction coefficient, link mass and inertia
# factor, servo Kp factor
DR_FOOT_FRICTION = (0.4, 1.25)
DR_MASS_SCALE = (0.9, 1.1)
DR_KP_SCALE = (0.9, 1.1)

GAIT_FREQUENCY_HZ = 2.5  # default gait clock frequency (cycles per second)
GAIT_FREQUENCY_RANGE = (1.0, 4.0)  # Hz, allowed by set_gait_frequency
# Trot: FR and RL share a phase, FL and RR are half a cycle later (fraction of a cycle).
GAIT_PHASE_OFFSETS = np.array([0.0, 0.5, 0.5, 0.0])

# DEFAULT_REWARD_SCALES (per second, by term) comes from the table of terms, envs.quadruped.rewards.TERM_TABLE
REWARD_TERMS = tuple(DEFAULT_REWARD_SCALES)  # the terms' names in the order they are summed


def checked_gait_frequency(frequency_hz: Any) -> float:
    """``frequency_hz`` (Hz) as a float; ``ValueError`` unless it is a number in ``GAIT_FREQUENCY_RANGE``."""
    lo, hi = GAIT_FREQUENCY_RANGE
    try:
        frequency = checked(frequency_hz, float)
    except ValueError:
        frequency = math.nan
    if not lo <= frequency <= hi:
        raise ValueError(f"gait frequency {frequency_hz!r} Hz must be a number in [{lo}, {hi}]")
    return frequency


def _range_pair(name: str, value: tuple, low: float, high: float) -> None:
    """``ValueError`` naming ``name`` unless the ``(lo, hi)`` pair ``value`` (numbers already) has
    ``low <= lo <= hi <= high``."""
    lo, hi = value
    if not low <= lo <= hi <= high:
        within = f" within [{low}, {high}]" if math.isfinite(low) and math.isfinite(high) else ""
        raise ValueError(f"{name}={value!r} must be a (low, high) pair with low <= high{within}; swap or fix the bounds")


@dataclass(kw_only=True)
class QuadrupedConfig(EnvConfig):
    """:class:`~envs.quadruped.QuadrupedEnv`'s constructor arguments, their defaults and their checks (the
    Arguments table of its docstring; units there). After the checks every value is its declared kind (floats,
    bools, ``(low, high)`` float pairs; :mod:`envs.typed`) and ``reward_scales`` holds the scale of every term:
    the defaults, overridden."""

    robot: str = "openclaw_go1"
    leg_collisions: bool = False
    terrain: str = "flat"
    terrain_seed: int = 0
    terrain_bump_height: float = 0.05
    command_vx: tuple[float, float] = (-1.0, 1.0)
    command_vy: tuple[float, float] = (-0.5, 0.5)
    command_yaw_rate: tuple[float, float] = (-1.0, 1.0)
    reward_scales: dict[str, float] | None = None
    tracking_sigma: float = 0.25
    reset_noise_scale: float = 0.05
    domain_randomization: bool = False
    push_interval_s: float = 0.0
    push_velocity: float = 0.0
    gait_clock: bool = False
    gait_frequency_hz: float = GAIT_FREQUENCY_HZ
    obs_noise: float = 0.0
    action_delay_steps: tuple[int, int] = (0, 0)
    motor_strength: tuple[float, float] = (1.0, 1.0)
    kp_scale: tuple[float, float] = (1.0, 1.0)
    kd_scale: tuple[float, float] = (1.0, 1.0)
    history_steps: int = 1
    gait_measures: bool = True
    action_scale: float | tuple[float, float, float] = ACTION_SCALE
    camera: str | int | None = "tracking"

    TERRAINS: ClassVar[tuple[str, ...]] = ("flat", "rough")  # the env's choices of ``terrain``
    UNMEASURED_TERMS: ClassVar[tuple[str, ...]] = ("trunk_clearance",)  # reward terms this env cannot measure
    MODELS: ClassVar[dict[str, tuple[str, ...]]] = {"robot": tuple(ROBOTS)}

    def check(self) -> None:
        super().check()
        robot_named(self.robot)  # ValueError listing the robots
        if self.terrain not in self.TERRAINS:
            raise ValueError(f"terrain={self.terrain!r} is not supported; use one of: {', '.join(self.TERRAINS)}")
        if self.terrain_seed < 0:
            raise ValueError(f"terrain_seed={self.terrain_seed} must be >= 0 (a seed of the terrain's heights)")
        if not 0.0 <= self.terrain_bump_height <= 0.2:
            raise ValueError(f"terrain_bump_height={self.terrain_bump_height} m must be in [0, 0.2]")
        for name in ("command_vx", "command_vy", "command_yaw_rate"):
            _range_pair(name, getattr(self, name), -math.inf, math.inf)
        unknown = sorted(set(self.reward_scales or {}) - set(DEFAULT_REWARD_SCALES))
        if unknown:
            raise ValueError(
                f"unknown reward term(s) {unknown} in reward_scales; valid names are: {', '.join(REWARD_TERMS)}"
            )
        self.reward_scales = {**DEFAULT_REWARD_SCALES, **(self.reward_scales or {})}
        for term in self.UNMEASURED_TERMS:
            if self.reward_scales[term]:
                raise ValueError(f"reward_scales.{term}={self.reward_scales[term]}: this env does not measure it (the "
                                 "terrain env does: OpenClaw/QuadrupedTerrain-v1, env=quadruped_terrain); set it to 0")
        if not self.tracking_sigma > 0:
            raise ValueError(f"tracking_sigma={self.tracking_sigma} must be > 0")
        if self.reset_noise_scale < 0:
            raise ValueError(f"reset_noise_scale={self.reset_noise_scale} must be >= 0")
        if self.push_interval_s < 0 or self.push_velocity < 0:
            raise ValueError(
                f"push_interval_s={self.push_interval_s} and push_velocity={self.push_velocity} must be >= 0 "
                "(0 disables pushes)"
            )
        self.gait_frequency_hz = checked_gait_frequency(self.gait_frequency_hz)
        if self.obs_noise < 0:
            raise ValueError(f"obs_noise={self.obs_noise} must be >= 0 (1: MuJoCo Playground's Go1 noise scales)")
        _range_pair("action_delay_steps", self.action_delay_steps, 0, 10)
        for name in ("motor_strength", "kp_scale", "kd_scale"):
            _range_pair(name, getattr(self, name), 0.1, 10.0)
        if not 1 <= self.history_steps <= MAX_HISTORY_STEPS:
            raise ValueError(f"history_steps={self.history_steps} must be a whole number in [1, {MAX_HISTORY_STEPS}] "
                             "(1: no history; k: the last k proprioceptive frames)")
        scale = self.action_scale if isinstance(self.action_scale, tuple) else (self.action_scale,) * 3
        if not all(s > 0 for s in scale):
            raise ValueError(f"action_scale={self.action_scale!r} must be > 0 rad per unit action: one number for "
                             "every joint, or three (hip, thigh, calf) for every leg")
        self.action_scale = scale

    def check_model(self, model: mujoco.MjModel, model_path: Path) -> None:
        super().check_model(model, model_path)
        self._check_action_range(model)
        if isinstance(self.camera, str) and mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_CAMERA, self.camera) < 0:
            raise ValueError(f"camera={self.camera!r} is not in the model; use 'tracking', a camera id, or None")

    def _check_action_range(self, model: mujoco.MjModel) -> None:
        """``ValueError`` unless every joint target reachable with ``|action| <= 1`` (``default_pose +-
        action_scale``) lies inside the joint's range, naming the part (hip, thigh or calf) whose targets leave
        it and the largest scale that part allows on this robot."""
        robot = robot_named(self.robot)
        for p, (part, scale) in enumerate(zip(PARTS, self.action_scale)):
            room = math.inf  # rad: the smallest distance from a default angle of this part to its joint's limits
            for leg_index, leg in enumerate(LEGS):
                lo, hi = model.joint(robot.joint_name(leg, part)).range
                default = robot.default_pose[leg_index * len(PARTS) + p]
                room = min(room, default - lo, hi - default)
            if scale > room:
                raise ValueError(f"action_scale={self.action_scale!r}: the {part} targets default +- {scale} rad "
                                 f"leave the {part} joints' ranges on {self.robot}; the largest {part} scale "
                                 f"is {math.floor(room * 1000) / 1000} rad")


@dataclass(kw_only=True)
class QuadrupedTerrainConfig(QuadrupedConfig):
    """:class:`~envs.quadruped.QuadrupedTerrainEnv`'s constructor arguments: :class:`QuadrupedConfig`'s
    (``terrain`` is ``"tiles"``, the gait clock on) and the terrain ones of the class docstring, checked."""

    terrain: str = "tiles"
    gait_clock: bool = True
    curriculum: bool = True
    max_init_level: int = 5
    ground_friction: tuple[float, float] = (0.5, 1.25)
    heading_command: bool = True
    terrain_types: tuple[str, ...] | None = None
    scan_grid: tuple[int, int] = (11, 7)
    scan_spacing: float = 0.15

    TERRAINS: ClassVar[tuple[str, ...]] = ("tiles",)
    UNMEASURED_TERMS: ClassVar[tuple[str, ...]] = ()

    def check(self) -> None:
        super().check()
        if not self.gait_clock:
            raise ValueError("gait_clock=False: the terrain env's observation always carries the gait clock")
        if not 0 <= self.max_init_level <= LEVELS - 1:
            raise ValueError(f"max_init_level={self.max_init_level} must be a level in [0, {LEVELS - 1}]")
        _range_pair("ground_friction", self.ground_friction, 0.05, 3.0)
        if self.terrain_types is not None:
            unknown = [t for t in self.terrain_types if t not in TERRAIN_TYPES]
            if unknown or not self.terrain_types:
                raise ValueError(f"terrain_types={list(self.terrain_types)!r} must name one or more of: "
                                 f"{', '.join(TERRAIN_TYPES)} (null: all of them)")
        if any(n < 1 or n > MAX_SCAN_POINTS or n % 2 == 0 for n in self.scan_grid):
            raise ValueError(f"scan_grid={list(self.scan_grid)!r} must be two odd counts of points (along x, along y) "
                             f"in [1, {MAX_SCAN_POINTS}], so that the scan is centred on the trunk; e.g. [11, 7]")
        half = max(self.scan_grid) // 2 * self.scan_spacing
        if not (0 < self.scan_spacing and half <= MAX_SCAN_REACH):
            raise ValueError(f"scan_spacing={self.scan_spacing} with scan_grid={list(self.scan_grid)} puts points "
                             f"{half:g} s m from the trunk; keep the spacing > 0 and the window within "
                             f"{MAX_SCAN_REACH} s m (s: the robot's size scale, Go1 0.671)")
