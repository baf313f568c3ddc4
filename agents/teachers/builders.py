"""Build the teachers and the online policy distillation (``distill/``) of the PPO/SAC students from ``cfg.distill``.

This is the only place that knows both sides: it makes the student's SB3 module a
:class:`~distill.policy.PolicyEntry` and builds the configured teachers, every one a stage of a
:class:`~distill.sequence.TeacherSequence` (one teacher: one stage): a model teacher (EMA of the
student, or another run's checkpoint) or, for a controller teacher, the Gaussian around the actions it
recorded with the samples. :func:`controller_teacher` builds that controller teacher itself (scripted or
adaptive), which acts beside the student while the samples are collected.
"""

from __future__ import annotations

import functools
import pickle
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from omegaconf import DictConfig
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.vec_env import VecEnv, VecNormalize

from agents import checkpoint, saved_config
from agents.errors import ConfigError
from agents.factory import load_agent
from agents.students import policy_entry
from agents.config.teacher_kinds import TEACHERS
from agents.teachers.controller import ControllerTeacher, starting_params
from agents.teachers.observation_map import (
    arguments_that_change,
    copy_hint,
    observation_entries,
    teacher_input_index,
)
from agents.teachers.stages import Stage, stage_spans, teaching_stages
from agents.students.normalization import torch_normalize_obs
from agents.vec_env import env_kwargs
from distill.opd import OnlinePolicyDistillation
from distill.policy import Observation, PolicyEntry
from distill.schedules import AlphaSchedule, make_schedule
from distill.sequence import TeacherSequence, TeachingStage
from distill.teachers import CheckpointTeacher, EMATeacher, RecordedActionTeacher, Teacher
from envs.controllers import family_of
from envs.declarations import action_units, observation_points


def _unpickled(path: Path) -> VecNormalize:
    with path.open("rb") as f:
        return pickle.load(f)


def _normalizer(saved: VecNormalize | None) -> Callable[[Observation], Observation] | None:
    """Torch version of a saved ``VecNormalize``'s observation normalisation (or None)."""
    return functools.partial(torch_normalize_obs, saved) if saved is not None and saved.norm_obs else None


def teacher_checkpoint(run_dir: str, which: str,
                       device: str = "cpu") -> checkpoint.Intact[tuple[BaseAlgorithm, VecNormalize | None]]:
    """Another run's ``which`` (``best`` | ``latest``) checkpoint or, when it is damaged, the newest intact one
    (:func:`agents.checkpoint.first_intact`): its learner and saved normalisation. :class:`ConfigError` naming
    ``distill.teacher`` when the run has no intact checkpoint (``train.py`` checks this before writing anything)."""
    saved = saved_config.load(run_dir, "distill.teacher")

    def load(found: checkpoint.Checkpoint) -> tuple[BaseAlgorithm, VecNormalize | None]:
        model = checkpoint.loaded(found.model, lambda: load_agent(saved.agent.name, str(found.model), None, device))
        norm = checkpoint.loaded(found.normalization, lambda: _unpickled(found.normalization)) if found.normalization else None
        checkpoint.finite_or_damaged(found, model, norm)
        return model, norm

    try:
        return checkpoint.first_intact(checkpoint.in_order(run_dir, which), load)
    except checkpoint.NoneIntact as err:
        raise ConfigError(f"distill.teacher={run_dir}: no intact checkpoint under {Path(run_dir) / 'checkpoints'} "
                          f"({err}); restore the teacher's checkpoints from a copy or pass another run") from None


def teacher_run_key(d: DictConfig) -> tuple[str, str]:
    """A checkpoint teacher's run as :class:`agents.training.checks.Checked` keys it: (the run directory made
    absolute, as ``config.yaml`` records it, ``distill.teacher_checkpoint``)."""
    return str(Path(d.teacher).absolute()), d.teacher_checkpoint


