"""The claw scene's constants (``assets/claw.xml``; sources: ``assets/README.md``, section "Claw"), which the
arms (:mod:`envs.claw.gantry`, :mod:`envs.claw.panda`), the env (:mod:`envs.claw.env`) and the scripted grasp
controller read: the table, the cube and its randomizable properties, the grip's workspace, and the control
period and action scaling. World frame (z up, origin on the floor under the table centre); units m, kg, N, rad, s.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

# ---------------------------------------------------------------- model constants (see claw.xml)
TABLE_TOP_Z = 0.40  # m, table top height
OBJECT_HALF_SIZE = 0.02  # m, cube half edge (nominal: object_size's default)
OBJECT_MASS = 0.15  # kg, cube mass (nominal: object_mass's default)
PAD_FRICTION = 1.0  # sliding friction coefficient of the rubber pads (nominal: object_friction's default)
OBJECT_REST_Z = TABLE_TOP_Z + OBJECT_HALF_SIZE  # m, nominal cube centre height when resting on the table
GRIP_HOME = (0.0, 0.0, 0.65)  # m, grip centre when every gantry joint is 0
MAX_OPENING = 0.085  # m, jaw stroke
GRIP_FORCE_LIMIT = 20.0  # N, grip actuator force limit
WORKSPACE_LOW = np.array([-0.25, -0.25, TABLE_TOP_Z + 0.015])  # m, grip centre
WORKSPACE_HIGH = np.array([0.25, 0.25, TABLE_TOP_Z + 0.35])  # m, grip centre
YAW_LIMIT = 1.5708  # rad, wrist yaw servo range
OBJECT_XY_LIMIT = 0.22  # m, |x|, |y| of a cube start position that stays on the table within reach


class ObjectProperty(NamedTuple):
    """One physical property of the cube that ``ClawConfig`` makes an argument (fixed or drawn per episode)."""

    argument: str  # the ClawConfig field
    nominal: float  # claw.xml's value, the argument's default
    limits: tuple[float, float]  # the values the argument may take
    unit: str
    halves: tuple[str, str]  # task-context words of a draw in the lower / upper half of the argument's range


#: The cube's randomizable properties, in task-context order: mass (kg), sliding friction on the pads, half edge (m).
#: Half edges stay within the 85 mm jaw stroke with 15 mm to spare and keep the cube's centre above the
#: grip's lowest point minus the pads' half height.
OBJECT_PROPERTIES = {
    "mass": ObjectProperty("object_mass", OBJECT_MASS, (0.01, 2.0), "kg", ("light", "heavy")),
    "friction": ObjectProperty("object_friction", PAD_FRICTION, (0.05, 2.0), "", ("low", "high")),
    "size": ObjectProperty("object_size", OBJECT_HALF_SIZE, (0.01, 0.035), "m", ("small", "large")),
}
GOAL_LOW = np.array([WORKSPACE_LOW[0], WORKSPACE_LOW[1], TABLE_TOP_Z + OBJECT_PROPERTIES["size"].limits[0]])
"""m, lowest cube-centre target: the resting centre of the smallest cube"""

# ---------------------------------------------------------------- control period and action scaling
FRAME_SKIP = 20  # 20 x 2 ms = 40 ms control period (25 Hz), as Fetch
POS_STEP = 0.05  # m of servo-target lead per unit action (Fetch uses 0.05 m)
YAW_STEP = 0.15  # rad of servo-target lead per unit action
NOMINAL_SPEED = 0.75  # m/s, steady grip speed per unit action (kp/kv * POS_STEP), for controllers
