"""Export a trained policy as one self-contained file: ONNX (and optionally TorchScript).

``export.py`` composes :class:`ExportConfig` with Hydra and calls :func:`run`; from Python::

    from agents.export.run import ExportConfig, run
    paths = run(OmegaConf.structured(ExportConfig(run="runs/quadruped-ppo/<date>", torchscript=True)))

The exported graph is the deterministic actor with the observation normalisation folded in: input
``observation``, a float32 ``(batch, obs_dim)`` array of *raw* observations as the env returns them;
output ``action``, a float32 ``(batch, action_dim)`` array in ``[-1, 1]`` to pass to ``env.step``.
What the PPO student's ``predict(obs, deterministic=True)`` does (mean action, clipped) and the SAC
student's (``tanh`` of the mean) after ``VecNormalize``'s ``clip((obs - mean) / sqrt(var + eps))``.

Dict observations (the claw) are flattened the way ``gymnasium.spaces.flatten`` flattens them
(and ``gymnasium.wrappers.FlattenObservation`` does): the Dict space's keys in order (sorted:
``achieved_goal``, ``desired_goal``, ``observation``), each key's entries in order.

Metadata (ONNX ``metadata_props``; TorchScript ``_extra_files["metadata.json"]``), all strings, see
:func:`export_metadata`: ``env_id``, ``env_version``, ``env_kwargs`` (JSON), ``observation_keys``
(JSON list of the Dict keys in flat order; ``[]`` for a Box), ``observation_layout`` (JSON
``{name: [start, stop]}`` over the flat input, from the env's ``OBS_SLICES``; a Dict key's slices are
named ``<key>.<slice>``), ``observation_dim``, ``action_dim``, ``action_scale`` (JSON list: physical
units per unit action, see the env's docstring), ``control_rate_hz``, ``algorithm``,
``num_timesteps`` and ``training_commit`` (the git commit that trained it, ``unknown`` if not recorded);
then what the env declares for deployment (``env.deploy_metadata()``, each value JSON): the quadruped's
``robot``, ``joint_names`` (our order), ``sdk_joint_names`` and ``sdk_index`` (the robot's SDK order and
the map to it), ``default_pose``, ``kp``, ``kd``, ``torque_limit``, ``gains_source``, ``robot_model``,
``actuator_names``, ``velocity_frame``, ``reset_state``, ``gait_clock``, ``observation_terms``, ``physics``,
``randomization`` and ``fall`` (``envs.quadruped.deploy``; every key tabled in ``docs/export.md``, which
``examples/deploy_mujoco.py`` runs a policy from); and for an actor that does not read
the privileged observation entries (``OpenClaw/QuadrupedTerrain-v1`` without ``agent.perceptive_actor``),
``ignored_inputs`` (JSON list of the layout's names it never reads: a robot may pass zeros there).

A run taught by an adaptive teacher (``distill=adaptive``) also gets ``context_params.json`` beside the policy:
the controller parameters its teacher adopted per task context (:mod:`coach.contexts`), from the checkpoint.
"""

from __future__ import annotations

import json
import shutil
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import gymnasium as gym
import numpy as np
import torch
from hydra.core.config_store import ConfigStore
from omegaconf import DictConfig
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.policies import ActorCriticPolicy
from stable_baselines3.common.vec_env import VecEnv, VecNormalize

from agents import checkpoint, saved_config
from agents.errors import ConfigError
from agents.run_checkpoints import checkpoint_run, find_checkpoint, load_intact, run_config
from agents.vec_env import env_kwargs, make_vec_env
from envs.declarations import action_units

ONNX_FILE = "policy.onnx"
TORCHSCRIPT_FILE = "policy.pt"
INPUT, OUTPUT = "observation", "action"
UNKNOWN = "unknown"  # a metadata value that was not recorded


@dataclass
class ExportConfig:
    """Top-level config of ``export.py`` (``configs/export.yaml``)."""

    run: Optional[str] = None  # run directory made by train.py
    checkpoint: str = "best"  # best | latest | with run=: a checkpoint's name | a checkpoint directory or model zip
    out_dir: Optional[str] = None  # default: <run>/export
    torchscript: bool = False  # also write policy.pt (TorchScript, same input, output and metadata)
    opset: int = 17  # ONNX opset version


