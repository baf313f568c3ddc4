"""The learner that collects on the device of MuJoCo Warp's worlds (``agents/students/device_ppo.py``), checked against
SB3's collection through ``VecNormalize`` on the same worlds (Warp's CPU device), and its pieces: the device
normalisation's statistics pickle as SB3's, the device buffer's advantages are SB3's."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest
import torch
from stable_baselines3.common.buffers import RolloutBuffer
from stable_baselines3.common.running_mean_std import RunningMeanStd
from stable_baselines3.common.vec_env import VecNormalize

from agents.students import PPOStudent, policy_entry
from agents.students.device_buffer import DeviceRolloutBuffer
from agents.students.device_normalize import DeviceRunningMeanStd

pytest.importorskip("mujoco_warp")


def _learner(cls, seed: int, horizon: int, taught: bool = False):
    """A PPO learner of class ``cls`` on 3 Warp worlds (CPU device) through ``VecNormalize``; ``taught``: the scripted
    trot teaches (its wrapper below ``VecNormalize``, its actions recorded with the samples)."""
    from agents.teachers.controller import ControllerTeacher
    from agents.warp_vec_env import WarpVecEnv
    from distill.opd import OnlinePolicyDistillation
    from distill.schedules import make_schedule
    from distill.sequence import TeacherSequence
    from distill.teachers import RecordedActionTeacher
    from envs.controllers import family_of

    venv = WarpVecEnv("OpenClaw/Quadruped-v1", {}, num_envs=3, device="cpu", seed=seed)
    venv.sim.max_episode_steps = horizon  # time limits inside the rollout: the value bootstrap is exercised
    teacher = ControllerTeacher(venv, family_of(venv.sim.env), venv.sim.env.controller_spec) if taught else None
    norm = VecNormalize(teacher or venv, gamma=0.99)
    model = cls("MlpPolicy", norm, n_steps=16, batch_size=24, seed=seed, device="cpu",
                policy_kwargs={"net_arch": [32]})
    if taught:
        sequence = TeacherSequence.alone(RecordedActionTeacher(0.2), make_schedule("constant", 0.5))
        model.attach_distillation(OnlinePolicyDistillation(policy_entry(model), sequence), teacher)
    return model


@pytest.mark.parametrize("taught", [False, True], ids=["alone", "scripted_teacher"])
def test_device_collection_is_sb3_collection_through_vecnormalize(taught):
    """The same worlds, weights and random stream: the device learner's buffer holds what SB3's does (normalised
    observations, actions, rewards with the bootstrap at the time limit, episode starts, values, log-probabilities,
    advantages and returns; the scripted teacher's actions and weights), and the normalisation statistics agree."""
    from agents.students.device_ppo import DevicePPOStudent

    host, device = _learner(PPOStudent, 0, 7, taught), _learner(DevicePPOStudent, 0, 7, taught)
    device.policy.load_state_dict(host.policy.state_dict())
    filled = []
    for model in (host, device):
        _, callback = model._setup_learn(total_timesteps=96, callback=None)
        callback.on_training_start(locals(), globals())
        torch.manual_seed(3)
        assert model.collect_rollouts(model.env, callback, model.rollout_buffer, 16)
        filled.append(model.rollout_buffer)
    a, b = filled
    as_np = lambda x: np.asarray(torch.as_tensor(x).cpu())  # noqa: E731
    for name in ("observations", "actions", "rewards", "episode_starts", "values", "log_probs", "advantages",
                 "returns", *(("teacher_actions", "teacher_weights") if taught else ())):
        np.testing.assert_allclose(as_np(getattr(b, name)).reshape(as_np(getattr(a, name)).shape),
                                   as_np(getattr(a, name)), rtol=2e-5, atol=2e-5, err_msg=name)
    assert as_np(a.episode_starts)[1:].sum() >= 3  # episodes ended (the time limit) inside the rollout
    for name in ("obs_rms", "ret_rms"):  # SB3 takes a float32 batch's moments in float32, the device in float64
        ours, theirs = getattr(device.env, name), getattr(host.env, name)
        np.testing.assert_allclose(ours.mean, theirs.mean, rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(ours.var, theirs.var, rtol=1e-5, atol=1e-7)
        assert ours.count == theirs.count


def test_device_learner_trains_and_loads_as_a_ppo_student(tmp_path):
    """``learn`` runs whole updates on the device; the saved learner and statistics load with SB3's classes, and the
    device learner loaded from them goes on training (a resume)."""
    from agents.students.device_ppo import DevicePPOStudent

    model = _learner(DevicePPOStudent, 1, 1000)
    before = [p.detach().clone() for p in model.policy.parameters()]
    model.learn(48)
    assert model.num_timesteps == 48 and model.iterations == 1
    assert any(not torch.equal(p, q) for p, q in zip(before, model.policy.parameters()))
    model.save(tmp_path / "model.zip")
    model.env.save(str(tmp_path / "vecnormalize.pkl"))
    loaded = PPOStudent.load(tmp_path / "model.zip", device="cpu")
    assert all(torch.equal(p, q) for p, q in zip(loaded.policy.parameters(), model.policy.parameters()))
    with open(tmp_path / "vecnormalize.pkl", "rb") as f:
        stats = pickle.load(f)
    assert type(stats.obs_rms) is RunningMeanStd and isinstance(stats.obs_rms.mean, np.ndarray)
    np.testing.assert_array_equal(stats.obs_rms.mean, model.env.obs_rms.mean)
    resumed = DevicePPOStudent.load(tmp_path / "model.zip", env=VecNormalize.load(str(tmp_path / "vecnormalize.pkl"),
                                                                                  model.env.venv), device="cpu")
    resumed.learn(48, reset_num_timesteps=False)
    assert resumed.num_timesteps == 96 and resumed.iterations == 2
    assert any(not torch.equal(p, q) for p, q in zip(loaded.policy.parameters(), resumed.policy.parameters()))


def test_device_statistics_update_as_sb3s_and_copy_as_sb3s():
    rng = np.random.default_rng(0)
    theirs = RunningMeanStd(shape=(5,))
    ours = DeviceRunningMeanStd(RunningMeanStd(shape=(5,)), torch.device("cpu"))
    for _ in range(4):
        batch = rng.normal(2.0, 3.0, size=(7, 5))
        theirs.update(batch)
        ours.update(torch.as_tensor(batch))
    np.testing.assert_allclose(ours.mean, theirs.mean, rtol=1e-12)
    np.testing.assert_allclose(ours.var, theirs.var, rtol=1e-12)
    assert ours.count == theirs.count
    for plain in (copy.deepcopy(ours), pickle.loads(pickle.dumps(ours)), ours.copy()):
        assert type(plain) is RunningMeanStd
        np.testing.assert_array_equal(plain.var, ours.var)


def test_device_advantages_are_sb3s():
    """The same rewards, values and episode starts: the generalised advantage estimate and returns of SB3's buffer."""
    import gymnasium as gym

    rng = np.random.default_rng(1)
    steps, envs = 6, 4
    space = gym.spaces.Box(-1, 1, (2,))
    theirs = RolloutBuffer(steps, space, space, n_envs=envs, gamma=0.9, gae_lambda=0.8)
    ours = DeviceRolloutBuffer(steps, envs, 2, 2, torch.device("cpu"), gamma=0.9, gae_lambda=0.8)
    for _ in range(steps):
        obs, act = rng.normal(size=(envs, 2)).astype(np.float32), rng.normal(size=(envs, 2)).astype(np.float32)
        reward, start = rng.normal(size=envs).astype(np.float32), (rng.random(envs) < 0.3).astype(np.float32)
        value, logp = torch.as_tensor(rng.normal(size=(envs, 1)), dtype=torch.float32), torch.randn(envs)
        theirs.add(obs, act, reward, start, value, logp)
        ours.add(*(torch.as_tensor(x) for x in (obs, act, reward, start)), value, logp)
    last, dones = torch.randn(envs, 1), np.array([True, False, False, True])
    theirs.compute_returns_and_advantage(last, dones)
    ours.compute_returns_and_advantage(last, torch.as_tensor(dones))
    np.testing.assert_allclose(ours.advantages.numpy(), theirs.advantages, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ours.returns.numpy(), theirs.returns, rtol=1e-5, atol=1e-6)
    seen = torch.cat([batch.actions for batch in ours.get(5)])
    assert len(seen) == steps * envs and torch.equal(seen.sort(dim=0).values, ours.actions.reshape(-1, 2).sort(dim=0).values)