def teacher_observation_index(run_dir: str, teacher: BaseAlgorithm, student: tuple[Any, Any],
                              student_env: tuple[str, dict[str, Any]]) -> np.ndarray | None:
    """Which of the student's observation entries make the observation of the teacher of run ``run_dir`` (its
    learner ``teacher``): None when it observes the student's observation space (the observation as it is), else
    :func:`~agents.teachers.observation_map.teacher_input_index` over the two envs' named entries (the student's:
    ``student_env`` = env id and kwargs; the teacher's: its run's config). ``student``: the student's observation
    and action spaces. :class:`ConfigError` when the teacher acts in another action space or in other units
    (:func:`envs.declarations.action_units`), its observation cannot be built from the student's, or an entry of both
    samples the world at other points (:func:`envs.declarations.observation_points`), naming them and the fix."""
    index, saved = None, saved_config.load(run_dir, "distill.teacher")
    teacher_env = (saved.env.id, env_kwargs(saved))
    if teacher.observation_space != student[0]:
        layout = observation_entries(*teacher_env)
        if layout[0] != teacher.observation_space:
            raise ConfigError(f"distill.teacher={run_dir}: its config.yaml's env ({saved.env.id}) observes {layout[0]}, "
                              f"its model {teacher.observation_space}; restore the run's config.yaml or pick another teacher run")
        index = teacher_input_index(run_dir, layout, observation_entries(*student_env), (teacher_env, student_env))
    if teacher.action_space.shape != student[1].shape:
        raise ConfigError(f"distill.teacher={run_dir}: teacher and student act in different action spaces "
                          f"({teacher.action_space.shape} and {student[1].shape}); pick a teacher run of this env")
    (t_units, t_points), (s_units, s_points) = _declared(*teacher_env), _declared(*student_env)
    if not np.array_equal(t_units, s_units):
        raise ConfigError(f"distill.teacher={run_dir}: one unit of the teacher's action moves its env's targets by "
                          f"{t_units.tolist()}, the student's by {s_units.tolist()} (env.kwargs.action_scale): give "
                          "the student the teacher's env.kwargs.action_scale, or pick a teacher run with the student's")
    read = set(t_points) & set(s_points)
    moved = sorted(name for name in read if not np.array_equal(t_points[name], s_points[name]))
    if moved:
        keys = arguments_that_change(lambda env: {n: observation_points(env).get(n) for n in moved}, teacher_env,
                                     student_env)
        fix = (f"{copy_hint(keys, teacher_env[1], student_env[1], 'place them')}, or" if keys else
               "no env kwarg of the student's env places them as the teacher's:")
        raise ConfigError(f"distill.teacher={run_dir}: the teacher's {', '.join(moved)} samples the world at other "
                          f"points than the student's; {fix} pick a teacher run with the student's")
    return index


def _declared(env_id: str, kwargs: dict[str, Any]) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """:func:`envs.declarations.action_units` (empty for an env that declares none, so two such envs compare
    equal) and :func:`~envs.declarations.observation_points` of ``gym.make(env_id, **kwargs)``."""
    env = gym.make(env_id, **kwargs)
    try:
        units = action_units(env.unwrapped)
        return (np.empty(0) if units is None else units), observation_points(env.unwrapped)
    finally:
        env.close()


def _teacher_input(index: torch.Tensor, normalize: Callable[[Observation], Observation] | None,
                   obs: torch.Tensor) -> Observation:
    """The teacher's observation from the student's raw one: entries ``index`` (last axis), then ``normalize``."""
    selected = obs.index_select(-1, index.to(obs.device))
    return normalize(selected) if normalize is not None else selected


def load_checkpoint_teacher(run_dir: str, which: str, student: BaseAlgorithm,
                            student_env: tuple[str, dict[str, Any]], masked: bool = False,
                            loaded: checkpoint.Intact | None = None) -> CheckpointTeacher:
    """A frozen teacher from another run's ``best`` or ``latest`` checkpoint (:func:`teacher_checkpoint`: a
    damaged one falls back to the newest intact one, said on stderr; ``loaded``: that checkpoint as the config's
    check loaded it, used when it lies on the student's device), with its own normalisation, reading its own
    observation from the student's (:func:`teacher_observation_index`; ``student_env``: the student's env id and
    kwargs). ``masked``: it teaches where the weights recorded with the samples say (``teach_contexts``,
    :mod:`agents.teachers.context_mask`)."""
    same_device = loaded is not None and loaded.value[0].device == student.device
    intact = loaded if same_device else teacher_checkpoint(run_dir, which, student.device)
    note = intact.instead("teaching with")
    if note:
        print(f"warning: distill.teacher={run_dir}: {note}", file=sys.stderr)
    teacher_model, saved_norm = intact.value
    index = teacher_observation_index(run_dir, teacher_model, (student.observation_space, student.action_space),
                                      student_env)
    env = student.get_env()
    student_normalizes = isinstance(env, VecNormalize) and env.norm_obs
    preprocess = _normalizer(saved_norm)
    if index is not None:
        preprocess = functools.partial(_teacher_input, torch.as_tensor(index), preprocess)
    return CheckpointTeacher(policy_entry(teacher_model), preprocess=preprocess, raw_input=student_normalizes,
                             masked=masked)


