"""Run a policy exported by ``export.py`` (``policy.onnx``) with onnxruntime, no torch or SB3 needed.

    policy = OnnxPolicy("runs/quadruped-ppo/<date>/export/policy.onnx")
    env = gym.make(policy.env_id, **policy.env_kwargs)
    obs, _ = env.reset(seed=0)
    action = policy.act(obs)                     # one raw observation -> one action in [-1, 1]

:meth:`OnnxPolicy.predict` has SB3's signature, so :func:`agents.evaluation.protocol.evaluate` (and
``evaluate.py checkpoint=policy.onnx``) runs the file on raw, un-normalised vector envs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from agents.errors import ConfigError


def flatten_observation(observation: Any, keys: list[str]) -> np.ndarray:
    """A raw observation (or a batch) as the exported file's flat float32 input.

    ``keys``: the Dict keys in flat order (``[]`` for Box observations), as in the file's
    ``observation_keys`` metadata; the same order ``gymnasium.spaces.flatten`` uses.
    """
    if keys:
        observation = np.concatenate([np.asarray(observation[k], dtype=np.float32) for k in keys], axis=-1)
    return np.asarray(observation, dtype=np.float32)


class OnnxPolicy:
    """An exported ``policy.onnx`` run by onnxruntime on the CPU (``threads`` intra-op threads)."""

    def __init__(self, path: str | Path, threads: int = 1) -> None:
        try:
            import onnxruntime
        except ImportError:
            raise ConfigError(f"{path}: running an ONNX policy needs onnxruntime; pip install -e '.[export]'") from None
        self.path = Path(path)
        if not self.path.is_file():
            raise ConfigError(f"checkpoint={path}: no such file; pass a policy.onnx written by export.py")
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        try:
            self.session = onnxruntime.InferenceSession(str(self.path), options, providers=["CPUExecutionProvider"])
        except Exception as err:  # onnxruntime reports a damaged file as several exception types
            raise ConfigError(f"{path} cannot be loaded ({type(err).__name__}: {err}); re-export it with export.py") from None
        self.metadata: dict[str, str] = dict(self.session.get_modelmeta().custom_metadata_map)
        if "env_id" not in self.metadata:
            raise ConfigError(f"{path} has no env_id metadata; it was not written by export.py")
        self.env_id: str = self.metadata["env_id"]
        self.env_kwargs: dict[str, Any] = json.loads(self.metadata["env_kwargs"])
        self.observation_keys: list[str] = json.loads(self.metadata["observation_keys"])
        self.observation_dim: int | None = int(self.metadata["observation_dim"]) if "observation_dim" in self.metadata else None
        steps = self.metadata.get("num_timesteps", "")
        self.num_timesteps: int | None = int(steps) if steps.isdigit() else None
        self._input = self.session.get_inputs()[0].name

    def __call__(self, flat: np.ndarray) -> np.ndarray:
        """Actions for a ``(batch, obs_dim)`` float32 array of flat raw observations."""
        return self.session.run(None, {self._input: flat})[0]

    def act(self, observation: Any) -> np.ndarray:
        """The action for one raw observation (an array, or a dict for the claw)."""
        return self(flatten_observation(observation, self.observation_keys)[None])[0]

    def predict(self, observation: Any, state: Any = None, episode_start: Any = None, deterministic: bool = True):
        """SB3-style: actions for a batch of raw observations from a vector env, and ``state`` unchanged."""
        if not deterministic:
            raise ValueError("an exported policy is the deterministic actor; call predict(..., deterministic=True)")
        return self(flatten_observation(observation, self.observation_keys)), state
