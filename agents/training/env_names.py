"""A Hydra env config named for a model keeps it: :func:`named_model_problem`.

``configs/env/go2.yaml`` is the quadruped with ``kwargs.robot: go2`` and runs are named after it
(``runs/go2-ppo/...``); ``env=go2 env.kwargs.robot=aliengo`` would train an Aliengo under the name go2. The
arguments that choose an env's model and their choices are its config class's ``MODELS``
(:class:`envs.base.EnvConfig`: the quadruped's ``robot``, the claw's ``arm``); an env config whose name holds one
of the choices as a word (``go2``, ``go2_sim2real``, ``claw_panda``) is named for it, and refuses another.
Configs not named for one (``env=quadruped``, ``env=claw``) take any.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from envs.base import EnvConfig

ENV_CONFIGS = Path(__file__).resolve().parents[2] / "configs" / "env"


def _named_for(name: str, choices: tuple[str, ...]) -> list[str]:
    """The choices that ``name`` holds as ``_``-separated words (``go2_sim2real``: ``go2``)."""
    return [c for c in choices if f"_{c}_" in f"_{name}_"]


def _plain_config(name: str, choices: tuple[str, ...]) -> str | None:
    """The first config in ``name``'s defaults chain (``configs/env/<name>.yaml``) not named for any of
    ``choices`` (``go2_sim2real`` -> ``go2`` -> ``quadruped``), or ``None`` where the chain cannot be read."""
    while name and _named_for(name, choices):
        try:
            defaults = yaml.safe_load((ENV_CONFIGS / f"{name}.yaml").read_text()).get("defaults", [])
        except (OSError, AttributeError, yaml.YAMLError):
            return None
        name = next((d for d in defaults if isinstance(d, str) and d != "_self_"), None)
    return name


def named_model_problem(env_name: str, config: EnvConfig) -> str | None:
    """Why the env config ``env_name`` (``env.name``) contradicts the model ``config`` (the checked arguments of
    the env it makes) simulates, with the fix; ``None`` when it does not."""
    for argument, choices in type(config).MODELS.items():
        value, named = getattr(config, argument), _named_for(env_name, choices)
        if not named or value in named:
            continue
        fixes = [f"env={value}"] if (ENV_CONFIGS / f"{value}.yaml").is_file() else []
        plain = _plain_config(env_name, choices)
        if plain:
            fixes.append(f"env={plain} env.kwargs.{argument}={value}")
        fixes.append(f"keep env={env_name}'s settings under a name that says so: add env.name=<a name with {value}>")
        return (f"env.kwargs.{argument}={value} contradicts env={env_name}, a config named for the {argument} "
                f"{named[0]} (its runs are named {env_name}); use {', or '.join(fixes)}")
    return None
