"""The Go2 terrain chain's configs (issue 81): one command each, the Go2's own model, the flat Go2's slip term and
randomisation, an action range the Go2's joints allow, the specialist's 10 M steps in one run, and a student whose
action units are its teacher's."""

from __future__ import annotations

import gymnasium as gym
import pytest

import envs  # noqa: F401
from test_train import compose_train


def test_the_go2_specialist_and_student_compose_and_build():
    stairs = compose_train("env=go2_terrain_stairs")
    blind = compose_train("env=go2_terrain_blind", "distill.teacher=runs/go2_terrain_stairs-ppo/x")
    for cfg in (stairs, blind):
        kwargs = cfg.env.kwargs
        assert (kwargs.robot, kwargs.domain_randomization, kwargs.reward_scales.feet_slip) == ("go2", True, -0.5)
        assert cfg.env.id == "OpenClaw/QuadrupedTerrain-v1"
    assert stairs.train.total_timesteps == 10_000_000 and stairs.env.kwargs.terrain_types == ["stairs_up"]
    assert stairs.agent.perceptive_actor and stairs.agent.desired_kl == 0.02
    assert list(stairs.env.kwargs.action_scale) == list(blind.env.kwargs.action_scale)  # the teacher's units
    assert blind.env.kwargs.history_steps == 5 and not blind.agent.perceptive_actor
    assert [stage.name for stage in blind.distill.stages] == ["checkpoint", "checkpoint"]
    kwargs = {k: v for k, v in stairs.env.kwargs.items() if v is not None}
    env = gym.make(stairs.env.id, **kwargs)  # the env checks the targets stay within the joint ranges
    assert env.unwrapped.robot == "go2"
    env.close()
    with pytest.raises(ValueError, match="calf"):  # the Go1-class recipe's range leaves the Go2's calf range
        gym.make(stairs.env.id, **{**kwargs, "action_scale": [0.5, 0.8, 0.9]})
