"""The quadruped task on MuJoCo Warp: :class:`WarpQuadruped`, N worlds of one env's model stepped together on a Warp
device (a GPU; Warp's CPU device runs the tests), the task computed on torch tensors that share memory with Warp's.

Needs ``pip install -e ".[gpu]"`` (``mujoco-warp``, ``warp-lang``; ``setup.sh`` installs them). What runs on the
device, all worlds at once: the controls, the gait clock, the ``frame_skip`` physics steps (``mujoco_warp.step``;
on a GPU captured once as a CUDA graph), the observation, the reward terms, the fall check and the gait measures -
the same functions as the C MuJoCo env's (:class:`~envs.quadruped.QuadrupedEnv`'s ``controls``, ``advance``,
``finish``: its observation and ``envs.quadruped.rewards.step_outcome``, in :class:`~envs.torch_math.TorchMath`) - and the
resets of the worlds whose episode ended, inside the step (:meth:`WarpQuadruped.reset_worlds`: the C env's reset
draws, default pose plus noise and a uniform command, from a seeded torch generator).

The model is the C env's with one option changed, the midphase (``mjDSBL_MIDPHASE`` cleared: Warp's collision
pipeline requires it). Domain and gain randomisation (``domain_randomization``, ``motor_strength``, ``kp_scale``,
``kd_scale``) are the C env's draws (``Randomization.randomize_physics``, ``randomize_servos``) into each world's own
row of the model fields they change (foot friction, link masses and inertias, servo gains: batched per world with
``put_model``'s batch sizes), at each world's reset. Action delay, pushes and observation noise are the C env's draws
(``Randomization.draw_action_delay``, ``push``, ``noise``) for all worlds at once from the worlds' one generator. The
terrain env (``OpenClaw/QuadrupedTerrain-v1``) runs its task functions (``QuadrupedTerrainEnv``'s) with the per-world
part of ``envs.quadruped.warp_terrain``: the height scan and the ground on the device, each world's box window in its
own model rows, the curriculum.

Example::

    from envs.quadruped.warp_sim import WarpQuadruped

    sim = WarpQuadruped("OpenClaw/Quadruped-v1", num_worlds=4096, device="cuda:0", seed=0)
    obs = sim.obs                                   # (4096, 57) float32 torch tensor on the device
    obs, reward, terminated, truncated, info = sim.step(policy(obs))
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import gymnasium as gym
import mujoco
import mujoco_warp as mjw
import numpy as np
import torch
import warp as wp

from envs.quadruped.env import QuadrupedEnv
from envs.quadruped.randomize import ModelRows
from envs.quadruped.terrain_env import QuadrupedTerrainEnv
from envs.quadruped import warp_terrain
from envs.torch_math import TorchMath

# the model fields the reset's randomisation draws per world (``Randomization.randomize_physics``, ``randomize_servos``):
# batched per world in the Warp model (put_model's batch sizes) when the env randomises them
RANDOMIZED_FIELDS = ("geom_friction", "pair_friction", "body_mass", "body_inertia", "actuator_gainprm",
                     "actuator_biasprm")


def warp_refusal(env) -> str | None:
    """Why the unwrapped env ``env`` cannot run on Warp yet, or None when it can."""
    if type(env) not in (QuadrupedEnv, QuadrupedTerrainEnv):
        return (f"{type(env).__name__} is not on Warp: only the quadruped's envs (OpenClaw/Quadruped-*, "
                "QuadrupedRough-*, QuadrupedTerrain-*)")
    return None


def warp_model(model: mujoco.MjModel) -> mujoco.MjModel:
    """A copy of ``model`` with the only option Warp needs changed: the midphase on."""
    model = copy.deepcopy(model)
    model.opt.disableflags &= ~int(mujoco.mjtDisableBit.mjDSBL_MIDPHASE)
    return model


class _OnDevice:
    """An env's settings as the task functions read them, with its arrays as tensors on ``device``, and the per-step
    draws (pushes, observation noise) made for all worlds at once from ``uniform`` (the worlds' one generator) into the
    worlds' velocities ``qvel``."""

    def __init__(self, env: QuadrupedEnv, device: torch.device, uniform, qvel: torch.Tensor) -> None:
        self._env, self.uniform, self.qvel = env, uniform, qvel
        tensor = lambda a, dtype=torch.float64: torch.as_tensor(np.asarray(a), dtype=dtype, device=device)  # noqa: E731
        self.ACTION_SCALE, self.default_pose = tensor(env.ACTION_SCALE), tensor(env.default_pose)
        self._default_pose32 = tensor(env._default_pose32, torch.float32)
        self.GAIT_PHASE_OFFSETS, self.GAIT_START = tensor(env.GAIT_PHASE_OFFSETS), tensor(env.GAIT_START)
        self._cmd_lo, self._cmd_hi = tensor(env._cmd_lo), tensor(env._cmd_hi)
        self._qpos_index, self._qvel_index = (tensor(i, torch.int64) for i in (env._qpos_index, env._qvel_index))
        self._nominal_mass, self._nominal_inertia = tensor(env._nominal_mass), tensor(env._nominal_inertia)
        self._nominal_kp, self._nominal_kd_bias = tensor(env._nominal_kp), tensor(env._nominal_kd_bias)
        self._foot_geoms = tensor(env._foot_geoms, torch.int64)
        self._noise_scales = tensor(env._noise_scales, torch.float32)

    def push_due(self, tasks, due: torch.Tensor) -> None:
        """``QuadrupedEnv.push`` of the worlds where ``due`` (N,) is True."""
        ids = due.nonzero().squeeze(1)
        rows = self.qvel[ids].to(torch.float64)
        QuadrupedEnv.push(self, rows, self.uniform)
        self.qvel[ids] = rows.to(self.qvel.dtype)

    def add_noise(self, tasks, obs: torch.Tensor) -> None:
        """``QuadrupedEnv.noise`` added to every world's observation (in place)."""
        obs += QuadrupedEnv.noise(self, obs.shape, self.uniform).to(obs.dtype)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._env, name)


