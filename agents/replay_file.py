"""A replay buffer's file holds the rows it has filled, not its whole capacity.

SB3's ``save_replay_buffer`` pickles every array at full size: a SAC buffer of the default 1 M transitions on
the quadruped writes 542 MB at every checkpoint, even after 2,048 steps. :func:`save_replay_buffer` writes the
same pickle with each per-slot array cut to the filled slots (``buffer.pos`` of ``buffer.buffer_size``, while
the buffer is not yet full), and unpickling pads it back with zeros, which is what an unfilled slot of a new SB3
buffer holds. So the file loads with SB3's own ``model.load_replay_buffer`` (or ``pickle``) as before, into a
buffer equal to the saved one array for array, wherever this package is importable (the pickle names
:func:`zero_padded`, as a distilling run's buffer already names its class); a full buffer is written whole, as
SB3 writes it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from stable_baselines3.common.buffers import ReplayBuffer
from stable_baselines3.common.save_util import save_to_pkl


def zero_padded(filled: np.ndarray, slots: int) -> np.ndarray:
    """``filled`` followed by zero rows up to ``slots`` rows (what unpickling a cut array calls)."""
    array = np.zeros((slots, *filled.shape[1:]), dtype=filled.dtype)
    array[: len(filled)] = filled
    return array


class _FilledRows:
    """Pickles as the first ``rows`` rows of ``array`` and unpickles as :func:`zero_padded` to its full length."""

    def __init__(self, array: np.ndarray, rows: int) -> None:
        self.array, self.rows = array, rows

    def __reduce__(self) -> tuple[Any, tuple[np.ndarray, int]]:
        return zero_padded, (self.array[: self.rows], len(self.array))


def _cut(value: Any, buffer: ReplayBuffer, rows: int) -> Any:
    """``value`` cut to its first ``rows`` slots if it is a per-slot numeric array (buffer_size, n_envs, ...), a dict
    with each such entry cut (a Dict observation); otherwise ``value`` itself (an object array, e.g. HER's infos,
    stays whole)."""
    if isinstance(value, dict):
        return {key: _cut(item, buffer, rows) for key, item in value.items()}
    if (isinstance(value, np.ndarray) and value.ndim >= 2 and value.shape[0] == buffer.buffer_size
            and value.dtype != object):
        return _FilledRows(value, rows)
    return value


def save_replay_buffer(buffer: ReplayBuffer, path: str | Path) -> None:
    """Pickle ``buffer`` to ``path`` with only its filled slots (module docstring); the buffer is not changed."""
    if buffer.full:
        save_to_pkl(path, buffer)
        return
    # filled: slots [0, pos); a memory-optimised buffer also keeps the last transition's next observation at pos
    rows = min(buffer.pos + int(getattr(buffer, "optimize_memory_usage", False)), buffer.buffer_size)
    compact = object.__new__(type(buffer))  # a shallow copy whose per-slot arrays pickle cut
    compact.__dict__.update({name: _cut(value, buffer, rows) for name, value in vars(buffer).items()})
    save_to_pkl(path, compact)