def _teacher(d: DictConfig, model: BaseAlgorithm, student: PolicyEntry, ema_condition: Callable[[], bool] | None,
             student_env: tuple[str, dict[str, Any]], loaded: dict[tuple[str, str], checkpoint.Intact]) -> Teacher:
    """The teacher ``d`` (a ``distill`` section of one teacher) names, for the student ``model`` (``student``: its
    policy entry; ``student_env``: its env id and kwargs; ``loaded``: the teacher runs the config's check loaded)."""
    if d.name == "ema":
        condition = ema_condition if d.ema_condition == "eval_not_worse" else None
        return EMATeacher(student, decay=d.ema_decay, update_every=d.ema_update_every, condition=condition)
    if TEACHERS[d.name].reads_run:
        return load_checkpoint_teacher(d.teacher, d.teacher_checkpoint, model, student_env,
                                       masked=d.get("teach_contexts") is not None, loaded=loaded.get(teacher_run_key(d)))
    if TEACHERS[d.name].controller:  # its actions travel in the student's buffer (controller_teacher)
        return RecordedActionTeacher(d.teacher_std)
    raise ConfigError(f"distill.name={d.name!r} is unknown; choose one of: {', '.join(TEACHERS)}")


def _schedule(d: DictConfig, steps: int) -> AlphaSchedule:
    """``d``'s alpha schedule over a span of ``steps`` env steps (it ends after ``d.schedule_steps`` of them)."""
    end = 1.0 if d.schedule_steps is None else min(1.0, d.schedule_steps / steps)
    return make_schedule(d.schedule, d.alpha, d.final_alpha, d.decay_rate, end)


def build_distillation(
    cfg: DictConfig, model: BaseAlgorithm, ema_condition: Callable[[], bool] | None = None,
    loaded: dict[tuple[str, str], checkpoint.Intact] | None = None,
) -> OnlinePolicyDistillation | None:
    """The distillation named by ``cfg.distill`` for ``model``, or None for ``distill=none``: the teachers of
    :func:`~agents.teachers.stages.teaching_stages` (one for any ``distill.name`` but ``sequence``) in a
    :class:`~distill.sequence.TeacherSequence`. A lone stage that teaches to the end of the run spans its progress
    ``[0, 1]`` (its alpha is its schedule's at the run's progress); stages with steps span whole env steps.
    ``loaded``: the checkpoint teachers' runs :func:`agents.training.checks.validate` loaded (not loaded again)."""
    d = cfg.distill
    if d.name == "none":
        return None
    student = policy_entry(model)
    total, student_env = cfg.train.total_timesteps, (cfg.env.id, env_kwargs(cfg))
    stages = teaching_stages(d)

    def stage(s: Stage, start: float, end: float, steps: int) -> TeachingStage:
        return TeachingStage(s.label, _teacher(s.distill, model, student, ema_condition, student_env, loaded or {}),
                             _schedule(s.distill, steps), start, end, s.distill.rl_weight)

    if len(stages) == 1 and stages[0].steps is None:
        return OnlinePolicyDistillation(student, TeacherSequence([stage(stages[0], 0.0, 1.0, total)]), d.direction)
    spans = stage_spans(stages, total)
    sequence = TeacherSequence([stage(s, start, end, end - start) for s, (start, end) in zip(stages, spans)], total)
    return OnlinePolicyDistillation(student, sequence, d.direction)


def controller_teacher(venv: VecEnv, cfg: DictConfig) -> ControllerTeacher:
    """The ``distill=scripted`` / ``distill=adaptive`` teacher around ``venv`` (raw, before normalisation).
    Only ``adaptive`` imports the proposers' plumbing (:mod:`agents.teachers.adaptive`, and with it the LLM's)."""
    env = venv.get_attr("unwrapped", indices=[0])[0]
    family = family_of(env)
    params = starting_params(family, cfg.distill.controller_params, env.controller_spec)
    if not TEACHERS[cfg.distill.name].adaptive:
        return ControllerTeacher(venv, family, env.controller_spec, params)
    from agents.teachers.adaptive import adaptive_teacher

    return adaptive_teacher(venv, family, env, cfg, params)
