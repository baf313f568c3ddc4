"""RL Zoo (``rl_zoo3``) hyper-parameter files for our envs, made from the tuned configs (``configs/tuned/``).

    python -m agents.export.rl_zoo            # rewrite rl_zoo/ppo.yml and rl_zoo/sac.yml
    python -m rl_zoo3.train --algo ppo --env OpenClaw/Quadruped-v1 --gym-packages envs --conf-file rl_zoo/ppo.yml

Each ``configs/tuned/<env>_<agent>.yaml`` becomes one entry, keyed by the env id, of ``rl_zoo/<agent>.yml``:
the hyper-parameters :func:`agents.factory.learner_kwargs` gives our learner for the composed training
config (``python train.py env=<env> agent=<agent>``), the number of envs, the step budget and the
observation / return normalisation, written the way RL Zoo reads them (``policy_kwargs`` and
``normalize`` as Python expressions it evaluates, with ``nn`` = ``torch.nn``). Env constructor
arguments are not part of RL Zoo's files: an entry whose tuned config changes them lists them in
its comment, to pass with ``--env-kwargs``.
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import stable_baselines3
import torch
import yaml
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from omegaconf import DictConfig

from agents.factory import learner_kwargs, policy_name
from agents.vec_env import env_kwargs, make_vec_env

ROOT = Path(__file__).resolve().parents[2]
CONFIG_DIR = ROOT / "configs"
OUT_DIR = ROOT / "rl_zoo"


def tuned_pairs() -> list[tuple[str, str]]:
    """``(env, agent)`` config names with a tuned file, from ``configs/tuned/<env>_<agent>.yaml``."""
    return [tuple(p.stem.rsplit("_", 1)) for p in sorted((CONFIG_DIR / "tuned").glob("*.yaml"))]


def training_config(env: str, agent: str, tuned: bool = True) -> DictConfig:
    """The composed ``train.py env=<env> agent=<agent>`` config (``tuned=False``: without ``configs/tuned/``)."""
    from agents.config.schema import register_configs

    register_configs()
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
        cfg = compose("train", overrides=[f"env={env}", f"agent={agent}", *([] if tuned else ["~tuned"])])
    GlobalHydra.instance().clear()
    return cfg


def _expression(value: Any) -> Any:
    """A constructor argument as RL Zoo's files write it (classes by name, dicts as ``dict(...)`` code)."""
    if isinstance(value, type):
        return f"nn.{value.__name__}" if issubclass(value, torch.nn.Module) else value.__name__
    if isinstance(value, dict):
        return "dict(" + ", ".join(f"{k}={_expression(v)}" for k, v in value.items()) + ")"
    return repr(value) if isinstance(value, str) else value


def sb3_parameters(agent: str) -> set[str]:
    """Constructor parameters of Stable-Baselines3's own ``PPO`` / ``SAC`` (what RL Zoo can pass on)."""
    return set(inspect.signature(getattr(stable_baselines3, agent.upper())).parameters)


def zoo_equivalent(kwargs: dict[str, Any]) -> dict[str, Any]:
    """Our learner's keyword arguments less what RL Zoo cannot express: the masked actor-critic of envs with
    privileged observations (its policy class and masks; RL Zoo's ``MlpPolicy`` reads every entry)."""
    if "policy" not in kwargs:
        return kwargs
    masks = ("actor_keep", "critic_keep")
    kept = {k: v for k, v in kwargs.items() if k != "policy"}
    kept["policy_kwargs"] = {k: v for k, v in kwargs["policy_kwargs"].items() if k not in masks}
    return kept


def zoo_entry(cfg: DictConfig) -> dict[str, Any]:
    """The RL Zoo hyper-parameters (one env's entry) equivalent to the training config ``cfg``.

    Settings of our students that SB3's class has no parameter for are left out (see :func:`zoo_files`).
    """
    venv = make_vec_env(cfg.env.id, env_kwargs(cfg), 1)
    try:
        entry: dict[str, Any] = {"policy": policy_name(venv), "n_envs": cfg.train.num_envs, "n_timesteps": cfg.train.total_timesteps}
        kwargs = zoo_equivalent(learner_kwargs(cfg, venv))
    finally:
        venv.close()
    normalize_reward = cfg.env.normalize_reward and cfg.agent.name == "ppo"  # as the runner wraps the envs
    if cfg.env.normalize_obs or normalize_reward:
        entry["normalize"] = f"dict(norm_obs={bool(cfg.env.normalize_obs)}, norm_reward={bool(normalize_reward)})"
    accepted = sb3_parameters(cfg.agent.name)
    for key, value in kwargs.items():
        if value is None or key not in accepted:
            continue
        entry[key] = _expression(value) if key in ("policy_kwargs", "replay_buffer_class", "replay_buffer_kwargs") else value
    return entry


def zoo_files() -> dict[str, tuple[dict[str, Any], list[str]]]:
    """``{agent: ({env id: entry}, comment lines)}`` for every tuned ``(env, agent)`` pair."""
    files: dict[str, tuple[dict[str, Any], list[str]]] = {}
    for env, agent in tuned_pairs():
        cfg = training_config(env, agent)
        entries, notes = files.setdefault(agent, ({}, []))
        entries[cfg.env.id] = zoo_entry(cfg)
        venv = make_vec_env(cfg.env.id, env_kwargs(cfg), 1)
        ours = learner_kwargs(cfg, venv)
        ours_only = sorted(set(ours) - sb3_parameters(agent))
        venv.close()
        if "policy" in ours:
            notes.append(f"{cfg.env.id}: OpenClaw's student hides the privileged observations from its actor (and "
                         "critic unless agent.privileged_critic); RL Zoo's MlpPolicy reads every entry")
        if ours_only:
            notes.append(f"{cfg.env.id}: not in RL Zoo (OpenClaw student settings): {', '.join(ours_only)}")
        defaults = env_kwargs(training_config(env, agent, tuned=False))
        tuned_kwargs = {k: v for k, v in env_kwargs(cfg).items() if defaults.get(k) != v}
        if tuned_kwargs:
            args = " ".join(f'"{k}:{v!r}"' for k, v in tuned_kwargs.items())
            notes.append(f"{cfg.env.id} was tuned with these env arguments: --env-kwargs {args}")
    # each note once: several tuned configs share an env id (and RL Zoo's file holds one entry for it)
    return {agent: (entries, list(dict.fromkeys(notes))) for agent, (entries, notes) in files.items()}


def write() -> list[Path]:
    """(Re)write ``rl_zoo/<agent>.yml`` from the tuned configs; return the paths."""
    OUT_DIR.mkdir(exist_ok=True)
    paths = []
    for agent, (entries, notes) in zoo_files().items():
        header = [
            f"# RL Zoo hyper-parameters ({agent.upper()}) for OpenClaw envs, generated by `python -m agents.export.rl_zoo`",
            "# from configs/tuned/ (do not edit; edit the tuned config and regenerate). Use:",
            f"#   python -m rl_zoo3.train --algo {agent} --env <id> --gym-packages envs --conf-file rl_zoo/{agent}.yml",
            *[f"# {note}" for note in notes],
        ]
        path = OUT_DIR / f"{agent}.yml"
        path.write_text("\n".join(header) + "\n" + yaml.safe_dump(entries, sort_keys=False, width=1000))
        paths.append(path)
    return paths


if __name__ == "__main__":
    for written in write():
        print(written)
