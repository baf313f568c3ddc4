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

``history_frames`` (``agent.history_encoder=gru``, an env with ``history_steps`` > 1): the actor reads its k
proprioceptive frames through a GRU (:class:`HistoryGRU`, oldest frame first, its last hidden state) instead of
as k flat frames: a recurrent encoder over the same window (Lee et al. 2020 use a TCN over it), stateless from
one control step to the next, so it trains, evaluates and exports as the flat actor does.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import torch
from stable_baselines3.common.policies import ActorCriticPolicy
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor, MlpExtractor

SCAN = "height_scan"  # the privileged entry a perceptive actor reads


class ObservationMask(BaseFeaturesExtractor):
    """Flat observation times a fixed 0/1 ``keep`` vector (one entry per observation value)."""

    def __init__(self, observation_space: gym.spaces.Box, keep: list[float]) -> None:
        super().__init__(observation_space, features_dim=len(keep))
        self.register_buffer("keep", torch.as_tensor(keep, dtype=torch.float32))

    def forward(self, observations: torch.Tensor) -> torch.Tensor:
        return observations.flatten(1) * self.keep


class HistoryGRU(ObservationMask):
    """The masked observation's entries outside the history slots, followed by a GRU's last hidden state (``hidden``
    values) over the k proprioceptive frames, oldest first: ``frames`` (k, F) holds each frame's entry indices,
    ``frames[-1]`` the current observation's frame; ``frames[:-1]``, the history slots, are read by the GRU only."""

    def __init__(self, observation_space: gym.spaces.Box, keep: list[float], frames: list[list[int]],
                 hidden: int = 64) -> None:
        index = np.asarray(frames, dtype=np.int64)
        rest = np.setdiff1d(np.arange(len(keep)), index[:-1].ravel())
        super().__init__(observation_space, keep)
        self._features_dim = len(rest) + hidden
        self.register_buffer("frames", torch.as_tensor(index))
        self.register_buffer("rest", torch.as_tensor(rest))
        self.gru = torch.nn.GRU(index.shape[1], hidden, batch_first=True)

    def forward(self, observations: torch.Tensor) -> torch.Tensor:
        masked = super().forward(observations)
        _, last = self.gru(masked[:, self.frames])  # (batch, k, F) -> (1, batch, hidden)
        return torch.cat((masked[:, self.rest], last[0]), dim=1)


class MaskedActorCriticPolicy(ActorCriticPolicy):
    """``ActorCriticPolicy`` with separate masked inputs: ``actor_keep`` and ``critic_keep`` (0/1 per entry); with
    ``history_frames`` (:class:`HistoryGRU`'s ``frames``) the actor reads the frames through a GRU."""

    def __init__(self, *args, actor_keep: list[float], critic_keep: list[float],
                 history_frames: list[list[int]] | None = None, **kwargs) -> None:
        kwargs["share_features_extractor"] = False
        self._actor_keep, self._critic_keep, self._frames = actor_keep, critic_keep, history_frames
        super().__init__(*args, **kwargs)

    def make_features_extractor(self) -> BaseFeaturesExtractor:
        """SB3 calls this for the actor's extractor (its first call, before ``features_extractor`` is set), then
        for the critic's, before it builds the networks on their ``features_dim``."""
        if "features_extractor" not in self._modules:
            if self._frames is None:
                return ObservationMask(self.observation_space, self._actor_keep)
            return HistoryGRU(self.observation_space, self._actor_keep, self._frames)
        return ObservationMask(self.observation_space, self._critic_keep)

    def _build_mlp_extractor(self) -> None:
        """SB3's networks on the actor's features; the critic's value network on its own (they differ in size with
        a :class:`HistoryGRU`)."""
        super()._build_mlp_extractor()
        critic_dim = self.vf_features_extractor.features_dim
        if critic_dim != self.features_dim:
            critic = MlpExtractor(critic_dim, net_arch=self.net_arch, activation_fn=self.activation_fn, device=self.device)
            self.mlp_extractor.value_net = critic.value_net


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
