"""The spec is on the env class (``help(envs.quadruped.QuadrupedEnv)``, ``help(envs.claw.ClawEnv)``), as in
Gymnasium's ant_v5: observation, action, reward, termination and argument tables, with units and frames."""

from __future__ import annotations

import inspect
import re

import envs  # noqa: F401, I001  first: registers the ids and picks a headless GL backend before mujoco loads

import pytest

import envs.claw
import envs.quadruped
from envs.claw import ClawEnv
from envs.quadruped import QuadrupedEnv

SECTIONS = ("Action space", "Observation space", "Rewards", "ermination", "Arguments")


@pytest.mark.parametrize("env_cls", [QuadrupedEnv, ClawEnv])
def test_class_docstring_is_the_spec(env_cls):
    doc = inspect.getdoc(env_cls)
    headings = [line for line in doc.splitlines() if line.startswith("## ")]
    for section in SECTIONS:
        assert any(section in heading for heading in headings), (section, headings)
    assert "Frames:" in doc and "world" in doc and re.search(r"\bm/s\b", doc) and "rad" in doc
    for name, p in inspect.signature(env_cls).parameters.items():  # every argument is in the table
        assert re.search(rf"^[`\w, ]*\b{name}\b", doc, re.MULTILINE), name


@pytest.mark.parametrize("module, env_cls", [(envs.quadruped, QuadrupedEnv), (envs.claw, ClawEnv)])
def test_module_docstring_points_at_the_class(module, env_cls):
    assert f":class:`{env_cls.__name__}`" in module.__doc__
    assert "## " not in module.__doc__  # the tables live on the class only
