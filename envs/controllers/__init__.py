"""Scripted controllers that solve the OpenClaw tasks without learning.

They read only observations (plus their own clock), so they run as "policies" anywhere a learned
policy runs, and their parameters are what the adaptive teacher's proposers (an LLM, CMA-ES, ...) later propose.

:data:`FAMILIES` is the one table that says which controller belongs to which env family; the
scripted policies (``evaluate.py policy=trot|grasp``), the controller teachers
(``distill=scripted|adaptive``) and their config checks all read it. Every controller has the same
interface:

* ``Controller(params=None, spec=None)``: ``params`` an instance of the family's ``params`` class
  (``None``: its defaults, which may depend on the robot: the trot's tuned per robot); ``spec`` what the env
  tells its controller, ``env.controller_spec`` (an :class:`envs.declarations.ControllerSpec`: the control period
  ``dt`` in s, and for the trot the robot's :class:`envs.quadruped.LegGeometry`; ``None``: the family's
  ``env_id``'s default);
* ``reset()`` at every episode start, ``act(obs) -> action`` (float32 in ``[-1, 1]^n``);
* ``batched`` (class attribute, optional, default False): the controller keeps no state and ``act`` also
  takes a batch of observations ``(N, obs_dim) -> (N, n)``, so N envs with the same ``params`` share a call;
  a batched controller's ``act`` takes numpy arrays or torch tensors on any device (a GPU simulator's
  observations) and answers in kind: float32 numpy actions, or float32 tensors computed on the
  observations' device (the trot: one definition of its math for both, :mod:`envs.controllers.trot`);
* ``params``: the parameter dataclass, assignable; the class has ``BOUNDS`` (name -> (low, high)),
  ``from_dict`` (validated, raises ``ValueError``) and ``to_dict``; where some parameters act only on some
  envs of the family, the family's ``bounds_for`` says which (:meth:`ControllerFamily.bounds`);
* ``env_settings() -> {env method name: args}``: what the env must be told so that it matches
  ``params`` (the trot's gait frequency drives the env's gait clock); whoever sets ``params`` calls
  them on the controller's env (``venv.env_method(name, *args, indices=[i])``); ``env_kwargs()`` says the same
  as constructor arguments (``{"gait_frequency_hz": f}``), which a training run adds to the env's
  arguments when the controller teaches, so that its evaluation envs, its saved config and
  ``evaluate.py run=`` have the gait clock the student learned with.

A new env family with a controller adds its module here and one :class:`ControllerFamily` row.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, get_type_hints

import gymnasium as gym
from gymnasium.envs.registration import load_env_creator

from envs.claw import ClawEnv
from envs.controllers.grasp import ClawScore, ClawSegment, GraspController, GraspParams, claw_episode_start
from envs.controllers.trot import (
    QuadrupedScore,
    QuadrupedSegment,
    TrotController,
    TrotParams,
    quadruped_episode_start,
)
from envs.declarations import ControllerSpec
from envs.quadruped import QuadrupedEnv


@dataclass(frozen=True)
class ControllerFamily:
    """One env family and its scripted controller.

    Args:
        family: the family's name, also the ``task`` of its hint requests (``"quadruped"``).
        name: the controller's name (``evaluate.py policy=<name>``).
        env_class: envs of this class (every registered variant) belong to the family.
        env_id: the Gymnasium id ``evaluate.py policy=<name>`` runs on unless told otherwise.
        controller: the controller class (interface in the module docstring).
        params: its parameter dataclass; its ``BOUNDS`` bound what proposers propose (:meth:`bounds`).
        segment: statistics of a stretch of steps for a hint request: ``add(obs, info)`` per step,
            ``summary() -> (summary, outcome)``.
        episode_start: reset options that rebuild an episode from its first observation (hint
            verification replays the episode a hint was asked about).
        score: score of one rollout for hint verification: ``add(obs, info)`` per step,
            ``metrics() -> {"score": higher is better, ...}``.
        bounds_for: ``bounds_for(spec)``, the ``BOUNDS`` of the parameters that act on an env whose
            ``controller_spec`` is ``spec`` (the trot's height-scan fields act only with a scan); ``None``: every
            parameter acts on every env of the family.
        score_kwargs: env arguments the score's rollouts need on top of the training env's (the quadruped's
            ``gait_measures``: its score reads ``info["stance_slip"]``, which its training envs leave out).
    """

    family: str
    name: str
    env_class: type[gym.Env]
    env_id: str
    controller: type
    params: type
    segment: type
    episode_start: Callable[[Any], dict[str, Any]]
    score: type
    bounds_for: Callable[[ControllerSpec | None], dict[str, tuple[float, float]]] | None = None
    score_kwargs: dict[str, Any] = field(default_factory=dict)

    def bounds(self, spec: ControllerSpec | None) -> dict[str, tuple[float, float]]:
        """The bounds of the parameters that act on an env whose ``controller_spec`` is ``spec`` (``None``: the
        family's ``env_id``'s), which proposers search: ``bounds_for(spec)``, or every parameter's ``BOUNDS``."""
        return dict(self.params.BOUNDS if self.bounds_for is None else self.bounds_for(spec))

    @property
    def integer_params(self) -> frozenset[str]:
        """Names of the parameters that are whole numbers (annotated ``int``)."""
        return frozenset(name for name, kind in get_type_hints(self.params).items() if kind is int)


FAMILIES: dict[str, ControllerFamily] = {
    "quadruped": ControllerFamily(
        family="quadruped", name="trot", env_class=QuadrupedEnv, env_id="OpenClaw/Quadruped-v1",
        controller=TrotController, params=TrotParams, segment=QuadrupedSegment,
        episode_start=quadruped_episode_start, score=QuadrupedScore, bounds_for=TrotParams.bounds_for,
        score_kwargs={"gait_measures": True},
    ),
    "claw": ControllerFamily(
        family="claw", name="grasp", env_class=ClawEnv, env_id="OpenClaw/Claw-v0",
        controller=GraspController, params=GraspParams, segment=ClawSegment,
        episode_start=claw_episode_start, score=ClawScore,
    ),
}
CONTROLLER_NAMES = tuple(f.name for f in FAMILIES.values())


def tell_env(env: Any, controller: Any) -> None:
    """Tell one env what the controller's parameters need of it (``controller.env_settings()``: the trot's gait
    clock frequency); ``env`` is a Gymnasium env, wrapped or not, or an env instance of a batched simulation.
    (A vector env: :meth:`agents.controller_policy.ControllerPolicy.sync_env`.)"""
    for name, args in controller.env_settings().items():
        method = env.get_wrapper_attr(name) if isinstance(env, gym.Wrapper) else getattr(env, name)
        method(*args)


def controller_named(name: str) -> ControllerFamily:
    """The family whose controller is called ``name`` (``"trot"``); ``ValueError`` listing the names."""
    for family in FAMILIES.values():
        if family.name == name:
            return family
    raise ValueError(f"unknown scripted controller {name!r}; choose one of: {', '.join(CONTROLLER_NAMES)}")


def family_of(env: gym.Env | type) -> ControllerFamily:
    """The family of an env instance (unwrapped or not) or env class; ``ValueError`` if it has no controller."""
    cls = env if isinstance(env, type) else type(env.unwrapped)
    for family in FAMILIES.values():
        if issubclass(cls, family.env_class):
            return family
    raise ValueError(
        f"no scripted controller for {cls.__name__}; controllers exist for the env families: "
        + ", ".join(f"{f.family} ({f.env_class.__name__}: {f.name})" for f in FAMILIES.values())
    )


def family_of_id(env_id: str) -> ControllerFamily:
    """The family of the env registered as ``env_id`` (found from its entry point, nothing is built)."""
    entry = gym.spec(env_id).entry_point
    creator = load_env_creator(entry) if isinstance(entry, str) else entry
    if not isinstance(creator, type):
        raise ValueError(f"{env_id} is made by the function {entry}, not an env class: no scripted controller for it")
    return family_of(creator)
