"""A checkpoint teacher that observes more (or other entries) than its student: its observation, built from the
student's by entry name.

Each env declares its observation's named entries (``env.OBS_SLICES``: name -> slice of its Box observation,
e.g. the quadruped's ``joint_pos``, the terrain env's privileged ``height_scan``, ``friction``, ``true_lin_vel``,
a history's ``history_1`` ..). A teacher trained on env A teaches a student on env B when every entry of A's
observation is an entry of B's of the same name and width: the teacher's observation is then the student's
entries gathered in A's order (:func:`teacher_input_index`), computed from the same env state at every sample.
The perceptive teacher of ``OpenClaw/QuadrupedTerrain-v1`` (``agent.perceptive_actor=true``) so teaches a blind
student with a proprioceptive history (the same env with ``history_steps=k``: the privileged entries stay in the
student's observation, hidden from its actor by ``agents.students.observation_masks``). Entries the student
has and the teacher lacks (the history) are not read by the teacher.

A refusal names the env kwargs that make the difference, and only those (:func:`arguments_that_change`): a teacher
whose height scan is of another ``scan_grid`` is told about ``scan_grid``, not about kwargs that leave the scan as
it is (``history_steps``, ``terrain_types``, ``gait_frequency_hz``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np

from agents.errors import ConfigError


def observation_entries(env_id: str, kwargs: dict[str, Any]) -> tuple[gym.Space, dict[str, slice] | None]:
    """The observation space of ``gym.make(env_id, **kwargs)`` and its named entries (``OBS_SLICES``; None for an
    env that names none, or whose observation is not a flat Box)."""
    env = gym.make(env_id, **kwargs)
    try:
        space, slices = env.observation_space, getattr(env.unwrapped, "OBS_SLICES", None)
    finally:
        env.close()
    return space, (dict(slices) if slices and isinstance(space, gym.spaces.Box) and len(space.shape) == 1 else None)


EnvArgs = tuple[str, dict[str, Any]]  # an env id and its constructor arguments (kwargs)


def arguments_that_change(read: Callable[[Any], dict[str, Any]], teacher_env: EnvArgs,
                          student_env: EnvArgs) -> list[str]:
    """The env kwargs of teacher and student that differ and that, given the teacher's value in the student's
    kwargs (or left out where the teacher's leave it out: its default), change ``read`` of the student's unwrapped
    env (e.g. where an entry samples the world, how wide it is; name -> value or array): what the student must
    copy from the teacher so that the two agree on it, in key order. A key the student's env does not take is left
    out; a value it refuses beside the student's other kwargs counts (the two kwargs go together)."""
    (_, t_kwargs), (env_id, s_kwargs) = teacher_env, student_env

    def made(kwargs: dict[str, Any]) -> dict[str, Any]:
        env = gym.make(env_id, **kwargs)
        try:
            return read(env.unwrapped)
        finally:
            env.close()

    now, changing = made(s_kwargs), []
    for key in sorted(k for k in set(t_kwargs) | set(s_kwargs) if t_kwargs.get(k) != s_kwargs.get(k)):
        trial = {k: v for k, v in s_kwargs.items() if k != key} | ({key: t_kwargs[key]} if key in t_kwargs else {})
        try:
            after = made(trial)
        except TypeError:  # not an argument of the student's env
            continue
        except ValueError:  # refused beside the student's other kwargs
            after = None
        if after is None or after.keys() != now.keys() or any(not np.array_equal(after[k], now[k]) for k in now):
            changing.append(key)
    return changing


def copy_hint(keys: list[str], teacher_kwargs: dict[str, Any], student_kwargs: dict[str, Any], does: str) -> str:
    """``"env kwargs that <does>: k (teacher v, student w), ...; give the student the teacher's env kwargs that
    <does> (env.kwargs.k=v, drop env.kwargs.j)"``: the fix for the ``keys`` of :func:`arguments_that_change`
    (``None``: a kwarg left out, the env's default)."""

    def copied(key: str) -> str:
        if key not in teacher_kwargs:
            return f"drop env.kwargs.{key}"
        value = teacher_kwargs[key]
        text = json.dumps(value, separators=(",", ":")) if isinstance(value, (list, dict)) else value
        return f"env.kwargs.{key}={text}"

    differ = ", ".join(f"{k} (teacher {teacher_kwargs.get(k)!r}, student {student_kwargs.get(k)!r})" for k in keys)
    return (f"env kwargs that {does}: {differ}; give the student the teacher's env kwargs that {does} "
            f"({', '.join(copied(k) for k in keys)})")


def teacher_input_index(run_dir: str, teacher: tuple[gym.Space, dict[str, slice] | None],
                        student: tuple[gym.Space, dict[str, slice] | None],
                        envs: tuple[EnvArgs, EnvArgs] | None = None) -> np.ndarray | None:
    """None when the teacher of run ``run_dir`` observes the student's observation as it is (equal spaces); else the
    student's entries that make the teacher's observation, in its order (``teacher_obs = student_obs[..., index]``).
    ``teacher`` and ``student``: each an observation space and its named entries (:func:`observation_entries`);
    ``envs``: the teacher's and the student's env id and kwargs, for a refusal that names the kwargs to copy.

    Raises:
        ConfigError: an entry of the teacher's observation is not in the student's (or not as wide), naming them
            and the fix (the student's env kwargs that shape them, where ``envs`` shows some); or either
            observation names no entries.
    """
    (t_space, t_slices), (s_space, s_slices) = teacher, student
    if t_space == s_space:
        return None
    what = (f"distill.teacher={run_dir}: the teacher's observation space {t_space} differs from the student's "
            f"{s_space}")
    if t_slices is None or s_slices is None:
        raise ConfigError(f"{what}, and {'the teacher' if t_slices is None else 'the student'}'s env names no entries "
                          "of its observation (env.OBS_SLICES) to build the teacher's from; pick a teacher run of this env")
    width = _widths(s_slices, list(t_slices))
    lacking = [name for name, s in t_slices.items() if width[name] != s.stop - s.start]
    missing = [f"{name} ({t_slices[name].stop - t_slices[name].start})" for name in lacking]
    covered = sorted((s.start, s.stop) for s in t_slices.values())
    gaps = covered[0][0] != 0 or covered[-1][1] != t_space.shape[0] or any(a[1] != b[0] for a, b in zip(covered, covered[1:]))
    if missing or gaps:
        unnamed = ["entries its env leaves unnamed"] if gaps else []
        shaped = (lambda env: _widths(getattr(env, "OBS_SLICES", None) or {}, lacking))
        keys = arguments_that_change(shaped, *envs) if envs and lacking else []
        fix = (copy_hint(keys, envs[0][1], envs[1][1], "shape them") if keys else
               "train the student on an env whose observation carries them (e.g. the teacher's env with "
               "env.kwargs.history_steps=k: privileged entries stay in the observation, hidden from a blind PPO actor)")
        raise ConfigError(f"{what}, and the student's observation lacks the teacher's {', '.join(missing + unnamed)} "
                          f"(entries, widths); {fix}, or pick a teacher run whose observation the student's contains")
    order = sorted(t_slices.items(), key=lambda item: item[1].start)
    return np.concatenate([np.arange(s_slices[name].start, s_slices[name].stop) for name, _ in order])


def _widths(slices: dict[str, slice], names: list[str]) -> dict[str, int | None]:
    """The width of each entry ``names`` names in an observation's named entries ``slices``, None where absent."""
    return {name: slices[name].stop - slices[name].start if name in slices else None for name in names}
