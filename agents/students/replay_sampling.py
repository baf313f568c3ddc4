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
from typing import Any

import numpy as np
import torch
from stable_baselines3.common.buffers import DictReplayBuffer, ReplayBuffer
from stable_baselines3.common.type_aliases import DictReplayBufferSamples, ReplayBufferSamples
from stable_baselines3.common.vec_env import VecNormalize

from agents.students.replay_buffer import TargetsDictReplayBuffer, TargetsReplayBuffer

#: sha256 of ``inspect.getsource`` of the stable-baselines3 2.9.2 ``BaseBuffer.sample`` whose draw
#: (stable_baselines3/common/buffers.py) :func:`replay_batches` repeats; its ``_get_samples`` maths are
#: covered by ``replay_targets.SB3_GET_SAMPLES_SHA256``. tests/test_sb3_copies.py fails when SB3 differs.
SB3_SAMPLE_SHA256 = "32e77dec7d96488dfa619dc0fd82b08a315943bdd28b635ea93166c932c5f1ee"

#: buffer classes whose ``_get_samples`` is SB3's plain one (plus recorded teacher targets)
_GATHERABLE = (ReplayBuffer, DictReplayBuffer, TargetsReplayBuffer, TargetsDictReplayBuffer)


def replay_batches(
    buffer: ReplayBuffer, steps: int, batch_size: int, env: VecNormalize | None
) -> Iterator[tuple[ReplayBufferSamples | DictReplayBufferSamples, np.ndarray | None]]:
    """``steps`` minibatches of ``batch_size`` transitions, each with its recorded teacher-target rows
    (``(batch_size, action_dim + 1)``, or None when the buffer records none)."""
    if type(buffer) not in _GATHERABLE or buffer.optimize_memory_usage:
        for _ in range(steps):
            yield buffer.sample(batch_size, env=env), getattr(buffer, "last_targets", None)
        return
    upper = buffer.buffer_size if buffer.full else buffer.pos
    draws = [(np.random.randint(0, upper, size=batch_size), np.random.randint(0, high=buffer.n_envs, size=batch_size))
             for _ in range(steps)]
    rows = np.concatenate([slots for slots, _ in draws])
    cols = np.concatenate([envs for _, envs in draws])
    fields = _gather(buffer, rows, cols, env)
    targets = buffer.sample_targets[rows, cols] if isinstance(buffer, (TargetsReplayBuffer, TargetsDictReplayBuffer)) else None
    samples_type = DictReplayBufferSamples if isinstance(buffer, DictReplayBuffer) else ReplayBufferSamples
    for step in range(steps):
        part = slice(step * batch_size, (step + 1) * batch_size)
        yield samples_type(*(_part(field, part) for field in fields)), None if targets is None else targets[part]


def _gather(buffer: ReplayBuffer, rows: np.ndarray, cols: np.ndarray, env: VecNormalize | None) -> tuple:
    """(observations, actions, next observations, dones, rewards) of the given rows as torch tensors,
    computed as SB3's ``_get_samples`` computes them."""
    def tensor(array: np.ndarray) -> torch.Tensor:
        return torch.from_numpy(np.ascontiguousarray(array)).to(buffer.device)

    def observations(stored: Any) -> Any:
        if isinstance(stored, dict):
            normalized = buffer._normalize_obs({key: obs[rows, cols, :] for key, obs in stored.items()}, env)
            return {key: tensor(obs) for key, obs in normalized.items()}
        return tensor(buffer._normalize_obs(stored[rows, cols, :], env))

    dones = (buffer.dones[rows, cols] * (1 - buffer.timeouts[rows, cols])).reshape(-1, 1)
    rewards = buffer._normalize_reward(buffer.rewards[rows, cols].reshape(-1, 1), env)
    return (observations(buffer.observations), tensor(buffer.actions[rows, cols]),
            observations(buffer.next_observations), tensor(dones), tensor(rewards))


def _part(field: Any, part: slice) -> Any:
    return {key: value[part] for key, value in field.items()} if isinstance(field, dict) else field[part]
