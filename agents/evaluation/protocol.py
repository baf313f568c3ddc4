"""Deterministic evaluation of a policy on a vector env, with task metrics read from ``info``.

Metrics gathered per episode:

* ``return`` / ``length`` — undiscounted episode return and steps;
* the metrics the env declares (``METRICS``, a tuple of :class:`envs.declarations.Metric`: e.g. the
  quadruped's tracking error and fall rate, the claw's success rate), under their ``info`` keys;
* ``reward_<term>`` — mean per step of each named reward term.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import asdict, dataclass, field, fields
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import gymnasium as gym
import numpy as np
from stable_baselines3.common.vec_env import VecEnv

from envs.declarations import Metric

#: ``info[REWARD_TERM_PREFIX + name]`` holds one weighted reward term of the step (both envs).
REWARD_TERM_PREFIX = "reward_"


class Predictor(Protocol):
    def predict(self, observation: Any, state: Any = None, episode_start: Any = None, deterministic: bool = False): ...


@dataclass
class EvalResult:
    """Aggregate of ``episodes`` evaluation episodes.

    ``metrics`` holds each metric the env declares (``declared``) by name, ``None`` where no episode
    reported it; they read as attributes too (``result.fall_rate``) and :meth:`as_dict` puts them at
    the top level, beside ``mean_return``.
    """

    episodes: int
    mean_return: float
    std_return: float
    mean_length: float
    metrics: dict[str, float | None] = field(default_factory=dict)
    reward_terms: dict[str, float] = field(default_factory=dict)
    returns: list[float] = field(default_factory=list)
    # per episode, in the order episodes ended: "return", "length" and each metric's info key ("fell", ...)
    per_episode: dict[str, list[float]] = field(default_factory=dict)
    declared: tuple[Metric, ...] = ()

    def __getattr__(self, name: str) -> Any:
        metrics = self.__dict__.get("metrics", {})
        if name in metrics:
            return metrics[name]
        raise AttributeError(f"EvalResult has no attribute or metric {name!r}; the env reports: {', '.join(metrics) or 'none'}")

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        del out["declared"]
        metrics = out.pop("metrics")
        return {**out, **metrics}


class ResetOptions(gym.Wrapper):
    """Passes ``options`` to every ``reset`` of the env it wraps, the vector env's automatic resets between episodes
    too (SB3's ``VecEnv.set_options`` reaches only the next ``reset()``); keys given to a ``reset`` call win. E.g.
    ``{"terrain_type": "stairs_up", "terrain_level": 5}`` puts every episode of ``QuadrupedTerrain-v1`` on that
    tile, ``{"command": [0.5, 0.0, 0.0]}`` gives every quadruped episode that command (m/s, m/s, rad/s)."""

    def __init__(self, env: gym.Env, options: dict[str, Any]) -> None:
        super().__init__(env)
        self.options = dict(options)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        return self.env.reset(seed=seed, options={**self.options, **(options or {})})


def declared_metrics(venv: VecEnv) -> tuple[Metric, ...]:
    """The metrics the envs of ``venv`` declare (their ``METRICS``); none for an env without the attribute.

    Raises ``ValueError`` for a metric named like an :class:`EvalResult` field (it would hide that field).
    """
    try:
        metrics = tuple(venv.get_attr("METRICS", indices=[0])[0])
    except AttributeError:
        return ()
    clash = sorted({m.name for m in metrics} & {f.name for f in fields(EvalResult)})
    if clash:
        raise ValueError(f"the env declares metric(s) {clash} named like EvalResult fields; rename them in its METRICS")
    return metrics


def step_term_filter(declared: Sequence[Metric]) -> Callable[[str], bool]:
    """Whether an ``info`` key is averaged over steps: a reward term (``reward_<name>``) or a metric of
    ``declared`` reduced per episode by ``"mean"``."""
    keys = frozenset(m.info_key for m in declared if m.per_episode == "mean")
    return lambda key: key.startswith(REWARD_TERM_PREFIX) or key in keys


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
    declared = declared_metrics(venv)
    is_step_term = step_term_filter(declared)
    last_keys = [m.info_key for m in declared if m.per_episode == "last"]
    n = venv.num_envs
    episodes_per_env = np.array(split_episodes(episodes, n))
    done_counts = np.zeros(n, dtype=int)
    step_sums: list[dict[str, float]] = [defaultdict(float) for _ in range(n)]
    steps = np.zeros(n, dtype=int)
    returns = np.zeros(n)
    per_episode: dict[str, list[float]] = defaultdict(list)

    obs = venv.reset()
    starts = np.ones(n, dtype=bool)
    state = None
    while (done_counts < episodes_per_env).any():
        actions, state = policy.predict(obs, state=state, episode_start=starts, deterministic=deterministic)
        obs, rewards, dones, infos = venv.step(actions)
        returns += rewards
        steps += 1
        for i, info in enumerate(infos):
            sums = step_sums[i]
            for key, value in info.items():
                if is_step_term(key):
                    sums[key] += float(value)
            if not dones[i]:
                continue
            if done_counts[i] < episodes_per_env[i]:
                per_episode["return"].append(float(returns[i]))
                per_episode["length"].append(float(steps[i]))
                for key in last_keys:
                    if key in info:
                        per_episode[key].append(float(info[key]))
                for key, total in sums.items():
                    per_episode[key].append(total / steps[i])
                done_counts[i] += 1
            sums.clear()
            steps[i] = 0
            returns[i] = 0.0
        starts = dones

    rets = per_episode["return"]
    terms = {k: float(np.mean(v)) for k, v in per_episode.items() if k.startswith(REWARD_TERM_PREFIX)}
    return EvalResult(
        episodes=len(rets),
        mean_return=float(np.mean(rets)),
        std_return=float(np.std(rets)),
        mean_length=float(np.mean(per_episode["length"])),
        metrics={m.name: _mean_or_none(per_episode[m.info_key]) for m in declared},
        reward_terms=terms,
        returns=rets,
        per_episode={k: v for k, v in per_episode.items() if v},
        declared=declared,
    )
