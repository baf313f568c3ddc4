"""OpenClaw MuJoCo environments, registered with Gymnasium on ``import envs``.

==============================  ==========================================================================
id                              task
==============================  ==========================================================================
``OpenClaw/Quadruped-v1``       12-joint Go1-class quadruped tracks a commanded base velocity (flat); the
                                observation carries the gait clock (57 dims)
``OpenClaw/QuadrupedRough-v1``  the same on a rough heightfield terrain
``OpenClaw/QuadrupedTerrain-v1`` the same on legged_gym's terrain curriculum (slopes, stairs, obstacles; 10
                                levels), with privileged observations (height scan, friction, true velocity)
``OpenClaw/Quadruped-v0``       ``Quadruped-v1`` without the gait clock (48 dims); out of date, make warns
``OpenClaw/QuadrupedRough-v0``  ``QuadrupedRough-v1`` without the gait clock; out of date, make warns
``OpenClaw/Claw-v0``            gantry claw grasps a box and lifts it to a target height (goal-conditioned);
                                ``arm="panda"``: the Franka Panda instead (the ``arms`` extra)
``OpenClaw/ClawPlace-v0``       gantry claw picks the box and places it at a target on the table (``arm=`` too)
==============================  ==========================================================================

The spec of each (spaces, rewards, termination, arguments, units and frames) is its class's docstring:
``help(envs.quadruped.QuadrupedEnv)``, ``help(envs.claw.ClawEnv)``.

Example::

    import gymnasium as gym
    import envs  # registers the ids above

    env = gym.make("OpenClaw/Quadruped-v1", render_mode="rgb_array")
    vec = gym.make_vec("OpenClaw/Claw-v0", num_envs=8, vectorization_mode="async")
"""

from envs import headless

headless.configure()  # must run before mujoco is imported anywhere

from gymnasium.envs.registration import register, registry  # noqa: E402

ENV_IDS = (
    "OpenClaw/Quadruped-v0",
    "OpenClaw/QuadrupedRough-v0",
    "OpenClaw/Quadruped-v1",
    "OpenClaw/QuadrupedRough-v1",
    "OpenClaw/QuadrupedTerrain-v1",
    "OpenClaw/Claw-v0",
    "OpenClaw/ClawPlace-v0",
)

_SPECS = {
    "OpenClaw/Quadruped-v0": dict(entry_point="envs.quadruped:QuadrupedEnv", max_episode_steps=1000),
    "OpenClaw/QuadrupedRough-v0": dict(
        entry_point="envs.quadruped:QuadrupedEnv", max_episode_steps=1000, kwargs={"terrain": "rough"}
    ),
    # v1: the observation carries the gait clock the scripted trot follows (QuadrupedEnv's gait_clock).
    "OpenClaw/Quadruped-v1": dict(
        entry_point="envs.quadruped:QuadrupedEnv", max_episode_steps=1000, kwargs={"gait_clock": True}
    ),
    "OpenClaw/QuadrupedRough-v1": dict(
        entry_point="envs.quadruped:QuadrupedEnv",
        max_episode_steps=1000,
        kwargs={"terrain": "rough", "gait_clock": True},
    ),
    "OpenClaw/QuadrupedTerrain-v1": dict(entry_point="envs.quadruped_terrain:QuadrupedTerrainEnv", max_episode_steps=1000),
    "OpenClaw/Claw-v0": dict(entry_point="envs.claw.env:ClawEnv", max_episode_steps=100),
    "OpenClaw/ClawPlace-v0": dict(entry_point="envs.claw.env:ClawEnv", max_episode_steps=150, kwargs={"task": "place"}),
}

for _env_id, _spec in _SPECS.items():
    if _env_id not in registry:
        register(id=_env_id, **_spec)

__all__ = ["ENV_IDS"]