def register_config() -> None:
    ConfigStore.instance().store(name="export_schema", node=ExportConfig)


def validate(cfg: DictConfig) -> None:
    """Check values a type cannot; raise :class:`ConfigError` naming the key and the fix."""
    if not cfg.run and cfg.checkpoint in ("best", "latest"):
        raise ConfigError("nothing to export: pass run=<run directory made by train.py> or checkpoint=<.../model.zip>")
    if not 9 <= cfg.opset <= 21:
        raise ConfigError(f"opset={cfg.opset} is invalid: pass an ONNX opset between 9 and 21 (default 17)")
    if cfg.run:
        run_config(Path(cfg.run))  # a missing or damaged run directory
    if cfg.out_dir:
        saved_config.check_output_dir("out_dir", cfg.out_dir)


# ---------------------------------------------------------------------------------------- the module
class DeployedActor(torch.nn.Module):
    """Raw flat observation -> deterministic action in ``[-1, 1]``: normalisation, actor, squash or clip.

    The actor is ``head(latent(features(obs)))`` (the SB3 policy's actor modules only, no critic);
    ``squash``: ``tanh`` (SAC) instead of clipping to ``[-1, 1]`` (PPO's Gaussian mean, as ``predict``).
    ``keys`` (Dict observations): ``(name, width)`` of each Dict key in flat order; the flat input is
    split into the dict the features extractor expects. ``mean``, ``std`` and ``clip`` (one entry per
    flat input) are the frozen ``VecNormalize`` statistics (``0``, ``1``, ``inf`` where nothing is normalised).
    """

    def __init__(
        self,
        features: torch.nn.Module,
        latent: torch.nn.Module,
        head: torch.nn.Module,
        squash: bool,
        keys: list[tuple[str, int]],
        normalization: tuple[np.ndarray, np.ndarray, np.ndarray],
    ) -> None:
        super().__init__()
        self.features, self.latent, self.head, self.squash, self.keys = features, latent, head, squash, keys
        for name, values in zip(("obs_mean", "obs_std", "obs_clip"), normalization):
            self.register_buffer(name, torch.as_tensor(values, dtype=torch.float32))

    def forward(self, observation: torch.Tensor) -> torch.Tensor:
        x = (observation - self.obs_mean) / self.obs_std
        x = torch.minimum(torch.maximum(x, -self.obs_clip), self.obs_clip)
        obs: Any = x
        if self.keys:
            obs, start = {}, 0
            for name, width in self.keys:
                obs[name] = x[:, start : start + width]
                start += width
        action = self.head(self.latent(self.features(obs)))
        return torch.tanh(action) if self.squash else torch.clamp(action, -1.0, 1.0)


def _flat_keys(space: gym.Space) -> list[tuple[str, int]]:
    if isinstance(space, gym.spaces.Dict):
        return [(name, gym.spaces.flatdim(sub)) for name, sub in space.spaces.items()]
    return []


def _normalization(venv: VecEnv, space: gym.Space) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per flat input: the mean, the std and the clip bound that ``venv``'s ``VecNormalize`` applies."""
    dim = gym.spaces.flatdim(space)
    mean, std, clip = np.zeros(dim), np.ones(dim), np.full(dim, np.inf)
    if not (isinstance(venv, VecNormalize) and venv.norm_obs):
        return mean, std, clip
    if isinstance(space, gym.spaces.Dict):
        start = 0
        for name, width in _flat_keys(space):
            if name in venv.norm_obs_keys:
                rms = venv.obs_rms[name]
                mean[start : start + width] = rms.mean
                std[start : start + width] = np.sqrt(rms.var + venv.epsilon)
                clip[start : start + width] = venv.clip_obs
            start += width
    else:
        mean[:], std[:], clip[:] = venv.obs_rms.mean, np.sqrt(venv.obs_rms.var + venv.epsilon), venv.clip_obs
    return mean, std, clip


