"""``replay_batches`` hands out exactly the minibatches SB3's ``buffer.sample`` would, one per step."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch
from stable_baselines3.common.buffers import DictReplayBuffer, ReplayBuffer
from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize

import envs  # noqa: F401  (registers OpenClaw/*)
from agents.students.replay_buffer import REPLAY_EXTENSIONS
from agents.students.replay_sampling import replay_batches
from agents.students.teacher_actions import with_teacher_actions
from distill.teachers import TeacherActions


class Teacher:
    """What a teacher-actions buffer reads at every add (a controller teacher's ``teacher_actions``)."""

    teacher_actions: TeacherActions


def filled(buffer_class, env_id: str, n_envs: int, targets: bool, transitions: int = 40):
    """A buffer of ``transitions`` random steps of ``n_envs`` envs, and a VecNormalize with random statistics."""
    venv = VecNormalize(DummyVecEnv([lambda: gym.make(env_id)] * n_envs), norm_reward=True)
    rng = np.random.default_rng(0)
    for rms in venv.obs_rms.values() if isinstance(venv.obs_rms, dict) else [venv.obs_rms]:
        rms.mean, rms.var = rng.normal(size=rms.mean.shape), rng.uniform(0.5, 2.0, size=rms.var.shape)
    venv.ret_rms.var = np.array(3.0)
    buffer, teacher = buffer_class(64, venv.observation_space, venv.action_space, n_envs=n_envs), Teacher()
    if targets:
        buffer = with_teacher_actions(buffer, teacher, REPLAY_EXTENSIONS)

    def sample_obs():
        space = venv.observation_space
        if isinstance(space, gym.spaces.Dict):
            return {k: rng.normal(size=(n_envs, *s.shape)).astype(np.float32) for k, s in space.spaces.items()}
        return rng.normal(size=(n_envs, *space.shape)).astype(np.float32)

    for _ in range(transitions):
        teacher.teacher_actions = TeacherActions(rng.normal(size=(n_envs, buffer.action_dim)).astype(np.float32),
                                                 rng.integers(0, 2, size=n_envs).astype(np.float32))
        infos = [{"TimeLimit.truncated": bool(rng.random() < 0.2)} for _ in range(n_envs)]
        buffer.add(sample_obs(), sample_obs(), rng.uniform(-1, 1, size=(n_envs, buffer.action_dim)),
                   rng.normal(size=n_envs), rng.random(n_envs) < 0.3, infos)
    return buffer, venv


def fields(samples) -> list[torch.Tensor]:
    out = []
    for value in samples:
        if isinstance(value, dict):
            out.extend(value[k] for k in sorted(value))
        elif isinstance(value, TeacherActions):
            out.extend((value.actions, value.weights))
        elif value is not None:  # discounts
            out.append(value)
    return out


@pytest.mark.parametrize("targets", [False, True], ids=["plain", "teacher_actions"])
@pytest.mark.parametrize(("buffer_class", "env_id"), [(ReplayBuffer, "OpenClaw/Quadruped-v0"),
                                                      (DictReplayBuffer, "OpenClaw/Claw-v0")], ids=["box", "dict"])
def test_replay_batches_equal_sb3_sampling_step_by_step(buffer_class, env_id, targets):
    buffer, venv = filled(buffer_class, env_id, n_envs=3, targets=targets)
    np.random.seed(7)
    expected = [buffer.sample(16, env=venv) for _ in range(4)]
    state_after = np.random.get_state()[1].copy()
    np.random.seed(7)
    got = list(replay_batches(buffer, 4, 16, venv))
    np.testing.assert_array_equal(np.random.get_state()[1], state_after)
    assert len(got) == 4
    for want, have in zip(expected, got):
        assert type(want) is type(have) and hasattr(have, "teacher_actions") == targets
        for a, b in zip(fields(want), fields(have), strict=True):
            assert a.dtype == b.dtype and a.shape == b.shape and torch.equal(a, b)
