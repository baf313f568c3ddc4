"""Deterministic evaluation of a policy on a vector env, with task metrics read from ``info``.

Metrics gathered per episode (whatever the env reports):

* ``return`` / ``length`` — undiscounted episode return and steps;
* ``is_success`` — from the last step's ``info`` (claw tasks);
* ``tracking_error`` — mean over the episode's steps of ``info["tracking_error"]`` (quadruped, m/s);
* ``fell`` — whether the episode ended by a fall (quadruped);
* ``reward_<term>`` — mean per step of each named reward term.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

import numpy as np
from stable_baselines3.common.vec_env import VecEnv


class Predictor(Protocol):
    def predict(self, observation: Any, state: Any = None, episode_start: Any = None, deterministic: bool = False): ...


@dataclass
class EvalResult:
    """Aggregate of ``episodes`` evaluation episodes; ``None`` where the env does not report a metric."""

    episodes: int
    mean_return: float
    std_return: float
    mean_length: float
    success_rate: float | None = None
    tracking_error: float | None = None
    fall_rate: float | None = None
    reward_terms: dict[str, float] = field(default_factory=dict)
    returns: list[float] = field(default_factory=list)
    # every metric above per episode, in the order episodes ended: "return", "length", "tracking_error", ...
    per_episode: dict[str, list[float]] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _mean_or_none(values: list[float]) -> float | None:
    return float(np.mean(values)) if values else None


def split_episodes(episodes: int, num_envs: int) -> list[int]:
    """How many of ``episodes`` episodes each env runs: their first ones, as even as possible (later envs more)."""
    return [(episodes + i) // num_envs for i in range(num_envs)]


def evaluate(policy: Predictor, venv: VecEnv, episodes: int, deterministic: bool = True) -> EvalResult:
    """Run exactly ``episodes`` episodes, spread evenly over the envs so short episodes are not over-counted.

    Env ``i`` contributes its first ``split_episodes(episodes, n)[i]`` episodes, so with ``venv.seed(s)``
    called before, the episodes (and hence the result) are reproducible.
    """
    n = venv.num_envs
    targets = np.array(split_episodes(episodes, n))
    done_counts = np.zeros(n, dtype=int)
    step_sums: list[dict[str, float]] = [defaultdict(float) for _ in range(n)]
    steps = np.zeros(n, dtype=int)
    returns = np.zeros(n)
    per_episode: dict[str, list[float]] = defaultdict(list)

    obs = venv.reset()
    starts = np.ones(n, dtype=bool)
    state = None
    while (done_counts < targets).any():
        actions, state = policy.predict(obs, state=state, episode_start=starts, deterministic=deterministic)
        obs, rewards, dones, infos = venv.step(actions)
        returns += rewards
        steps += 1
        for i, info in enumerate(infos):
            sums = step_sums[i]
            for key, value in info.items():
                if key.startswith("reward_") or key == "tracking_error":
                    sums[key] += float(value)
            if not dones[i]:
                continue
            if done_counts[i] < targets[i]:
                per_episode["return"].append(float(returns[i]))
                per_episode["length"].append(float(steps[i]))
                if "is_success" in info:
                    per_episode["is_success"].append(float(info["is_success"]))
                if "fell" in info:
                    per_episode["fell"].append(float(info["fell"]))
                for key, total in sums.items():
                    per_episode[key].append(total / steps[i])
                done_counts[i] += 1
            sums.clear()
            steps[i] = 0
            returns[i] = 0.0
        starts = dones

    rets = per_episode["return"]
    terms = {k: float(np.mean(v)) for k, v in per_episode.items() if k.startswith("reward_")}
    return EvalResult(
        episodes=len(rets),
        mean_return=float(np.mean(rets)),
        std_return=float(np.std(rets)),
        mean_length=float(np.mean(per_episode["length"])),
        success_rate=_mean_or_none(per_episode["is_success"]),
        tracking_error=_mean_or_none(per_episode["tracking_error"]),
        fall_rate=_mean_or_none(per_episode["fell"]),
        reward_terms=terms,
        returns=rets,
        per_episode={k: v for k, v in per_episode.items() if v},
    )
