"""The quadruped on legged_gym's terrain curriculum, with privileged observations: :class:`QuadrupedTerrainEnv`.

The spec is :class:`QuadrupedTerrainEnv`'s docstring (``help(envs.quadruped.QuadrupedTerrainEnv)``); the
tiles are ``envs.quadruped.terrain``'s, the model ``envs.quadruped.scene.tiles_model``, the height scan and
heading command ``envs.quadruped.height_scan``'s (one copy or N at once, from the height array), the boxes
around the robot ``envs.quadruped.terrain_boxes``'.
"""

from __future__ import annotations

import copy
import math
from dataclasses import fields
from typing import Any, ClassVar, Literal

import mujoco
import numpy as np

from envs import headless
from envs.base import ResetOption, checked_options
from envs.declarations import Curriculum, TaskContext
from envs.quadruped.config import QuadrupedTerrainConfig
from envs.quadruped.env import QuadrupedEnv
from envs.quadruped.height_scan import TerrainLegGeometry, TerrainState, scan_points
from envs.quadruped.robots import LegGeometry
from envs.quadruped.task_state import TerrainTaskState
from envs.quadruped.scene import VIEW_CELL, VIEW_SAMPLES, tiles_model
from envs.quadruped.terrain import COLUMN_TYPES, LEVELS, TERRAIN_TYPES
from envs.quadruped.terrain_boxes import BoxWindow

_GOLDEN_64 = 0x9E3779B97F4A7C15  # the integer part of 2**64 / the golden ratio: the step of Fibonacci hashing


def seeded_column(columns: list[int], seed: int) -> int:
    """The column of ``columns`` that a reset seeded ``seed`` takes: the one at the fraction ``frac(seed / phi)`` of the
    list (phi the golden ratio; Fibonacci hashing, in 64-bit integers), so that consecutive seeds spread evenly."""
    return columns[(seed * _GOLDEN_64 % 2**64) * len(columns) >> 64]


