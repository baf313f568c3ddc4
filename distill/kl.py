"""Analytic KL divergence between diagonal Gaussians, summed over action dimensions.

PPO's distillation term. (Between two tanh-squashed policies the KL of the pre-tanh Gaussians is exact, as KL is
invariant under the same bijection applied to both distributions; a SAC student is nonetheless taught by
:mod:`distill.squashed`, which stays well-posed when the teacher's action is at the bound.)
"""

from __future__ import annotations

from typing import Literal

import torch

from distill.policy import DiagGaussian

Direction = Literal["forward", "reverse"]


def diag_gaussian_kl(p: DiagGaussian, q: DiagGaussian) -> torch.Tensor:
    """KL(p || q) per sample, shape (batch,).

    KL = sum_i [ log(sigma_q,i / sigma_p,i) + (sigma_p,i^2 + (mu_p,i - mu_q,i)^2) / (2 sigma_q,i^2) - 1/2 ]
    """
    var_p = torch.exp(2.0 * p.log_std)
    var_q = torch.exp(2.0 * q.log_std)
    per_dim = q.log_std - p.log_std + (var_p + (p.mean - q.mean) ** 2) / (2.0 * var_q) - 0.5
    return per_dim.sum(dim=-1)


def distillation_kl(teacher: DiagGaussian, student: DiagGaussian, direction: Direction = "forward") -> torch.Tensor:
    """Per-sample KL between teacher and student.

    ``forward`` = KL(teacher || student): mass-covering, the student spreads over what the teacher does.
    ``reverse`` = KL(student || teacher): mode-seeking.
    """
    if direction == "forward":
        return diag_gaussian_kl(teacher, student)
    if direction == "reverse":
        return diag_gaussian_kl(student, teacher)
    raise ValueError(f"KL direction {direction!r} is invalid; choose 'forward' or 'reverse'")


def weighted_mean(values: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """Mean of ``values`` over samples with non-zero ``weight`` (0 when every weight is 0)."""
    total = weight.sum()
    if total <= 0:
        return values.sum() * 0.0  # keeps the graph, contributes nothing
    return (values * weight).sum() / total
