"""The quadruped's feet per step: their height, speed and slip (:func:`foot_motion`), and the gait measures an
episode accumulates (:func:`advance_gait`, :func:`gait_info`; declared as :data:`GAIT_METRICS`).

The feet are read from 36 sensor values at the foot sites (the foot spheres' centres), three groups of four
feet (FR, FL, RR, RL), world frame: position (m), linear velocity (m/s), angular velocity of the foot's body
(rad/s). Like the reward terms, every function works on one env's Python floats (``m=ScalarMath``: the 36
readings as a list, per-foot values as lists of four floats, the gait state a list of ``len(ROWS) * 4``
floats) and on N envs' ``(N,)`` arrays in the same places (``m=BatchMath``), with the same bits per env;
floats keep one env's step cheap (less than half the time of numpy on four-element arrays, measured side
by side: the same bits, ``tests/test_batched.py``).

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

from envs.declarations import Metric
from envs.quadruped.robots import LEGS

FOOT_SENSOR_DIM = 36  # foot position (4 x 3, m), linear velocity (4 x 3, m/s), angular velocity (4 x 3, rad/s)
# A gait state: these rows of four (a column per leg), flattened row by row: one env's list of floats.
ROWS = ("contact", "lift", "peak", "steps", "stance", "slip_sum", "swings", "apex_sum")

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


def foot_motion(feet: list, radius: float) -> tuple[list, list, list]:
    """``(height, speed2, slip2)``, each a list over the four feet, from the 36 foot sensor readings ``feet``
    (module docstring) and the foot spheres' radius (m).

    ``height``: the sphere's lowest point above z = 0 (m, world; on the terrain env above the ground under the
    foot: its ``_feet`` passes the heights so); ``speed2``: the squared horizontal speed
    of its centre ((m/s)^2); ``slip2``: the squared horizontal speed of its lowest point, the contact point
    on flat ground ((m/s)^2): centre velocity plus ``w x (0, 0, -r)``.
    """
    height, speed2, slip2 = [], [], []
    for i in range(0, 12, 3):  # the four feet's x entries in each group
        vx, vy, wx, wy = feet[12 + i], feet[13 + i], feet[24 + i], feet[25 + i]
        sx, sy = vx - radius * wy, vy + radius * wx
        height.append(feet[2 + i] - radius)
        speed2.append(vx * vx + vy * vy)
        slip2.append(sx * sx + sy * sy)
    return height, speed2, slip2


def new_gait_state() -> list[float]:
    """The gait state at a reset: every foot on the ground at height 0, nothing counted."""
    return [1.0] * 4 + [0.0] * (4 * (len(ROWS) - 1))


def advance_gait(state: list, contact: list, height: list, slip2: list, m) -> list:
    """The gait state after a step with the feet's ``contact`` (bools), ``height`` (m) and ``slip2``
    ((m/s)^2), four each: counts the step, a stance step's slip, a touchdown's swing apex; a foot in contact
    sets its lift-off height, a foot in the air raises its swing's peak (m above lift-off)."""
    rows = [[] for _ in ROWS]
    for leg, (c, h, s2) in enumerate(zip(contact, height, slip2)):
        was, lift, peak, steps, stance, slip_sum, swings, apex_sum = state[leg::4]
        touchdown = c & (was == 0.0)
        rise = h - lift
        for row, value in zip(rows, (
            m.where(c, 1.0, 0.0),
            m.where(c, h, lift),
            m.where(c, 0.0, m.where(rise > peak, rise, peak)),
            steps + 1.0,
            stance + m.where(c, 1.0, 0.0),
            slip_sum + m.where(c, m.sqrt(s2), 0.0),
            swings + m.where(touchdown, 1.0, 0.0),
            apex_sum + m.where(touchdown, peak, 0.0),
        )):
            row.append(value)
    return [value for row in rows for value in row]


def gait_info(state: list, m) -> dict:
    """The gait measures of ``state`` (module docstring) as ``info`` entries: floats for one env
    (``m=ScalarMath``), ``(N,)`` arrays for N (``m=BatchMath``); the legs' mean first, as :data:`GAIT_METRICS`."""
    legs = [state[leg::4] for leg in range(4)]
    slip = [s[5] / m.maximum(s[4], 1.0) for s in legs]
    apex = [100.0 * s[7] / m.maximum(s[6], 1.0) for s in legs]
    duty = [s[4] / m.maximum(s[3], 1.0) for s in legs]
    measures = [(key, values) for (key, _, _), values in zip(MEASURES, (slip, apex, duty))]
    info = {key: 0.25 * (a + b + c + d) for key, (a, b, c, d) in measures}
    for key, values in measures:
        info.update({f"{key}_{leg}": value for leg, value in zip(LEGS, values)})
    return info
