"""The env base shared by every OpenClaw MuJoCo environment: :class:`MujocoTaskEnv` and :class:`EnvConfig`.

:class:`MujocoTaskEnv` owns the MuJoCo model and data, steps the physics ``frame_skip`` times per
control step in one native call, validates actions, guards against physics blow-ups and renders
offscreen (``rgb_array``/``depth_array``) or in a passive viewer (``human``). Each env's constructor
arguments, their defaults and their checks are one :class:`EnvConfig` subclass; :class:`ResetOption` declares a key of
``reset(options=...)``, and :func:`checked_options` checks them all before a reset.

Subclasses implement the task (private hooks, called by this class only): ``_reset_task``,
``_apply_action``, ``_before_physics`` (optional), ``_observe`` and ``_step_outcome`` (this step's
reward, termination and info; or ``_transition``, all of a step after the physics at once), and declare what generic code reads about it (``envs.declarations``):
``METRICS``, ``CURRICULUM``, ``controller_spec``, ``task_context()``, ``overlay_lines``.

The batched vector env (``envs.batched``) drives the physics of many envs in one call and calls these
public hooks (``step()`` is ``prepare_step``, ``frame_skip`` physics steps, ``finish_step``):

=========================  =================================================================================
hook                       job
=========================  =================================================================================
``prepare_step(a)``        everything of ``step()`` before the physics; returns the clipped action
``finish_step(a)``         everything after it: ``(obs, reward, terminated, False, info)``
``diverged()``             whether the last physics call diverged (MuJoCo's bad-state warnings)
``blowup_transition()``    the episode-ending transition after a divergence
``before_physics_batch``   (classmethod) ``_before_physics`` of N envs at once
``apply_batch``            (classmethod) the ``ctrl`` rows of N envs' clipped actions
``finish_batch``           (classmethod) ``finish_step`` of N envs at once, on arrays
=========================  =================================================================================

A class that overrides ``apply_batch`` and ``finish_batch`` is *batch-native*: the batched vector env
computes its steps for all copies at once; for any other it calls ``prepare_step``/``finish_step`` env by
env. Packaging helpers are ``envs.packaging``; the maths backends ``envs.array_math``.

Units follow MuJoCo: metres, seconds, radians, kilograms, newtons.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, ClassVar, Literal, get_args

import gymnasium as gym
import mujoco
import numpy as np

from envs import headless
from envs.array_math import clip_actions
from envs.declarations import ControllerSpec, Curriculum, Metric, TaskContext
from envs.packaging import asset_path
from envs.typed import check_fields, checked

# MuJoCo raises these warnings (and resets the state to qpos0) when the simulation diverges.
_DIVERGENCE_WARNINGS = tuple(
    int(w) for w in (mujoco.mjtWarning.mjWARN_BADQPOS, mujoco.mjtWarning.mjWARN_BADQVEL, mujoco.mjtWarning.mjWARN_BADQACC)
)


@dataclass(frozen=True)
class ResetOption:
    """One key ``reset(options=...)`` takes, declared by the env class (``RESET_OPTIONS``: name -> option) and
    checked by :func:`checked_options` before the env resets.

    Args:
        kind: its declared kind, one of :mod:`envs.typed`'s (``int``, ``float``, ``tuple[float, float]``,
            ``Literal[...]``, ``Any``): a value of another kind is refused, never coerced (a bool is not a
            level, nan and inf are not numbers, a list is not one of a Literal's strings).
        meaning: what it sets, with units (``"the commanded heading (rad, world)"``).
        low, high: bounds of its number, or of each entry of its numbers (scalars or one per entry), or None.
    """

    kind: Any
    meaning: str
    low: Any = None
    high: Any = None


def checked_options(env_cls: type, options: dict[str, Any]) -> dict[str, Any]:
    """``options`` checked against ``env_cls.RESET_OPTIONS`` (:class:`ResetOption` each), every value kept as its
    declared kind. Raises ``ValueError`` naming the options ``env_cls`` does not know and the valid ones, or
    ``"options['<name>']=<value> must be <what its kind accepts> (<meaning>)"`` / ``"... is outside <bounds>"``."""
    declared: dict[str, ResetOption] = env_cls.RESET_OPTIONS
    unknown = sorted(set(options) - set(declared))
    if unknown:
        raise ValueError(f"{env_cls.__name__}: unknown reset option(s) {unknown}; valid options: "
                         f"{', '.join(declared) or 'none'}")
    kept = {}
    for name, value in options.items():
        option = declared[name]
        try:
            kept[name] = checked(value, option.kind)
        except ValueError as err:
            raise ValueError(f"options[{name!r}]={value!r} {err} ({option.meaning})") from None
        if option.low is None and option.high is None:
            continue
        numbers = np.asarray(kept[name], dtype=np.float64)
        low = np.broadcast_to(-np.inf if option.low is None else option.low, numbers.shape)
        high = np.broadcast_to(np.inf if option.high is None else option.high, numbers.shape)
        if ((numbers < low) | (numbers > high)).any():
            bounds = (f"[{low.item()}, {high.item()}]" if numbers.ndim == 0 else
                      f"{np.round(low, 4).tolist()} .. {np.round(high, 4).tolist()}")
            raise ValueError(f"options[{name!r}]={value!r} is outside {bounds} ({option.meaning})")
    return kept


RenderMode = Literal["human", "rgb_array", "depth_array"]
RENDER_MODES = get_args(RenderMode)


@dataclass(kw_only=True)
class EnvConfig:
    """The constructor arguments of a :class:`MujocoTaskEnv`, their defaults and their checks, in one place.

    Each env subclasses it: its arguments are the fields (name, declared kind, default; units in the env's
    Arguments table). Construction checks every argument against its declared kind (:func:`envs.typed.check_fields`:
    a string is not a boolean, 1.5 not a whole number; ``ValueError`` naming the argument), then runs
    :meth:`check`, which each env extends with its bounds and choices (``ValueError`` naming the argument and
    the fix); :meth:`check_model` holds the checks that need the compiled model. The env's constructor takes
    exactly these fields as keyword arguments (:meth:`from_kwargs`; ``help()`` shows them through
    :meth:`signature`); :class:`MujocoTaskEnv` keeps the config as ``env.config`` and each checked value also
    as the attribute of its name.

    ``MODELS`` names the arguments that choose the simulated model (the quadruped's ``robot``, the claw's
    ``arm``) and their choices: a Hydra env config named for one of them (``env=go2``) keeps it
    (``train.py``'s check, ``agents/training/env_names.py``).
    """

    render_mode: RenderMode | None = None  # "human", "rgb_array", "depth_array" or None (no rendering)
    width: int = 480  # px of rendered frames
    height: int = 480  # px
    camera: str | int | None = None  # camera name or id; None or -1: MuJoCo's free camera

    MODELS: ClassVar[dict[str, tuple[str, ...]]] = {}  # argument: its choices, for those that choose the model

    def __post_init__(self) -> None:
        check_fields(self)
        self.check()

    def check(self) -> None:
        """The checks beyond the declared kinds (each value already is its kind); envs extend it."""

    def check_model(self, model: mujoco.MjModel, model_path: Path) -> None:
        """Checks that need the env's compiled model (from ``model_path``): frames fit the offscreen buffer."""
        buffer = model.vis.global_
        fits = 0 < self.width <= buffer.offwidth and 0 < self.height <= buffer.offheight
        if self.render_mode is not None and not fits:
            raise ValueError(
                f"width={self.width} height={self.height}: frames must fit the renderer's offscreen buffer of "
                f"{buffer.offwidth}x{buffer.offheight} pixels; use a smaller size or raise the buffer with "
                f'<visual><global offwidth="..." offheight="..."/> in {model_path}'
            )

    @classmethod
    def from_kwargs(cls, env_cls: type, kwargs: dict[str, Any]) -> EnvConfig:
        """The checked config of ``env_cls(**kwargs)``; ``TypeError`` naming unknown arguments and listing
        the valid ones."""
        valid = sorted(f.name for f in fields(cls))
        unknown = sorted(set(kwargs) - set(valid))
        if unknown:
            raise TypeError(
                f"{env_cls.__name__} got unknown argument(s) {unknown}; valid arguments are: {', '.join(valid)}"
            )
        return cls(**kwargs)

    @classmethod
    def signature(cls) -> inspect.Signature:
        """``(self, *, <field>=<default>, ...)``: the env's constructor as ``help()`` and ``inspect`` show it,
        the env's own arguments first, the rendering ones of this class last."""
        rendering = {f.name for f in fields(EnvConfig)}
        ordered = sorted(fields(cls), key=lambda f: f.name in rendering)  # stable: field order otherwise
        kw = inspect.Parameter.KEYWORD_ONLY
        return inspect.Signature(
            [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
            + [inspect.Parameter(f.name, kw, default=f.default, annotation=f.type) for f in ordered]
        )


class MujocoTaskEnv(gym.Env):
    """Base class: a MuJoCo model stepped ``frame_skip`` physics steps per ``step()``.

    Actions live in ``[-1, 1]^n``: out-of-range entries are clipped, NaN/inf or a wrong shape raise
    ``ValueError``. If the physics diverges (MuJoCo's bad-acceleration warning or a non-finite state)
    the episode terminates with ``info["physics_blowup"] = True`` and the last finite observation;
    ``reset()`` restores a clean state.
    """

    metadata = {"render_modes": list(RENDER_MODES), "render_fps": 50}
    METRICS: ClassVar[tuple[Metric, ...]] = ()  # what evaluations report besides return and length
    CURRICULUM: ClassVar[Curriculum | None] = None  # an env with a difficulty curriculum declares it
    RESET_OPTIONS: ClassVar[dict[str, ResetOption]] = {}  # the keys reset(options=...) takes (checked_options)

    def __init__(self, model: str | mujoco.MjModel, frame_skip: int, action_dim: int, config: EnvConfig,
                 scene_file: str | None = None) -> None:
        """Load ``assets/<model>`` (or take a compiled ``model`` built from ``assets/<scene_file>``), check
        ``config`` against it (:meth:`EnvConfig.check_model`) and keep it; ``frame_skip`` physics steps per
        ``step()``, actions in ``[-1, 1]^action_dim``."""
        if frame_skip < 1:
            raise ValueError(f"frame_skip must be >= 1, got {frame_skip}")
        path = asset_path(model if isinstance(model, str) else scene_file)
        self.model = mujoco.MjModel.from_xml_path(str(path)) if isinstance(model, str) else model
        self.data = mujoco.MjData(self.model)
        config.check_model(self.model, path)
        self.config = config
        for f in fields(config):  # env.render_mode, env.camera, env.<argument>: the checked values
            setattr(self, f.name, getattr(config, f.name))
        self.frame_skip = int(frame_skip)
        self.dt = self.model.opt.timestep * self.frame_skip
        self.metadata = {**self.metadata, "render_fps": int(round(1.0 / self.dt))}
        self.controller_spec = ControllerSpec(dt=self.dt)  # what a scripted controller is told; envs may say more
        self._renderer: mujoco.Renderer | None = None
        self._viewer = None
        self.action_space = gym.spaces.Box(-1.0, 1.0, shape=(action_dim,), dtype=np.float32)
        self._clipped_action = np.zeros(action_dim)  # the step's action, clipped (a buffer reused every step)
        self._last_obs: Any = None
        self._bind_warning_stats()

    def _bind_warning_stats(self) -> None:
        # Views into self.data.warning, read after every step (cheaper than indexing each time).
        self._divergence_stats = [self.data.warning[w] for w in _DIVERGENCE_WARNINGS]

    # ------------------------------------------------------------------ task hooks
    def _reset_task(self, options: dict[str, Any]) -> None:
        """Put the simulation in a fresh, randomized initial state (``self.np_random`` is seeded); ``options``:
        the given reset options, checked and kept as their declared kinds (:func:`checked_options`)."""
        raise NotImplementedError

    def _apply_action(self, action: np.ndarray) -> None:
        """Write controls for a clipped action in ``[-1, 1]^n`` into ``self.data.ctrl``."""
        raise NotImplementedError

    def _before_physics(self) -> None:
        """Called just before the physics steps (e.g. to apply random pushes). Default: nothing."""

    def _observe(self) -> Any:
        """Current observation (float32 arrays)."""
        raise NotImplementedError

    def _step_outcome(self, action: np.ndarray) -> tuple[float, bool, dict[str, Any]]:
        """Reward, termination flag and info for the transition that just happened."""
        raise NotImplementedError

    def _transition(self, action: np.ndarray) -> tuple[Any, float, bool, dict[str, Any]]:
        """Observation, reward, termination flag and info of the step that just happened (clipped ``action``).
        Default: :meth:`_observe`, then :meth:`_step_outcome`; an env that computes them together overrides it."""
        obs = self._observe()
        return (obs, *self._step_outcome(action))

    @classmethod
    def before_physics_batch(cls, tasks: list[MujocoTaskEnv]) -> None:
        """:meth:`_before_physics` of ``N`` envs of this class (same arguments), which the batched vector
        env calls before it copies their states; default: env by env."""
        for task in tasks:
            task._before_physics()

    @classmethod
    def apply_batch(cls, tasks: list[MujocoTaskEnv], actions: np.ndarray, qpos: np.ndarray) -> np.ndarray:
        """The ``ctrl`` rows ``(N, nu)`` that :meth:`_apply_action` writes for clipped ``actions``
        ``(N, action_dim)`` of ``N`` envs of this class (same arguments) at joint positions ``qpos``
        ``(N, nq)`` (m or rad); the batched vector env calls :meth:`before_physics_batch` first
        (before the ``ctrl`` of :meth:`_apply_action`: it must not read it). Batch-native classes
        override it; the batched vector env otherwise prepares env by env."""
        raise NotImplementedError

    @classmethod
    def finish_batch(
        cls, tasks: list[MujocoTaskEnv], actions: np.ndarray, qpos: np.ndarray, qvel: np.ndarray,
        derived: dict[str, np.ndarray],
    ) -> tuple[Any, np.ndarray, np.ndarray, dict[str, np.ndarray]]:
        """:meth:`finish_step` of ``N`` envs of this class, made with the same arguments, at once.

        ``actions`` ``(N, action_dim)`` are the clipped actions of the step; ``qpos`` ``(N, nq)``,
        ``qvel`` ``(N, nv)`` and ``derived`` (``"sensordata"`` ``(N, nsensordata)``, ``"actuator_force"``
        ``(N, nu)``, N) hold the envs' state after the physics (as in each env's ``data``; positions m
        or rad, velocities m/s or rad/s). Returns the
        batched observation, rewards ``(N,)`` float64, terminations ``(N,)`` bool and the info as one
        ``(N,)`` array per key (the dtype of the Python type :meth:`finish_step` puts there), equal
        to what each env's :meth:`finish_step` returns, physics divergence aside (the caller checks
        it per env); the envs' own state that later steps read is updated. Envs' ``_last_obs`` are
        not. Batch-native classes override it; the batched vector env otherwise finishes env by env.
        """
        raise NotImplementedError

    def overlay_lines(self, obs: Any, info: dict[str, Any]) -> list[str]:
        """Task lines (ASCII) that evaluation videos draw over the frame of ``obs``. Default: none."""
        return []

    def deploy_metadata(self) -> dict[str, Any]:
        """What a deploy script needs besides the observation layout and action scale to run an exported
        policy on the real system (JSON-serialisable values; ``export.py`` writes each as a metadata entry).
        Default: nothing."""
        return {}

    def task_context(self) -> TaskContext:
        """The current episode's :class:`TaskContext` (after ``reset``). Default: one context for the whole env,
        named by the env class."""
        return TaskContext(type(self).__name__)

    # ------------------------------------------------------------------ gym API
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        options = checked_options(type(self), options or {})  # a refused option changes nothing
        super().reset(seed=seed)
        mujoco.mj_resetData(self.model, self.data)
        self._reset_task(options)
        mujoco.mj_forward(self.model, self.data)
        obs = self._observe()
        self._last_obs = obs
        if self.render_mode == "human":
            self.render()
        return obs, self._reset_info()

    def _reset_info(self) -> dict[str, Any]:
        return {}

    def step(self, action):
        action = self.prepare_step(action)
        mujoco.mj_step(self.model, self.data, nstep=self.frame_skip)
        transition = self.finish_step(action)
        if self.render_mode == "human":
            self.render()
        return transition

    def prepare_step(self, action) -> np.ndarray:
        """Everything of :meth:`step` before the physics: validate and apply ``action``; returns it clipped.

        :meth:`step` is ``prepare_step``, ``frame_skip`` physics steps, :meth:`finish_step`; a batched
        vector env (``envs.batched``) runs the physics of many envs in one call between the two.
        """
        action = self._validate_action(action)
        self._apply_action(action)
        self._before_physics()
        return action

    def finish_step(self, action: np.ndarray) -> tuple:
        """Everything of :meth:`step` after the physics: ``(obs, reward, terminated, False, info)``."""
        if self.diverged():
            return self.blowup_transition()
        obs, reward, terminated, info = self._transition(action)
        self._last_obs = obs
        return obs, reward, terminated, False, info

    def _validate_action(self, action) -> np.ndarray:
        """The action as float64, clipped to [-1, 1] (:func:`clip_actions`), in a buffer reused every step.

        Raises ``ValueError`` for a wrong shape or NaN/inf.
        """
        a = np.asarray(action, dtype=np.float64)
        if a.shape != self._clipped_action.shape:
            raise ValueError(
                f"action has shape {a.shape}, expected {self._clipped_action.shape} "
                f"(one value in [-1, 1] per actuator of {type(self).__name__})"
            )
        return clip_actions(a, self._clipped_action)

    def diverged(self) -> bool:
        """Whether MuJoCo reported a diverging state (bad qpos, qvel or qacc) since the warnings were cleared."""
        return any(stat.number for stat in self._divergence_stats)

    def blowup_transition(self):
        """End the episode after a physics divergence without leaking NaNs."""
        info = {"physics_blowup": True, "is_success": False}
        last = self._last_obs
        obs = {k: v.copy() for k, v in last.items()} if isinstance(last, dict) else last.copy()
        return obs, self._blowup_reward(), True, False, info

    def _blowup_reward(self) -> float:
        """Reward of a transition that ended in a physics divergence (override per task)."""
        return 0.0

    # ------------------------------------------------------------------ rendering
    def render(self):
        if self.render_mode is None:
            gym.logger.warn("render() called with render_mode=None; pass render_mode='rgb_array' to gym.make")
            return None
        if self.render_mode == "human":
            return self._render_human()
        if self._renderer is None:
            self._renderer = headless.make_renderer(self.model, self.height, self.width)
        if self.render_mode == "depth_array":
            self._renderer.enable_depth_rendering()
        camera = self.camera if self.camera is not None else -1
        self._renderer.update_scene(self.data, camera=camera)
        return self._renderer.render()

    def _render_human(self):
        if self._viewer is None:
            if not headless.has_display():
                raise RuntimeError(
                    "render_mode='human' needs a display (DISPLAY is unset); use render_mode='rgb_array' "
                    "and save frames or a video instead"
                )
            import mujoco.viewer  # needs a display; imported lazily

            self._viewer = mujoco.viewer.launch_passive(self.model, self.data)
        self._viewer.sync()
        return None

    def close(self) -> None:
        if self._renderer is not None:
            self._renderer.close()
            self._renderer = None
        if self._viewer is not None:
            self._viewer.close()
            self._viewer = None

    # ------------------------------------------------------------------ pickling (async vector envs)
    def __getstate__(self):
        state = self.__dict__.copy()
        state["_renderer"] = None
        state["_viewer"] = None
        del state["_divergence_stats"]  # views into MjData: rebuilt after unpickling
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._bind_warning_stats()
