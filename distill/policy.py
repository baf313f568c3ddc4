"""The small policy interface the distillation layer depends on.

Distillation never holds a PPO or SAC object. A policy is registered under a name as a
:class:`PolicyEntry`: a ``torch.nn.Module`` that owns the weights and a function that maps
``(module, observations)`` to the diagonal Gaussian over (pre-squash) actions. Teachers and losses
reach students only through this registry, so swapping the learner touches no distillation code.
"""

from __future__ import annotations

from collections.abc import Callable
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


class PolicyRegistry:
    """Named :class:`PolicyEntry` objects (e.g. ``"student"``)."""

    def __init__(self) -> None:
        self._entries: dict[str, PolicyEntry] = {}

    def register(self, name: str, module: torch.nn.Module, distribution_fn: DistributionFn) -> PolicyEntry:
        return self.add(name, PolicyEntry(module, distribution_fn))

    def add(self, name: str, entry: PolicyEntry) -> PolicyEntry:
        self._entries[name] = entry
        return entry

    def get(self, name: str) -> PolicyEntry:
        try:
            return self._entries[name]
        except KeyError:
            raise KeyError(f"no policy registered as {name!r}; registered: {sorted(self._entries)}") from None

    def action_distribution(self, name: str, obs: Observation) -> DiagGaussian:
        """The action distribution of policy ``name`` for a batch of observations."""
        return self.get(name).distribution(obs)
