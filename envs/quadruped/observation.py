"""The quadruped's observation: its layout (named slices), the gait clock and the vector from its parts.

The layout is tabled in :class:`~envs.quadruped.QuadrupedEnv`'s docstring (indices, units, frames). Every
function works on one env (1-D arrays, float phases) or on N envs at once ((N, k) arrays, (N,) phases) with
the same bits per env: the single env's ``step()`` and the batched vector env (``envs.batched``) both run them.
"""

from __future__ import annotations

import numpy as np

from envs.quadruped.config import GAIT_PHASE_OFFSETS

OBS_SLICES = {
    "lin_vel": slice(0, 3),
    "ang_vel": slice(3, 6),
    "gravity": slice(6, 9),
    "command": slice(9, 12),
    "joint_pos": slice(12, 24),
    "joint_vel": slice(24, 36),
    "last_action": slice(36, 48),
}
OBS_DIM = 48
# Appended when ``gait_clock`` (v1); an env's ``OBS_SLICES`` then holds both tables.
CLOCK_SLICES = {
    "phase_sin": slice(48, 52),
    "phase_cos": slice(52, 56),
    "gait_frequency": slice(56, 57),
}
CLOCK_OBS_DIM = 57
# Each named slice's unit, frame and meaning (the class docstring's table; export writes it for deploy scripts).
# Raw values: no scaling (an exported policy folds its observation normalisation in).
OBS_TERMS = {
    "lin_vel": ("m/s", "body", "trunk linear velocity at the IMU point"),
    "ang_vel": ("rad/s", "body", "trunk angular velocity"),
    "gravity": ("1", "body", "unit vector of world -z (the gravity direction); (0, 0, -1) when upright"),
    "command": ("m/s, m/s, rad/s", "body", "commanded (vx, vy, wz)"),
    "joint_pos": ("rad", "joint", "joint angles minus default_pose, our joint order"),
    "joint_vel": ("rad/s", "joint", "joint velocities, our joint order"),
    "last_action": ("1", "joint", "the policy's previous action in [-1, 1] (zeros at reset), our joint order"),
    "phase_sin": ("1", "leg", "sin(2 pi leg phase), legs FR, FL, RR, RL (gait_clock)"),
    "phase_cos": ("1", "leg", "cos(2 pi leg phase), same legs"),
    "gait_frequency": ("Hz", "-", "the gait clock's frequency"),
}


def leg_phases(phase: float | np.ndarray) -> np.ndarray:
    """Each leg's gait phase (FR, FL, RR, RL; fraction of a cycle in [0, 1)) for the clock phase of one
    env (a float: shape (4,)) or of N envs ((N,): shape (N, 4))."""
    return (np.asarray(phase)[..., None] + GAIT_PHASE_OFFSETS) % 1.0


def clock_observation(phase: float | np.ndarray, frequency_hz: float | np.ndarray) -> np.ndarray:
    """The gait-clock part of the observation: sin (4), cos (4) of each leg's phase and the frequency
    (Hz), shape (9,) for one env or (N, 9) for (N,) arrays of phases and frequencies."""
    angle = 2.0 * np.pi * leg_phases(phase)
    return np.concatenate([np.sin(angle), np.cos(angle), np.asarray(frequency_hz, dtype=np.float64)[..., None]], axis=-1)


def observation(parts: tuple[np.ndarray, ...], default_pose32: np.ndarray) -> np.ndarray:
    """The observation from its parts (base sensors, command, joint sensors, last action, [clock]) of
    one env (1-D parts) or N envs ((N, k) parts): float32, joint positions relative to the default pose."""
    obs = np.concatenate(parts, axis=-1, dtype=np.float32)
    obs[..., 12:24] -= default_pose32
    return obs
