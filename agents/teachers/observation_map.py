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
"""

from __future__ import annotations

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


def teacher_input_index(run_dir: str, teacher: tuple[gym.Space, dict[str, slice] | None],
                        student: tuple[gym.Space, dict[str, slice] | None]) -> np.ndarray | None:
    """None when the teacher of run ``run_dir`` observes the student's observation as it is (equal spaces); else the
    student's entries that make the teacher's observation, in its order (``teacher_obs = student_obs[..., index]``).
    ``teacher`` and ``student``: each an observation space and its named entries (:func:`observation_entries`).

    Raises:
        ConfigError: an entry of the teacher's observation is not in the student's (or not as wide), naming them
            and the fix; or either observation names no entries.
    """
    (t_space, t_slices), (s_space, s_slices) = teacher, student
    if t_space == s_space:
        return None
    what = (f"distill.teacher={run_dir}: the teacher's observation space {t_space} differs from the student's "
            f"{s_space}")
    if t_slices is None or s_slices is None:
        raise ConfigError(f"{what}, and {'the teacher' if t_slices is None else 'the student'}'s env names no entries "
                          "of its observation (env.OBS_SLICES) to build the teacher's from; pick a teacher run of this env")
    width = {name: s.stop - s.start for name, s in s_slices.items()}
    missing = [f"{name} ({s.stop - s.start})" for name, s in t_slices.items() if width.get(name) != s.stop - s.start]
    covered = sorted((s.start, s.stop) for s in t_slices.values())
    gaps = covered[0][0] != 0 or covered[-1][1] != t_space.shape[0] or any(a[1] != b[0] for a, b in zip(covered, covered[1:]))
    if missing or gaps:
        unnamed = ["entries its env leaves unnamed"] if gaps else []
        raise ConfigError(
            f"{what}, and the student's observation lacks the teacher's {', '.join(missing + unnamed)} "
            f"(entries, widths); train the student on an env whose observation carries them (e.g. the teacher's env "
            "with env.kwargs.history_steps=k: privileged entries stay in the observation, hidden from a blind PPO "
            "actor), or pick a teacher run whose observation the student's contains")
    order = sorted(t_slices.items(), key=lambda item: item[1].start)
    return np.concatenate([np.arange(s_slices[name].start, s_slices[name].stop) for name, _ in order])
