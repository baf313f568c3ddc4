"""The quadruped's feet per step: their height, speed and slip (:func:`foot_motion`), and the gait measures an
episode accumulates (:func:`advance_gait`, :func:`gait_info`; declared as :data:`GAIT_METRICS`).

The feet are read from 36 sensor values at the foot sites (the foot spheres' centres), three groups of four
feet (FR, FL, RR, RL), world frame: position (m), linear velocity (m/s), angular velocity of the foot's body
(rad/s). Every function works on one env's arrays (``(36,)`` readings, ``(4,)`` per-foot values, an
``(ROWS, 4)`` state) and on N envs' (a leading ``N`` axis) with the same bits per env: element-wise numpy
maths only; sums over the four feet are written out (:meth:`envs.array_math.ScalarMath.legs_sum`).

Gait measures, per leg, over the episode so far (what ``info`` reports at every step, so that the value at an
episode's last step is the episode's):

* ``stance_slip_<leg>`` (m/s): the mean horizontal speed of the foot's contact point (the sphere's lowest
  point, ``v_centre + w x (0, 0, -r)``) over the steps the foot is in contact; a rolling foot does not slip;
* ``swing_apex_<leg>`` (cm): the mean over completed swings (a run of steps without contact that ends in a
  touchdown) of the highest the foot rose above its height at lift-off (on flat ground: above the ground);
* ``duty_factor_<leg>``: the fraction of the episode's steps in contact;

and the mean of the four legs as ``stance_slip``, ``swing_apex``, ``duty_factor``. Contact is the foot's touch
sensor above ``CONTACT_FORCE_THRESHOLD`` N this step (not or'ed with the previous one, as the air-time reward's).
"""

from __future__ import annotations

import numpy as np

from envs.declarations import Metric
from envs.quadruped.robots import LEGS

FOOT_SENSOR_DIM = 36  # foot position (4 x 3, m), linear velocity (4 x 3, m/s), angular velocity (4 x 3, rad/s)
# The rows of a gait state (one array (len(ROWS), 4) per env; a column per leg).
ROWS = ("contact", "lift", "peak", "steps", "stance", "slip_sum", "swings", "apex_sum")
(CONTACT, LIFT, PEAK, STEPS, STANCE, SLIP_SUM, SWINGS, APEX_SUM) = range(len(ROWS))

MEASURES = (  # (info key prefix, unit, label)
    ("stance_slip", "m/s", "stance slip"),
    ("swing_apex", "cm", "swing apex"),
    ("duty_factor", "of steps", "duty factor"),
)
# the mean of the legs first (the headline numbers), then each leg's
GAIT_METRICS = tuple(Metric(key, key, "last", unit, label) for key, unit, label in MEASURES) + tuple(
    Metric(f"{key}_{leg}", f"{key}_{leg}", "last", unit, f"{label} {leg}") for key, unit, label in MEASURES
    for leg in LEGS
)


def foot_motion(feet: np.ndarray, radius: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(height, speed2, slip2)`` of each foot, each ``(..., 4)``, from the foot sensor readings ``feet``
    ``(..., 36)`` (module docstring) and the foot spheres' radius (m).

    ``height``: the sphere's lowest point above z = 0 (m, world); ``speed2``: the squared horizontal speed
    of its centre ((m/s)^2); ``slip2``: the squared horizontal speed of its lowest point, the contact point
    on flat ground ((m/s)^2): centre velocity plus ``w x (0, 0, -r)``.
    """
    f = feet.reshape(*feet.shape[:-1], 3, 4, 3)
    pos, vel, ang = f[..., 0, :, :], f[..., 1, :, :], f[..., 2, :, :]
    vx, vy = vel[..., 0], vel[..., 1]
    sx = vx - radius * ang[..., 1]
    sy = vy + radius * ang[..., 0]
    return pos[..., 2] - radius, vx * vx + vy * vy, sx * sx + sy * sy


def new_gait_state() -> np.ndarray:
    """The gait state at a reset: every foot on the ground at height 0, nothing counted."""
    state = np.zeros((len(ROWS), 4))
    state[CONTACT] = 1.0
    return state


def advance_gait(state: np.ndarray, contact: np.ndarray, height: np.ndarray, slip2: np.ndarray) -> np.ndarray:
    """The gait state ``(..., ROWS, 4)`` after a step with feet ``contact`` (bool), ``height`` (m) and ``slip2``
    ((m/s)^2), each ``(..., 4)``: counts the step, a stance step's slip, a touchdown's swing apex; a foot in
    contact sets its lift-off height, a foot in the air raises its swing's peak (m above lift-off)."""
    new = np.empty_like(state)
    c = contact.astype(np.float64)
    touchdown = contact & (state[..., CONTACT, :] == 0.0)
    peak = state[..., PEAK, :]
    rise = height - state[..., LIFT, :]
    new[..., CONTACT, :] = c
    new[..., LIFT, :] = np.where(contact, height, state[..., LIFT, :])
    new[..., PEAK, :] = np.where(contact, 0.0, np.where(rise > peak, rise, peak))
    new[..., STEPS, :] = state[..., STEPS, :] + 1.0
    new[..., STANCE, :] = state[..., STANCE, :] + c
    new[..., SLIP_SUM, :] = state[..., SLIP_SUM, :] + np.where(contact, np.sqrt(slip2), 0.0)
    new[..., SWINGS, :] = state[..., SWINGS, :] + touchdown
    new[..., APEX_SUM, :] = state[..., APEX_SUM, :] + np.where(touchdown, peak, 0.0)
    return new


def gait_info(state: np.ndarray, m) -> dict:
    """The gait measures of ``state`` (module docstring) as ``info`` entries: Python floats for one env
    (``m=ScalarMath``), ``(N,)`` arrays for N (``m=BatchMath``); the legs' mean first, as :data:`GAIT_METRICS`."""
    slip = state[..., SLIP_SUM, :] / np.maximum(state[..., STANCE, :], 1.0)
    apex = 100.0 * state[..., APEX_SUM, :] / np.maximum(state[..., SWINGS, :], 1.0)
    duty = state[..., STANCE, :] / np.maximum(state[..., STEPS, :], 1.0)
    measures = [(key, m.legs(values)) for (key, _, _), values in zip(MEASURES, (slip, apex, duty))]
    info = {key: 0.25 * (a + b + c + d) for key, (a, b, c, d) in measures}
    for key, legs in measures:
        info.update({f"{key}_{leg}": value for leg, value in zip(LEGS, legs)})
    return info
