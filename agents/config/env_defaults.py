"""``${env_default:<argument>}``: the default of one of the env's constructor arguments, read from the env itself.

A Hydra env config (``configs/env/<name>.yaml``) lists under ``kwargs`` the arguments a user of that config is
expected to set. Where it keeps an argument's default it writes ``${env_default:<argument>}`` instead of the
value, so that the default lives once, in the env: the field of its config dataclass (``QuadrupedConfig``,
``ClawConfig``; ``help(envs.quadruped.QuadrupedEnv)`` shows them), or the value the Gymnasium id registers
(``OpenClaw/QuadrupedRough-v1``: ``terrain="rough"``). The value is resolved against ``env.id`` of the composed
config; the run's ``config.yaml`` records it resolved, and ``env.kwargs.<argument>=<value>`` overrides it as any
listed key. Imports the envs only when a value is resolved.
"""

from __future__ import annotations

import inspect
from typing import Any

from omegaconf import DictConfig

RESOLVER = "env_default"


def env_defaults(env_id: str) -> dict[str, Any]:
    """Every constructor argument of the Gymnasium id ``env_id`` -> its default: the env class's keyword defaults
    with the id's registered kwargs on top."""
    import gymnasium as gym
    from gymnasium.envs.registration import load_env_creator

    import envs  # noqa: F401  (registers the OpenClaw ids)

    spec = gym.spec(env_id)
    creator = spec.entry_point if callable(spec.entry_point) else load_env_creator(spec.entry_point)
    params = inspect.signature(creator).parameters
    return {**{name: p.default for name, p in params.items() if p.default is not p.empty}, **spec.kwargs}


def env_default(argument: str, _root_: DictConfig) -> Any:
    """The resolver: ``argument``'s default for the composed config's ``env.id`` (a tuple as a list)."""
    env_id = _root_.env.id
    defaults = env_defaults(env_id)
    if argument not in defaults:
        raise ValueError(f"${{{RESOLVER}:{argument}}}: {env_id} has no argument {argument!r}; its arguments are: "
                         f"{', '.join(sorted(defaults))}")
    value = defaults[argument]
    return list(value) if isinstance(value, tuple) else value
