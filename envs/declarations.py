"""What generic code (training, evaluation, the teachers) reads from an env, declared by the env.

:class:`Metric` (``METRICS``: what evaluations report), :class:`Curriculum` (``CURRICULUM``: how an env
with a difficulty curriculum reports it), :class:`TaskContext` (``env.task_context()``: the class of task
an episode belongs to), :class:`ControllerSpec` (``env.controller_spec``: what a scripted controller is
told), :func:`action_units` (``ACTION_SCALE``: what a unit of action moves, read by export and the teachers) and
:func:`observation_points` (``OBSERVATION_POINTS``: where an observation entry samples the world, read by the
teachers).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np


@dataclass(frozen=True)
class Metric:
    """One number an env reports per evaluation, declared by the env and read by generic code.

    Per episode, ``info[info_key]`` is reduced by ``per_episode``: ``"mean"`` averages it over the
    episode's steps (a step without the key counts as 0), ``"last"`` takes its value at the episode's
    last step (an episode whose last ``info`` lacks the key is left out). The evaluation reports the
    mean over episodes as ``name``: the ``metrics.json`` key and ``EvalResult`` attribute, the
    ``eval.csv`` column, ``eval/<name>`` in TensorBoard and ``final_<name>`` in ``summary.json``.
    During training a ``"mean"`` metric is also logged per step as ``env/<info_key>``.

    Args:
        name: output name, e.g. ``"fall_rate"``.
        info_key: the ``info`` key read, e.g. ``"fell"``.
        per_episode: ``"mean"`` or ``"last"`` (above).
        unit: unit of the reported value, e.g. ``"m/s"``; ``"fraction"`` for a share of episodes in
            [0, 1] (a ``"last"`` metric of a bool or 0/1 value), printed in percent.
        label: a few words for console lines and plot axes, e.g. ``"falls"``.
    """

    name: str
    info_key: str
    per_episode: str
    unit: str
    label: str

    PER_EPISODE: ClassVar[tuple[str, ...]] = ("mean", "last")

    def __post_init__(self) -> None:
        if self.per_episode not in self.PER_EPISODE:
            raise ValueError(
                f"Metric {self.name!r}: per_episode={self.per_episode!r} is unknown; use one of {self.PER_EPISODE}"
            )

    def format(self, value: float) -> str:
        """``value`` for a console line: ``"falls 10%"``, ``"tracking error 0.123 m/s"``."""
        if self.unit == "fraction":
            return f"{self.label} {100 * value:.0f}%"
        return f"{self.label} {value:.3f} {self.unit}"


@dataclass(frozen=True)
class Curriculum:
    """How an env with a difficulty curriculum reports it, declared by the env (``CURRICULUM``) and read by
    generic code (training logs, checkpoints, evaluation tables).

    Every step's ``info[level_key]`` is the env copy's current level (int, 0 = easiest, ``levels - 1`` the
    hardest) and ``info[group_key]`` the index of its group in ``groups`` (e.g. terrain types). An env with a
    curriculum also has ``curriculum_state() -> dict`` (JSON-serialisable: what a resumed run needs to continue
    where the copy was) and ``set_curriculum_state(state)``, which its next reset keeps.
    """

    level_key: str
    group_key: str
    groups: tuple[str, ...]
    levels: int


@dataclass(frozen=True)
class TaskContext:
    """The class of task an episode belongs to, as far as a scripted controller may need its own parameters
    for it (``env.task_context()``, for the current episode; read by generic code: the adaptive teachers
    keep one parameter set per context).

    Args:
        name: the context's name, stable across runs and processes: what the episode shares with every
            episode of its class, ``/``-separated (``"go2"``; ``"go1/stairs_up/level3"``; ``"gantry/heavy"``).
        options: the ``reset(options=...)`` that put an episode in this context (``{}`` where every
            episode of the env is in one context), so that a check in simulation can replay the class.
    """

    name: str
    options: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, eq=False)
class ControllerSpec:
    """What an env tells the scripted controller that drives it (``env.controller_spec``; the controllers'
    interface, ``envs.controllers``): here the control period ``dt`` (s); an env family whose controller
    needs more of its model (the quadruped's leg geometry) subclasses it."""

    dt: float

    def tuned_for(self) -> dict[str, str]:
        """What a controller parameter file made for this env says it is for: top-level keys of the file and their
        values here (the quadruped's ``{"robot": "go2"}``); a file that names another value for one of them is
        refused (:func:`envs.controllers.params_file.read_params`). ``{}`` here: every file fits."""
        return {}


def action_units(env: Any) -> np.ndarray | None:
    """What one unit of each entry of the (unwrapped) ``env``'s flat action moves: its ``ACTION_SCALE`` (a class
    constant, or an instance's values from its arguments; e.g. rad of joint target) broadcast to the action's size,
    or None for an env that declares none."""
    scale = getattr(env, "ACTION_SCALE", None)
    size = int(np.prod(env.action_space.shape))
    return None if scale is None else np.broadcast_to(np.asarray(scale, dtype=float), (size,))


def observation_points(env: Any) -> dict[str, np.ndarray]:
    """Where the (unwrapped) ``env``'s observation entries that sample the world read it: its
    ``OBSERVATION_POINTS`` (entry name -> an array of points, e.g. a height scan's (P, 2) points in m), ``{}`` for
    an env that declares none. Two envs whose entry of one name and width samples other points observe other
    things there."""
    return dict(getattr(env, "OBSERVATION_POINTS", {}))
