"""The quadruped's domain and sim-to-real randomisation, for one env and for the batch: :class:`Randomization`.

What is drawn, per episode unless noted (the Arguments table of :class:`~envs.quadruped.QuadrupedEnv`'s
docstring; defaults in :mod:`envs.quadruped.config`):

* ``domain_randomization``: foot friction ``U(0.4, 1.25)``, link masses and inertias ``x U(0.9, 1.1)``,
  servo Kp ``x U(0.9, 1.1)`` (``DR_FOOT_FRICTION``, ``DR_MASS_SCALE``, ``DR_KP_SCALE``);
* ``motor_strength``, ``kp_scale``, ``kd_scale``: per joint, the PD torque and the gains ``x U(lo, hi)``;
* ``action_delay_steps``: the servos get the action of ``d ~ U{lo..hi}`` control steps ago;
* ``push_interval_s`` / ``push_velocity``: every interval (per step), a random planar trunk velocity kick;
* ``obs_noise``: per step, uniform noise on the observation (``OBS_NOISE_SCALES``).

:class:`Randomization` is a base of :class:`~envs.quadruped.QuadrupedEnv`: its methods read and write the
env's model, state and random generator (``np_random``), so the draws come from the env's one seeded stream
in the order the env's reset and step call them; the batched vector env (``envs.batched``) calls the same methods
of each copy (the same draws, the same bits). The per-copy state they keep (the action delay line, the push clock)
is the task state's (``envs.quadruped.task_state``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from envs.quadruped.config import DR_FOOT_FRICTION, DR_KP_SCALE, DR_MASS_SCALE


@dataclass(frozen=True)
class ModelRows:
    """N copies' randomised model fields, one row per copy (``(N, ...)`` arrays, numpy or torch): the MjModel arrays of
    those names, and each copy's ``domain_randomization`` Kp factor (N, nu)."""

    geom_friction: Any
    pair_friction: Any
    body_mass: Any
    body_inertia: Any
    actuator_gainprm: Any
    actuator_biasprm: Any
    kp_factor: Any


