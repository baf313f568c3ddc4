"""The array namespaces that an env's task functions are written in: N copies at once, or one.

The task functions read their copies' state and readings as ``(N, k)`` arrays and compute through a namespace
``m``: :class:`BatchMath` on ``(N,)`` float64 columns for ``N`` copies at once (the batched vector env,
``envs.batched``), :class:`ScalarMath` the ``N = 1`` case on Python floats (one ``gymnasium.Env``: floats make one
copy's step ~3x cheaper than numpy on one-row arrays), bit-identically. ``columns``, ``rows``, ``item`` and
``store_columns`` move values between the ``(N, k)`` state arrays and the namespace's numbers.
:func:`clip_actions` validates and clips actions, one or a batch.
"""

from __future__ import annotations

import math

from typing import Any

import numpy as np


def array_namespace(x: Any) -> Any:
    """``torch`` for a torch tensor (imported only then: ``envs`` does not import torch), else ``numpy``."""
    if type(x).__module__.startswith("torch"):
        import torch

        return torch
    return np


def clip_actions(a: np.ndarray, out: np.ndarray) -> np.ndarray:
    """Float64 actions (one, or a batch) clipped to [-1, 1] into ``out``; ``ValueError`` for NaN/inf.

    NaN/inf is detected with one dot product (the exact element-wise check runs only when that
    overflows), and clipping writes in place: together ~1 us for one action instead of ~4 us for
    ``np.isfinite(a).all()`` and ``np.clip``.
    """
    flat = a.reshape(-1)
    if not math.isfinite(flat.dot(flat)) and not np.isfinite(a).all():
        raise ValueError(f"action contains NaN or inf: {a}; check the policy output")
    np.minimum(a, 1.0, out=out)
    np.maximum(out, -1.0, out=out)
    return out


def _per_element(fn):
    """``fn`` of Python floats applied element by element to equal-length float64 arrays."""
    def apply(*arrays: np.ndarray) -> np.ndarray:
        return np.fromiter(map(fn, *(a.tolist() for a in arrays)), dtype=np.float64, count=len(arrays[0]))
    return apply


class ScalarMath:
    """The maths that an env's observation and reward functions are written in, on Python floats (one env).

    The same function, given :class:`BatchMath` and ``(N,)`` float64 arrays for the floats, computes
    ``N`` envs at once and bit-identically: ``+ - * / % sqrt`` and comparisons round the same on
    arrays, and the transcendental functions stay the Python ones per element (numpy's may differ
    in the last bit). Booleans combine with ``&`` (not ``and``) to work on both.
    """

    sqrt = staticmethod(math.sqrt)
    atan2 = staticmethod(math.atan2)
    cos = staticmethod(math.cos)
    sin = staticmethod(math.sin)
    exp = staticmethod(math.exp)
    maximum = staticmethod(max)

    @staticmethod
    def where(condition: bool, a: float, b: float) -> float:
        return a if condition else b

    @staticmethod
    def sum_of_squares(x: np.ndarray) -> float:
        """``x . x`` of one env's vector (a float64 array of shape ``(k,)``)."""
        return float(x.dot(x))

    @staticmethod
    def clip(x: float, low: float, high: float) -> float:
        return low if x < low else high if x > high else x

    @staticmethod
    def float32(columns: tuple[float, ...]) -> np.ndarray:
        """The observation vector, shape ``(len(columns),)``."""
        return np.array(columns, dtype=np.float32)

    @staticmethod
    def zeros_like(x: float) -> float:
        return 0.0

    @staticmethod
    def sin_into(x: np.ndarray, out: np.ndarray) -> None:
        """``out[...] = sin(x)`` (numpy's, on arrays: the gait clock of one env or N)."""
        np.sin(x, out=out)

    @staticmethod
    def cos_into(x: np.ndarray, out: np.ndarray) -> None:
        np.cos(x, out=out)

    @staticmethod
    def concat32(parts: tuple[np.ndarray, ...]) -> np.ndarray:
        """The parts (N, k_i) side by side as float32 (N, sum k_i)."""
        return np.concatenate(parts, axis=-1, dtype=np.float32)

    @staticmethod
    def columns(x: np.ndarray) -> list:
        """The columns of a one-row ``(1, k)`` state or reading array as ``k`` Python values (the functions' per-entry
        values of one env)."""
        return x[0].tolist()

    @staticmethod
    def rows(x: np.ndarray) -> np.ndarray:
        """A one-row ``(1, k)`` array's row, ``(k,)`` (a view): one env's vector."""
        return x[0]

    @staticmethod
    def item(x: np.ndarray):
        """A one-entry ``(1,)`` array's value as a Python float, int or bool."""
        return x.item(0)

    @staticmethod
    def store_columns(x: np.ndarray, columns: list) -> None:
        """Write :meth:`columns`-shaped values back into the one-row array ``x``."""
        x[0] = columns

class BatchMath:
    """:class:`ScalarMath` on ``(N,)`` float64 arrays, one entry per env."""

    sqrt = staticmethod(np.sqrt)
    atan2 = staticmethod(_per_element(math.atan2))
    cos = staticmethod(_per_element(math.cos))
    sin = staticmethod(_per_element(math.sin))
    exp = staticmethod(_per_element(math.exp))
    maximum = staticmethod(np.maximum)
    where = staticmethod(np.where)

    @staticmethod
    def sum_of_squares(x: np.ndarray) -> np.ndarray:
        """``x . x`` of each row of ``(N, k)`` float64 ``x``: the same dot product per row (a row-wise
        ``(x * x).sum(axis=1)`` could round differently)."""
        return np.fromiter((row.dot(row) for row in x), dtype=np.float64, count=len(x))

    @staticmethod
    def clip(x: np.ndarray, low: float, high: float) -> np.ndarray:
        return np.minimum(np.maximum(x, low), high)

    @staticmethod
    def float32(columns: tuple[np.ndarray, ...]) -> np.ndarray:
        """The observations, shape ``(N, len(columns))``."""
        return np.stack(columns, axis=1).astype(np.float32)

    zeros_like = staticmethod(np.zeros_like)
    sin_into = ScalarMath.sin_into
    cos_into = ScalarMath.cos_into
    concat32 = ScalarMath.concat32

    @staticmethod
    def columns(x: np.ndarray) -> np.ndarray:
        """The columns of an ``(N, k)`` array as ``k`` ``(N,)`` arrays (``x.T``, a view)."""
        return x.T

    @staticmethod
    def rows(x: np.ndarray) -> np.ndarray:
        """``(N, k)`` vectors, one row per env: ``x`` itself."""
        return x

    @staticmethod
    def item(x: np.ndarray) -> np.ndarray:
        """An ``(N,)`` array: ``x`` itself."""
        return x

    @staticmethod
    def store_columns(x: np.ndarray, columns) -> None:
        """Write ``k`` ``(N,)`` columns back into the ``(N, k)`` array ``x``."""
        x[...] = np.stack(columns, axis=1)
