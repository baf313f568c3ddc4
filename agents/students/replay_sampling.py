"""All of one ``train()`` call's replay minibatches in one gather, with SB3's random draws.

SB3 samples one minibatch per gradient step: two ``np.random.randint`` draws (slot indices, then env
indices), one fancy index and one ``torch.tensor`` copy per field (per key for Dict observations),
normalisation per minibatch. :func:`replay_batches` makes the same draws in the same order, then
gathers, normalises and converts the rows of every step at once and hands out per-step views, so the
minibatches are bit-identical to ``buffer.sample`` called once per step. Buffers it does not know
(HER, memory-optimised) are sampled step by step through their own ``sample``.
"""

from __future__ import annotations

from collections.abc import Iterator
from operator import itemgetter
from typing import Any

import numpy as np
from stable_baselines3.common.buffers import DictReplayBuffer, ReplayBuffer
from stable_baselines3.common.type_aliases import DictReplayBufferSamples, ReplayBufferSamples
from stable_baselines3.common.vec_env import VecNormalize

from agents.students.replay_buffer import (
    TeacherDictReplayBuffer,
    TeacherReplayBuffer,
    TeacherReplaySamples,
    gather,
    samples_type,
)
from agents.students.teacher_actions import TeacherActionFields
from distill.policy import per_entry
from distill.teachers import TeacherActions

#: sha256 of ``inspect.getsource`` of the stable-baselines3 2.9.2 ``BaseBuffer.sample`` whose draw
#: (stable_baselines3/common/buffers.py) :func:`replay_batches` repeats; its ``_get_samples`` maths are
#: covered by ``replay_buffer.SB3_GET_SAMPLES_SHA256``. tests/test_sb3_copies.py fails when SB3 differs.
SB3_SAMPLE_SHA256 = "32e77dec7d96488dfa619dc0fd82b08a315943bdd28b635ea93166c932c5f1ee"

#: buffer classes whose ``_get_samples`` is SB3's plain one (plus the teacher's fields)
_GATHERABLE = (ReplayBuffer, DictReplayBuffer, TeacherReplayBuffer, TeacherDictReplayBuffer)


def replay_batches(
    buffer: ReplayBuffer, steps: int, batch_size: int, env: VecNormalize | None
) -> Iterator[ReplayBufferSamples | DictReplayBufferSamples | TeacherReplaySamples]:
    """``steps`` minibatches of ``batch_size`` transitions (with the teacher's fields when the buffer has them)."""
    if type(buffer) not in _GATHERABLE or buffer.optimize_memory_usage:
        for _ in range(steps):
            yield buffer.sample(batch_size, env=env)
        return
    upper = buffer.buffer_size if buffer.full else buffer.pos
    draws = [(np.random.randint(0, upper, size=batch_size), np.random.randint(0, high=buffer.n_envs, size=batch_size))
             for _ in range(steps)]
    rows = np.concatenate([slots for slots, _ in draws])
    cols = np.concatenate([envs for _, envs in draws])
    teacher = isinstance(buffer, TeacherActionFields)
    fields = buffer.samples_at(rows, cols, env) if teacher else gather(buffer, rows, cols, env)
    kind = samples_type(buffer)
    for step in range(steps):
        part = slice(step * batch_size, (step + 1) * batch_size)
        yield kind(*(_part(field, part) for field in fields))


def _part(field: Any, part: slice) -> Any:
    if field is None:
        return None
    if isinstance(field, TeacherActions):
        return field.rows(part)
    return per_entry(itemgetter(part), field)
