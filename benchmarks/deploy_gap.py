"""The sim-to-sim gap of an exported quadruped policy: the same commands in our env and in the robot package's scene.

For each command, ``--episodes`` episodes of ``--seconds`` s, the table of ``examples/deploy_mujoco.py``
(mean tracking error, vx, vy, wz, falls, stance slip, swing apex) three times:

* ``ours``: the training env (``gym.make`` of the file's ``env_id`` and ``env_kwargs``, the command set by
  ``reset(options={"command": ...})``, episode ``i`` seeded ``seed + i``), the file run by onnxruntime
  (:class:`agents.export.onnx_policy.OnnxPolicy`); tracking error from ``info["tracking_error"]``, velocities
  from the observation, feet sampled from the state after each step (``mj_forward`` on a copy);
* ``package``: ``examples/deploy_mujoco.py`` on the package's MJCF as shipped;
* ``package, trained physics``: the same with ``--trained-physics`` (timestep, integrator, cone, impratio and
  foot friction of the training env): what is left of the gap is the model itself (motors, joint friction).

Usage::

    python benchmarks/deploy_gap.py runs/go2-ppo/<date>/export/policy.onnx [--episodes 2 --seconds 20]

Results and the machine they were measured on live in ``benchmarks/RESULTS.md`` (issue 37).
"""

from __future__ import annotations

import argparse
import importlib.util
from pathlib import Path

import envs  # noqa: F401, I001  (first: picks a headless GL backend before mujoco is imported)
import gymnasium as gym
import mujoco
import numpy as np

from agents.export.onnx_policy import OnnxPolicy


def _example():
    """``examples/deploy_mujoco.py`` as a module (it is a script, not a package)."""
    path = Path(__file__).resolve().parent.parent / "examples" / "deploy_mujoco.py"
    spec = importlib.util.spec_from_file_location("deploy_mujoco", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


deploy = _example()


def our_episode(policy: OnnxPolicy, env: gym.Env, command: np.ndarray, seed: int) -> dict:
    """One episode in our env at ``command``, measured as :func:`deploy.run_episode` measures."""
    base = env.unwrapped
    lin, ang = base.OBS_SLICES["lin_vel"], base.OBS_SLICES["ang_vel"]
    scratch = mujoco.MjData(base.model)
    feet = deploy.FootStats(base.model, base._foot_geoms, base.model.geom("floor").id, base.CONTACT_FORCE_THRESHOLD)
    obs, _ = env.reset(seed=seed, options={"command": command})
    errors, speeds, fell, done = [], [], False, False
    while not done:
        obs, _, terminated, truncated, info = env.step(policy.act(obs))
        errors.append(info["tracking_error"])
        speeds.append([obs[lin][0], obs[lin][1], obs[ang][2]])
        scratch.qpos[:], scratch.qvel[:] = base.data.qpos, base.data.qvel
        mujoco.mj_forward(base.model, scratch)
        feet.sample(base.model, scratch)
        fell, done = bool(info["fell"]), terminated or truncated
    return {"errors": errors, "speeds": speeds, "feet": feet, "fell": fell}


def main() -> None:
    p = deploy.Parser(description=__doc__.split("\n")[0])  # the example's argument types: one line, status 2
    p.add_argument("policy", help="policy.onnx written by export.py")
    p.add_argument("--commands", nargs="+", type=deploy.velocity_command,
                   default=[deploy.velocity_command(c) for c in deploy.DEFAULT_COMMANDS], metavar="VX,VY,WZ")
    p.add_argument("--episodes", type=deploy.number(1, above=False, whole=True), default=2)
    p.add_argument("--seconds", type=deploy.number(0, above=True), default=20.0)
    p.add_argument("--seed", type=deploy.number(0, above=False, whole=True), default=0)
    args = p.parse_args()
    try:
        session, meta, _, _, _ = deploy.prepare(argparse.Namespace(**vars(args), model=None, trained_physics=False,
                                                                   foot_friction=None))
    except deploy.DeployError as error:
        p.error(str(error))

    policy = OnnxPolicy(args.policy)
    steps = int(round(args.seconds * float(policy.metadata["control_rate_hz"])))
    env = gym.make(policy.env_id, **{**policy.env_kwargs, "max_episode_steps": steps})
    scenes = {}
    for trained in (False, True):
        model = deploy.load_robot(meta, deploy.robot_file(meta), trained)
        scenes["package, trained physics" if trained else "package"] = (model, mujoco.MjData(model), deploy.Indices(model, meta))
    print(f"{args.policy}: {args.episodes} x {args.seconds:g} s per command\n{'':26}{deploy.HEADER}")
    for command in args.commands:
        rows = {"ours": [our_episode(policy, env, command, args.seed + i) for i in range(args.episodes)]}
        for name, (model, data, idx) in scenes.items():
            rng = np.random.default_rng(args.seed)
            rows[name] = [deploy.run_episode(session, model, data, idx, meta, command, args.seconds, rng)
                          for _ in range(args.episodes)]
        for name, episodes in rows.items():
            print(f"{name:26}{deploy.summary(command, episodes)}")
    print(deploy.UNITS)
    env.close()


if __name__ == "__main__":
    main()