class WarpQuadruped:
    """``num_worlds`` copies of ``gymnasium.make(env_id, **kwargs)``'s task on a Warp ``device`` (module docstring):
    the flat and rough quadruped's, or the terrain's (``tiles``: its curriculum, box windows and ground).

    Observations, rewards and flags are torch tensors on the device, one row per world; episodes end on a fall
    (``terminated``) or after the registration's ``max_episode_steps`` (``truncated``), and those worlds are reset
    within the same :meth:`step`, whose ``obs`` row is then the new episode's first (``info["final_obs"]`` holds the
    ended one's, as Isaac Lab and rsl_rl's vector envs do). The same ``seed`` gives the same rollouts on a device.
    """

    def __init__(self, env_id: str = "OpenClaw/Quadruped-v1", num_worlds: int = 1024, *, device: str | None = None,
                 seed: int = 0, **kwargs: Any) -> None:
        if num_worlds < 1:
            raise ValueError(f"num_worlds={num_worlds} must be >= 1")
        env = gym.make(env_id, **kwargs)
        self.max_episode_steps = env.spec.max_episode_steps if env.spec is not None else None
        self.env = base = env.unwrapped
        problem = warp_refusal(base)
        if problem:
            raise ValueError(f"{env_id}: {problem}")
        self.num_worlds = num_worlds
        self.wp_device = wp.get_device(device)
        self.device = wp.device_to_torch(self.wp_device)
        base.reset(seed=seed)
        self.task = type(base)  # whose task functions the worlds run: QuadrupedEnv's or QuadrupedTerrainEnv's
        terrain = self.task is QuadrupedTerrainEnv
        mjm = warp_model(base.model)
        randomized = base.domain_randomization or base._randomize_gains
        fields = (RANDOMIZED_FIELDS if randomized else ()) + (warp_terrain.TILE_FIELDS if terrain else ())
        if terrain:
            mjm = warp_terrain.tiles_model(mjm, base)
        batched = [name for name in dict.fromkeys(fields) if getattr(mjm, name).size]
        with wp.ScopedDevice(self.wp_device):
            self.model = mjw.put_model(mjm, batch_sizes={name: num_worlds for name in batched})
            self.data = mjw.put_data(mjm, base.data, nworld=num_worlds)
        view = lambda name: wp.to_torch(getattr(self.data, name))  # noqa: E731  (shares Warp's memory)
        self.qpos, self.qvel, self.ctrl, self.sensordata, self.actuator_force = (
            view(k) for k in ("qpos", "qvel", "ctrl", "sensordata", "actuator_force"))
        self.settings = _OnDevice(base, self.device, self._uniform, self.qvel)
        # each world's randomised model fields (views of the batched Warp arrays), None where the env randomises none
        self.model_rows = ModelRows(
            *(wp.to_torch(getattr(self.model, name)) if name in batched else torch.empty((num_worlds, 0, 5), device=self.device)
              for name in RANDOMIZED_FIELDS),
            torch.ones((num_worlds, mjm.nu), dtype=torch.float64, device=self.device)) if randomized or terrain else None
        self.state = base._new_state(num_worlds).map(lambda a: torch.as_tensor(a, device=self.device))
        self.state.frequency[:] = base.gait_frequency_hz
        self.steps = torch.zeros(num_worlds, dtype=torch.int64, device=self.device)  # control steps in the episode
        self.generator = torch.Generator(device=self.device).manual_seed(seed)
        self._graph = None  # the physics steps as one CUDA graph (on a GPU, after the first step)
        self.tiles = warp_terrain.WarpTiles(self, seed) if terrain else None
        self.reset_worlds(torch.ones(num_worlds, dtype=torch.bool, device=self.device))
        self.obs = self.observe_reset()

    # ------------------------------------------------------------------ resets
    def _uniform(self, low, high, shape: tuple[int, ...]) -> torch.Tensor:
        return low + (high - low) * torch.rand(shape, generator=self.generator, dtype=torch.float64, device=self.device)

    def _integers(self, low: int, high: int, shape: tuple[int, ...]) -> torch.Tensor:
        return torch.randint(low, high, shape, generator=self.generator, device=self.device)

    def reset_worlds(self, mask: torch.Tensor) -> None:
        """Start a new episode in the worlds where ``mask`` (num_worlds,) is True with the C env's reset functions
        (``QuadrupedEnv.reset_pose``, ``reset_episode``: the default pose plus noise, a command drawn from the ranges;
        from this object's torch generator); their sensors recomputed, every other world's readings kept."""
        env, ids = self.env, mask.nonzero().squeeze(1)
        if self.tiles is not None:
            self.tiles.end(ids)
        mjw.reset_data(self.model, self.data, wp.from_torch(mask))
        drawn = None if self.model_rows is None else ModelRows(*(f[ids].to(torch.float64) for f in _fields(self.model_rows)))
        if env.domain_randomization:  # the C env's reset's draws, in its order
            QuadrupedEnv.randomize_physics(self.settings, drawn, self._uniform)
        rows = [array[ids].to(torch.float64) for array in (self.qpos, self.qvel, self.ctrl)]
        QuadrupedEnv.reset_pose(self.settings, *rows, self._uniform)
        if env._randomize_gains:
            QuadrupedEnv.randomize_servos(self.settings, drawn, self._uniform)
        state = self.state.take(ids)
        if env._max_delay:
            QuadrupedEnv.draw_action_delay(self.settings, state, self._integers)
        QuadrupedEnv.reset_episode(self.settings, state, self._uniform, TorchMath)
        if self.tiles is not None:
            self.tiles.start(ids, rows[0], drawn, state)
        for array, row in zip((self.qpos, self.qvel, self.ctrl), rows):
            array[ids] = row.to(array.dtype)  # Warp's arrays are float32
        if drawn is not None:
            for whole, part in zip(_fields(self.model_rows), _fields(drawn)):
                whole[ids] = part.to(whole.dtype)
        self.state.put(ids, state)
        self.steps[ids] = 0
        kept = self.sensordata.clone()
        mjw.forward(self.model, self.data)  # the sensors of the reset worlds' new state
        self.sensordata[~mask] = kept[~mask]  # the others keep the readings of their last step (mj_step's)

    # ------------------------------------------------------------------ a step
    def _physics(self) -> None:
        for _ in range(self.env.frame_skip):
            mjw.step(self.model, self.data)

    def _step_physics(self) -> None:
        """``frame_skip`` physics steps of every world; on a CUDA device replayed from a graph captured once."""
        if not self.wp_device.is_cuda:
            self._physics()
        elif self._graph is None:
            with wp.ScopedCapture(self.wp_device) as capture:
                self._physics()
            self._graph = capture.graph
            wp.capture_launch(self._graph)
        else:
            wp.capture_launch(self._graph)

    def observe_reset(self) -> torch.Tensor:
        """Every world's observation of its current state as a reset's (their last action, zero after a reset)."""
        readings = QuadrupedEnv.readings(self.env, self.sensordata)
        return self.task.observe(self.settings, self.state, [], readings[0], readings[1], self.state.last_action,
                                 TorchMath)

    def set_gait_frequency(self, frequency_hz: float, worlds: torch.Tensor) -> None:
        """Run the gait clock of ``worlds`` (indices) at ``frequency_hz`` from the next step on (the C env's
        ``QuadrupedEnv.retime_clock``: kept across resets, the phase does not jump)."""
        QuadrupedEnv.retime_clock(self.settings, self.state, worlds, frequency_hz, TorchMath)

    def step(self, actions: torch.Tensor):
        """Step every world with ``actions`` (num_worlds, 12) (clipped to [-1, 1]); returns ``(obs, reward,
        terminated, truncated, info)`` as tensors on the device (``info``: the reward terms, ``tracking_error``,
        ``x_velocity``, ``fell``, the gait measures, and ``final_obs`` where an episode ended)."""
        env, settings, state = self.env, self.settings, self.state
        a = torch.clamp(torch.as_tensor(actions, device=self.device).to(torch.float64), -1.0, 1.0)
        QuadrupedEnv.controls(settings, state, a, self.ctrl)
        QuadrupedEnv.advance(settings, state, [], TorchMath)
        self._step_physics()
        obs, reward, fell, info = self.task.finish(settings, state, [], a, self.qpos, self.qvel, self.actuator_force,
                                                   QuadrupedEnv.readings(env, self.sensordata), TorchMath)
        if self.tiles is not None:
            self.tiles.follow()
        self.steps += 1
        truncated = (self.steps >= self.max_episode_steps) & ~fell if self.max_episode_steps else torch.zeros_like(fell)
        done = fell | truncated
        if bool(done.any()):
            # the ended episodes' readings: some view the task state (the terrain's level, tile), which the reset rewrites
            info = {key: value.clone() for key, value in info.items()}
            info["final_obs"] = obs.clone()
            self.reset_worlds(done)
            obs[done] = self.observe_reset()[done]
        self.obs = obs
        return obs, reward, fell, truncated, info


def _fields(rows: ModelRows) -> list[torch.Tensor]:
    return [getattr(rows, f.name) for f in dataclasses.fields(rows)]
