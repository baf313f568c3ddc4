"""PPO student: Stable-Baselines3 PPO whose update can add an online-distillation term.

The update below follows SB3's ``PPO.train`` step for step (same minibatch order, same loss terms,
same gradient clipping), so with no distillation, or ``alpha = 0``, training is bit-identical to
``stable_baselines3.PPO`` with the same seed. With a distillation attached the loss of every
minibatch becomes::

    loss = rl_weight * (policy_loss + ent_coef * entropy_loss) + vf_coef * value_loss + alpha * KL(teacher || student)

added before gradient clipping; after each optimiser step the teacher is told (EMA update). ``rl_weight`` is the
teaching stage's ``distill.rl_weight`` (1 by default; 0: pure distillation, rsl_rl's recipe with this project's KL,
while the critic learns from the rewards: it is warm when RL takes over).

``desired_kl`` (``agent.desired_kl``; default None: SB3's learning-rate schedule) is rsl_rl's adaptive learning rate
instead. Before each minibatch's optimiser step, but the update's first (its policy is still the rollout's), the rate
is divided by 1.5 when the minibatch's approximate KL between the rollout's policy and the current one is over twice
``desired_kl``, and multiplied by 1.5 when it is under half of it, within ``ADAPTIVE_LR_BOUNDS``. It starts from
``learning_rate``; the optimiser holds it, so a checkpoint keeps it and a resume goes on from it.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from gymnasium import spaces
from stable_baselines3 import PPO
from stable_baselines3.common.utils import explained_variance, update_learning_rate

from agents.students.distilling import DistillingStudent
from agents.students.rollout_buffer import ROLLOUT_EXTENSIONS, TeacherRolloutSamples, with_raw_observations
from agents.students.teacher_actions import ActingTeacher, copy_as, with_teacher_actions
from distill.opd import OnlinePolicyDistillation, check_finite
from distill.policy import DiagGaussian


def ppo_action_distribution(policy: torch.nn.Module, obs) -> DiagGaussian:
    """Diagonal Gaussian of an SB3 ``ActorCriticPolicy`` (state-independent log-std)."""
    return _diag_gaussian(policy.get_distribution(obs))


def evaluated_distribution(policy: torch.nn.Module) -> DiagGaussian:
    """The Gaussian of the observations of ``policy``'s last ``evaluate_actions`` call, in its autograd graph:
    SB3's ``ActorCriticPolicy._get_action_dist_from_latent`` sets it on the policy's one ``action_dist``
    (``proba_distribution`` returns that object), so the KL needs no second actor forward pass."""
    return _diag_gaussian(policy.action_dist)


def _resized(buffer, size: int):
    """An empty copy of a rollout buffer holding ``size`` steps per env (the same class and settings)."""
    resized = copy_as(buffer, type(buffer))
    resized.buffer_size = size
    resized.reset()
    return resized


def _diag_gaussian(distribution) -> DiagGaussian:
    dist = distribution.distribution
    return DiagGaussian(dist.mean, torch.log(dist.stddev))


ADAPTIVE_LR_BOUNDS = (1e-5, 1e-2)  # the adaptive learning rate's range (rsl_rl's)
ADAPTIVE_LR_FACTOR = 1.5  # its change per minibatch (rsl_rl's)


class PPOStudent(DistillingStudent, PPO):
    """``stable_baselines3.PPO`` plus :meth:`attach_distillation` and the adaptive learning rate ``desired_kl``
    (module docstring)."""

    def __init__(self, *args, desired_kl: float | None = None, **kwargs):
        self.desired_kl = desired_kl
        self.iterations = 0  # rollouts collected over the whole run (saved with the model: a resume goes on counting)
        super().__init__(*args, **kwargs)

    def set_adaptive_learning_rate(self, rate: float) -> None:
        """Set the rate that ``desired_kl`` adapts from now on (the optimiser's)."""
        update_learning_rate(self.policy.optimizer, rate)

    def _adapt_learning_rate(self, approx_kl: float) -> None:
        """rsl_rl's step of the learning rate towards ``desired_kl`` for a minibatch whose KL is ``approx_kl``."""
        rate = self.policy.optimizer.param_groups[0]["lr"]
        if approx_kl > 2.0 * self.desired_kl:
            self.set_adaptive_learning_rate(max(ADAPTIVE_LR_BOUNDS[0], rate / ADAPTIVE_LR_FACTOR))
        elif approx_kl < 0.5 * self.desired_kl:
            self.set_adaptive_learning_rate(min(ADAPTIVE_LR_BOUNDS[1], rate * ADAPTIVE_LR_FACTOR))

    def attach_distillation(self, distillation: OnlinePolicyDistillation,
                            acting_teacher: ActingTeacher | None = None) -> None:
        """Add ``alpha * distill_loss`` to every minibatch loss from now on. A teacher that acts while samples
        are collected (``distillation.needs_teacher_actions``) is ``acting_teacher``: the rollout buffer stores
        its ``teacher_actions`` with every sample (:func:`with_teacher_actions`, as SAC's replay buffer does), as
        it stores raw observations for a teacher that reads them (:func:`with_raw_observations`)."""
        if not isinstance(self.action_space, spaces.Box):
            raise TypeError("online distillation needs a continuous (Box) action space")
        if distillation.needs_teacher_actions and acting_teacher is None:
            raise ValueError("this teacher's actions are recorded while collecting: pass acting_teacher")
        if distillation.needs_raw_obs and self._vec_normalize_env is None:
            raise TypeError("raw observations are only needed (and available) with VecNormalize")
        self.distillation = distillation
        self._record_for(distillation, acting_teacher)

    def _record_for(self, distillation: OnlinePolicyDistillation, acting_teacher: ActingTeacher | None) -> None:
        """Make the rollout buffer record what ``distillation``'s teachers read: the acting teacher's actions, the
        raw observations."""
        if distillation.needs_teacher_actions:
            self.rollout_buffer = with_teacher_actions(self.rollout_buffer, acting_teacher, ROLLOUT_EXTENSIONS)
        if distillation.needs_raw_obs:
            self.rollout_buffer = with_raw_observations(self.rollout_buffer, self._vec_normalize_env)

    def collect_rollouts(self, env, callback, rollout_buffer, n_rollout_steps: int) -> bool:
        """SB3's, except that a rollout that would run past ``total_timesteps`` is shortened to the steps left
        (rounded up to whole vector steps: at most ``n_envs - 1`` over), so a run trains the steps it was asked
        for rather than up to a rollout more; the next rollout of a later ``learn()`` has the full size again. It
        counts :attr:`iterations`."""
        left = -(-(self._total_timesteps - self.num_timesteps) // self.n_envs)  # vector steps to the budget
        size = min(max(left, 1), self.n_steps)
        if rollout_buffer.buffer_size != size:
            rollout_buffer = self.rollout_buffer = _resized(rollout_buffer, size)
        collected = self._collect(env, callback, rollout_buffer, size)
        self.iterations += collected
        return collected

    def _collect(self, env, callback, rollout_buffer, n_rollout_steps: int) -> bool:
        """Collect ``n_rollout_steps`` vector steps into ``rollout_buffer``: SB3's ``collect_rollouts``."""
        return super().collect_rollouts(env, callback, rollout_buffer, n_rollout_steps)

    def dump_logs(self, iteration: int = 0) -> None:
        """SB3's, with ``time/iterations`` the rollouts of the whole run (SB3 counts those of this ``learn()``)."""
        super().dump_logs(self.iterations)

    def _distill_term(self, batch: TeacherRolloutSamples, progress: float) -> torch.Tensor | None:
        """alpha * distillation loss for one minibatch, or None when it cannot change anything; call it after
        the minibatch's ``evaluate_actions`` (the student's distribution is that call's)."""
        opd = self.distillation
        if opd is None or opd.alpha(progress) == 0.0:
            return None
        loss, alpha = opd.distill_loss(batch.observations, progress, raw_obs=getattr(batch, "raw_observations", None),
                                       student_dist=evaluated_distribution(self.policy),
                                       teacher_actions=getattr(batch, "teacher_actions", None))
        return alpha * loss

    # ==================================================================================================
    # Copied from stable-baselines3 2.9.2, stable_baselines3/ppo/ppo.py, PPO.train (MIT licence), split
    # into train() and _log_update(). Changes: the distillation term is added to each minibatch loss
    # before gradient clipping and the teacher is told after each optimiser step; ``train/rl_loss`` and
    # the ``distill/*`` statistics are logged; a non-finite loss term stops training (check_finite);
    # Discrete actions are not converted (students act in Box spaces); with desired_kl the learning rate adapts
    # per minibatch instead of following its schedule (_adapt_learning_rate). SB3 private members used:
    # _update_learning_rate, _current_progress_remaining, _n_updates.
    # SB3_TRAIN_SHA256 is the sha256 of inspect.getsource(stable_baselines3.PPO.train) this copy follows;
    # tests/test_sb3_copies.py fails when the installed SB3 differs: diff the two, port the change here,
    # run pytest tests/test_distill.py -k bit_identical, then update the hash and the pin in pyproject.toml.
    SB3_TRAIN_SHA256 = "7c8d09940123242f0ac401c5ec2cc858b8bf3339f571c222382f048ffd8306ae"

    def train(self) -> None:
        """One PPO update over the rollout buffer (``n_epochs`` passes of shuffled minibatches)."""
        self.policy.set_training_mode(True)
        if self.desired_kl is None:
            self._update_learning_rate(self.policy.optimizer)
        else:
            self.logger.record("train/learning_rate", self.policy.optimizer.param_groups[0]["lr"])
        clip_range = self.clip_range(self._current_progress_remaining)
        clip_range_vf = self.clip_range_vf(self._current_progress_remaining) if self.clip_range_vf is not None else None
        progress = 1.0 - self._current_progress_remaining
        # the RL actor loss's weight for this update (0 while a teacher teaches alone: pure distillation)
        rl_weight = 1.0 if self.distillation is None else self.distillation.rl_weight(progress)

        logs: dict[str, list[float]] = {k: [] for k in ("pg", "value", "entropy", "clip", "rl_loss")}
        approx_kls: list[float] = []
        continue_training = True
        for epoch in range(self.n_epochs):
            approx_kls = []
            for batch in self.rollout_buffer.get(self.batch_size):
                values, log_prob, entropy = self.policy.evaluate_actions(batch.observations, batch.actions)
                values = values.flatten()
                advantages = batch.advantages
                if self.normalize_advantage and len(advantages) > 1:
                    advantages = (advantages - advantages.mean()) / (advantages.std() + 1e-8)

                ratio = torch.exp(log_prob - batch.old_log_prob)
                surrogate = advantages * ratio
                clipped = advantages * torch.clamp(ratio, 1 - clip_range, 1 + clip_range)
                policy_loss = -torch.min(surrogate, clipped).mean()

                if clip_range_vf is None:
                    values_pred = values
                else:
                    values_pred = batch.old_values + torch.clamp(values - batch.old_values, -clip_range_vf, clip_range_vf)
                value_loss = F.mse_loss(batch.returns, values_pred)
                entropy_loss = -torch.mean(-log_prob) if entropy is None else -torch.mean(entropy)

                loss = rl_weight * (policy_loss + self.ent_coef * entropy_loss) + self.vf_coef * value_loss
                logs["pg"].append(policy_loss.item())
                logs["value"].append(value_loss.item())
                logs["entropy"].append(entropy_loss.item())
                logs["clip"].append(torch.mean((torch.abs(ratio - 1) > clip_range).float()).item())
                logs["rl_loss"].append(loss.item())
                check_finite(policy_gradient_loss=logs["pg"][-1], value_loss=logs["value"][-1],
                             entropy_loss=logs["entropy"][-1])

                with torch.no_grad():
                    log_ratio = log_prob - batch.old_log_prob
                    approx_kl = torch.mean((torch.exp(log_ratio) - 1) - log_ratio).cpu().numpy()
                    approx_kls.append(approx_kl)
                if self.target_kl is not None and approx_kl > 1.5 * self.target_kl:
                    continue_training = False
                    break
                first_minibatch = epoch == 0 and len(approx_kls) == 1  # its policy is still the rollout's
                if self.desired_kl is not None and not first_minibatch:
                    self._adapt_learning_rate(float(approx_kl))

                distill = self._distill_term(batch, progress)
                if distill is not None:
                    loss = loss + distill

                self.policy.optimizer.zero_grad()
                loss.backward()
                torch.nn.utils.clip_grad_norm_(self.policy.parameters(), self.max_grad_norm)
                self.policy.optimizer.step()
                if self.distillation is not None:
                    self.distillation.after_optimizer_step()
            self._n_updates += 1
            if not continue_training:
                break

        self._log_update(logs, approx_kls, loss, clip_range, clip_range_vf)

    def _log_update(self, logs, approx_kls, loss, clip_range, clip_range_vf) -> None:
        buffer = self.rollout_buffer
        record = self.logger.record
        record("train/entropy_loss", np.mean(logs["entropy"]))
        record("train/policy_gradient_loss", np.mean(logs["pg"]))
        record("train/value_loss", np.mean(logs["value"]))
        record("train/approx_kl", np.mean(approx_kls))
        record("train/clip_fraction", np.mean(logs["clip"]))
        record("train/loss", loss.item())
        record("train/rl_loss", np.mean(logs["rl_loss"]))
        values, returns = (np.asarray(torch.as_tensor(x).cpu()).flatten() for x in (buffer.values, buffer.returns))
        record("train/explained_variance", explained_variance(values, returns))
        if hasattr(self.policy, "log_std"):
            record("train/std", torch.exp(self.policy.log_std).mean().item())
        record("train/n_updates", self._n_updates, exclude="tensorboard")
        record("train/clip_range", clip_range)
        if clip_range_vf is not None:
            record("train/clip_range_vf", clip_range_vf)
        self._record_distill_stats()
    # ============================================================================ end of the SB3 copy
