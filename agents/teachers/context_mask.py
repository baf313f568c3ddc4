"""Where a checkpoint teacher teaches: :class:`ContextMask`, a weight per sample from the episode's task context.

A checkpoint teacher with ``teach_contexts`` (``distill.teach_contexts``, or a sequence stage's) teaches only on the
samples of episodes whose task context (``env.task_context().name``: ``"openclaw_go1/stairs_up/level3"`` on the
terrain with its default robot, ``"gantry/mass=heavy/friction=low/size=small"`` on the claw) matches one of the
patterns (:func:`fnmatch.fnmatchcase`: ``*/stairs_up/*``); the other samples are masked (weight 0: no target, RL
alone). The teacher's targets come from its policy at loss time, but the context is the env's and known only while
the samples are collected, so :class:`ContextMask` records it: it wraps the raw training vector env, asks each copy
for its context when an episode starts, and is the student's acting teacher
(:class:`~agents.students.teacher_actions.ActingTeacher`) whose weights the buffer stores with every sample (its
actions are zeros, never read); :class:`~distill.teachers.CheckpointTeacher` reads the weights back. A stairs
specialist that falls on the heightfield types then teaches the stepped ones only. A learner on the device (``sim=warp``)
asks for the same weights as tensors (:meth:`ContextMask.teach`).
"""

from __future__ import annotations

import fnmatch
import sys
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from stable_baselines3.common.vec_env import VecEnv, VecEnvWrapper

from distill.teachers import TeacherActions


class ContextMask(VecEnvWrapper):
    """Weight 1 for the samples of env copies whose episode's task context matches one of ``patterns``, 0 for the
    others (module docstring). ``venv``: the raw training vector env."""

    def __init__(self, venv: VecEnv, patterns: Sequence[str]) -> None:
        super().__init__(venv)
        self.patterns = tuple(patterns)
        self.weights = np.zeros(venv.num_envs, np.float32)  # per copy: whether its current episode's context is taught
        self._no_actions = np.zeros((venv.num_envs, *venv.action_space.shape), np.float32)
        self.teacher_actions: TeacherActions | None = None  # see step_async
        self._no_actions_on_device: torch.Tensor | None = None  # see teach

    def matches(self, context: str) -> bool:
        """Whether the context named ``context`` is taught."""
        return any(fnmatch.fnmatchcase(context, pattern) for pattern in self.patterns)

    def reset(self):
        obs = self.venv.reset()
        contexts = [context.name for context in self.venv.env_method("task_context")]
        self.weights[:] = [self.matches(context) for context in contexts]
        if not self.weights.any():
            print(f"warning: teach_contexts={list(self.patterns)} matches none of the {self.num_envs} training copies' "
                  f"task contexts at the start ({', '.join(sorted(set(contexts)))}): the teacher teaches only "
                  "once an episode of a matching context starts (distill/<stage>/coverage says how often)",
                  file=sys.stderr)
        return obs

    #: whether :meth:`teach` serves a learner whose envs step on a torch device (the contexts come from ``env_method``)
    on_device = True
    retired = False  # it masks for the whole run

    def teach(self, obs: Any, episode_start: Any) -> TeacherActions:
        """A learner on the device's :attr:`teacher_actions`: the weights of the observations ``obs`` (a tensor, one
        row per env), the envs that start an episode with them (``episode_start``) weighted by their new context
        first; on ``obs``' device."""
        started = episode_start.nonzero().flatten().tolist()
        if started:
            contexts = self.venv.env_method("task_context", indices=started)
            self.weights[started] = [self.matches(context.name) for context in contexts]
        if self._no_actions_on_device is None or self._no_actions_on_device.device != obs.device:
            self._no_actions_on_device = torch.as_tensor(self._no_actions, device=obs.device)
        return TeacherActions(self._no_actions_on_device, torch.as_tensor(self.weights.copy(), device=obs.device))

    def step_async(self, actions: np.ndarray) -> None:
        """Step ``actions``; first the weights of the observations they were taken on: :attr:`teacher_actions`."""
        # a copy: the buffer stores it after step_wait, which updates the copies that start a new episode
        self.teacher_actions = TeacherActions(self._no_actions, self.weights.copy())
        self.venv.step_async(actions)

    def step_wait(self):
        obs, rewards, dones, infos = self.venv.step_wait()
        started = np.flatnonzero(dones).tolist()  # those copies were reset: their next episodes' contexts
        if started:
            contexts = self.venv.env_method("task_context", indices=started)
            self.weights[started] = [self.matches(context.name) for context in contexts]
        return obs, rewards, dones, infos
