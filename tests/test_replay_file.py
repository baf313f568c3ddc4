"""A checkpoint's replay buffer file holds the filled slots only and loads, with SB3's own loader, into a buffer
equal to the saved one (agents/replay_file.py)."""

from __future__ import annotations

import pickle

import gymnasium as gym
import numpy as np
import pytest
from stable_baselines3 import SAC
from stable_baselines3.common.buffers import DictReplayBuffer

from agents.replay_file import save_replay_buffer
from agents.students.replay_buffer import TeacherDictReplayBuffer
from agents.students.teacher_actions import copy_as


def assert_same_buffer(saved, loaded) -> None:
    assert type(loaded) is type(saved)
    assert set(vars(loaded)) == set(vars(saved))
    for name, value in vars(saved).items():
        other = getattr(loaded, name)
        items = value.items() if isinstance(value, dict) else [(None, value)]
        for key, array in items:
            got = other[key] if key is not None else other
            if isinstance(array, np.ndarray):
                assert got.shape == array.shape and got.dtype == array.dtype, (name, key)
                assert np.array_equal(got, array), (name, key)
            else:
                assert got == array, (name, key)


def sac(buffer_size: int, optimized: bool) -> SAC:
    buffer_kwargs = {"handle_timeout_termination": False} if optimized else None  # SB3: the two do not mix
    return SAC("MlpPolicy", "Pendulum-v1", buffer_size=buffer_size, learning_starts=50, batch_size=32, seed=0,
               policy_kwargs={"net_arch": [16]}, optimize_memory_usage=optimized, replay_buffer_kwargs=buffer_kwargs,
               device="cpu")


@pytest.mark.parametrize("buffer_size, optimized", [(20_000, False), (100, False), (20_000, True)],
                         ids=["part-filled", "full", "part-filled-memory-optimised"])
def test_sb3_loads_the_file_into_an_equal_buffer(tmp_path, buffer_size, optimized):
    """(A memory-optimised buffer keeps the last transition's next observation in the slot after it.)"""
    model = sac(buffer_size, optimized).learn(300)
    buffer = model.replay_buffer
    arrays = {name: value for name, value in vars(buffer).items() if isinstance(value, np.ndarray)}
    ours, sb3 = tmp_path / "ours.pkl", tmp_path / "sb3.pkl"
    save_replay_buffer(buffer, ours)
    model.save_replay_buffer(sb3)
    assert all(getattr(buffer, name) is array for name, array in arrays.items()), "saving changed the live buffer"

    fresh = sac(buffer_size, optimized)
    fresh.load_replay_buffer(ours)
    assert_same_buffer(buffer, fresh.replay_buffer)
    if buffer.full:
        assert ours.stat().st_size == pytest.approx(sb3.stat().st_size, rel=0.01)
    else:  # 300 of 20,000 slots filled: the file is that share of SB3's, plus the pickle's own bytes
        assert buffer.pos == 300
        assert ours.stat().st_size < 0.05 * sb3.stat().st_size
    fresh.learn(100, reset_num_timesteps=False)  # the loaded buffer keeps filling and sampling from there
    assert fresh.replay_buffer.pos == (buffer.pos + 100) % fresh.replay_buffer.buffer_size


def test_dict_observations_and_the_teachers_fields_round_trip(tmp_path):
    space = gym.spaces.Dict({"observation": gym.spaces.Box(-1, 1, (3,)), "goal": gym.spaces.Box(-1, 1, (2,))})
    actions = gym.spaces.Box(-1, 1, (2,))
    buffer = copy_as(DictReplayBuffer(50, space, actions, device="cpu", n_envs=2), TeacherDictReplayBuffer)
    buffer.teacher = None
    buffer.teacher_actions = np.zeros((buffer.buffer_size, 2, 2), np.float32)
    buffer.teacher_weights = np.zeros((buffer.buffer_size, 2), np.float32)
    rng = np.random.default_rng(0)
    for step in range(7):
        buffer.teacher_actions[buffer.pos] = rng.normal(size=(2, 2))
        buffer.teacher_weights[buffer.pos] = 1.0
        obs = {key: rng.normal(size=(2, *s.shape)).astype(np.float32) for key, s in space.spaces.items()}
        buffer.add(obs, obs, rng.normal(size=(2, 2)), rng.normal(size=2), np.array([step == 6, False]),
                   [{}, {}])
    path = tmp_path / "dict.pkl"
    save_replay_buffer(buffer, path)
    with path.open("rb") as f:
        loaded = pickle.load(f)
    assert loaded.pos == 7 and not loaded.full
    assert_same_buffer(buffer, loaded)
    assert np.count_nonzero(loaded.teacher_weights) == 14
