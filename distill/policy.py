"""The small policy interface the distillation layer depends on.

Distillation never holds a PPO or SAC object. A policy is a :class:`PolicyEntry`: a ``torch.nn.Module`` that owns
the weights and a function that maps ``(module, observations)`` to the diagonal Gaussian over (pre-squash) actions.
Teachers and losses reach students only through their entries, so swapping the learner touches no distillation code.
:func:`per_entry` is the one place that tells an array observation from a Dict observation's dict of arrays.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from dataclasses import dataclass

import torch

Observation = torch.Tensor | dict[str, torch.Tensor]


@dataclass(frozen=True)
class DiagGaussian:
    """A batch of diagonal Gaussians: ``mean`` and ``log_std`` of shape (batch, action_dim).

    For squashed (tanh) policies such as SAC these are the pre-tanh parameters.
    """

    mean: torch.Tensor
    log_std: torch.Tensor

    def detach(self) -> DiagGaussian:
        return DiagGaussian(self.mean.detach(), self.log_std.detach())


DistributionFn = Callable[[torch.nn.Module, Observation], DiagGaussian]


@dataclass(frozen=True)
class PolicyEntry:
    """How to get a policy's action distribution: its module and a function of (module, obs). ``squashed``: the
    Gaussian is over pre-tanh actions and the action is ``tanh`` of a sample (SAC), in (-1, 1) action units;
    ``width_log_std``: a squashed student's pre-tanh log std at its entropy target (the width it is taught,
    :mod:`distill.squashed`)."""

    module: torch.nn.Module
    distribution_fn: DistributionFn
    squashed: bool = False
    width_log_std: float | None = None

    def distribution(self, obs: Observation) -> DiagGaussian:
        return self.distribution_fn(self.module, obs)


def per_entry(fn: Callable[..., Any], obs: Any, *others: Any) -> Any:
    """``fn`` of an observation's array, or of each array of a Dict observation's dict (numpy or torch alike), with
    the arrays of ``others`` (observations of the same structure) at the same place as further arguments:
    ``per_entry(operator.itemgetter(i), batch)`` is row ``i`` of a batch of observations."""
    if isinstance(obs, dict):
        return {key: fn(value, *(other[key] for other in others)) for key, value in obs.items()}
    return fn(obs, *others)
