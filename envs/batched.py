"""Vector env whose copies' physics advance together in one native, multithreaded MuJoCo call.

:class:`BatchedSimulation` holds ``N`` instances of one OpenClaw env (any
:class:`~envs.base.MujocoTaskEnv`, made with ``gymnasium.make`` so that the registered ``TimeLimit``
still truncates). Each step it applies every env's action exactly as that env's own ``step()`` does
(validation and clipping, the ``ctrl`` write, per-step task logic such as pushes), then advances
all ``N`` simulations by ``frame_skip`` ``mj_step``\\ s with one :class:`mujoco.batch.Batch` call,
which releases the GIL and runs on a persistent pool of native threads, and finally computes
observations, rewards, terminations and infos: for all copies at once with array maths when the
env class is batch-native (:meth:`~envs.base.MujocoTaskEnv.finish_batch`, the same functions its
single ``step()`` runs; both OpenClaw envs), else with each env's own methods. A step's result is a
:class:`BatchStep` of arrays; :class:`InfoBatch` turns its infos into per-env dicts only when asked.

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

    vec = BatchedVecEnv("OpenClaw/Quadruped-v1", num_envs=16)   # threads: one per CPU core
    obs, info = vec.reset(seed=0)
    obs, reward, terminated, truncated, info = vec.step(vec.action_space.sample())
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import mujoco
import numpy as np
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space, concatenate, create_empty_array
from mujoco import batch as mjbatch

from envs.base import MujocoTaskEnv, clip_actions

_STATE = mujoco.mjtState.mjSTATE_INTEGRATION.value  # everything mj_step reads from one call to the next
_DERIVED = ("sensordata", "actuator_force")  # derived fields the envs' observations and rewards read


def _state_offset(model: mujoco.MjModel, component: mujoco.mjtState) -> int:
    """Where ``component`` (e.g. ``mjSTATE_QPOS``) starts in an ``mjSTATE_INTEGRATION`` state row."""
    return mujoco.mj_stateSize(model, _STATE & (component.value - 1))


def _scalar_arrays(infos: list[dict[str, Any]]) -> dict[str, np.ndarray] | None:
    """One array per key when every info has the same keys with Python scalars of one type per key
    (dtype: that type, as ``VectorEnv._add_info`` makes it), else None."""
    first = infos[0]
    if not all(info.keys() == first.keys() for info in infos):
        return None
    arrays = {}
    for key in first:
        values = [info[key] for info in infos]
        kind = type(values[0])
        if kind not in (bool, int, float) or any(type(v) is not kind for v in values):
            return None
        arrays[key] = np.array(values, dtype=kind)
    return arrays


class InfoBatch:
    """The infos of a batch of env steps, as one array per key (``(N,)``, see ``finish_batch``) or
    as one dict per env, whichever it was made from; each form is built from the other on demand."""

    def __init__(self, arrays: dict[str, np.ndarray] | None = None, dicts: list[dict[str, Any]] | None = None):
        self._arrays, self._dicts = arrays, dicts

    def arrays(self) -> dict[str, np.ndarray] | None:
        """One array per key, or None when the envs' infos differ in keys or value types."""
        if self._arrays is None and self._dicts:
            self._arrays = _scalar_arrays(self._dicts)
        return self._arrays

    def dicts(self) -> list[dict[str, Any]]:
        """One new-or-owned dict per env with Python scalars, as the envs' ``step()`` returns them."""
        if self._dicts is None:
            keys, columns = list(self._arrays), [a.tolist() for a in self._arrays.values()]
            self._dicts = [dict(zip(keys, row)) for row in zip(*columns)]
        return self._dicts

    def replace(self, j: int, info: dict[str, Any]) -> None:
        """Make ``info`` the info of the batch's ``j``-th env."""
        self.dicts()[j] = info
        self._arrays = None


@dataclass
class BatchStep:
    """One step of envs ``ids``: a row per id, in order."""

    ids: np.ndarray  # env indices
    obs: Any  # the observations: an (n, ...) array, or a dict of them
    rewards: np.ndarray  # (n,) float64
    terminated: np.ndarray  # (n,) bool
    truncated: np.ndarray  # (n,) bool, TimeLimit's truncation
    infos: InfoBatch

    def obs_of(self, j: int) -> Any:
        """The ``j``-th env's observation (views of the batch's rows)."""
        return {k: v[j] for k, v in self.obs.items()} if isinstance(self.obs, dict) else self.obs[j]


