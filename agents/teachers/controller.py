"""The controller teacher: a scripted controller that acts beside the student, on the same observations.

:class:`ControllerTeacher` wraps the raw training vector env (below ``VecNormalize``) and runs one
controller of the env's family per env (:data:`envs.controllers.FAMILIES`: the trot for the quadruped, the
grasp for the claw). When the student's actions are stepped, every controller acts on the observation
the student just acted on; :attr:`ControllerTeacher.teacher_actions` holds those actions and their weights (1:
the action teaches; 0: masked) and the student's buffer stores them with the sample, as its fields
``teacher_actions`` and ``teacher_weights`` (:mod:`agents.students.teacher_actions`: the same name from here to
the loss); :class:`distill.teachers.RecordedActionTeacher` reads them back.

``distill=scripted`` teaches with the default parameters, weight 1 on every sample;
``distill=adaptive`` is :class:`agents.teachers.adaptive.AdaptiveControllerTeacher`, built on this class.
:func:`agents.teachers.builders.controller_teacher` builds either.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.vec_env import VecEnv, VecEnvWrapper

from agents.controller_policy import ControllerPolicy
from distill.teachers import TeacherActions
from envs.controllers import ControllerFamily
from envs.controllers.params_file import read_params
from envs.declarations import ControllerSpec


class ControllerTeacher(VecEnvWrapper):
    """One scripted controller per env, acting on the observations the student acts on (module docstring).

    Args:
        venv: the raw (un-normalised) training vector env.
        family: the env family, whose controller teaches.
        spec: what the envs tell their controller (``env.controller_spec``: control period, robot geometry).
        params: the controllers' starting parameters; ``None``: their defaults for the robot
            (``distill.controller_params=tuned``; ``untuned``: the family's class defaults; or a JSON file's).
    """

    #: whether :meth:`teach` serves a learner whose envs step on a torch device (its weights need no step outcomes)
    on_device = True

    def __init__(self, venv: VecEnv, family: ControllerFamily, spec: ControllerSpec, params: Any = None) -> None:
        super().__init__(venv)
        self.family = family
        self.policy = ControllerPolicy(family.name, venv.num_envs, spec, params)  # each controller holds its params
        self.teacher_actions: TeacherActions | None = None  # see step_async
        self.retired_at_step: int | None = None  # see retire()
        self._obs: Any = None  # the observation the student's next actions are taken on
        self._episode_start = np.ones(venv.num_envs, dtype=bool)
        self._weights_sum, self._weights_n = 0.0, 0  # since the last coverage() call
        self._run_sum, self._run_n = 0.0, 0  # the same, summed over the whole run
        for i in range(venv.num_envs):
            self.sync_env(i)

    def sync_env(self, i: int) -> None:
        """Make env ``i`` match its controller's params (e.g. the gait clock runs at the trot's frequency)."""
        self.policy.sync_env(self.venv, i)

    def reset(self):
        self._obs = self.venv.reset()
        self._episode_start = np.ones(self.num_envs, dtype=bool)
        return self._obs

    def step_async(self, actions: np.ndarray) -> None:
        """Step the student's ``actions``; first, every controller acts on the observation they were taken on
        (controllers of envs that start an episode are reset first): :attr:`teacher_actions`."""
        if not self.retired:  # once retired, teacher_actions stays the zeros retire() set
            self.teacher_actions = self.teach(self._obs, self._episode_start)
        self.venv.step_async(actions)

    def teach(self, obs: Any, episode_start: Any) -> TeacherActions:
        """The controllers' actions and weights on the raw observations ``obs`` (one row per env; ``episode_start``:
        which envs start an episode with them): numpy arrays, or torch tensors on the observations' device when
        ``obs`` is a tensor (a learner on the device, :attr:`on_device`)."""
        taught, _ = self.policy.predict(obs, episode_start=episode_start)
        weights = self.weights()
        self._weights_sum += float(weights.sum())
        self._weights_n += len(weights)
        if isinstance(taught, np.ndarray):
            return TeacherActions(taught.astype(np.float32), weights)
        return TeacherActions(taught.to(torch.float32), torch.as_tensor(weights, device=taught.device))

    def step_wait(self):
        obs, rewards, dones, infos = self.venv.step_wait()
        if not self.retired:
            self.observe(obs, dones, infos)
        self._obs, self._episode_start = obs, dones
        return obs, rewards, dones, infos

    def weights(self) -> np.ndarray:
        """Per env, whether its controller's action teaches (1) or is masked (0): always 1 here."""
        return np.ones(self.num_envs, dtype=np.float32)

    def observe(self, obs: Any, dones: np.ndarray, infos: list[dict]) -> None:
        """A step's outcome, for teachers that learn from it (the adaptive teacher's segments); nothing here."""

    @property
    def retired(self) -> bool:
        return self.retired_at_step is not None

    def retire(self, step: int) -> None:
        """Stop teaching from env step ``step`` to the end of the run: no controller runs (and no proposal is asked
        for); every sample gets weight 0 (nothing reads it: alpha is 0 by now) and the coverage counts only
        the samples before this call."""
        self.retired_at_step = step
        nothing = np.zeros((self.num_envs, *self.action_space.shape), np.float32)
        self.teacher_actions = TeacherActions(nothing, np.zeros(self.num_envs, np.float32))

    def coverage(self) -> float:
        """Fraction of the samples since the last call that have a teacher action (weight > 0)."""
        value = self._weights_sum / self._weights_n if self._weights_n else 0.0
        self._run_sum, self._run_n = self._run_sum + self._weights_sum, self._run_n + self._weights_n
        self._weights_sum, self._weights_n = 0.0, 0
        return value

    def run_coverage(self) -> float:
        """Fraction of all samples so far that have a teacher action."""
        n = self._run_n + self._weights_n
        return (self._run_sum + self._weights_sum) / n if n else 0.0

    def record_stats(self, record: Callable[[str, float], None]) -> None:
        """Log the teacher's state once per rollout (``teacher/coverage``)."""
        if not self.retired:
            record("teacher/coverage", self.coverage())

    def finish(self, logger: Any, step: int) -> None:
        """Called when training ends (the adaptive teacher waits for its queries in flight and logs the final counts)."""

    def report(self) -> dict[str, Any]:
        """What the teacher did over the run (summary keys ``teacher_*``)."""
        did: dict[str, Any] = {"teacher_coverage": round(self.run_coverage(), 4)}
        if self.retired:
            did["teacher_retired_at_step"] = self.retired_at_step
        return did

    def coverage_cause(self) -> str | None:
        """Why the coverage is low, when the teacher can tell (the adaptive teacher's proposal counts)."""
        return None


