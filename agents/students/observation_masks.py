"""Which observation entries a PPO student's actor and critic read: asymmetric actor-critic on envs with
privileged observations.

An env with privileged observations declares them as ``env.privileged_obs`` (name -> slice of its Box
observation; e.g. ``OpenClaw/QuadrupedTerrain-v1``'s ``height_scan``, ``friction``, ``true_lin_vel``), the rest
being what a robot measures. :class:`MaskedActorCriticPolicy` is SB3's ``ActorCriticPolicy`` whose actor and
critic each multiply the (normalised) observation by a 0/1 mask before their networks, so a masked entry
never reaches them (MuJoCo Playground's ``state`` / ``privileged_state``; legged_gym's ``privileged_obs``).
The masks come from two switches (:func:`observation_masks`): ``privileged_critic`` (the critic reads every
entry) and ``perceptive_actor`` (the actor reads the height scan too). The exported actor keeps its mask:
its file takes the full observation and ignores the masked entries (pass anything there, e.g. zeros).
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import torch
from stable_baselines3.common.policies import ActorCriticPolicy
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor

SCAN = "height_scan"  # the privileged entry a perceptive actor reads


class ObservationMask(BaseFeaturesExtractor):
    """Flat observation times a fixed 0/1 ``keep`` vector (one entry per observation value)."""

    def __init__(self, observation_space: gym.spaces.Box, keep: list[float]) -> None:
        super().__init__(observation_space, features_dim=len(keep))
        self.register_buffer("keep", torch.as_tensor(keep, dtype=torch.float32))

    def forward(self, observations: torch.Tensor) -> torch.Tensor:
        return observations.flatten(1) * self.keep


class MaskedActorCriticPolicy(ActorCriticPolicy):
    """``ActorCriticPolicy`` with separate masked inputs: ``actor_keep`` and ``critic_keep`` (0/1 per entry)."""

    def __init__(self, *args, actor_keep: list[float], critic_keep: list[float], **kwargs) -> None:
        kwargs["share_features_extractor"] = False
        super().__init__(*args, **kwargs)
        self.pi_features_extractor = ObservationMask(self.observation_space, actor_keep)
        self.vf_features_extractor = ObservationMask(self.observation_space, critic_keep)
        self.features_extractor = self.pi_features_extractor


def observation_masks(dim: int, privileged: dict[str, slice], privileged_critic: bool,
                      perceptive_actor: bool) -> tuple[list[float], list[float]]:
    """``(actor_keep, critic_keep)`` for a ``dim``-entry observation whose ``privileged`` slices are hidden from
    the actor (but the height scan with ``perceptive_actor``) and from the critic unless ``privileged_critic``."""
    actor, critic = np.ones(dim), np.ones(dim)
    for name, entries in privileged.items():
        if not (perceptive_actor and name == SCAN):
            actor[entries] = 0.0
        if not privileged_critic:
            critic[entries] = 0.0
    return actor.tolist(), critic.tolist()
