"""The quadruped's observation: its table of terms (:data:`TERMS`, :data:`CLOCK_TERMS`: name, size, unit, frame,
meaning, noise; the named slices, the deploy metadata's terms and the noise scales come from it), the gait clock and
the vector from its parts.

The layout is tabled in :class:`~envs.quadruped.QuadrupedEnv`'s docstring (indices, units, frames). Every
function works on one env (1-D arrays, float phases) or on N envs at once ((N, k) arrays, (N,) phases) with
the same bits per env: the single env's ``step()`` and the batched vector env (``envs.batched``) both run them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from envs.quadruped.config import GAIT_PHASE_OFFSETS

@dataclass(frozen=True)
class ObservationTerm:
    """One row of the observation's term tables: a named slice of ``size`` entries, its ``unit``, ``frame`` and
    ``meaning`` (what export writes for deploy scripts: ``deploy_metadata()["observation_terms"]``) and its noise
    half-width at ``obs_noise=1`` (in its unit; 0: exact). Raw values: no scaling (an exported policy folds its
    observation normalisation in)."""

    name: str
    size: int
    unit: str
    frame: str
    meaning: str
    noise: float = 0.0


# The observation, term by term in its order (the class docstring's table of QuadrupedEnv in this order, checked by
# tests/test_env_docs.py): the sensor-and-state part every quadruped observes (0-47) ... Noise half-widths: MuJoCo
# Playground's Go1 joystick noise_config (linvel 0.1, gyro 0.2, gravity 0.05, joint_pos 0.03, joint_vel 1.5).
TERMS = (
    ObservationTerm("lin_vel", 3, "m/s", "body", "trunk linear velocity at the IMU point", 0.1),
    ObservationTerm("ang_vel", 3, "rad/s", "body", "trunk angular velocity", 0.2),
    ObservationTerm("gravity", 3, "1", "body", "unit vector of world -z (the gravity direction); (0, 0, -1) when "
                    "upright", 0.05),
    ObservationTerm("command", 3, "m/s, m/s, rad/s", "body", "commanded (vx, vy, wz)"),
    ObservationTerm("joint_pos", 12, "rad", "joint", "joint angles minus default_pose, our joint order", 0.03),
    ObservationTerm("joint_vel", 12, "rad/s", "joint", "joint velocities, our joint order", 1.5),
    ObservationTerm("last_action", 12, "1", "joint", "the policy's previous action in [-1, 1] (zeros at reset), our "
                    "joint order"),
)
# ... and the gait clock after it (``gait_clock``, v1)
CLOCK_TERMS = (
    ObservationTerm("phase_sin", 4, "1", "leg", "sin(2 pi leg phase), legs FR, FL, RR, RL (gait_clock)"),
    ObservationTerm("phase_cos", 4, "1", "leg", "cos(2 pi leg phase), same legs"),
    ObservationTerm("gait_frequency", 1, "Hz", "-", "the gait clock's frequency"),
)


def term_slices(terms: tuple[ObservationTerm, ...], start: int = 0) -> dict[str, slice]:
    """``{name: slice}`` of ``terms`` laid out one after another from index ``start``."""
    slices = {}
    for term in terms:
        slices[term.name] = slice(start, start + term.size)
        start += term.size
    return slices


OBS_SLICES = term_slices(TERMS)
OBS_DIM = OBS_SLICES["last_action"].stop  # 48
# Appended when ``gait_clock`` (v1); an env's ``OBS_SLICES`` then holds both tables.
CLOCK_SLICES = term_slices(CLOCK_TERMS, OBS_DIM)
CLOCK_OBS_DIM = CLOCK_SLICES["gait_frequency"].stop  # 57
OBS_TERMS = {t.name: (t.unit, t.frame, t.meaning) for t in TERMS + CLOCK_TERMS}  # name -> unit, frame, meaning
OBS_NOISE_SCALES = {t.name: t.noise for t in TERMS + CLOCK_TERMS if t.noise}  # half-widths at obs_noise=1
# observation() concatenates the sensors and the state in this order: the table must say the same
assert [t.name for t in TERMS] == ["lin_vel", "ang_vel", "gravity", "command", "joint_pos", "joint_vel", "last_action"]


_TWO_PI = 2.0 * np.pi


def leg_phases(phase: np.ndarray, offsets: np.ndarray = GAIT_PHASE_OFFSETS) -> np.ndarray:
    """Each leg's gait phase (FR, FL, RR, RL; fraction of a cycle in [0, 1)) for the clock phases ``phase`` of N envs
    ((N,): shape (N, 4); a 0-d array: (4,)); ``offsets``: :data:`GAIT_PHASE_OFFSETS` in the phases' namespace."""
    return (phase[..., None] + offsets) % 1.0


def clock_observation(phase: np.ndarray, frequency_hz, out: np.ndarray, m,
                      offsets: np.ndarray = GAIT_PHASE_OFFSETS) -> None:
    """The gait-clock part of the observation into ``out`` (N, 9): sin (4), cos (4) of each leg's phase and the
    frequency (Hz), for N envs' (N,) phases and frequencies (arrays, or tensors with ``m`` = ``TorchMath``)."""
    angle = _TWO_PI * leg_phases(phase, offsets)
    m.sin_into(angle, out[..., 0:4])
    m.cos_into(angle, out[..., 4:8])
    out[..., 8] = frequency_hz


def observation(parts: tuple[np.ndarray, ...], default_pose32: np.ndarray, m) -> np.ndarray:
    """The observation from its parts (base sensors, command, joint sensors, last action, [clock]) of N envs
    ((N, k) parts, arrays or tensors with ``m``): float32, joint positions relative to the default pose."""
    obs = m.concat32(parts)
    obs[..., 12:24] -= default_pose32
    return obs
