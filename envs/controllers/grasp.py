"""Scripted pick controller for ``OpenClaw/Claw-v0`` (lift) and ``OpenClaw/ClawPlace-v0`` (place).

:class:`GraspController` is a phase machine that reads only the observation dict of
:class:`envs.claw.ClawEnv` (plus its own phase clock) and returns an action in ``[-1, 1]^5``:

==========  ===============================================================  ===========================
phase       what it does                                                     leaves when
==========  ===============================================================  ===========================
APPROACH    jaws open; grip to ``approach_height`` above the cube; wrist     xy error < ``xy_tol`` and
            turns to the cube's yaw                                          yaw error < ``yaw_tol``
DESCEND     grip down to cube centre + ``grasp_height_offset``               z error < ``z_tol``
CLOSE       hold still, close with ``close_command``                         both pads press for
                                                                             ``close_steps`` steps
CARRY       move the *cube* to the goal; a goal near the table is first      table goal: cube within
            approached ``carry_height`` above it, then lowered onto;         ``z_tol`` of it; a slip
            lift goals are simply held                                       returns to APPROACH
RELEASE     open the jaws (table goals only)                                 ``release_steps`` elapsed
RETREAT     grip rises ``approach_height`` above the cube, jaws open         (final)
==========  ===============================================================  ===========================

The same code solves both tasks: it tells them apart by the goal height (a goal within
``TABLE_GOAL_BAND`` of the resting height is a *place* goal, anything higher is a *lift* goal).
:class:`GraspParams` holds the tunable numbers with units and :attr:`GraspParams.BOUNDS`, so that
parameters proposed by an LLM can be validated (:meth:`GraspParams.from_dict`).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from envs.claw import ClawEnv
from envs.claw.scene import NOMINAL_SPEED, OBJECT_REST_Z, POS_STEP, YAW_STEP
from envs.declarations import ControllerSpec
from envs.typed import check_fields

_S = ClawEnv.OBS_SLICES
_GRIP = _S["grip_pos"]
_OBJ = _S["object_pos"]
_REL = _S["object_rel_pos"]
_YAW_REL = _S["object_yaw_rel"].start
_FORCE = _S["pad_force"]
_OPENING = _S["opening"].start

TABLE_GOAL_BAND = 0.03  # m: goals at most this far above the resting cube centre are put down and released
_CONTACT = 0.05  # pad force / 20 N (= 1 N) that counts as touching
_SLIP_DIST = 0.035  # m: cube centre farther than this from the grip centre while carrying = dropped


@dataclass
class GraspParams:
    """Tunable numbers of :class:`GraspController` (SI units; see ``BOUNDS`` for valid ranges)."""

    approach_height: float = 0.08  # m, grip centre above cube centre while approaching
    grasp_height_offset: float = 0.0  # m, grip centre minus cube centre (z) when closing
    xy_offset: tuple[float, float] = (0.0, 0.0)  # m, grasp point minus cube centre (world x, y)
    goal_z_offset: float = 0.0  # m, added to the goal height the cube is carried to
    carry_height: float = 0.06  # m, cube clearance above a table goal while transporting
    close_command: float = 1.0  # jaw action while gripping: 1 = close fully (force-limited, 20 N)
    close_steps: int = 3  # control steps the pads must press before lifting
    lift_speed: float = 0.5  # m/s, speed limit while holding the cube
    move_speed: float = 0.75  # m/s, speed limit with empty jaws
    gain: float = 1.0  # proportional gain: 1 puts the servo target on the waypoint when < 5 cm away
    xy_tol: float = 0.006  # m, horizontal alignment tolerance before descending / closing / lowering
    z_tol: float = 0.006  # m, vertical tolerance to start closing / releasing
    yaw_tol: float = 0.06  # rad, wrist-to-cube yaw tolerance before descending
    release_steps: int = 6  # control steps with open jaws before retreating

    BOUNDS: ClassVar[dict[str, tuple[float, float]]] = {
        "approach_height": (0.03, 0.20),
        "grasp_height_offset": (-0.006, 0.02),
        "xy_offset": (-0.015, 0.015),
        "goal_z_offset": (-0.02, 0.02),
        "carry_height": (0.02, 0.20),
        "close_command": (0.3, 1.0),
        "close_steps": (1, 20),
        "lift_speed": (0.05, NOMINAL_SPEED),
        "move_speed": (0.05, NOMINAL_SPEED),
        "gain": (0.2, 1.5),
        "xy_tol": (0.002, 0.03),
        "z_tol": (0.002, 0.03),
        "yaw_tol": (0.01, 0.3),
        "release_steps": (1, 20),
    }
    UNITS: ClassVar[dict[str, str]] = {
        "approach_height": "m", "grasp_height_offset": "m", "xy_offset": "m", "goal_z_offset": "m",
        "carry_height": "m", "close_command": "action", "close_steps": "steps", "lift_speed": "m/s",
        "move_speed": "m/s", "gain": "-", "xy_tol": "m", "z_tol": "m", "yaw_tol": "rad",
        "release_steps": "steps",
    }  # fmt: skip

    def __post_init__(self) -> None:
        check_fields(self, "GraspParams.")  # the declared kinds: close_steps a whole number, xy_offset a pair
        for name, (lo, hi) in self.BOUNDS.items():
            value = getattr(self, name)
            if not all(lo <= v <= hi for v in (value if isinstance(value, tuple) else (value,))):
                raise ValueError(f"GraspParams.{name}={value!r} must lie in [{lo}, {hi}] {self.UNITS[name]}")

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> GraspParams:
        """Build from a (possibly LLM-proposed) dict; unknown keys or out-of-bounds values raise."""
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = set(values) - names
        if unknown:
            raise ValueError(f"unknown GraspParams field(s) {sorted(unknown)}; valid: {', '.join(sorted(names))}")
        return cls(**values)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


APPROACH, DESCEND, CLOSE, CARRY, RELEASE, RETREAT = "approach", "descend", "close", "carry", "release", "retreat"


@dataclass
class GraspController:
    """Phase-machine pick controller; ``act(obs_dict)`` -> action in ``[-1, 1]^5`` (float32).

    ``spec`` is what the env tells its controller (``env.controller_spec``: the control period, s), taken
    like every scripted controller's (:mod:`envs.controllers`); ``None``: ``Claw-v0``'s 0.04 s. The phases
    count control steps, so the period is kept for reference only.
    """

    params: GraspParams | None = None
    spec: ControllerSpec | None = None
    phase: str = field(default=APPROACH, init=False)
    _count: int = field(default=0, init=False)
    _lowering: bool = field(default=False, init=False)

    def __post_init__(self) -> None:
        if self.params is None:
            self.params = GraspParams()
        elif not isinstance(self.params, GraspParams):
            raise TypeError(f"params must be a GraspParams, got {type(self.params).__name__}")
        if self.spec is None:
            self.spec = ControllerSpec(dt=0.04)
        if not self.spec.dt > 0:
            raise ValueError(f"dt={self.spec.dt} must be > 0 (the env's control period, 0.04 s)")

    def reset(self) -> None:
        self.phase, self._count, self._lowering = APPROACH, 0, False

    def env_settings(self) -> dict[str, tuple]:
        """Env methods the params need called: none (the claw env has no controller-side settings)."""
        return {}

    def env_kwargs(self) -> dict[str, Any]:
        """The same as env constructor arguments: none."""
        return {}

    def _goto(self, phase: str) -> None:
        self.phase, self._count = phase, 0

    def act(self, obs: dict[str, np.ndarray]) -> np.ndarray:
        p = self.params
        o = np.asarray(obs["observation"], dtype=np.float64)
        goal = np.asarray(obs["desired_goal"], dtype=np.float64)
        grip, cube, rel = o[_GRIP], o[_OBJ], o[_REL]
        forces = o[_FORCE]
        pressing = bool(forces[0] > _CONTACT and forces[1] > _CONTACT)
        yaw_err = float(o[_YAW_REL])
        self._count += 1

        move = np.zeros(3)  # desired displacement of the grip (m)
        yaw_cmd, jaw, speed = 0.0, -1.0, p.move_speed
        grasp_xy = cube[:2] + np.asarray(p.xy_offset)

        if self.phase == APPROACH:
            move = np.array([*grasp_xy, cube[2] + p.approach_height]) - grip
            yaw_cmd = yaw_err
            if np.hypot(*move[:2]) < p.xy_tol and abs(yaw_err) < p.yaw_tol:
                self._goto(DESCEND)
        elif self.phase == DESCEND:
            move = np.array([*grasp_xy, cube[2] + p.grasp_height_offset]) - grip
            yaw_cmd = yaw_err
            if abs(move[2]) < p.z_tol and np.hypot(*move[:2]) < 2 * p.xy_tol:
                self._goto(CLOSE)
        elif self.phase == CLOSE:
            jaw = p.close_command
            if not pressing:
                self._count = 0
            if self._count >= p.close_steps:
                self._lowering = False
                self._goto(CARRY)
            elif self._count == 0 and o[_OPENING] < 0.01:  # closed on nothing: try again
                self._goto(APPROACH)
        elif self.phase == CARRY:
            jaw, speed = p.close_command, p.lift_speed
            target = goal + np.array([0.0, 0.0, p.goal_z_offset])
            table_goal = goal[2] - OBJECT_REST_Z <= TABLE_GOAL_BAND
            if table_goal and not self._lowering:
                if cube[2] > OBJECT_REST_Z + 0.5 * p.carry_height and np.hypot(*(target[:2] - cube[:2])) < p.xy_tol:
                    self._lowering = True  # above the goal: put it down
                else:
                    target[2] = max(target[2], goal[2] + p.carry_height)
                    # climb before travelling so the cube is not dragged over the table
                    if cube[2] < OBJECT_REST_Z + 0.5 * p.carry_height:
                        target[:2] = cube[:2]
            move = target - cube  # drive the cube (not the grip) onto the target
            if float(np.linalg.norm(rel)) > _SLIP_DIST:  # dropped it
                self._goto(APPROACH)
            elif table_goal and self._lowering and abs(move[2]) < p.z_tol:
                self._goto(RELEASE)
        elif self.phase == RELEASE:
            if self._count >= p.release_steps:
                self._goto(RETREAT)
        else:  # RETREAT
            move = np.array([grip[0], grip[1], cube[2] + p.approach_height]) - grip

        a = np.empty(5, dtype=np.float32)
        cap = speed / NOMINAL_SPEED
        a[:3] = np.clip(p.gain * move / POS_STEP, -cap, cap)
        a[3] = np.clip(p.gain * yaw_cmd / YAW_STEP, -1.0, 1.0)
        a[4] = jaw
        return a


class ClawSegment:
    """Statistics of a stretch of claw steps for a hint request: reach, hold and lift (m, world frame).

    ``add(obs, info)`` per step; :meth:`summary` gives the closest grip-to-cube distance, the steps
    the cube was held, the highest cube centre, the goal height and the final cube-to-goal distance.
    """

    def __init__(self) -> None:
        self.steps, self.min_reach, self.grasped_steps, self.max_lift = 0, np.inf, 0, 0.0
        self.goal_height, self.distance, self.success, self.was_grasped = 0.0, np.inf, False, False

    def add(self, obs: dict[str, np.ndarray], info: dict[str, Any]) -> None:
        o = obs["observation"]
        self.min_reach = min(self.min_reach, float(np.linalg.norm(o[_REL])))
        grasped = bool(info.get("grasped", False))
        self.grasped_steps += grasped
        self.was_grasped |= grasped
        self.max_lift = max(self.max_lift, float(o[_OBJ][2]))
        self.goal_height = float(obs["desired_goal"][2])
        self.distance = float(info.get("distance", np.inf))
        self.success = bool(info.get("is_success", 0.0))
        self.steps += 1

    def summary(self) -> tuple[dict[str, Any], dict[str, Any]]:
        """``(summary, outcome)`` of the hint request (:func:`coach.llm.hints.build_request`)."""
        summary = {"steps": self.steps, "min_reach_distance": self.min_reach, "grasped_steps": self.grasped_steps,
                   "max_cube_height": self.max_lift, "goal_height": self.goal_height,
                   "final_distance": self.distance, "units": "m, world frame"}
        dropped = self.was_grasped and not self.success and self.grasped_steps < self.steps
        return summary, {"success": self.success, "dropped": dropped}


def claw_episode_start(obs: dict[str, np.ndarray]) -> dict[str, Any]:
    """Reset options that rebuild a claw episode from its first observation: cube pose (m, rad) and goal (m)."""
    o = np.asarray(obs["observation"], dtype=np.float64)
    w, _, _, z = o[_S["object_quat"]]
    return {"object_xy": o[_OBJ][:2].tolist(), "object_yaw": float(2.0 * math.atan2(z, w)),
            "goal": np.asarray(obs["desired_goal"], dtype=np.float64).tolist()}


class ClawScore:
    """Score of one claw rollout (higher is better): success at the end (0/1) minus the final cube-goal distance (m).

    ``add(obs, info)`` per step; :meth:`metrics` also reports the highest cube lift above its resting height (m).
    """

    def __init__(self) -> None:
        self.success, self.distance, self.lift = 0.0, math.inf, 0.0

    def add(self, obs: dict[str, np.ndarray], info: dict[str, Any]) -> None:
        self.success = float(info.get("is_success", 0.0))
        self.distance = float(info["distance"])
        self.lift = max(self.lift, float(obs["observation"][_OBJ][2]) - OBJECT_REST_Z)

    def metrics(self) -> dict[str, float]:
        return {"score": self.success - self.distance, "success": self.success,
                "final_distance": self.distance, "lift": self.lift}