def deployed_actor(model: BaseAlgorithm, venv: VecEnv) -> DeployedActor:
    """The CPU :class:`DeployedActor` of ``model`` (PPO or SAC) with ``venv``'s frozen normalisation (eval mode)."""
    space = model.observation_space
    action_space = model.action_space
    if not isinstance(action_space, gym.spaces.Box) or not (np.all(action_space.low == -1) and np.all(action_space.high == 1)):
        raise ConfigError(f"action space {action_space} cannot be exported: only Box(-1, 1) actions are supported")
    policy = model.policy.to("cpu").eval()
    if isinstance(policy, ActorCriticPolicy):  # PPO: features -> policy_net -> action_net (the mean)
        parts = (policy.pi_features_extractor, policy.mlp_extractor.policy_net, policy.action_net, False)
    else:  # SAC: the actor's features -> latent_pi -> mu, squashed
        actor = policy.actor
        parts = (actor.features_extractor, actor.latent_pi, actor.mu, True)
    return DeployedActor(*parts, _flat_keys(space), _normalization(venv, space)).eval()


# ---------------------------------------------------------------------------------------- metadata
def training_commit(meta: dict[str, Any]) -> str:
    """The git commit recorded in a checkpoint's ``meta.json`` at training time, or ``unknown``."""
    return str(meta.get(checkpoint.COMMIT_KEY) or UNKNOWN)


def observation_layout(env: gym.Env) -> dict[str, list[int]]:
    """``{name: [start, stop]}`` over the flat observation, from the env's ``OBS_SLICES``."""
    base = env.unwrapped
    slices: dict[str, slice] = getattr(base, "OBS_SLICES", {})
    space = base.observation_space
    if not isinstance(space, gym.spaces.Dict):
        return {name: [s.start, s.stop] for name, s in slices.items()}
    layout, start = {}, 0
    for name, width in _flat_keys(space):
        layout[name] = [start, start + width]
        if name == "observation":
            layout.update({f"{name}.{k}": [start + s.start, start + s.stop] for k, s in slices.items()})
        start += width
    return layout


def export_metadata(env_id: str, kwargs: dict[str, Any], algorithm: str, meta: dict[str, Any]) -> dict[str, str]:
    """The metadata strings written into the exported files (see the module docstring)."""
    env = gym.make(env_id, **kwargs)
    try:
        base = env.unwrapped
        action_dim = int(np.prod(base.action_space.shape))
        scale = action_units(base)
        if scale is None:
            raise ConfigError(f"{env_id}: {type(base).__name__} declares no ACTION_SCALE (physical units per unit action); add it to export")
        return {
            "env_id": env_id,
            "env_version": str(env.spec.version if env.spec is not None and env.spec.version is not None else UNKNOWN),
            "env_kwargs": json.dumps(kwargs, sort_keys=True),
            "observation_keys": json.dumps([name for name, _ in _flat_keys(base.observation_space)]),
            "observation_layout": json.dumps(observation_layout(env)),
            "observation_dim": str(gym.spaces.flatdim(base.observation_space)),
            "action_dim": str(action_dim),
            "action_scale": json.dumps([float(v) for v in scale]),
            "control_rate_hz": repr(1.0 / float(base.dt)),
            "algorithm": algorithm,
            "num_timesteps": str(meta.get("num_timesteps", UNKNOWN)),
            "training_commit": training_commit(meta),
            **{key: json.dumps(value) for key, value in base.deploy_metadata().items()},
        }
    finally:
        env.close()


def ignored_inputs(actor: DeployedActor, layout: dict[str, list[int]]) -> dict[str, str]:
    """``{"ignored_inputs": [...]}`` for an actor that masks observation entries (a blind actor on an env with
    privileged observations, ``agents.students.observation_masks``): the names of the layout's entries it never
    reads, which a deploy script may fill with zeros; ``{}`` for an actor that reads every entry."""
    keep = getattr(actor.features, "keep", None)
    if keep is None:
        return {}
    keep = keep.numpy()
    names = [name for name, (start, stop) in layout.items() if not keep[start:stop].any()]
    return {"ignored_inputs": json.dumps(names)}


