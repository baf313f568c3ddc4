"""The Python of a quadruped step, in CPU microseconds: one env's ``prepare_step`` + ``finish_step`` (everything of
``env.step`` but the physics) and the batched vector env's three hooks per copy at x16 (``before_physics_batch``,
``apply_batch``, ``finish_batch``), for ``OpenClaw/Quadruped-v1`` with the gait measures off (the training envs) and on.

The minimum of 7 ``timeit`` repeats, so the figure is the code's cost rather than the machine's noise; run it in two
checkouts one after the other to compare them (``PYTHONPATH=<checkout> python benchmarks/step_python.py``).
"""

from __future__ import annotations

import timeit

import gymnasium as gym
import numpy as np

import envs  # noqa: F401  (registers OpenClaw/*)
from envs.batched import BatchedSimulation


def main() -> None:
    for name, kwargs in (("training env (gait measures off)", {"gait_measures": False}), ("Quadruped-v1", {})):
        env = gym.make("OpenClaw/Quadruped-v1", **kwargs).unwrapped
        env.reset(seed=0)
        action = np.zeros(12)
        one = min(timeit.repeat(lambda: (env.prepare_step(action), env.finish_step(action)), number=5000, repeat=7))
        sim = BatchedSimulation("OpenClaw/Quadruped-v1", 16, **kwargs)
        for i in range(16):
            sim.reset(i, seed=i)
        actions = np.zeros((16, 12))
        sim.step(actions)  # the copies share their state's rows from here on
        cls, rows = type(sim.tasks[0]), sim._state
        derived = {"sensordata": sim._derived[0], "actuator_force": sim._derived[1]}

        def hooks():
            cls.before_physics_batch(sim.tasks)
            cls.apply_batch(sim.tasks, actions, rows[:, sim._qpos])
            cls.finish_batch(sim.tasks, actions, rows[:, sim._qpos], rows[:, sim._qvel], derived)

        batch = min(timeit.repeat(hooks, number=500, repeat=7))
        print(f"{name:34s} one env {one / 5000 * 1e6:6.1f} us   x16 batch {batch / 500 / 16 * 1e6:6.1f} us per copy")
        sim.close()


if __name__ == "__main__":
    main()