class ControllerTeacherCallback(BaseCallback):
    """Drive a :class:`ControllerTeacher` from the training loop: log its state at every rollout end, retire
    it when the distillation says its teaching is over (``finished`` of the training progress in [0, 1]:
    :meth:`distill.opd.OnlinePolicyDistillation.finished` decides; e.g. after ``distill.schedule_steps`` the rest of
    the run costs what plain RL costs, the trot's actions taking about as long as the quadruped's vector step), and
    let it finish when training ends."""

    def __init__(self, teacher: ControllerTeacher, finished: Callable[[float], bool]) -> None:
        super().__init__()
        self.teacher, self.finished = teacher, finished

    def _on_step(self) -> bool:
        if not self.teacher.retired and self.finished(self.num_timesteps / self.model._total_timesteps):
            self.teacher.retire(self.num_timesteps)
            print(f"step {self.num_timesteps}: the controller teacher's alpha is 0 from here on; it stops (RL alone, "
                  "or the next teacher of a sequence)", file=sys.stderr)
        return True

    def _on_rollout_end(self) -> None:
        self.teacher.record_stats(self.logger.record)

    def _on_training_end(self) -> None:
        self.teacher.finish(self.logger, self.num_timesteps)


CONTROLLER_PARAMS = ("tuned", "untuned")  # distill.controller_params, or the path of a JSON file of parameters


def starting_params(family: ControllerFamily, which: str, spec: ControllerSpec | None = None) -> Any:
    """The teacher controllers' starting parameters for ``distill.controller_params``: ``None`` for
    ``tuned`` (the controller's defaults for the robot: the trot's parameter file where the robot has one),
    the family's class defaults for ``untuned`` (hand-tuned for openclaw_go1: the "defaults fail" case), else
    the parameters in the JSON file at that path (:func:`envs.controllers.params_file.read_params`; fields it
    leaves out take the class defaults), refused when the file says it was made for another robot than ``spec``'s
    (the env's ``controller_spec``; None: not checked).

    Raises:
        ValueError: the file cannot be read, or its parameters are not the family's (named in the message).
    """
    if which in CONTROLLER_PARAMS:
        return None if which == "tuned" else family.params()
    return family.params.from_dict(read_params(Path(which), spec))
