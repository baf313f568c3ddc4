"""Scripted controllers behind the policy interface, so they are evaluated exactly like learned policies.

:class:`ControllerPolicy` has Stable-Baselines3's ``predict(obs, state, episode_start, deterministic)``
signature and runs one controller per env of a vector env (each is reset when its env starts an
episode), so :func:`agents.evaluation.protocol.evaluate` and ``evaluate.py policy=trot`` use it unchanged.
Controllers read raw observations: do not wrap their vector env in ``VecNormalize``.
"""

from __future__ import annotations

import copy
from operator import itemgetter
from typing import Any

import numpy as np

from distill.policy import per_entry
from envs.controllers import controller_named
from envs.declarations import ControllerSpec


class ControllerPolicy:
    """``num_envs`` copies of the scripted controller ``name`` (``"trot"``, ``"grasp"``: :data:`envs.controllers.FAMILIES`).

    ``spec``: what the envs tell their controller (``env.controller_spec``: the control period and, for the
    trot, the robot's leg geometry), the same for every env of a vector env. ``params``: every controller's
    starting parameters (a copy each); ``None``: the controller's defaults for the robot (the trot's tuned ones).
    """

    def __init__(self, name: str, num_envs: int, spec: ControllerSpec, params: Any = None) -> None:
        controller = controller_named(name).controller
        self.controllers = [controller(params=copy.deepcopy(params), spec=spec) for _ in range(num_envs)]

    def sync_env(self, venv: Any, i: int) -> None:
        """Make env ``i`` of the SB3 vector env ``venv`` match its controller's params (``env_settings``:
        e.g. the gait clock runs at the trot's frequency). Call it for every env before the first step,
        and for an env whenever its controller's params change."""
        for name, args in self.controllers[i].env_settings().items():
            venv.env_method(name, *args, indices=[i])

    def predict(
        self, observation: Any, state: Any = None, episode_start: Any = None, deterministic: bool = True
    ) -> tuple[np.ndarray, None]:
        """Actions ``(num_envs, action_dim)`` for a batch of raw observations (array or dict of arrays).

        A stateless controller class (``batched = True``, e.g. the trot) acts on all the envs that share
        its parameters in one call; the others act env by env."""
        if getattr(type(self.controllers[0]), "batched", False):
            return self._predict_batched(observation), None
        actions = []
        for i, controller in enumerate(self.controllers):
            if episode_start is not None and episode_start[i]:
                controller.reset()
            actions.append(controller.act(per_entry(itemgetter(i), observation)))
        return np.stack(actions), None

    def _predict_batched(self, observation: np.ndarray) -> np.ndarray:
        """One ``act`` call per distinct parameter set (all envs, unless LLM hints changed some of them)."""
        groups: list[tuple[Any, list[int]]] = []
        for i, controller in enumerate(self.controllers):
            group = next((g for g in groups if g[0].params == controller.params), None)
            if group is None:
                groups.append((controller, [i]))
            else:
                group[1].append(i)
        if len(groups) == 1:
            return groups[0][0].act(observation)
        actions = None
        for controller, rows in groups:
            group_actions = controller.act(observation[rows])
            if actions is None:
                actions = np.empty((len(self.controllers), group_actions.shape[1]), dtype=group_actions.dtype)
            actions[rows] = group_actions
        return actions
