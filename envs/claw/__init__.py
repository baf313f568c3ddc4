"""The goal-conditioned claw tasks ``OpenClaw/Claw-v0`` and ``OpenClaw/ClawPlace-v0``: :class:`ClawEnv`, whose
docstring is the spec (``help(envs.claw.ClawEnv)``), and :class:`ClawConfig`, its arguments.

Modules, by job:

* :mod:`envs.claw.scene`: the scene's constants (table, cube and its randomizable properties, workspace,
  control period, action scaling), read by the arms, the env and the scripted grasp controller;
* :mod:`envs.claw.gantry`: the gantry arm (``arm="gantry"``) and the arm table (``ARMS``, ``arm_class``);
* :mod:`envs.claw.panda`: the Franka Panda (``arm="panda"``): its model, built into the scene, and its
  differential IK;
* :mod:`envs.claw.cube`: the cube's properties, fixed or drawn per episode, written into the model;
* :mod:`envs.claw.observation`: the observation and the held test;
* :mod:`envs.claw.rewards`: the reward terms and a step's reward, termination and info;
* :mod:`envs.claw.her`: the goal-conditioned reward of relabelled goals (``ClawEnv.compute_reward``);
* :mod:`envs.claw.config`: ``ClawConfig``, every default and check of the arguments;
* :mod:`envs.claw.env`: ``ClawEnv``, the Gymnasium env.

Observation and rewards run on floats for one env and on arrays for the batched vector env
(``envs.batched``), one implementation for both.
"""

from envs.claw.config import ClawConfig
from envs.claw.env import ClawEnv
from envs.claw.gantry import ARMS, GantryArm, arm_class

__all__ = ["ARMS", "ClawConfig", "ClawEnv", "GantryArm", "arm_class"]
