"""The distillation term for tanh-squashed (SAC) students: the teacher's action against the squashed mean, a width.

A SAC actor's action is ``a = tanh(u)``, ``u ~ N(mu, sigma)`` (``mu``, ``sigma`` pre-tanh, per action dimension);
the env's action units are (-1, 1). A teacher's action ``a_T`` (a scripted controller's, recorded with the sample;
or ``tanh`` of an EMA / checkpoint SAC teacher's pre-tanh mean) often lies at the bound, |a_T| = 1 (a grip closed
hard, a saturated z). The term is chosen for being well-posed there. Per sample, summed over action dimensions i
(nats)::

    L = sum_i  M(mu_i; a_T,i)  +  W(sigma_i; sigma*)

    M(mu; a)  = KL(Bernoulli((1 + a) / 2) || Bernoulli((1 + tanh mu) / 2))
              = log cosh(mu) - a mu - [its minimum over mu]       dM/dmu = tanh(mu) - a
    W(sigma)  = KL(N(0, sigma*) || N(0, sigma)) = log(sigma / sigma*) + sigma*^2 / (2 sigma^2) - 1/2

**The mean, M.** ``M`` is the matching loss of the tanh link (the Bregman divergence whose gradient is the
squashed mean's error): convex in mu, its gradient ``tanh(mu) - a`` is bounded by 2, finite for every mu and every
|a| <= 1, and has the sign of ``tanh(mu) - a``: descent moves ``tanh(mu)`` toward ``a``, at the bounds too (for
a = +-1, M = softplus(-+2 mu), whose gradient fades only as tanh(mu) reaches the teacher). Read as a distribution:
the action interval as the mean of a +-1 coin, M is the KL between the teacher's coin and the student's.

**The width, W.** The teacher's width is the one the student's entropy tuning asks for: ``sigma*`` with the
pre-tanh Gaussian's entropy ``log sigma* + log(2 pi e) / 2`` at SAC's target entropy per dimension (0.089 for SB3's
-1). The student's entropy coefficient, which reads the same pre-tanh entropy while a teacher teaches
(``agents/students/sac.py``), then has its fixed point where the teacher puts the width: the two cooperate instead
of pulling sigma apart. It is the same for every teacher: a recorded action has no width of its own.

The alternatives, and why not:

* The pre-tanh KL (the term PPO keeps): the teacher's pre-tanh mean is ``atanh(a_T)``, infinite at |a_T| = 1;
  clipping it (|a_T| <= 0.995 -> ~3) and fixing a width makes the KL's gradient ``(mu - atanh a_T) / sigma^2`` large
  and the squashed entropy at that mean ``sum log(1 - tanh^2)`` ~ -5 nats per saturated dimension, which SAC's
  entropy tuning then fights (the measured runaway of the coefficient).
* The teacher action's log-likelihood under the squashed student, ``log N(atanh a_T; mu, sigma) - sum log(1 -
  a_T^2)``: the Jacobian term does not depend on the student, so its gradient is the pre-tanh Gaussian's,
  ``(atanh a_T - mu) / sigma^2``: unbounded as |a_T| -> 1, and -inf at the bound (zero density there).
* A regression on the squashed mean (TD3+BC), ``(tanh(mu) - a)^2``: finite, but its gradient
  ``2 (tanh(mu) - a)(1 - tanh(mu)^2)`` vanishes when the student saturates on the wrong side (exactly 0 in float32
  from |mu| ~ 9: a student whose grip saturated open is never pulled shut).
* A sample-based KL in action space, ``E_{a ~ pi}[log pi(a) - log p_T(a)]``: needs the teacher's density in action
  units; a recorded action has none (a density put on it, e.g. a Gaussian clipped to the bounds, brings back a
  width that is not the entropy target's).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from distill.policy import DiagGaussian

#: The pre-tanh Gaussian's entropy per dimension is ``log sigma + HALF_LOG_2PIE`` (nats).
HALF_LOG_2PIE = 0.5 * math.log(2.0 * math.pi * math.e)


def entropy_log_std(target_entropy: float, action_dim: int) -> float:
    """log sigma* of the pre-tanh Gaussian whose entropy is ``target_entropy`` (nats, summed over ``action_dim``)."""
    return target_entropy / action_dim - HALF_LOG_2PIE


def squashed_distillation_loss(teacher_actions: torch.Tensor, student: DiagGaussian, log_std: float) -> torch.Tensor:
    """``L`` per sample, shape (batch,), nats: ``teacher_actions`` in action units (clipped to [-1, 1]), ``student``
    the student's pre-tanh Gaussian, both (batch, action_dim); ``log_std`` = log sigma* (:func:`entropy_log_std`)."""
    coin = (1.0 + teacher_actions.clamp(-1.0, 1.0)) / 2.0
    cross_entropy = F.binary_cross_entropy_with_logits(2.0 * student.mean, coin, reduction="none")
    coin_entropy = -(torch.xlogy(coin, coin) + torch.xlogy(1.0 - coin, 1.0 - coin))
    width = student.log_std - log_std + 0.5 * torch.exp(2.0 * (log_std - student.log_std)) - 0.5
    return (cross_entropy - coin_entropy + width).sum(dim=-1)