def _set_rows(batch: Any, rows: Any, values: Any) -> None:
    """``batch[rows] = values`` for an array or, key by key, a dict of arrays."""
    if isinstance(batch, dict):
        for key, array in batch.items():
            array[rows] = values[key]
    else:
        batch[rows] = values


def _copy_row(batch: Any, i: int) -> Any:
    return {k: v[i].copy() for k, v in batch.items()} if isinstance(batch, dict) else batch[i].copy()


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
        # batch-native env classes compute the step's control and results for all copies at once
        self._cls = type(first)
        self._native = all(getattr(self._cls, name).__func__ is not getattr(MujocoTaskEnv, name).__func__
                           for name in ("apply_batch", "finish_batch"))
        m, c = first.model, mujoco.mjtState
        qpos, qvel, ctrl = (_state_offset(m, k) for k in (c.mjSTATE_QPOS, c.mjSTATE_QVEL, c.mjSTATE_CTRL))
        self._qpos, self._qvel, self._ctrl = slice(qpos, qpos + m.nq), slice(qvel, qvel + m.nv), slice(ctrl, ctrl + m.nu)
        self._observation_space = self.envs[0].observation_space
        self.obs = create_empty_array(self._observation_space, num_envs)  # every env's latest observation

    @property
    def nthread(self) -> int:
        """Native threads stepping the physics (the caller's included)."""
        return self._batch.nthread if self._batch is not None else 0

    def reset(self, i: int, seed: int | None = None, options: dict[str, Any] | None = None):
        """Reset env ``i`` as ``gymnasium.make``'s wrappers do; returns ``(obs, info)``."""
        self.elapsed_steps[i] = 0
        obs, info = self.tasks[i].reset(seed=seed, options=options)
        self._batch.set_models([task.model for task in self.tasks])  # a reset may edit the model
        _set_rows(self.obs, i, obs)
        return obs, info

    def step(self, actions: np.ndarray, ids: Sequence[int] | np.ndarray | None = None) -> BatchStep:
        """Step envs ``ids`` (all when None) with ``actions[i]``; row ``j`` of the result equals
        ``gymnasium.make(...).step(actions[ids[j]])``."""
        if self._batch is None:
            raise RuntimeError("step() on a closed BatchedSimulation")
        expected = (self.num_envs, *self.tasks[0].action_space.shape)
        if np.shape(actions) != expected:
            raise ValueError(
                f"the action batch has shape {np.shape(actions)}; expected {expected} (one action per env)"
            )
        ids = self._all if ids is None else np.asarray(ids, dtype=np.int64)
        id_list = ids.tolist()
        tasks, state = self.tasks, self._state
        stepped = [tasks[i] for i in id_list]
        a = np.asarray(actions, dtype=np.float64)[ids]
        clipped = clip_actions(a, a)  # raises for NaN/inf before anything changes
        if self._native and id_list:
            self._cls.before_physics_batch(stepped)  # task logic such as pushes; the controls come below
        for j, task in enumerate(stepped):
            if not self._native:
                task.prepare_step(clipped[j])
            mujoco.mj_getState(task.model, task.data, state[id_list[j]], _STATE)
        if self._native and id_list:
            state[ids, self._ctrl] = self._cls.apply_batch(stepped, clipped, state[ids, self._qpos])
        self._warning[...] = 0
        self._batch.step(None if len(id_list) == self.num_envs else ids, nstep=self.frame_skip)
        warned = np.flatnonzero(self._warning[:, :, 1].any(axis=1)).tolist()
        for i in id_list:
            task = tasks[i]
            mujoco.mj_setState(task.model, task.data, state[i], _STATE)
            for target, source in zip(self._targets[i], self._derived):
                np.copyto(target, source[i])
        for i in warned:
            self._add_warnings(tasks[i].data, self._warning[i])
        if not (self._native and id_list):
            result = self._finish_one_by_one(ids, stepped, clipped)
        else:
            rows = state[ids]
            derived = {name: source[ids] for name, source in zip(_DERIVED, self._derived)}
            batch = self._cls.finish_batch(stepped, clipped, rows[:, self._qpos], rows[:, self._qvel], derived)
            result = BatchStep(ids, batch[0], batch[1], batch[2], np.zeros(len(id_list), dtype=np.bool_),
                               InfoBatch(arrays=batch[3]))
            position = {i: j for j, i in enumerate(id_list)}
            for i in warned:
                if i in position and tasks[i].diverged():
                    self._blowup(result, position[i], tasks[i], _copy_row(self.obs, i))
        self.elapsed_steps[ids] += 1
        if self.max_episode_steps is not None:
            result.truncated |= self.elapsed_steps[ids] >= self.max_episode_steps
        _set_rows(self.obs, ids, result.obs)
        return result

    def _finish_one_by_one(self, ids: np.ndarray, tasks: list[MujocoTaskEnv], actions: np.ndarray) -> BatchStep:
        """The batch's results from each env's own ``finish_step``."""
        results = [task.finish_step(action) for task, action in zip(tasks, actions)]
        obs, rewards, terminated, truncated, infos = ([r[k] for r in results] for k in range(5))
        batch_obs = create_empty_array(self._observation_space, len(obs))
        if obs:
            batch_obs = concatenate(self._observation_space, obs, batch_obs)
        return BatchStep(ids, batch_obs, np.array(rewards, dtype=np.float64), np.array(terminated, dtype=np.bool_),
                         np.array(truncated, dtype=np.bool_), InfoBatch(dicts=infos))

    @staticmethod
    def _blowup(result: BatchStep, j: int, task: MujocoTaskEnv, last_obs: Any) -> None:
        """Row ``j`` of ``result`` becomes ``task``'s physics blow-up transition (after ``last_obs``)."""
        task._last_obs = last_obs
        obs, result.rewards[j], result.terminated[j], _, info = task.blowup_transition()
        _set_rows(result.obs, j, obs)
        result.infos.replace(j, info)

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
        infos: list[dict[str, Any] | None] = [None] * self.num_envs
        for i in np.flatnonzero(mask).tolist():
            infos[i] = self.sim.reset(i, seed=seed[i], options=options)[1]
        self._needs_reset = False
        return self._observations(), self._aggregate(infos)

    def step(self, actions):
        if self._needs_reset:
            raise gym.error.ResetNeeded("Cannot call step() before reset()")
        n = self.num_envs
        resetting = self._autoreset_envs
        step = self.sim.step(actions, np.flatnonzero(~resetting))
        rewards = np.zeros(n, dtype=np.float64)
        terminations = np.zeros(n, dtype=np.bool_)
        truncations = np.zeros(n, dtype=np.bool_)
        rewards[step.ids], terminations[step.ids], truncations[step.ids] = step.rewards, step.terminated, step.truncated
        arrays = step.infos.arrays()
        if arrays is not None and not resetting.any():
            infos = self._with_masks(arrays)
        else:
            per_env: list[dict[str, Any] | None] = [None] * n
            for i, info in zip(step.ids.tolist(), step.infos.dicts()):
                per_env[i] = info
            for i in np.flatnonzero(resetting).tolist():
                per_env[i] = self.sim.reset(i)[1]
            infos = self._aggregate(per_env)
        self._autoreset_envs = terminations | truncations
        return self._observations(), rewards, terminations, truncations, infos

    def _with_masks(self, arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Info arrays of every env with their all-true ``_key`` masks, in ``SyncVectorEnv``'s key order."""
        merged = {}
        for key, values in arrays.items():
            merged[key] = values
            merged[f"_{key}"] = np.ones(self.num_envs, dtype=np.bool_)
        return merged

    def _aggregate(self, infos: list[dict[str, Any] | None]) -> dict[str, Any]:
        """Infos of the envs (None: not reset) merged as ``SyncVectorEnv`` merges them.

        That is ``VectorEnv._add_info`` env by env (a value array and a ``_key`` mask per key); when
        every env reports the same keys with Python scalars of one type per key, as on most steps,
        the arrays are built a key at a time instead (~5x faster, same arrays).
        """
        arrays = _scalar_arrays(infos) if all(info is not None for info in infos) else None
        if arrays is not None:
            return self._with_masks(arrays)
        merged = {}
        for i, info in enumerate(infos):
            if info is not None:
                merged = self._add_info(merged, info, i)
        return merged

    def _observations(self):
        """A copy of every env's latest observation."""
        obs = self.sim.obs
        return {k: v.copy() for k, v in obs.items()} if isinstance(obs, dict) else obs.copy()

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
