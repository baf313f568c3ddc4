"""The quadruped envs: ``OpenClaw/Quadruped-*``, ``QuadrupedRough-*`` and ``QuadrupedTerrain-v1``.

==================  ==========================================================================================
module              job
==================  ==========================================================================================
``env``             :class:`QuadrupedEnv`, the velocity-tracking task (its docstring is the spec); the default
                    robot's :func:`default_leg_geometry`
``terrain_env``     :class:`QuadrupedTerrainEnv`: the same on legged_gym's terrain curriculum
``config``          every default in one place: the task's constants, :class:`QuadrupedConfig` and
                    :class:`QuadrupedTerrainConfig` (the constructors' arguments and their checks)
``task_state``      the task's per-copy state as (N, ...) arrays (:class:`TaskState`; one env: N = 1)
``rewards``         the table of reward terms (``TERM_TABLE``) and ``step_outcome`` (one env or the batch)
``observation``     the observation layout and the gait clock (one env or the batch)
``randomize``       domain and sim-to-real randomisation (each copy's draws from its own generator)
``robots``          the ``robot=`` table, the ``MjSpec`` builder of the meshed robots, :class:`LegGeometry`
``scene``           the compiled model: the robot in our scene with its terrain (rough field, tile grid)
``terrain``         terrain generation: the rough field and legged_gym's tile grid (heights only, numpy), and
                    the compiled ground lookup (numba)
``height_scan``     the terrain env's height scan, the feet's ground and the heading command (one env or the
                    batch; compiled)
``history``         the proprioceptive history (``history_steps``): its layout and frames (one env or the batch)
==================  ==========================================================================================
"""

from envs.quadruped.config import QuadrupedConfig, QuadrupedTerrainConfig
from envs.quadruped.env import QuadrupedEnv, default_leg_geometry
from envs.quadruped.height_scan import TerrainLegGeometry
from envs.quadruped.robots import ROBOTS, LegGeometry, robot_named
from envs.quadruped.terrain_env import QuadrupedTerrainEnv

__all__ = [
    "ROBOTS",
    "LegGeometry",
    "QuadrupedConfig",
    "QuadrupedEnv",
    "QuadrupedTerrainConfig",
    "QuadrupedTerrainEnv",
    "TerrainLegGeometry",
    "default_leg_geometry",
    "robot_named",
]
