"""Vector env whose copies' physics advance together in one native, multithreaded MuJoCo call.

:class:`BatchedSimulation` holds ``N`` instances of one OpenClaw env (any
:class:`~envs.base.MujocoTaskEnv`, made with ``gymnasium.make`` so that the registered ``TimeLimit``
still truncates). Each step it applies every env's action exactly as that env's own ``step()`` does
(validation and clipping, the ``ctrl`` write, per-step task logic such as pushes), then advances
all ``N`` simulations by ``frame_skip`` ``mj_step``\\ s with one :class:`mujoco.batch.Batch` call,
which releases the GIL and runs on a persistent pool of native threads, and finally computes
observations, rewards, terminations and infos with each env's own methods.

The batch only borrows each env's model and state: before the call every env's
``mjSTATE_INTEGRATION`` (time, qpos, qvel, act, warm-start accelerations, ctrl, applied forces,
mocap poses, ...) is copied into the batch's state row, afterwards the row is copied back together
with the derived fields the envs read (``sensordata``, ``actuator_force``, both one substep behind
the state, as after ``mj_step``) and MuJoCo's warning counters, so ``info["physics_blowup"]`` still
fires. MuJoCo steps the row exactly as it steps the env's own ``MjData``, so trajectories are
bit-identical to stepping the envs one by one, at any thread count. Other derived fields of
``env.data`` (body poses, contacts) are not updated, which is why these vector envs do not render.

:class:`BatchedVecEnv` is the Gymnasium vector env (autoreset and infos as ``SyncVectorEnv``'s
default ``NEXT_STEP`` mode); ``agents.vec_env.BatchedDummyVecEnv`` is the Stable-Baselines3 one.

Example::

    import envs
    from envs.batched import BatchedVecEnv

    vec = BatchedVecEnv("OpenClaw/Quadruped-v0", num_envs=16)   # threads: one per CPU core
    obs, info = vec.reset(seed=0)
    obs, reward, terminated, truncated, info = vec.step(vec.action_space.sample())
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import mujoco
import numpy as np
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space, concatenate, create_empty_array
from mujoco import batch as mjbatch

from envs.base import MujocoTaskEnv

_STATE = mujoco.mjtState.mjSTATE_INTEGRATION.value  # everything mj_step reads from one call to the next
_DERIVED = ("sensordata", "actuator_force")  # derived fields the envs' observations and rewards read


class BatchedSimulation:
    """``num_envs`` copies of ``env_id`` whose physics steps in one multithreaded native call.

    ``kwargs`` go to ``gymnasium.make`` (env arguments and ``max_episode_steps``). ``nthread``
    threads (default: the CPU cores this process may use, at most ``num_envs``) live for the
    object's lifetime; :meth:`close` stops them. Renders nothing (``render_mode`` is refused).
    """

    def __init__(self, env_id: str, num_envs: int, *, nthread: int | None = None, **kwargs: Any) -> None:
        if num_envs < 1:
            raise ValueError(f"num_envs={num_envs} must be >= 1")
        if kwargs.get("render_mode") is not None:
            raise ValueError("batched vector envs do not render; use vectorization mode 'sync' or 'dummy' for videos")
        self.envs = [gym.make(env_id, **kwargs) for _ in range(num_envs)]
        self.tasks: list[MujocoTaskEnv] = [env.unwrapped for env in self.envs]
        first = self.tasks[0]
        if not isinstance(first, MujocoTaskEnv):
            raise TypeError(f"{env_id} is a {type(first).__name__}, not an envs.base.MujocoTaskEnv")
        max_steps = self.envs[0].spec.max_episode_steps if self.envs[0].spec is not None else None
        self.max_episode_steps = max_steps if max_steps is not None and max_steps > 0 else None
        self.frame_skip = first.frame_skip
        self.num_envs = num_envs
        self.elapsed_steps = np.zeros(num_envs, dtype=np.int64)  # TimeLimit's counter, per env
        nthread = min(num_envs, len(os.sched_getaffinity(0))) if nthread is None else int(nthread)
        self._batch: mjbatch.Batch | None = mjbatch.Batch(first.model, num_envs, nthread)
        self._batch.set_models([task.model for task in self.tasks])  # per-env models (terrain, randomization)
        self._state = self._batch.state
        self._derived = [self._batch.bind(name) for name in _DERIVED]
        self._warning = self._batch.warning  # (num_envs, mjNWARNING, (lastinfo, number))
        self._targets = [tuple(getattr(task.data, name) for name in _DERIVED) for task in self.tasks]
        self._all = np.arange(num_envs)

    @property
    def nthread(self) -> int:
        """Native threads stepping the physics (the caller's included)."""
        return self._batch.nthread if self._batch is not None else 0

    def reset(self, i: int, seed: int | None = None, options: dict[str, Any] | None = None):
        """Reset env ``i`` as ``gymnasium.make``'s wrappers do; returns ``(obs, info)``."""
        self.elapsed_steps[i] = 0
        obs, info = self.tasks[i].reset(seed=seed, options=options)
        self._batch.set_models([task.model for task in self.tasks])  # a reset may edit the model
        return obs, info

    def step(self, actions: np.ndarray, ids: Sequence[int] | np.ndarray | None = None) -> list[tuple]:
        """Step envs ``ids`` (all when None) with ``actions[i]``; one ``(obs, reward, terminated,
        truncated, info)`` per id, in order, equal to ``gymnasium.make(...).step(actions[i])``."""
        if self._batch is None:
            raise RuntimeError("step() on a closed BatchedSimulation")
        expected = (self.num_envs, *self.tasks[0].action_space.shape)
        if np.shape(actions) != expected:
            raise ValueError(
                f"the action batch has shape {np.shape(actions)}; expected {expected} (one action per env)"
            )
        ids = self._all if ids is None else np.asarray(ids, dtype=np.int64)
        tasks, state = self.tasks, self._state
        clipped = []
        for i in ids.tolist():
            task = tasks[i]
            clipped.append(task._prepare_step(actions[i]))
            mujoco.mj_getState(task.model, task.data, state[i], _STATE)
        self._warning[...] = 0
        self._batch.step(None if len(ids) == self.num_envs else ids, nstep=self.frame_skip)
        warned = set(np.flatnonzero(self._warning[:, :, 1].any(axis=1)).tolist())
        results = []
        for i, action in zip(ids.tolist(), clipped):
            task = tasks[i]
            mujoco.mj_setState(task.model, task.data, state[i], _STATE)
            for target, source in zip(self._targets[i], self._derived):
                np.copyto(target, source[i])
            if i in warned:
                self._add_warnings(task.data, self._warning[i])
            obs, reward, terminated, truncated, info = task._finish_step(action)
            self.elapsed_steps[i] += 1
            if self.max_episode_steps is not None and self.elapsed_steps[i] >= self.max_episode_steps:
                truncated = True
            results.append((obs, reward, terminated, truncated, info))
        return results

    @staticmethod
    def _add_warnings(data: mujoco.MjData, counts: np.ndarray) -> None:
        """Add one call's MuJoCo warnings (``(lastinfo, number)`` rows) to ``data.warning``."""
        for w in np.flatnonzero(counts[:, 1]).tolist():
            data.warning[w].lastinfo = int(counts[w, 0])
            data.warning[w].number += int(counts[w, 1])

    def close(self) -> None:
        """Stop the threads and close the envs; idempotent."""
        if self._batch is None:
            return
        self._batch = None  # the pool's threads end when the batch is freed
        self._state = self._derived = self._warning = None
        for env in self.envs:
            env.close()


class BatchedVecEnv(gym.vector.VectorEnv):
    """Gymnasium vector env over :class:`BatchedSimulation`, a drop-in for ``SyncVectorEnv``.

    Same seeds and actions give the same observations, rewards, terminations, truncations and
    infos as ``gymnasium.make_vec(env_id, num_envs, vectorization_mode="sync")``, bit for bit:
    ``NEXT_STEP`` autoreset (an env that ended is reset by the following ``step()``, which reports
    reward 0 for it), ``reset(seed=s)`` seeds env ``i`` with ``s + i``, ``options["reset_mask"]``
    resets a subset, and infos are aggregated into arrays with ``_key`` masks. Observations are
    ``float32`` batches (a dict of them for the claw); rewards ``float64``.
    """

    def __init__(self, env_id: str, num_envs: int, *, nthread: int | None = None, **kwargs: Any) -> None:
        self.sim = BatchedSimulation(env_id, num_envs, nthread=nthread, **kwargs)
        env = self.sim.envs[0]
        self.num_envs = num_envs
        self.metadata = {**env.metadata, "autoreset_mode": AutoresetMode.NEXT_STEP}
        self.render_mode = None
        self.single_observation_space = env.observation_space
        self.single_action_space = env.action_space
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)
        self._autoreset_envs = np.zeros(num_envs, dtype=np.bool_)
        self._env_obs: list[Any] = [None] * num_envs  # each env's latest observation
        self._needs_reset = True

    @property
    def envs(self) -> list[gym.Env]:
        """The sub-envs as ``gymnasium.make`` returned them (step them only through this vector env)."""
        return self.sim.envs

    def reset(self, *, seed: int | list[int | None] | None = None, options: dict[str, Any] | None = None):
        if seed is None:
            seed = [None] * self.num_envs
        elif isinstance(seed, int):
            seed = [seed + i for i in range(self.num_envs)]
        if len(seed) != self.num_envs:
            raise ValueError(f"a list of seeds must have num_envs={self.num_envs} entries, got {len(seed)}")
        mask = np.ones(self.num_envs, dtype=np.bool_)
        if options is not None and "reset_mask" in options:
            options = dict(options)
            mask = options.pop("reset_mask")
            valid = isinstance(mask, np.ndarray) and mask.shape == (self.num_envs,) and mask.dtype == np.bool_
            if not (valid and mask.any()):
                raise ValueError(f"options['reset_mask'] must be a bool array of shape ({self.num_envs},) with a True entry")
        self._autoreset_envs[mask] = False
        obs, infos = list(self._env_obs), [None] * self.num_envs
        for i in np.flatnonzero(mask).tolist():
            obs[i], infos[i] = self.sim.reset(i, seed=seed[i], options=options)
        self._env_obs = obs
        self._needs_reset = False
        return self._concatenate(obs), self._aggregate(infos)

    def step(self, actions):
        if self._needs_reset:
            raise gym.error.ResetNeeded("Cannot call step() before reset()")
        n = self.num_envs
        resetting = self._autoreset_envs
        stepped = iter(self.sim.step(actions, np.flatnonzero(~resetting)))
        obs: list[Any] = [None] * n
        rewards = np.zeros(n, dtype=np.float64)
        terminations = np.zeros(n, dtype=np.bool_)
        truncations = np.zeros(n, dtype=np.bool_)
        infos: list[dict[str, Any]] = [{}] * n
        for i in range(n):
            if resetting[i]:
                obs[i], infos[i] = self.sim.reset(i)
            else:
                obs[i], rewards[i], terminations[i], truncations[i], infos[i] = next(stepped)
        self._env_obs = obs
        self._autoreset_envs = terminations | truncations
        return self._concatenate(obs), rewards, terminations, truncations, self._aggregate(infos)

    def _aggregate(self, infos: list[dict[str, Any] | None]) -> dict[str, Any]:
        """Infos of the envs (None: not reset) merged as ``SyncVectorEnv`` merges them.

        That is ``VectorEnv._add_info`` env by env (a value array and a ``_key`` mask per key); when
        every env reports the same keys with Python scalars of one type per key, as on most steps,
        the arrays are built a key at a time instead (~5x faster, same arrays).
        """
        if all(info is not None and info.keys() == infos[0].keys() for info in infos):
            merged = {}
            for key in infos[0]:
                values = [info[key] for info in infos]
                kind = type(values[0])
                if kind not in (bool, int, float) or any(type(v) is not kind for v in values):
                    break
                merged[key] = np.array(values, dtype=kind)
                merged[f"_{key}"] = np.ones(self.num_envs, dtype=np.bool_)
            else:
                return merged
        merged = {}
        for i, info in enumerate(infos):
            if info is not None:
                merged = self._add_info(merged, info, i)
        return merged

    def _concatenate(self, obs: list[Any]):
        out = create_empty_array(self.single_observation_space, self.num_envs)
        return concatenate(self.single_observation_space, obs, out)

    def call(self, name: str, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        results = []
        for env in self.envs:
            attr = env.get_wrapper_attr(name)
            results.append(attr(*args, **kwargs) if callable(attr) else attr)
        return tuple(results)

    def get_attr(self, name: str) -> tuple[Any, ...]:
        return self.call(name)

    def set_attr(self, name: str, values: Any) -> None:
        if not isinstance(values, (list, tuple)):
            values = [values] * self.num_envs
        if len(values) != self.num_envs:
            raise ValueError(f"values must be one value or num_envs={self.num_envs} of them, got {len(values)}")
        for env, value in zip(self.envs, values):
            env.set_wrapper_attr(name, value)

    def close_extras(self, **kwargs: Any) -> None:
        self.sim.close()