class QuadrupedTerrainEnv(QuadrupedEnv):
    """Velocity tracking on legged_gym's terrain curriculum (``OpenClaw/QuadrupedTerrain-v1``), any ``robot=``.

    Everything of :class:`~envs.quadruped.QuadrupedEnv` (action space, reward terms, gait clock, sim-to-real
    arguments, robots) holds, with the changes below.

    ## Terrain

    One height array (:mod:`envs.quadruped.terrain`, built from ``terrain_seed``, the same in every copy): 10 levels of
    difficulty (rows along world +x) by 22 columns of six types (along +y) - rough ground, smooth slope,
    rough slope, stairs up, stairs down, discrete obstacles - each tile ``8 s`` m square, every length
    legged_gym's times the robot's size scale ``s`` = leg length / ANYmal C's (Go1: 0.671; stairs risers
    3.4 cm at level 0 to 15.4 cm at level 9, treads 21 cm), on a 0.05 m grid, surrounded by flat ground at
    z = 0. ``env.tiles`` is the :class:`~envs.quadruped.terrain.TerrainGrid`. Rough ground and slopes collide as a
    heightfield of every second sample (0.1 m apart), stairs and obstacles as boxes with vertical edges (the ones
    within ~1 m of the trunk, re-placed as it walks: :class:`~envs.quadruped.terrain_boxes.BoxWindow`).

    ## Curriculum (legged_gym's, per env copy)

    Each copy keeps a column (its terrain type, among ``terrain_types``) and a level (drawn in ``[0, max_init_level]``),
    both set at a seeded reset. ``reset(seed=k)`` takes the column at the fraction ``frac(k / phi)`` (phi the golden
    ratio) of the list of columns that ``terrain_types`` allows, so consecutive seeds spread over them evenly: the copies
    of a vector env, seeded ``s, s + 1, ...``, meet every type (16 copies: each type within 1.7 copies of its share of
    the columns, for every ``s`` in 0-5,000; legged_gym spreads its envs over the columns evenly, and a random draw
    leaves ~60 % of 16-copy runs without some type). Every
    episode starts on its tile's central platform, heading +x, within +-0.25 s m of the centre. At each following reset,
    with ``curriculum`` on: the copy moves up a level when the episode took its trunk more than half a tile
    (horizontal distance from the spawn), down when less than half of the commanded distance (``|cmd_xy|``
    x the episode's full length, 20 s); a copy that moves up from the top level goes to a random level.
    With ``curriculum`` off each episode draws its level uniformly (evaluation over all levels).
    ``reset(options={"terrain_level": l, "terrain_type": "stairs_up"})`` puts the episode on a fixed tile.
    ``info["terrain_level"]`` and ``info["terrain_type"]`` (index into :data:`envs.quadruped.terrain.TERRAIN_TYPES`)
    report it every step (``CURRICULUM``), and ``info["left_tile"]`` whether the trunk has left the tile in this
    episode (a 20 s episode at 1 m/s crosses ~4 tiles: per-tile evaluations count what happened before). ``curriculum_state()`` / ``set_curriculum_state()`` save and
    restore a copy's column and level (training checkpoints them; a resume continues at the same levels).

    ## Commands

    ``heading_command`` (default on, legged_gym's): the episode draws a heading ``U(-pi, pi)`` rad (world) and
    the yaw-rate command becomes ``clip(0.5 * (heading - yaw), *command_yaw_rate)`` every step (the
    observation's command is the current one), so that a robot walks across tiles instead of in circles.
    ``vx``, ``vy`` come from the usual ranges (body frame).

    ## Observation space: ``Box(-inf, inf, (138,), float32)`` (the default scan)

    Indices 0-56 are the quadruped's (``OpenClaw/Quadruped-v1``'s layout, ``QuadrupedEnv``'s docstring): the
    *proprioceptive* part, which a blind policy reads and a robot measures. The rest is *privileged*
    (``env.privileged_obs``: name -> slice), known to the simulator:

    =======  ============  ==========================================================================  =====
    indices  name          meaning                                                                     unit
    =======  ============  ==========================================================================  =====
    57-133   height_scan   trunk z minus the ground height at ``scan_grid`` = 11 x 7 points            m
                           ``scan_points``, ``scan_spacing`` = 0.15 s m apart (Go1: 0.1 m; a 1.0 m x
                           0.6 m window), in the trunk's yaw frame, x major; clipped to [-1, 1]
    134      friction      the episode's foot-ground friction coefficient                              -
    135-137  true_lin_vel  trunk linear velocity (IMU site, body frame), without observation noise    m/s
    =======  ============  ==========================================================================  =====

    Another ``scan_grid`` (nx, ny) gives ``nx * ny`` scan entries, and the entries after them move along.
    With ``history_steps=k`` > 1 the proprioceptive history follows, from index 138 (``QuadrupedEnv``'s docstring).

    The scan is legged_gym's 1.6 m x 1.0 m window of 17 x 11 points scaled by ``s``, sampled at 0.15 s m
    instead of 0.1 m: 77 inputs still put two points on every tread. All of it is computed from the
    height array for all copies at once (:class:`~envs.quadruped.height_scan.TerrainState`): the ground that
    collides (MuJoCo's triangles on the heightfield's tiles, the nearest sample on the boxes' tiles).

    ## Changes to rewards and termination

    The trunk height that ``base_height`` rewards and the fall check (below ``fall_height``) reads is its
    height above the mean ground of the scan (legged_gym), not world z. Outside the grid's 53.5 m x
    117.7 m (Go1) the ground is flat.

    ## Arguments (besides ``QuadrupedEnv``'s; ``terrain`` is ``"tiles"``)

    ===============  ============  =======================================================================
    argument         default       meaning
    ===============  ============  =======================================================================
    terrain_seed     0             seed of the tile grid (deterministic)
    curriculum       True          move copies between levels (above); False: a random level per episode
    max_init_level   5             highest level of a seeded reset's draw (legged_gym: 5)
    ground_friction  (0.5, 1.25)   per episode, the feet's friction coefficient ~ U(lo, hi) (legged_gym)
    heading_command  True          yaw-rate command from a random heading (above)
    terrain_types    None          the types a seeded reset draws a copy's column from, e.g.
                                   ``["stairs_up"]`` (a specialist's curriculum); None: all six
    scan_grid        (11, 7)       height-scan points along x (forward) and y (left), odd counts <= 41
    scan_spacing     0.15          m between scan points, times the robot's size scale s (Go1: 0.1 m);
                                   the window's half side at most 1.5 s m
    ===============  ============  =======================================================================
    """

    CURRICULUM: ClassVar[Curriculum] = Curriculum("terrain_level", "terrain_type", TERRAIN_TYPES, LEVELS)
    RESET_OPTIONS: ClassVar[dict[str, ResetOption]] = {
        **QuadrupedEnv.RESET_OPTIONS,
        "terrain_level": ResetOption(int, "the tile's level, 0 = easiest", 0, LEVELS - 1),
        "terrain_type": ResetOption(Literal[TERRAIN_TYPES], "the tile's terrain type"),
        "heading": ResetOption(float, "the commanded heading (rad, world; 0 = +x)"),
    }
    CONFIG: ClassVar[type[QuadrupedTerrainConfig]] = QuadrupedTerrainConfig

    def __init__(self, **kwargs: Any) -> None:
        """Keyword arguments: :class:`QuadrupedTerrainConfig`'s fields (the class docstring's tables)."""
        super().__init__(**kwargs)
        self._trunk_corners = self._touch_zone_bottom()
        self._ground_sensor = TerrainState(self.tiles, self.scan_points, self.command_yaw_rate, 0,
                                           trunk_corners=self._trunk_corners)
        start, n = self.CLOCK_OBS_DIM, len(self.scan_points)
        self.privileged_obs = {"height_scan": slice(start, start + n), "friction": slice(start + n, start + n + 1),
                               "true_lin_vel": slice(start + n + 1, start + n + 4)}
        self.OBSERVATION_POINTS = {"height_scan": self.scan_points}  # envs.declarations.observation_points
        self._set_observation_layout({**self.CLOCK_SLICES, **self.privileged_obs})
        base = {f.name: getattr(self.controller_spec, f.name) for f in fields(LegGeometry)}
        self.controller_spec = TerrainLegGeometry(**base, scan_points=self.scan_points,
                                                  scan_obs=self.privileged_obs["height_scan"])
        self._columns = {kind: [c for c, t in enumerate(COLUMN_TYPES) if t == kind] for kind in TERRAIN_TYPES}
        self.tile_origins = self.tiles.origins  # (LEVELS, columns, 3): each tile's spawn point (m, world)
        self.column_type_index = np.array([TERRAIN_TYPES.index(kind) for kind in COLUMN_TYPES])  # each column's type
        # a seeded reset's choices: the columns of terrain_types (all six by default), in grid order
        kinds = set(self.terrain_types or TERRAIN_TYPES)
        self._drawn_columns = sorted(c for kind in kinds for c in self._columns[kind])
        self._column = 0
        self._origin = np.zeros(3)  # this episode's spawn point (m, world)
        self._started = self._keep_state = False
        self._seed: int | None = None  # the seed of the reset under way (None: unseeded)
        self._spawn_noise = 0.25 * self.tiles.scale  # m
        self._view_centre: tuple[float, float] | None = None  # of the rendered window (m, world xy)

    def _new_state(self, copies: int) -> TerrainTaskState:
        history = (self.history_steps - 1, len(self._frame_index)) if self.history_steps > 1 else None
        return TerrainTaskState.zeros(copies, max_delay=self._max_delay, gait=self.gait_measures, history=history,
                                      **TerrainTaskState.terrain_fields(len(self.scan_points)))

    def _touch_zone_bottom(self) -> np.ndarray:
        """The four bottom corners of the trunk's touch zone (the ``trunk_touch`` box site: a contact in it is a fall),
        (4, 3) (m, trunk body frame)."""
        m = self.model
        site = m.site("trunk_touch")
        rotation = np.zeros(9)
        mujoco.mju_quat2Mat(rotation, site.quat)
        sx, sy, sz = site.size
        box = np.array([[ax * sx, ay * sy, -sz] for ax in (1.0, -1.0) for ay in (1.0, -1.0)])
        return site.pos + box @ rotation.reshape(3, 3).T

    def _make_model(self, config: QuadrupedTerrainConfig) -> mujoco.MjModel:
        model, self.tiles = tiles_model(config.robot, int(config.terrain_seed), config.leg_collisions)
        self.scan_points = scan_points(self.tiles.scale, config.scan_grid, config.scan_spacing)
        model = copy.deepcopy(model)
        self._box_window = BoxWindow(model, self.tiles)  # edits this copy
        return model

    # ------------------------------------------------------------------ episodes and the curriculum
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        options = checked_options(type(self), options or {})  # a refused option moves no level
        if self._started and self.curriculum and seed is None and not self._keep_state:
            self.state.level[0] = self._next_level()  # the episode that ended moves the level, before the state resets
        self._seed = seed
        return super().reset(seed=seed, options=options)

    def _next_level(self) -> int:
        """legged_gym's rule (class docstring) for the episode that just ended (:meth:`next_levels`)."""
        walked = np.hypot(*(self.data.qpos[0:2] - self._origin[0:2]))[None]
        commanded = np.hypot(*self.state.command[0, 0:2])[None] * self._episode_length_s()
        return int(self.next_levels(self, self.state.level[0:1].copy(), walked, commanded, self.np_random.integers)[0])

    @classmethod
    def next_levels(cls, env, levels, walked, commanded, integers):
        """legged_gym's rule (class docstring) for N copies whose episode just ended, numpy arrays or torch tensors:
        their ``levels`` (N,) (changed in place and returned), the horizontal distance (m) each ``walked`` from its
        spawn and the distance ``commanded`` (m: the command's speed times the episode's full length); the copies that
        move up from the top level draw a level from ``integers(low, high, shape)``."""
        up = walked > env.tiles.tile_size / 2
        levels[~up & (walked < 0.5 * commanded)] -= 1
        levels[up] += 1
        top = levels >= LEVELS
        if top.any():
            levels[top] = integers(0, LEVELS, (int(top.sum()),))
        levels[levels < 0] = 0
        return levels

    def _episode_length_s(self) -> float:
        steps = self.spec.max_episode_steps if self.spec is not None else None
        return (steps if steps else 1000) * self.dt

    def _reset_task(self, options: dict[str, Any]) -> None:
        super()._reset_task(options)
        rng, d, state = self.np_random, self.data, self.state
        if self._keep_state:  # restored by set_curriculum_state: continue there
            self._keep_state = False
        elif self._seed is not None or not self._started:
            self._column = self._seeded_column(rng)
            state.level[0] = int(rng.integers(self.max_init_level + 1))
        elif not self.curriculum:
            state.level[0] = int(rng.integers(LEVELS))
        if "terrain_type" in options:
            self._column = int(rng.choice(self._columns[options["terrain_type"]]))
        if "terrain_level" in options:
            state.level[0] = options["terrain_level"]
        self._started = True
        self.start_on_tiles(self, state, d.qpos[None], np.array([self._column]), self._model_rows(), rng.uniform,
                            heading=options.get("heading"))
        self._origin[:] = d.qpos[0:3]
        self._box_window.follow(*d.qpos[0:2].tolist(), reset=True)
        # the scan, the ground under the trunk and the heading's command (the feet's ground: after the first step)
        self._ground_sensor.update(d.qpos[None], state.heading, out=state)
        if self.heading_command:
            state.command[:, 2] = state.yaw_rate

    @classmethod
    def start_on_tiles(cls, env, state, qpos, columns, rows, uniform, heading=None) -> None:
        """N copies' episode start on their tiles, numpy arrays or torch tensors: on tile ``(state.level, columns)``
        (N,) at its centre's ground, plus ``U(-0.25 s, 0.25 s)`` m along x and y (``qpos`` (N, nq), after
        :meth:`reset_pose`), the feet's friction ``U(ground_friction)`` (into the copies' model ``rows``, a
        :class:`~envs.quadruped.randomize.ModelRows`, and the privileged observation), the heading ``heading`` (rad)
        or ``U(-pi, pi)`` with ``heading_command``; ``uniform(low, high, shape)`` is the copies' generator."""
        n = len(columns)
        origin = env.tile_origins[state.level, columns]
        state.left_tile[:] = False
        state.tile[:, 0:2] = origin[:, 0:2]
        state.tile[:, 2] = env.tiles.tile_size / 2
        state.type_index[:] = env.column_type_index[columns]
        qpos[:, 0:2] = origin[:, 0:2] + uniform(-env._spawn_noise, env._spawn_noise, (n, 2))
        qpos[:, 2] += origin[:, 2]
        friction = uniform(*env.ground_friction, (n,))
        cls.set_foot_friction(env, rows, friction[:, None])
        state.scan_friction[:, -1] = friction
        if heading is not None:
            state.heading[:] = heading
        elif env.heading_command:
            state.heading[:] = uniform(-math.pi, math.pi, (n,))

    def _seeded_column(self, rng: np.random.Generator) -> int:
        """A seeded reset's column (class docstring, :func:`seeded_column`); a first reset without a seed draws one of
        the drawn columns from ``rng``."""
        if self._seed is None:
            return self._drawn_columns[int(rng.integers(len(self._drawn_columns)))]
        return seeded_column(self._drawn_columns, int(self._seed))

    def task_context(self) -> TaskContext:
        """The robot and the episode's tile class: ``TaskContext("go1/stairs_up/level3", {"terrain_type":
        "stairs_up", "terrain_level": 3})`` (the options put an episode on a tile of that type and level)."""
        return self.tile_context(self.robot, self._column, self.terrain_level)

    @staticmethod
    def tile_context(robot: str, column: int, level: int) -> TaskContext:
        """The task context of an episode of ``robot`` on tile ``(level, column)`` (:meth:`task_context`)."""
        kind = COLUMN_TYPES[column]
        return TaskContext(f"{robot}/{kind}/level{level}", {"terrain_type": kind, "terrain_level": level})

    def deploy_metadata(self) -> dict[str, Any]:
        """The quadruped's entries, the foot friction drawn per episode being ``ground_friction``, and the
        privileged observation entries' units and frames."""
        meta = super().deploy_metadata()
        meta["randomization"]["foot_friction"] = list(self.ground_friction)
        meta["observation_terms"].update({
            "height_scan": {"unit": "m", "frame": "trunk yaw", "meaning": "trunk z minus the ground height at the "
                            "scan points (x major, the class docstring), clipped to [-1, 1]",
                            "points": self.scan_points.tolist()},
            "friction": {"unit": "1", "frame": "-", "meaning": "the episode's foot-ground friction coefficient"},
            "true_lin_vel": {"unit": "m/s", "frame": "body", "meaning": "lin_vel without observation noise"},
        })
        return meta

    def curriculum_state(self) -> dict[str, int]:
        """This copy's place in the curriculum: ``{"column": c, "level": l}`` (JSON)."""
        return {"column": self._column, "level": self.terrain_level}

    def set_curriculum_state(self, state: dict[str, int]) -> None:
        """Continue from ``state`` (:meth:`curriculum_state`) at the next reset, seeded or not."""
        self._column, self.state.level[0] = self.checked_curriculum_state(state)
        self._keep_state = True

    @staticmethod
    def checked_curriculum_state(state: dict[str, int]) -> tuple[int, int]:
        """``(column, level)`` of a :meth:`curriculum_state`; ``ValueError`` naming the range where one is outside."""
        column, level = int(state["column"]), int(state["level"])
        if not (0 <= column < len(COLUMN_TYPES) and 0 <= level < LEVELS):
            raise ValueError(f"curriculum state {state!r}: column must be in [0, {len(COLUMN_TYPES) - 1}], "
                             f"level in [0, {LEVELS - 1}]")
        return column, level

    @property
    def terrain_type(self) -> str:
        """The type of this copy's tile."""
        return COLUMN_TYPES[self._column]

    @property
    def terrain_level(self) -> int:
        """The level of this copy's tile."""
        return self.state.level.item()

    # ------------------------------------------------------------------ the task functions' terrain (QuadrupedEnv's)
    @classmethod
    def sense_ground(cls, env, state, tasks, qpos, qvel, feet) -> None:
        """Each copy's box window follows its trunk (its own model); then, for all copies from the height array, the
        scan, the ground under the trunk and under and ahead of each foot, the trunk's clearance, the heading's yaw
        command, and whether the trunk has left its tile."""
        xy = qpos[:, 0:2]
        for task, (x, y) in zip(tasks, xy[: len(tasks)].tolist()):  # none on Warp (envs.quadruped.warp_terrain)
            task._box_window.follow(x, y)
        env._ground_sensor.update(qpos, state.heading, feet, qvel, out=state)
        if env.heading_command:
            state.command[:, 2] = state.yaw_rate
        state.left_tile |= (abs(xy - state.tile[:, 0:2]) > state.tile[:, 2:3]).any(1)

    @classmethod
    def privileged(cls, env, state, base):
        return (state.scan_friction, base[:, 0:3])

    @classmethod
    def feet(cls, env, state, feet):
        """The foot readings with each foot's height taken above the ground under it (not z = 0), so that the
        ``feet_clearance`` term and the swing apex measure clearance over the terrain."""
        feet = feet + 0.0  # a copy (numpy or torch)
        feet[:, 2:12:3] -= state.foot_ground
        return feet

    @classmethod
    def feet_ahead(cls, env, state, feet):
        """Each foot's lowest point's height over the higher of the ground under it and the ground ahead of it (m)."""
        return feet[:, 2:12:3] - (env.foot_radius + state.step_ground)

    @classmethod
    def trunk_height(cls, env, state, trunk_z):
        return trunk_z - state.ground

    @classmethod
    def tile_info(cls, env, state, info, m) -> None:
        info["terrain_level"] = m.item(state.level)
        info["terrain_type"] = m.item(state.type_index)
        info["left_tile"] = m.item(state.left_tile)

    # ------------------------------------------------------------------ rendering
    def render(self):
        """As ``QuadrupedEnv``'s; the terrain drawn is an 8 m x 8 m window of it around the robot at 0.1 m
        (:meth:`_follow_view`: drawing the whole 2.5-million-sample heightfield would take ~1 s a frame)."""
        if self.render_mode in ("rgb_array", "depth_array") and self._renderer is None:
            self._renderer = headless.make_renderer(self.model, self.height, self.width)
        self._follow_view()
        return super().render()

    def _follow_view(self) -> None:
        """Re-centre the rendered window on the trunk once it is more than a quarter window away (or never set)."""
        m, d = self.model, self.data
        x, y = d.qpos[0:2]
        centre = self._view_centre
        quarter = (VIEW_SAMPLES - 1) * VIEW_CELL / 4
        if centre is None or max(abs(x - centre[0]), abs(y - centre[1])) > quarter:
            centre = self._view_centre = (round(x / VIEW_CELL) * VIEW_CELL, round(y / VIEW_CELL) * VIEW_CELL)
            offsets = (np.arange(VIEW_SAMPLES) - VIEW_SAMPLES // 2) * VIEW_CELL
            gx, gy = np.meshgrid(centre[0] + offsets, centre[1] + offsets)  # rows along y, as MuJoCo's
            field, geom = m.hfield("terrain_view").id, m.geom("terrain_view").id
            low, span = m.geom_pos[geom, 2], m.hfield_size[field, 2]
            start = m.hfield_adr[field]
            m.hfield_data[start : start + VIEW_SAMPLES**2] = ((self.tiles.heights_at(gx, gy) - low) / span).ravel()
            m.geom_pos[geom, 0:2] = centre
            if self._renderer is not None:  # into this renderer's GL context: another env's may be the current one
                if self._renderer._gl_context is not None:
                    self._renderer._gl_context.make_current()
                mujoco.mjr_uploadHField(m, self._renderer._mjr_context, field)
            if self._viewer is not None:
                self._viewer.update_hfield(field)
        d.geom_xpos[m.geom("terrain_view").id, 0:2] = centre

    def overlay_lines(self, obs: np.ndarray, info: dict[str, Any]) -> list[str]:
        """The quadruped's lines and the tile: type and level."""
        return super().overlay_lines(obs, info) + [f"{self.terrain_type} level {self.terrain_level}"]


QuadrupedTerrainEnv.__init__.__signature__ = QuadrupedTerrainConfig.signature()
