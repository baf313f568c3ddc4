"""Every env constructor argument and every scripted controller parameter is checked against its declared type
(``envs.typed``): a string is not a boolean, 1.5 is not a whole number, ``true`` is not a number; an env config
named for a robot or arm refuses another one; the messages name the key and the fix (issue 36, items 1, 2, 4, 8)."""

from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path

import envs  # noqa: F401, I001  first: registers the ids and picks a headless GL backend before mujoco loads

import gymnasium as gym
import numpy as np
import pytest
from hydra import compose, initialize_config_dir

from agents.config.schema import register_configs
from agents.errors import ConfigError
from agents.teachers.controller import starting_params
from envs.claw import ClawConfig, ClawEnv
from envs.controllers import FAMILIES, GraspParams, TrotParams
from envs.quadruped import QuadrupedEnv
from envs.quadruped.config import QuadrupedTerrainConfig
from test_train import cli_here
from test_user_errors import SMOKE, refused

ROOT = Path(__file__).resolve().parent.parent
TERRAIN = "OpenClaw/QuadrupedTerrain-v1"


# ------------------------------------------------------------------------------ 1. booleans are booleans
@pytest.mark.parametrize("name, value", [("curriculum", "no"), ("heading_command", "off"),
                                         ("domain_randomization", "off"), ("curriculum", 1), ("gait_clock", "true")])
def test_a_boolean_argument_refuses_anything_but_a_boolean(name, value):
    with pytest.raises(ValueError, match=rf"{name}={value!r} must be true or false"):
        gym.make(TERRAIN, **{name: value})


def test_a_boolean_argument_takes_python_and_numpy_booleans():
    env = gym.make(TERRAIN, curriculum=np.False_, heading_command=False, domain_randomization=np.True_).unwrapped
    assert (env.curriculum, env.heading_command, env.domain_randomization) == (False, False, True)
    assert all(type(v) is bool for v in (env.curriculum, env.heading_command, env.domain_randomization))


# ------------------------------------------------------------------------------ 2. integers and floats, not coerced
@pytest.mark.parametrize("kwargs, named", [
    ({"terrain_seed": 1.5}, "terrain_seed=1.5 must be a whole number"),
    ({"terrain_seed": 2.0}, "terrain_seed=2.0 must be a whole number"),
    ({"terrain_seed": True}, "terrain_seed=True must be a whole number"),
    ({"tracking_sigma": True}, "tracking_sigma=True must be a finite number"),
    ({"obs_noise": "0.5"}, "obs_noise='0.5' must be a finite number"),
    ({"command_vx": (False, True)}, "command_vx=(False, True) must be a list of 2 finite numbers"),
    ({"width": 64.0}, "width=64.0 must be a whole number"),
])
def test_numbers_are_checked_as_declared(kwargs, named):
    with pytest.raises(ValueError, match=named.replace("(", r"\(").replace(")", r"\)")):
        QuadrupedEnv(**kwargs)


def test_an_int_is_a_fine_float_and_numpy_numbers_are_numbers():
    env = QuadrupedEnv(terrain_seed=np.int64(3), tracking_sigma=1, obs_noise=np.float32(0.5), command_vx=[0, 1])
    assert (env.terrain_seed, env.tracking_sigma, env.obs_noise, env.command_vx) == (3, 1.0, 0.5, (0.0, 1.0))
    assert (type(env.terrain_seed), type(env.tracking_sigma), type(env.obs_noise)) == (int, float, float)


def test_claw_arguments_are_typed_too():
    with pytest.raises(ValueError, match="task='carry' must be one of 'lift', 'place'"):
        ClawEnv(task="carry")
    with pytest.raises(ValueError, match="distance_threshold=True must be a finite number"):
        ClawEnv(distance_threshold=True)
    with pytest.raises(ValueError, match="object_range='wide'"):
        ClawEnv(object_range="wide")


@pytest.mark.parametrize("params_cls, bad", [
    (TrotParams, {"frequency_hz": True}), (TrotParams, {"duty_factor": "0.5"}),
    (GraspParams, {"close_steps": 3.5}), (GraspParams, {"close_steps": True}), (GraspParams, {"gain": False}),
    (GraspParams, {"xy_offset": [0.0, True]}),
])
def test_controller_parameters_are_typed(params_cls, bad):
    (name, value), = bad.items()
    with pytest.raises(ValueError, match=rf"{params_cls.__name__}\.{name}="):
        params_cls.from_dict(bad)


