"""Build the PPO or SAC student named by ``cfg.agent`` for a vector env, or load one from a checkpoint."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import torch
from omegaconf import DictConfig
from stable_baselines3 import HerReplayBuffer
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.save_util import load_from_zip_file
from stable_baselines3.common.off_policy_algorithm import OffPolicyAlgorithm
from stable_baselines3.common.vec_env import VecEnv, VecNormalize

from agents import checkpoint
from agents.errors import ConfigError
from agents.students import PPOStudent, SACStudent
from agents.students.observation_masks import MaskedActorCriticPolicy, observation_masks
from agents.vec_env import is_goal_env

HISTORY_ENCODERS = ("mlp", "gru")  # agent.history_encoder: the history frames read flat, or through a GRU
ACTIVATIONS = {"tanh": torch.nn.Tanh, "relu": torch.nn.ReLU, "elu": torch.nn.ELU}
ALGORITHMS: dict[str, type[BaseAlgorithm]] = {"ppo": PPOStudent, "sac": SACStudent}


def learner_class(name: str, vec_mode: str = "dummy") -> type[BaseAlgorithm]:
    """The learner ``name`` (ppo | sac) for training envs of ``vec_mode`` (``train.vec_mode``): on MuJoCo Warp's
    worlds (``warp``) PPO collects on their device (:class:`~agents.students.device_ppo.DevicePPOStudent`); its
    checkpoints load as any PPO's."""
    if name == "ppo" and vec_mode == "warp":
        from agents.students.device_ppo import DevicePPOStudent

        return DevicePPOStudent
    return ALGORITHMS[name]


def policy_name(venv: VecEnv) -> str:
    """SB3 policy for the observation space: ``MultiInputPolicy`` for Dict spaces, else ``MlpPolicy``."""
    import gymnasium as gym

    return "MultiInputPolicy" if isinstance(venv.observation_space, gym.spaces.Dict) else "MlpPolicy"


def _ppo_kwargs(a: DictConfig, venv: VecEnv) -> dict[str, Any]:
    kwargs = dict(
        learning_rate=a.learning_rate,
        n_steps=a.n_steps,
        batch_size=a.batch_size,
        n_epochs=a.n_epochs,
        gamma=a.gamma,
        gae_lambda=a.gae_lambda,
        clip_range=a.clip_range,
        ent_coef=a.ent_coef,
        vf_coef=a.vf_coef,
        max_grad_norm=a.max_grad_norm,
        target_kl=a.target_kl,
        policy_kwargs=dict(
            net_arch=dict(pi=list(a.net_arch), vf=list(a.net_arch)),
            activation_fn=ACTIVATIONS[a.activation],
            log_std_init=a.log_std_init,
            ortho_init=a.ortho_init,
        ),
    )
    if a.desired_kl is not None:  # OpenClaw's adaptive rate; without it the learner is SB3's PPO (RL Zoo's)
        kwargs["desired_kl"] = a.desired_kl
    privileged = venv.get_attr("privileged_obs", indices=[0])[0] if venv.has_attr("privileged_obs") else None
    if not privileged:
        check_privileged(a, privileged, "this env")
    frames = history_frames(a.history_encoder, venv.get_attr("history_frames", indices=[0])[0]
                            if venv.has_attr("history_frames") else None)
    if privileged or frames:
        actor, critic = observation_masks(venv.observation_space.shape[0], privileged or {}, a.privileged_critic,
                                          a.perceptive_actor)
        kwargs["policy_kwargs"].update(actor_keep=actor, critic_keep=critic)
        if frames:
            kwargs["policy_kwargs"].update(history_frames=frames)
        kwargs["policy"] = MaskedActorCriticPolicy
    return kwargs


def history_frames(encoder: str, frames: list[list[int]] | None) -> list[list[int]] | None:
    """The frames a PPO actor's ``agent.history_encoder`` reads through a GRU: ``frames`` (the env's
    ``history_frames``: the k proprioceptive frames' entry indices, oldest first, the current one last; None
    without a history) for ``gru``, None for ``mlp`` (read flat). :class:`ConfigError` for another value, and for
    ``gru`` on an env without a history."""
    if encoder not in HISTORY_ENCODERS:
        raise ConfigError(f"agent.history_encoder={encoder!r} is unknown; choose one of: {', '.join(HISTORY_ENCODERS)}")
    if encoder == "gru" and not frames:
        raise ConfigError("agent.history_encoder=gru reads the proprioceptive history, and this env's observation has "
                          "none: set env.kwargs.history_steps to 2 or more (e.g. 15) on a quadruped env, or "
                          "agent.history_encoder=mlp")
    return frames if encoder == "gru" else None


def check_privileged(agent: DictConfig, privileged: dict | None, env_id: str) -> None:
    """:class:`ConfigError` when ``agent.privileged_critic`` or ``agent.perceptive_actor`` is set for env ``env_id``,
    whose observations have no privileged entries (``privileged``: its ``privileged_obs``, empty or None)."""
    for key in ("privileged_critic", "perceptive_actor"):
        if not privileged and agent.get(key):
            raise ConfigError(f"agent.{key}=true: {env_id} has no privileged observations (env.privileged_obs) to "
                              f"show or hide; set agent.{key}=false, or train on an env with them (env=quadruped_terrain)")


def _sac_kwargs(a: DictConfig, venv: VecEnv) -> dict[str, Any]:
    kwargs: dict[str, Any] = dict(
        learning_rate=a.learning_rate,
        buffer_size=a.buffer_size,
        learning_starts=a.learning_starts,
        batch_size=a.batch_size,
        tau=a.tau,
        gamma=a.gamma,
        train_freq=a.train_freq,
        gradient_steps=a.gradient_steps,
        ent_coef=a.ent_coef,
        policy_kwargs=dict(net_arch=list(a.net_arch), activation_fn=ACTIVATIONS[a.activation]),
        fast_update=a.fast_update,
    )
    if a.her and is_goal_env(venv):
        kwargs["replay_buffer_class"] = HerReplayBuffer
        kwargs["replay_buffer_kwargs"] = dict(
            n_sampled_goal=a.her_n_sampled_goal, goal_selection_strategy=a.her_goal_selection_strategy
        )
    return kwargs


