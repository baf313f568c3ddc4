"""The scripted trot on torch tensors (``TrotController.act``, one definition for numpy and torch; issue 80's batched
teacher on the device): on real observations of the flat and the terrain env, torch's actions equal numpy's within
1e-6, a tensor's actions stay a float32 tensor on its device, bad shapes are refused as for numpy, and ``envs``
imports no torch when no tensor comes in."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import torch

import envs  # noqa: F401  (registers OpenClaw/*)
from envs.controllers.trot import TrotController, has_height_scan

ROOT = Path(__file__).resolve().parents[1]


def trot_observations(env_id: str, seeds: range, steps: int, **kwargs) -> tuple[TrotController, np.ndarray]:
    """The env's trot and the observations (len(seeds) * steps, obs_dim) it sees walking ``steps`` steps per seed."""
    env = gym.make(env_id, **kwargs)
    trot = TrotController(spec=env.unwrapped.controller_spec)
    seen = []
    for seed in seeds:
        obs, _ = env.reset(seed=seed)
        for _ in range(steps):
            seen.append(obs)
            obs, _, terminated, truncated, _ = env.step(trot.act(obs))
            if terminated or truncated:
                obs, _ = env.reset()
    env.close()
    return trot, np.stack(seen)


@pytest.fixture(scope="module")
def flat():
    return trot_observations("OpenClaw/Quadruped-v1", range(3), 200)


@pytest.fixture(scope="module")
def terrain():
    # levels up to 9: stairs and slopes, where the scan terms act
    return trot_observations("OpenClaw/QuadrupedTerrain-v1", range(2), 200, max_init_level=9)


@pytest.mark.parametrize("case", ["flat", "terrain"])
def test_torch_actions_equal_numpys_on_real_observations(case, request):
    trot, obs = request.getfixturevalue(case)
    assert has_height_scan(trot.spec) == (case == "terrain")
    expected = trot.act(obs)
    got = trot.act(torch.from_numpy(obs))
    assert isinstance(got, torch.Tensor) and got.dtype == torch.float32 and got.shape == (len(obs), 12)
    np.testing.assert_allclose(got.numpy(), expected, rtol=0, atol=1e-6)
    assert np.abs(expected).max() == 1.0 and np.abs(expected).mean() > 0.2  # real, clipped actions, not zeros
    # one robot's observation (obs_dim,) -> its action (12,), as numpy's; float64 observations too
    single = torch.stack([trot.act(torch.from_numpy(row)) for row in obs[::50]])
    np.testing.assert_allclose(single.numpy(), expected[::50], rtol=0, atol=1e-6)
    wide = trot.act(torch.from_numpy(obs.astype(np.float64)))
    assert wide.dtype == torch.float32
    np.testing.assert_allclose(wide.numpy(), trot.act(obs.astype(np.float64)), rtol=0, atol=1e-6)


def test_a_tensors_actions_are_computed_on_its_device(terrain):
    """On the meta device (shapes and dtypes, no data) every step must stay a tensor op on that device: a copy to the
    host or a numpy call would fail there. The constants are made once per device."""
    trot, obs = terrain
    meta = torch.from_numpy(obs).to("meta")
    actions = trot.act(meta)
    assert actions.device.type == "meta" and actions.dtype == torch.float32 and actions.shape == (len(obs), 12)
    first = trot._tensors[meta.device]
    trot.act(meta[:3])
    assert trot._tensors[meta.device] is first
    if torch.cuda.is_available():
        gpu = trot.act(torch.from_numpy(obs).cuda())
        assert gpu.is_cuda and gpu.dtype == torch.float32
        np.testing.assert_allclose(gpu.cpu().numpy(), trot.act(obs), rtol=0, atol=1e-6)


def test_a_tensor_of_the_wrong_shape_is_refused(flat):
    trot, obs = flat
    for bad in (torch.zeros(3, 5), torch.from_numpy(obs[None, :2]), torch.tensor(0.0)):
        with pytest.raises(ValueError, match=r"gait clock .*got shape \("):
            trot.act(bad)


def test_envs_import_no_torch_for_numpy_observations():
    probe = ("import sys, gymnasium as gym, envs, envs.controllers\n"
             "from envs.controllers.trot import TrotController\n"
             "obs, _ = gym.make('OpenClaw/Quadruped-v1').reset(seed=0)\n"
             "TrotController().act(obs)\n"
             "print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"