class Randomization:
    """Domain and sim-to-real randomisation of a :class:`~envs.quadruped.QuadrupedEnv` (module docstring)."""

    def _init_randomization(self, config) -> None:
        """Keep the model's nominal physical parameters (restored and randomized per reset), set up the action
        delay line and the push clock, from the checked ``config`` (a ``QuadrupedConfig``)."""
        m = self.model
        self._nominal_mass = m.body_mass.copy()
        self._nominal_inertia = m.body_inertia.copy()
        self._nominal_kp = m.actuator_gainprm[:, 0].copy()
        self._nominal_kd_bias = m.actuator_biasprm[:, 2].copy()  # -Kd
        self._kp_factor = np.ones(m.nu)  # domain_randomization's Kp draw of the episode
        self._randomize_gains = any(r != (1.0, 1.0) for r in (config.motor_strength, config.kp_scale, config.kd_scale))
        self._max_delay = config.action_delay_steps[1]  # control steps (the state's delay line holds this many + 1)
        pushes = config.push_interval_s > 0 and config.push_velocity > 0
        self._push_every = max(1, int(round(config.push_interval_s / self.dt))) if pushes else 0  # steps

    def _model_rows(self) -> ModelRows:
        """This env's randomised model fields as one row each (views: writing a row writes the model)."""
        m = self.model
        return ModelRows(m.geom_friction[None], m.pair_friction[None], m.body_mass[None], m.body_inertia[None],
                         m.actuator_gainprm[None], m.actuator_biasprm[None], self._kp_factor[None])

    def _set_foot_friction(self, friction: float | np.ndarray) -> None:
        """The feet's sliding friction coefficient (one for all, or one per foot in our leg order)."""
        self.set_foot_friction(self, self._model_rows(), friction)

    def _randomize_physics(self) -> None:
        self.randomize_physics(self, self._model_rows(), self.np_random.uniform)

    def _randomize_servos(self) -> None:
        self.randomize_servos(self, self._model_rows(), self.np_random.uniform)

    # the draws for N copies' model rows (one env: N = 1 and its generator; envs.quadruped.warp_sim: N worlds, whose
    # model fields are batched per world); ``env`` gives the nominal values, ``uniform(low, high, shape)`` the draws
    @classmethod
    def set_foot_friction(cls, env, rows: ModelRows, friction) -> None:
        """The feet's sliding friction coefficient in their geoms and in their heightfield contact pairs
        (``envs.quadruped.scene``: (heightfield, foot)), whose own it is."""
        rows.geom_friction[:, env._foot_geoms, 0] = friction
        rows.pair_friction[:, :, 0:2] = rows.geom_friction[:, env.model.pair_geom2, 0:1]

    @classmethod
    def randomize_physics(cls, env, rows: ModelRows, uniform) -> None:
        """``domain_randomization``'s draws: foot friction, link masses and inertias, servo Kp (its factor kept in
        ``rows.kp_factor`` for :meth:`randomize_servos`)."""
        n, nbody = rows.body_mass.shape
        cls.set_foot_friction(env, rows, uniform(*DR_FOOT_FRICTION, (n, 4)))
        s = uniform(*DR_MASS_SCALE, (n, nbody))
        s[:, 0] = 1.0  # world
        rows.body_mass[...] = env._nominal_mass * s
        rows.body_inertia[...] = env._nominal_inertia * s[:, :, None]
        rows.kp_factor[...] = uniform(*DR_KP_SCALE, rows.kp_factor.shape)
        kp = env._nominal_kp * rows.kp_factor
        rows.actuator_gainprm[:, :, 0] = kp
        rows.actuator_biasprm[:, :, 1] = -kp

    @classmethod
    def randomize_servos(cls, env, rows: ModelRows, uniform) -> None:
        """Per joint: motor strength scales the whole PD torque, ``kp_scale`` and ``kd_scale`` the gains, each
        a uniform draw from its range (on top of ``domain_randomization``'s Kp draw); the torque limits stay."""
        shape = rows.kp_factor.shape
        strength = uniform(*env.motor_strength, shape)
        kp = env._nominal_kp * rows.kp_factor * strength * uniform(*env.kp_scale, shape)
        rows.actuator_gainprm[:, :, 0] = kp
        rows.actuator_biasprm[:, :, 1] = -kp
        rows.actuator_biasprm[:, :, 2] = env._nominal_kd_bias * strength * uniform(*env.kd_scale, shape)

    def _draw_action_delay(self) -> None:
        self.draw_action_delay(self, self.state, self.np_random.integers)

    def _push(self) -> None:
        self.push(self, self.data.qvel[None], self.np_random.uniform)

    def _noisy(self, obs: np.ndarray) -> np.ndarray:
        """``obs`` plus this env's draw of :meth:`noise` (in place)."""
        obs += self.noise(self, obs.shape, self.np_random.uniform).astype(obs.dtype)
        return obs

    # the per-step draws of N copies, each by its own generator (so a copy draws the same alone or in a batch): the
    # task's functions call these on their ``env``; envs.quadruped.warp_sim draws for all its worlds at once instead
    def push_due(self, tasks, due) -> None:
        """Push the copies ``tasks[i]`` where ``due`` (N,) is True (:meth:`push`, each its own draw)."""
        for i in np.flatnonzero(due).tolist():
            tasks[i]._push()

    def add_noise(self, tasks, obs) -> None:
        """Add each copy's noise draw to its row of ``obs`` (N, dim) (:meth:`noise`)."""
        for task, row in zip(tasks, obs):
            task._noisy(row)

    # the draws as functions of N copies' rows: ``uniform(low, high, shape)``, ``integers(low, high, shape)`` draw
    @classmethod
    def draw_action_delay(cls, env, state, integers) -> None:
        """The episode's action delay of each copy of ``state`` (control steps, ``d ~ U{lo..hi}``, into ``delay``); the
        servos get the default pose until the first delayed action arrives."""
        state.past_actions[:] = 0.0
        state.delay[:] = integers(env.action_delay_steps[0], env.action_delay_steps[1] + 1, (len(state.delay),))

    @classmethod
    def push(cls, env, qvel, uniform) -> None:
        """A random planar velocity kick (up to ``push_velocity`` m/s, world frame) to each trunk of ``qvel`` (N, nv):
        the task's ``advance`` gives one every ``push_interval_s`` (the state's ``steps``)."""
        v = env.push_velocity
        qvel[:, 0:2] += uniform(-v, v, (len(qvel), 2))

    @classmethod
    def noise(cls, env, shape, uniform):
        """Observation noise of ``shape`` (N, dim): ``obs_noise * OBS_NOISE_SCALES * U(-1, 1)`` per entry."""
        return env.obs_noise * env._noise_scales * uniform(-1.0, 1.0, shape)
