"""The SAC (tanh-squashed) student's distillation: the term at the action bounds for every teacher kind, the
weight that does not read Q, and the entropy coefficient's update while a teacher teaches (issue 40)."""

from __future__ import annotations

import copy
import math

import pytest
import torch
from stable_baselines3.common.env_util import make_vec_env

from agents.students import SACStudent, policy_entry, sac_action_distribution
from distill.opd import OnlinePolicyDistillation
from distill.policy import DiagGaussian, PolicyEntry
from distill.sequence import TeacherSequence
from distill.schedules import make_schedule
from distill.squashed import entropy_log_std, squashed_distillation_loss
from distill.teachers import CheckpointTeacher, EMATeacher, RecordedActionTeacher, TeacherActions

BOUNDS = (-1.0, -0.999, 0.999, 1.0)


@pytest.mark.parametrize("teacher_action", BOUNDS)
def test_squashed_term_gradient_is_finite_and_points_to_a_teacher_at_the_bound(teacher_action):
    """For every student mean, saturated on either side included, the mean's gradient is finite, non-zero and
    moves tanh(mu) toward the teacher; the width's gradient moves sigma toward the entropy target's."""
    mean = torch.linspace(-12.0, 12.0, 97).unsqueeze(1).requires_grad_(True)  # tanh(+-12) == +-1 in float32
    log_std = torch.linspace(-4.0, 1.0, 97).unsqueeze(1).requires_grad_(True)
    target = entropy_log_std(-1.0, 1)
    loss = squashed_distillation_loss(torch.full_like(mean, teacher_action), DiagGaussian(mean, log_std), target)
    assert torch.isfinite(loss).all() and (loss >= -1e-6).all()
    loss.sum().backward()
    assert torch.isfinite(mean.grad).all() and torch.isfinite(log_std.grad).all()
    gap = torch.tanh(mean.detach()) - teacher_action
    moving = gap.abs() > 1e-6  # at the teacher itself there is nothing to move
    assert torch.equal(torch.sign(mean.grad[moving]), torch.sign(gap[moving]))  # descent closes the gap
    wrong_side = torch.sign(mean.detach()) == -math.copysign(1.0, teacher_action)
    assert (mean.grad[wrong_side].abs() > 1.0).all()  # a student saturated the other way is pulled back
    assert torch.equal(torch.sign(log_std.grad), torch.sign(log_std.detach() - target))
    assert entropy_log_std(-1.0, 1) == pytest.approx(math.log(0.0890), abs=1e-3)  # SB3's -1 nat per dimension


def _sac(seed: int = 0) -> SACStudent:
    venv = make_vec_env("OpenClaw/Quadruped-v1", n_envs=1, seed=seed)
    return SACStudent("MlpPolicy", venv, learning_starts=16, batch_size=16, seed=seed, device="cpu",
                      policy_kwargs=dict(net_arch=[16]))


def _saturate(actor: torch.nn.Module, signs: torch.Tensor, magnitude: float) -> None:
    """Make ``actor``'s pre-tanh mean ``signs * magnitude`` for every observation."""
    with torch.no_grad():
        actor.mu.weight.zero_()
        actor.mu.bias.copy_(signs * magnitude)


def _teachers(student_model: SACStudent, student: PolicyEntry, signs: torch.Tensor, magnitude: float, n: int):
    """The three teacher kinds SAC is taught by, each acting ``tanh(signs * magnitude)`` (recorded: that action)."""
    action = torch.tanh(signs * magnitude).expand(n, -1)
    recorded = (RecordedActionTeacher(0.1), TeacherActions(action, torch.ones(n)))
    ema = EMATeacher(student, decay=0.9)
    _saturate(ema.entry.module, signs, magnitude)
    other = copy.deepcopy(student_model.actor)
    _saturate(other, signs, magnitude)
    checkpoint = CheckpointTeacher(PolicyEntry(other, sac_action_distribution, squashed=True))  # a SAC run's actor
    return {"recorded": recorded, "ema": (ema, None), "checkpoint": (checkpoint, None)}


