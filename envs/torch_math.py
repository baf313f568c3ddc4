"""The task functions' array namespace on torch tensors: :class:`TorchMath` (N copies' ``(N,)`` columns).

The same functions that :class:`~envs.array_math.BatchMath` runs on numpy arrays (the quadruped's reward terms,
air clocks and gait measures: ``envs.quadruped.rewards.step_outcome``) run on torch tensors with it, on any device,
so a simulator whose state lives on a GPU (MuJoCo Warp, issue 80) computes the task without copying to the host.
Results agree with numpy's to float64 rounding (``tests/test_torch_math.py``; transcendental functions are
torch's, which may differ from numpy's in the last bit). Imported only where torch is wanted: ``envs`` itself does
not import torch.
"""

from __future__ import annotations

import torch

from envs.array_math import BatchMath


def _maximum(x, y):
    """Element-wise maximum of a tensor and a tensor or a number."""
    if isinstance(y, torch.Tensor):
        return torch.maximum(x, y) if isinstance(x, torch.Tensor) else torch.clamp(y, min=x)
    return torch.clamp(x, min=y)


class TorchMath:
    """:class:`~envs.array_math.BatchMath` on torch tensors: ``(N,)`` columns, ``(N, k)`` rows, one per copy."""

    sqrt = staticmethod(torch.sqrt)
    exp = staticmethod(torch.exp)
    maximum = staticmethod(_maximum)
    zeros_like = staticmethod(torch.zeros_like)

    @staticmethod
    def sin_into(x: torch.Tensor, out: torch.Tensor) -> None:
        out[...] = torch.sin(x)

    @staticmethod
    def cos_into(x: torch.Tensor, out: torch.Tensor) -> None:
        out[...] = torch.cos(x)

    @staticmethod
    def concat32(parts) -> torch.Tensor:
        """The parts (N, k_i) side by side as float32 (N, sum k_i)."""
        return torch.cat([p.to(torch.float32) for p in parts], dim=-1)

    @staticmethod
    def where(condition, a, b):
        return torch.where(condition, a, b)

    @staticmethod
    def sum_of_squares(x: torch.Tensor) -> torch.Tensor:
        """``x . x`` of each row of ``(N, k)`` ``x``."""
        return (x * x).sum(dim=1)

    columns = BatchMath.columns  # x.T: an (N, k) tensor's k (N,) columns
    rows = BatchMath.rows
    item = BatchMath.item

    @staticmethod
    def store_columns(x: torch.Tensor, columns) -> None:
        """Write ``k`` ``(N,)`` columns back into the ``(N, k)`` tensor ``x``."""
        x[...] = torch.stack(list(columns), dim=1)
