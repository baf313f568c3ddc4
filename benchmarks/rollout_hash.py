"""A fingerprint of the quadruped envs' behaviour: the SHA-256 of every observation, reward, flag and info of seeded
single-env and batched rollouts (the scripted trot, then random actions; resets and autoresets), per case: flat with
and without the gait measures, rough with domain randomisation and pushes, every sim-to-real randomisation, and the
terrain with observation noise and a history. A refactoring that changes no float prints the same lines; compare
two checkouts with ``PYTHONPATH=<checkout> python benchmarks/rollout_hash.py`` in each."""
from __future__ import annotations

import hashlib

import gymnasium as gym
import numpy as np

import envs  # noqa: F401  (registers OpenClaw/*)
from envs.batched import BatchedVecEnv
from envs.controllers.trot import TrotController

SIM2REAL = {"obs_noise": 1.0, "action_delay_steps": (0, 2), "motor_strength": (0.9, 1.1), "kp_scale": (0.8, 1.2),
            "kd_scale": (0.8, 1.2), "domain_randomization": True}
CASES = {  # name: env id, env arguments
    "v1": ("OpenClaw/Quadruped-v1", {}),
    "v1-nogait": ("OpenClaw/Quadruped-v1", {"gait_measures": False}),
    "rough-push": ("OpenClaw/QuadrupedRough-v1", {"domain_randomization": True, "push_interval_s": 0.1, "push_velocity": 0.5}),
    "sim2real": ("OpenClaw/Quadruped-v1", SIM2REAL),
    "terrain": ("OpenClaw/QuadrupedTerrain-v1", {"obs_noise": 1.0, "history_steps": 3, "max_init_level": 9}),
}


def digest(value, acc) -> None:
    """Feed ``value`` (an array, a number, or a dict of them, keys included) into the hash ``acc``."""
    if isinstance(value, dict):
        for key, item in value.items():
            acc.update(key.encode())
            digest(item, acc)
    else:
        acc.update(np.asarray(value).tobytes())


def fingerprint(env_id: str, kwargs: dict) -> str:
    """The hash of 3 single-env episodes (2 trot, 1 random; 120 steps each at most) and 150 steps of 4 batched copies."""
    acc, trot = hashlib.sha256(), TrotController()
    env = gym.make(env_id, max_episode_steps=120, **kwargs)
    rng = np.random.default_rng(0)
    for episode in range(3):
        obs, _ = env.reset(seed=episode)
        digest(obs, acc)
        for _ in range(120):
            action = trot.act(obs[None])[0] if episode < 2 else rng.uniform(-1, 1, 12)
            obs, reward, terminated, truncated, info = env.step(action)
            digest(obs, acc), digest(reward, acc), digest(info, acc)
            if terminated or truncated:
                break
    vec = BatchedVecEnv(env_id, 4, max_episode_steps=60, **kwargs)
    obs, _ = vec.reset(seed=5)
    for _ in range(150):
        obs, reward, terminated, truncated, info = vec.step(trot.act(obs))
        digest(obs, acc), digest(reward, acc), digest(terminated, acc), digest(info, acc)
    vec.close()
    return acc.hexdigest()[:16]


if __name__ == "__main__":
    for name, (env_id, kwargs) in CASES.items():
        print(name, fingerprint(env_id, kwargs))