# ---------------------------------------------------------------------------------------- writers
def write_onnx(actor: DeployedActor, obs_dim: int, metadata: dict[str, str], path: Path, opset: int = 17) -> Path:
    """Write ``actor`` as ONNX (dynamic batch) with ``metadata`` in ``metadata_props``."""
    import onnx

    example = torch.zeros(1, obs_dim)
    with warnings.catch_warnings():  # the TorchScript-based exporter needs no onnxscript; torch calls it legacy
        warnings.filterwarnings("ignore", message=".*legacy TorchScript-based ONNX export.*", category=DeprecationWarning)
        # a GRU history encoder (agent.history_encoder=gru) starts from a zero state every call: no state input needed
        warnings.filterwarnings("ignore", message="Exporting a model to ONNX with a batch_size other than 1",
                                category=UserWarning)
        warnings.filterwarnings("ignore", category=torch.jit.TracerWarning, module="torch.nn.modules.rnn")  # its size checks
        torch.onnx.export(
            actor,
            (example,),
            str(path),
            dynamo=False,
            input_names=[INPUT],
            output_names=[OUTPUT],
            dynamic_axes={INPUT: {0: "batch"}, OUTPUT: {0: "batch"}},
            opset_version=opset,
        )
    model = onnx.load(str(path))
    onnx.helper.set_model_props(model, metadata)
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


def write_torchscript(actor: DeployedActor, obs_dim: int, metadata: dict[str, str], path: Path) -> Path:
    """Write ``actor`` traced to TorchScript; the metadata goes into ``_extra_files["metadata.json"]``."""
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # torch.jit is in maintenance mode, still loadable from C++
        traced = torch.jit.trace(actor, torch.zeros(1, obs_dim))
        torch.jit.save(traced, str(path), _extra_files={"metadata.json": json.dumps(metadata)})
    return path


# ---------------------------------------------------------------------------------------- the run
@dataclass
class Learned:
    """A checkpoint loaded for export: its run directory and config, the learner, and one evaluation env
    (the run's evaluation kwargs) wrapped in the checkpoint's frozen normalisation."""

    run_dir: Path
    saved: DictConfig
    checkpoint: checkpoint.Checkpoint
    model: BaseAlgorithm
    venv: VecEnv


def load_learned(cfg: DictConfig) -> Learned:
    """The checkpoint ``cfg`` names (``run`` and/or ``checkpoint``, as :class:`ExportConfig`), on the CPU."""
    saved = run_config(Path(cfg.run)) if cfg.run else None  # a bad run directory is the first problem
    ckpt = find_checkpoint(cfg)
    run_dir = checkpoint_run(cfg, ckpt)
    saved = saved or run_config(run_dir)
    venv = make_vec_env(saved.env.id, env_kwargs(saved, evaluation=True), 1)
    model, venv, ckpt = load_intact(saved, cfg.checkpoint, ckpt, venv, "cpu")
    return Learned(run_dir, saved, ckpt, model, venv)


def run(cfg: DictConfig) -> dict[str, Path]:
    """Export the configured checkpoint; return ``{"onnx": path[, "torchscript": path]}``."""
    validate(cfg)
    learned = load_learned(cfg)
    actor = deployed_actor(learned.model, learned.venv)
    learned.venv.close()
    saved = learned.saved
    metadata = export_metadata(saved.env.id, env_kwargs(saved, evaluation=True), saved.agent.name, learned.checkpoint.meta)
    metadata.update(ignored_inputs(actor, json.loads(metadata["observation_layout"])))
    obs_dim = int(metadata["observation_dim"])
    out = Path(cfg.out_dir) if cfg.out_dir else learned.run_dir / "export"
    saved_config.check_output_dir("out_dir", out, out if cfg.out_dir else f"{out} (the default)")
    out.mkdir(parents=True, exist_ok=True)
    paths = {"onnx": write_onnx(actor, obs_dim, metadata, out / ONNX_FILE, cfg.opset)}
    if cfg.torchscript:
        paths["torchscript"] = write_torchscript(actor, obs_dim, metadata, out / TORCHSCRIPT_FILE)
    if learned.checkpoint.context_params is not None:  # what the adaptive teacher adopted, per task context
        paths["context_params"] = out / checkpoint.CONTEXT_PARAMS
        shutil.copyfile(learned.checkpoint.context_params, paths["context_params"])
    return paths
