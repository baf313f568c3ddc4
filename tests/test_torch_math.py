"""The quadruped's reward terms, air clocks and gait measures (``envs.quadruped.rewards.step_outcome``) run on torch
tensors (``envs.torch_math.TorchMath``, what a GPU simulator's copies compute with) as on numpy arrays: the same
values within 1e-12 (float64; the issue asks 1e-6) on a batch of trot and random-action steps with touchdowns, swings and falls."""

from __future__ import annotations

import numpy as np
import torch

import envs  # noqa: F401  (registers OpenClaw/*)
from envs.batched import BatchedSimulation
from envs.controllers.trot import TrotController
from envs.quadruped.rewards import step_outcome
from envs.torch_math import TorchMath


def test_the_reward_and_the_gait_measures_on_torch_equal_numpys():
    n = 6
    sim = BatchedSimulation("OpenClaw/Quadruped-v1", n, reward_scales={"feet_clearance_ahead": -0.3})
    for i in range(n):
        sim.reset(i, seed=i)
    env, cls, trot, rng = sim.tasks[0], type(sim.tasks[0]), TrotController(), np.random.default_rng(0)
    sim.step(trot.act(sim.obs))  # the first batched step makes the copies share their state's rows
    shared = env._batch
    touchdowns = falls = 0
    for t in range(200):
        actions = trot.act(sim.obs) if t < 60 else rng.uniform(-1.5, 1.5, (n, 12))
        before = shared.state.map(lambda a: torch.from_numpy(a.copy()))
        result = sim.step(actions)
        data = [task.data for task in sim.tasks]
        arrays = [torch.from_numpy(np.stack([getattr(d, k) for d in data])) for k in ("qvel", "actuator_force", "sensordata")]
        qvel, force, sensordata = arrays
        readings = cls.readings(env, sensordata)
        clipped = torch.from_numpy(np.clip(actions, -1.0, 1.0))
        reward, fell, info, air, contact, gait = step_outcome(
            cls.step_readings(env, before, clipped, qvel, force, readings, TorchMath), env, TorchMath)
        expected = result.infos.arrays()
        np.testing.assert_allclose(reward.numpy(), result.rewards, rtol=0, atol=1e-12)
        assert np.array_equal(fell.numpy(), result.terminated)
        for key, value in info.items():
            np.testing.assert_allclose(np.asarray(value, dtype=np.float64), expected[key].astype(np.float64),
                                       rtol=1e-12, atol=1e-9, err_msg=key)
        after = shared.state
        np.testing.assert_allclose(torch.stack(list(air), 1).numpy(), after.air_time, atol=1e-12)
        assert np.array_equal(torch.stack(list(contact), 1).numpy(), after.contact)
        np.testing.assert_allclose(torch.stack(list(gait), 1).numpy(), after.gait, atol=1e-9)
        touchdowns += int((expected["reward_feet_air_time"] != 0).sum())
        falls += int(result.terminated.sum())
        for i in np.flatnonzero(result.terminated):
            sim.reset(int(i), seed=100 + t)
    assert touchdowns > 20 and falls >= 1, (touchdowns, falls)
    sim.close()
