"""What every student adds to its Stable-Baselines3 learner, whatever the algorithm.

A student is ``class XStudent(DistillingStudent, X)`` with ``X`` an SB3 algorithm; it implements
``attach_distillation`` and calls :meth:`DistillingStudent._record_distill_stats` where its update logs.
"""

from __future__ import annotations

from distill.opd import OnlinePolicyDistillation


class DistillingStudent:
    """Mixin (placed before the SB3 class): the attached distillation, kept out of ``model.zip``."""

    distillation: OnlinePolicyDistillation | None = None

    def _excluded_save_params(self) -> list[str]:
        # The teacher is saved separately (agents.checkpoint); it holds live references to the policy.
        return [*super()._excluded_save_params(), "distillation"]

    def _record_distill_stats(self) -> None:
        """Log the distillation's per-minibatch means since the last call under ``distill/<name>``."""
        if self.distillation is not None:
            for key, value in self.distillation.pop_stats().items():
                self.logger.record(f"distill/{key}", value)