def test_a_parameter_file_with_a_boolean_number_is_refused(tmp_path):
    path = tmp_path / "params.json"
    path.write_text(json.dumps({"params": {"frequency_hz": True, "duty_factor": 0.5}}))
    with pytest.raises(ValueError, match=r"TrotParams\.frequency_hz=True must be a finite number"):
        starting_params(FAMILIES["quadruped"], str(path))
    path.write_text(json.dumps({"params": {"frequency_hz": 2, "duty_factor": 0.5}}))
    assert starting_params(FAMILIES["quadruped"], str(path)).frequency_hz == 2.0  # an int is a fine float


def test_every_declared_field_has_a_kind_the_check_knows():
    from envs.typed import describe, field_kinds

    for cls in (QuadrupedTerrainConfig, ClawConfig, TrotParams, GraspParams):
        kinds = field_kinds(cls)
        assert set(kinds) == {f.name for f in fields(cls)}
        for kind in kinds.values():
            describe(kind)  # TypeError for a kind the check does not know


# ------------------------------------------------------------------------------ 4. a config named for a model keeps it
def _validate(*overrides: str) -> None:
    from agents.training.checks import validate

    register_configs()
    with initialize_config_dir(config_dir=str(ROOT / "configs"), version_base="1.3"):
        validate(compose("train", overrides=[*SMOKE, *overrides]))


@pytest.mark.parametrize("overrides, named", [
    (("env=go2", "env.kwargs.robot=aliengo"), ("env.kwargs.robot=aliengo", "env=go2", "env=aliengo",
                                                "env=quadruped env.kwargs.robot=aliengo")),
    (("env=go2_sim2real", "env.kwargs.robot=go1"), ("env.kwargs.robot=go1", "env=go2_sim2real", "go2")),
    (("env=claw_panda", "env.kwargs.arm=gantry"), ("env.kwargs.arm=gantry", "env=claw_panda", "env=claw ")),
])
def test_a_config_named_for_a_model_refuses_another(overrides, named):
    with pytest.raises(ConfigError) as raised:
        _validate(*overrides)
    for name in named:
        assert name in str(raised.value), (name, str(raised.value))


@pytest.mark.parametrize("overrides", [("env=quadruped", "env.kwargs.robot=aliengo"),
                                       ("env=quadruped_terrain", "env.kwargs.robot=go2"),
                                       ("env=claw", "+env.kwargs.arm=panda"), ("env=go2", "env.kwargs.robot=go2")])
def test_a_config_not_named_for_a_model_takes_any(overrides):
    _validate(*overrides)


# ------------------------------------------------------------------------------ the command line: one line, status 2
@pytest.mark.parametrize("args, named", [
    (("env=quadruped_terrain", "env.kwargs.heading_command=off"), ("env.kwargs", "heading_command='off'", "true or false")),
    (("env=quadruped_terrain", "env.kwargs.curriculum=maybe"), ("curriculum='maybe'", "true or false")),
    (("env=quadruped", "env.kwargs.domain_randomization=off"), ("domain_randomization='off'",)),
    (("env=quadruped_terrain", "env.kwargs.terrain_seed=1.5"), ("terrain_seed=1.5", "whole number")),
    (("env=quadruped_terrain", "env.kwargs.terrain_seed=-1"), ("env.kwargs", "terrain_seed=-1", ">= 0")),
    (("env=quadruped", "env.kwargs.obs_noise=-1"), ("env.kwargs.obs_noise", "+env.kwargs.obs_noise=-1")),
    (("env=go2", "env.kwargs.robot=aliengo"), ("env.kwargs.robot=aliengo", "env=go2", "env=aliengo")),
])
def test_train_refuses_a_mistyped_env_argument_before_writing(args, named, tmp_path):
    run_dir = tmp_path / "run"
    refused(cli_here("train.py", *SMOKE, *args, f"hydra.run.dir={run_dir}"), *named)
    assert not run_dir.exists()


def test_train_refuses_a_parameter_file_with_a_boolean_number(tmp_path):
    path, run_dir = tmp_path / "trot.json", tmp_path / "run"
    path.write_text(json.dumps({"frequency_hz": True}))
    refused(cli_here("train.py", *SMOKE, "distill=scripted", f"distill.controller_params={path}",
                    f"hydra.run.dir={run_dir}"), "distill.controller_params", "frequency_hz=True")
    assert not run_dir.exists()