@pytest.mark.parametrize("kind", ["recorded", "ema", "checkpoint"])
@pytest.mark.parametrize("magnitude", [3.8, 20.0])  # |a| = 0.999 and tanh(20) == 1.0 in float32
def test_every_sac_teacher_pulls_the_squashed_mean_toward_actions_at_the_bound(kind, magnitude):
    torch.manual_seed(0)
    model = _sac()
    entry = policy_entry(model)
    assert entry.squashed
    dim = model.action_space.shape[0]
    signs = torch.tensor([(-1.0) ** i for i in range(dim)])
    obs = torch.randn(64, *model.observation_space.shape)
    teacher, recorded = _teachers(model, entry, signs, magnitude, len(obs))[kind]
    opd = OnlinePolicyDistillation(entry, TeacherSequence.alone(teacher, make_schedule("constant", 1.0)))
    optimizer = torch.optim.Adam(model.actor.parameters(), lr=1e-2)
    errors = []
    for _ in range(30):
        loss, alpha = opd.distill_loss(obs, 0.0, teacher_actions=recorded)
        optimizer.zero_grad()
        (alpha * loss).backward()
        grads = [p.grad for p in model.actor.parameters() if p.grad is not None]
        assert grads and all(torch.isfinite(g).all() for g in grads)
        optimizer.step()
        errors.append(float(loss.detach()))
    assert errors[-1] < 0.5 * errors[0]
    stats = opd.pop_stats()
    assert "kl" not in stats and stats["action_kl"] > 0 and stats["coverage"] == 1.0
    student_action = torch.tanh(entry.distribution(obs).mean)
    assert torch.all(torch.sign(student_action) == signs)  # every dimension on the teacher's side


def test_recorded_actions_are_taught_as_they_are_and_masked():
    recorded = TeacherActions(torch.tensor([[0.5, -1.0], [0.0, 0.2]]), torch.tensor([1.0, 0.0]))
    targets = RecordedActionTeacher(0.3).targets(None, teacher_actions=recorded)
    assert torch.equal(targets.actions, recorded.actions) and not targets.squashed and targets.coverage == 0.5


def test_sac_weight_reads_rewards_not_q_and_entropy_update_reads_the_pre_tanh_gaussian():
    """The distillation weight depends on the minibatch's rewards (not on the critic nor the entropy coefficient);
    while teaching, the entropy coefficient reads the pre-tanh log-density, which saturation does not move."""
    torch.manual_seed(0)
    model = _sac()
    student = policy_entry(model)
    teacher = EMATeacher(student, 0.9)
    model.attach_distillation(OnlinePolicyDistillation(student, TeacherSequence.alone(teacher, make_schedule("constant", 2.0))))
    model.learn(32)
    batch = model.replay_buffer.sample(16, model._vec_normalize_env)
    term = model._distill_term(batch)
    with torch.no_grad():
        model.log_ent_coef.fill_(5.0)
        for p in model.critic.parameters():
            p.mul_(10.0)
    assert torch.equal(model._distill_term(batch), term)
    loss, _ = model.distillation.distill_loss(batch.observations, 0.0)
    scale = max(1.0, float(batch.rewards.abs().mean()) / (1 - model.gamma))
    torch.testing.assert_close(term, 2.0 * scale * loss)

    assert model._teaching()
    obs = batch.observations
    log_probs = []
    for bias in (0.0, 15.0):  # the same sample noise, unsaturated and saturated means
        with torch.no_grad():
            model.actor.mu.bias.fill_(bias)
        torch.manual_seed(1)
        _, squashed = model.actor.action_log_prob(obs)
        log_probs.append((squashed.reshape(-1, 1), model._entropy_log_prob(squashed.reshape(-1, 1), True)))
    (free, free_gauss), (saturated, saturated_gauss) = log_probs
    torch.testing.assert_close(free_gauss, saturated_gauss)  # sigma alone
    assert float((saturated - free).min()) > 10.0  # the squashed log-prob the teacher's saturation inflates
    assert torch.equal(model._entropy_log_prob(saturated, False), saturated)  # SB3's without a teacher
