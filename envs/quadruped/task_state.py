"""The quadruped task's state for N copies, one row per copy: :class:`TaskState` (flat and rough ground) and
:class:`TerrainTaskState` (the terrain curriculum's additions).

Everything a copy's step reads from its earlier steps lives here, as ``(N, ...)`` arrays: the command, the last
action, the feet's air clocks, the gait clock, the gait measures, the history, the action delay line, the push
clock and, on the terrain, the scan and the ground under the feet. The task's functions (``envs.quadruped.env``:
control, clock, observation, outcome) read and write these arrays for all N copies at once, with no loop over the
copies; one ``gymnasium.Env`` holds a state of one row (``N = 1``), the batched vector env (``envs.batched``) one of
N rows whose row ``i`` env ``i`` sees through views (``envs.quadruped.env.share_rows``): a reset of env ``i`` writes
its row, a batched step all rows, and nothing is copied back.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

import numpy as np


@dataclass(eq=False)
class TaskState:
    """The per-copy state of N quadruped copies (module docstring); each field an array with N rows, or None where
    the copies' settings leave it out. Units: m, s, rad; velocities body frame."""

    command: np.ndarray  # (N, 3): the episode's command vx (m/s), vy (m/s), wz (rad/s), body frame
    last_action: np.ndarray  # (N, 12): the last step's clipped action (the observation's last_action; 0 at reset)
    air_time: np.ndarray  # (N, 4): each foot's time in the air (s; FR, FL, RR, RL)
    contact: np.ndarray  # (N, 4) bool: each foot's contact at the last step (feet_air_time's)
    phase: np.ndarray  # (N,): the gait clock's phase (cycles, in [0, 1))
    frequency: np.ndarray  # (N,): the gait clock's frequency (Hz)
    clock: np.ndarray  # (N, 9): the clock's observation entries: sin (4), cos (4) of the legs' phases, frequency
    steps: np.ndarray  # (N,) int: control steps since the reset (the push clock)
    delay: np.ndarray  # (N,) int: the episode's action delay (control steps)
    past_actions: np.ndarray  # (N, D + 1, 12): the last D + 1 actions, newest first (the delay line)
    gait: np.ndarray | None  # (N, 32): the gait measures' state (envs.quadruped.gait.ROWS x legs); None: not measured
    history: np.ndarray | None  # (N, k - 1, 42) float32: the past proprioceptive frames, newest first; None: k = 1
    trunk_clearance: np.ndarray  # (N,): the trunk's clearance over the ground (m; the terrain env's; inf elsewhere)

    @classmethod
    def zeros(cls, copies: int, *, max_delay: int, gait: bool, history: tuple[int, int] | None, **extra: tuple):
        """A state of ``copies`` rows, all zeros (the episode state is set by each copy's reset); ``max_delay``: the
        delay line's length - 1, ``gait``: whether the gait measures are kept, ``history``: (k - 1, frame width) or
        None; ``extra``: a subclass's fields as name=(shape of a row, dtype)."""
        n = copies
        return cls(np.zeros((n, 3)), np.zeros((n, 12)), np.zeros((n, 4)), np.zeros((n, 4), dtype=bool), np.zeros(n),
                   np.zeros(n), np.zeros((n, 9)), np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64),
                   np.zeros((n, max_delay + 1, 12)), np.zeros((n, 32)) if gait else None,
                   np.zeros((n, *history), dtype=np.float32) if history else None, np.full(n, np.inf),
                   **{name: np.zeros((n, *shape), dtype=dtype) for name, (shape, dtype) in extra.items()})

    def __len__(self) -> int:
        return len(self.command)

    def arrays(self):
        """``(name, array or None)`` of every field, in order."""
        return ((f.name, getattr(self, f.name)) for f in fields(self))

    def map(self, function) -> TaskState:
        """The state whose every array is ``function(array)`` (e.g. a torch tensor of it)."""
        return replace(self, **{k: None if a is None else function(a) for k, a in self.arrays()})

    def rows(self, start: int, stop: int) -> TaskState:
        """Rows ``start:stop`` as views: writes to either reach both."""
        return self.map(lambda a: a[start:stop])

    def take(self, ids: np.ndarray) -> TaskState:
        """Rows ``ids`` as a copy (write them back with :meth:`put`)."""
        return self.map(lambda a: a[ids])

    def put(self, ids: np.ndarray, rows: TaskState) -> None:
        """Write ``rows`` (e.g. a :meth:`take` of the same ``ids``, after a step) into rows ``ids``."""
        for k, a in self.arrays():
            if a is not None:
                a[ids] = getattr(rows, k)

    def copy(self) -> TaskState:
        return self.map(np.copy)

    @classmethod
    def stack(cls, states: list[TaskState]) -> TaskState:
        """One state whose row ``i`` is ``states[i]``'s (one row each), copied."""
        first = states[0]
        return replace(first, **{k: None if a is None else np.concatenate([getattr(s, k) for s in states])
                                 for k, a in first.arrays()})


@dataclass(eq=False)
class TerrainTaskState(TaskState):
    """:class:`TaskState` plus the terrain env's per-copy state (m, world frame unless noted)."""

    scan_friction: np.ndarray = None  # (N, P + 1): the height scan (m, trunk z minus ground) and the foot friction
    ground: np.ndarray = None  # (N,): the scan's mean ground height (the trunk height's reference)
    yaw_rate: np.ndarray = None  # (N,): the heading's yaw-rate command (rad/s)
    foot_ground: np.ndarray = None  # (N, 4): the ground under each foot at the last step
    step_ground: np.ndarray = None  # (N, 4): the higher of that and the ground ahead of each foot
    heading: np.ndarray = None  # (N,): the episode's heading (rad)
    tile: np.ndarray = None  # (N, 3): the episode's tile: centre x, y (m), half side (m)
    level: np.ndarray = None  # (N,) int: the tile's level
    type_index: np.ndarray = None  # (N,) int: the tile's type (index into envs.quadruped.terrain.TERRAIN_TYPES)
    left_tile: np.ndarray = None  # (N,) bool: the trunk has left the episode's tile

    @property
    def scan(self) -> np.ndarray:
        """(N, P): the height scan's entries (a view)."""
        return self.scan_friction[:, :-1]

    @classmethod
    def terrain_fields(cls, points: int) -> dict[str, tuple]:
        """This class's extra fields for :meth:`zeros`, with ``points`` scan points."""
        scalar = ((), np.float64)
        return {"scan_friction": ((points + 1,), np.float64), "ground": scalar, "yaw_rate": scalar,
                "foot_ground": ((4,), np.float64), "step_ground": ((4,), np.float64),
                "heading": scalar, "tile": ((3,), np.float64), "level": ((), np.int64), "type_index": ((), np.int64),
                "left_tile": ((), bool)}