def learner_kwargs(cfg: DictConfig, venv: VecEnv) -> dict[str, Any]:
    """The PPO or SAC constructor's hyper-parameter keyword arguments for ``cfg.agent`` on ``venv``."""
    if cfg.agent.name == "ppo":
        return _ppo_kwargs(cfg.agent, venv)
    if venv.has_attr("privileged_obs") and venv.get_attr("privileged_obs", indices=[0])[0]:
        warnings.warn("SAC's actor reads the env's privileged observations too (height scan, friction, true "
                      "velocity): only the PPO student masks them (agent.privileged_critic / perceptive_actor)",
                      stacklevel=2)
    return _sac_kwargs(cfg.agent, venv)


def build_agent(cfg: DictConfig, venv: VecEnv, tensorboard_dir: str | None) -> BaseAlgorithm:
    """A fresh learner with the configured hyper-parameters, seeded with ``cfg.seed``."""
    agent = cfg.agent
    kwargs = learner_kwargs(cfg, venv)
    return learner_class(agent.name, cfg.train.vec_mode)(
        kwargs.pop("policy", policy_name(venv)),
        venv,
        seed=cfg.seed,
        device=cfg.train.device,
        tensorboard_log=tensorboard_dir,
        verbose=0,
        **kwargs,
    )


def check_device(key: str, value: str) -> None:
    """Raise :class:`ConfigError` unless ``value`` names a torch device this machine has (or ``auto``)."""
    if value == "auto":  # SB3: cuda when available, else cpu
        return
    try:
        device = torch.device(value)
    except RuntimeError:
        raise ConfigError(f"{key}={value!r} is not a device; use cpu, cuda, cuda:<index>, mps or auto") from None
    if device.type == "cuda":
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if count == 0:
            raise ConfigError(f"{key}={value}: this machine has no usable CUDA GPU (torch {torch.__version__}, "
                              f"torch.cuda.is_available() is False); use {key}=cpu")
        if device.index is not None and device.index >= count:
            raise ConfigError(f"{key}={value}: this machine has {count} CUDA GPU(s), cuda:0 .. cuda:{count - 1}")
    elif device.type == "mps" and not torch.backends.mps.is_available():
        raise ConfigError(f"{key}={value}: Apple's MPS backend is not available on this machine; use {key}=cpu")
    elif device.type not in ("cpu", "cuda", "mps"):
        raise ConfigError(f"{key}={value}: students train on cpu, cuda or mps, not {device.type}")


def load_agent(name: str, path: str, venv: VecEnv | None, device: str, vec_mode: str = "dummy") -> BaseAlgorithm:
    """Load a saved learner (weights, optimiser state, step count) and attach ``venv`` (None: no env), as the learner
    that trains on ``vec_mode``'s envs (:func:`learner_class`)."""
    return learner_class(name, vec_mode).load(path, env=venv, device=device)


def load_checkpoint(found: checkpoint.Checkpoint, name: str, venv: VecEnv, device: str,
                    replay: bool = False, vec_mode: str = "dummy") -> tuple[BaseAlgorithm, VecEnv]:
    """The ``name`` (ppo | sac) learner saved in ``found`` on ``venv`` (of ``vec_mode``) wrapped in the checkpoint's
    normalisation statistics (when it has them), with its replay buffer when ``replay``; :class:`agents.checkpoint.Damaged`
    when a file cannot be loaded or a value is not finite (:func:`agents.checkpoint.first_intact` skips it)."""
    norm = found.normalization
    env = checkpoint.loaded(norm, lambda: VecNormalize.load(str(norm), venv)) if norm is not None else venv
    model = checkpoint.loaded(found.model, lambda: load_agent(name, str(found.model), env, device, vec_mode))
    if replay and found.replay_buffer is not None and isinstance(model, OffPolicyAlgorithm):
        checkpoint.loaded(found.replay_buffer, lambda: model.load_replay_buffer(found.replay_buffer))
    checkpoint.finite_or_damaged(found, model, env)
    return model, env


def check_observation_space(path: str, venv: VecEnv) -> None:
    """Raise :class:`ConfigError` when the learner saved at ``path`` observed another space than ``venv``'s.

    A checkpoint only runs on the env version it was trained on: e.g. ``OpenClaw/Quadruped-v0`` gives 48
    values, ``-v1`` appends the gait clock (57). A file that cannot be read is left for the load to report.
    """
    spaces = saved_spaces(path)
    if spaces is None:  # damaged or not a learner: the load itself says so
        return
    saved = spaces[0]
    if saved != venv.observation_space:
        raise ConfigError(
            f"{path} was trained on observations {saved} but this env gives {venv.observation_space}: a "
            "checkpoint only runs on the env version it was trained on (OpenClaw/Quadruped-v0 observes 48 "
            "values, -v1 adds the gait clock: 57); use that env id (evaluate.py env_id=..., the run's own "
            "config by default) or train a new run"
        )


def saved_spaces(path: str | Path) -> tuple[Any, Any] | None:
    """(observation space, action space) of the learner saved at ``path``, read without building it; None when
    the file is damaged or holds no learner (loading it says why)."""
    try:
        data, _, _ = load_from_zip_file(path, device="cpu")
        return data["observation_space"], data["action_space"]
    except Exception:  # a truncated zip or pickle reports damage as many exception types
        return None
