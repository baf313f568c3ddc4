"""Build the teachers and the online policy distillation (``distill/``) of the PPO/SAC students from ``cfg.distill``.

This is the only place that knows both sides: it registers the student's SB3 module in a
:class:`~distill.policy.PolicyRegistry` and builds the configured teacher: a model teacher (EMA of the
student, or another run's checkpoint) or, for a controller teacher, the Gaussian around the actions it
recorded with the samples. :func:`controller_teacher` builds that controller teacher itself (scripted or
adaptive), which acts beside the student while the samples are collected.
"""

from __future__ import annotations

import functools
import pickle
from collections.abc import Callable
from pathlib import Path
from typing import Any

from omegaconf import DictConfig
from stable_baselines3 import SAC
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.vec_env import VecEnv, VecNormalize

from agents import checkpoint, saved_config
from agents.errors import ConfigError
from agents.factory import ALGORITHMS
from agents.students import policy_entry
from agents.config.teacher_kinds import TEACHERS
from agents.teachers.controller import ControllerTeacher, starting_params
from agents.vec_env import torch_normalize_obs
from distill.opd import OnlinePolicyDistillation
from distill.policy import Observation, PolicyRegistry
from distill.schedules import make_schedule
from distill.teachers import CheckpointTeacher, EMATeacher, RecordedActionTeacher, Teacher
from envs.controllers import family_of


def _normalizer(path: Path | None) -> Callable[[Observation], Observation] | None:
    """Torch version of a saved ``VecNormalize``'s observation normalisation (or None)."""
    if path is None:
        return None
    with path.open("rb") as f:
        saved: VecNormalize = pickle.load(f)
    return functools.partial(torch_normalize_obs, saved) if saved.norm_obs else None


def teacher_checkpoint(run_dir: str, which: str) -> checkpoint.Checkpoint:
    """The ``best`` or ``latest`` checkpoint of teacher run ``run_dir``; :class:`ConfigError` when it has none."""
    run = Path(run_dir)
    found = checkpoint.best(run) if which == "best" else checkpoint.latest(run)
    if found is None:
        raise ConfigError(f"distill.teacher={run_dir}: no '{which}' checkpoint under {run / 'checkpoints'}")
    return found


def check_teacher_spaces(run_dir: str, teacher: tuple[Any, Any], student: tuple[Any, Any]) -> None:
    """:class:`ConfigError` unless the teacher of run ``run_dir`` observes the student's observation space and acts
    in an action space of the student's shape (each a pair: observation space, action space)."""
    if teacher[0] != student[0]:
        raise ConfigError(
            f"distill.teacher={run_dir}: the teacher's observation space {teacher[0]} differs from the student's "
            f"{student[0]} (a teacher trained on another env); pick a teacher run of this env"
        )
    if teacher[1].shape != student[1].shape:
        raise ConfigError(f"distill.teacher={run_dir}: teacher and student act in different action spaces "
                          f"({teacher[1].shape} and {student[1].shape}); pick a teacher run of this env")


def load_checkpoint_teacher(run_dir: str, which: str, student: BaseAlgorithm) -> CheckpointTeacher:
    """A frozen teacher from another run's ``best`` or ``latest`` checkpoint, with its own normalisation."""
    saved = saved_config.load(run_dir, "distill.teacher")
    found = teacher_checkpoint(run_dir, which)
    teacher_model = ALGORITHMS[saved.agent.name].load(found.model, device=student.device)
    check_teacher_spaces(run_dir, (teacher_model.observation_space, teacher_model.action_space),
                         (student.observation_space, student.action_space))
    env = student.get_env()
    student_normalizes = isinstance(env, VecNormalize) and env.norm_obs
    return CheckpointTeacher(
        policy_entry(teacher_model), preprocess=_normalizer(found.normalization), raw_input=student_normalizes
    )


def build_distillation(
    cfg: DictConfig, model: BaseAlgorithm, ema_condition: Callable[[], bool] | None = None
) -> OnlinePolicyDistillation | None:
    """The distillation named by ``cfg.distill`` for ``model``, or None for ``distill=none``."""
    d = cfg.distill
    if d.name == "none":
        return None
    registry = PolicyRegistry()
    entry = policy_entry(model)
    student = registry.register("student", entry.module, entry.distribution_fn)
    teacher: Teacher
    if d.name == "ema":
        condition = ema_condition if d.ema_condition == "eval_not_worse" else None
        teacher = EMATeacher(student, decay=d.ema_decay, update_every=d.ema_update_every, condition=condition)
    elif TEACHERS[d.name].reads_run:
        teacher = load_checkpoint_teacher(d.teacher, d.teacher_checkpoint, model)
    elif TEACHERS[d.name].controller:  # its actions travel in the student's buffer (controller_teacher)
        teacher = RecordedActionTeacher(d.teacher_std, squashed=isinstance(model, SAC))
    else:
        raise ConfigError(f"distill.name={d.name!r} is unknown; choose one of: {', '.join(TEACHERS)}")
    total = cfg.train.total_timesteps
    end = 1.0 if d.schedule_steps is None else min(1.0, d.schedule_steps / total)
    schedule = make_schedule(d.schedule, d.alpha, d.final_alpha, d.decay_rate, end)
    return OnlinePolicyDistillation(registry, teacher, schedule, direction=d.direction)



def controller_teacher(venv: VecEnv, cfg: DictConfig) -> ControllerTeacher:
    """The ``distill=scripted`` / ``distill=adaptive`` teacher around ``venv`` (raw, before normalisation).
    Only ``adaptive`` imports the proposers' plumbing (:mod:`agents.teachers.adaptive`, and with it the LLM's)."""
    env = venv.get_attr("unwrapped", indices=[0])[0]
    family = family_of(env)
    params = starting_params(family, cfg.distill.controller_params)
    if not TEACHERS[cfg.distill.name].adaptive:
        return ControllerTeacher(venv, family, env.controller_spec, params)
    from agents.teachers.adaptive import adaptive_teacher

    return adaptive_teacher(venv, family, env, cfg, params)
