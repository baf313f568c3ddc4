"""The spec is on the env class (``help(envs.quadruped.QuadrupedEnv)``, ``help(envs.claw.ClawEnv)``), as in
Gymnasium's ant_v5: observation, action, reward, termination and argument tables, with units and frames."""

from __future__ import annotations

import inspect
import re

import envs  # noqa: F401, I001  first: registers the ids and picks a headless GL backend before mujoco loads

import numpy as np
import pytest

import envs.claw
import envs.quadruped
from envs.claw import ClawEnv
from envs.quadruped import QuadrupedEnv
from envs.quadruped.rewards import TERM_TABLE

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


def test_the_reward_table_is_the_table_of_terms():
    """QuadrupedEnv's reward table (``## Rewards``) lists the terms of ``envs.quadruped.rewards.TERM_TABLE`` in its
    order, each with its default scale; the env's defaults and a step's ``reward_<name>`` info keys (in the order
    they are summed) are the table's."""
    doc = inspect.getdoc(QuadrupedEnv)
    lines = doc[doc.index("## Rewards"):doc.index("## Termination")].splitlines()
    top = next(i for i, line in enumerate(lines) if line.startswith("name ") and "default scale" in line)
    column = lines[top].index("default scale")
    end = next(i for i in range(top + 2, len(lines)) if lines[i].startswith("==="))  # the table's last rule
    rows = [(line.split()[0], float(line[column:].split()[0])) for line in lines[top + 2:end] if line[:1] != " "]
    assert rows == [(term.name, term.default_scale) for term in TERM_TABLE]
    assert QuadrupedEnv.DEFAULT_REWARD_SCALES == dict(rows)
    env = QuadrupedEnv()
    env.reset(seed=0)
    info = env.step(np.zeros(12))[4]
    assert [key for key in info if key.startswith("reward_")] == [term.info_key for term in TERM_TABLE]
    env.close()


def test_the_observation_table_is_the_table_of_terms():
    """QuadrupedEnv's observation table (``## Observation space``) lists the terms of ``envs.quadruped.observation``'s
    tables (``TERMS``, then ``CLOCK_TERMS``) in their order, each at its indices with its unit and frame; an env's
    slices, noise scales and deploy metadata's terms are the tables'."""
    from envs.quadruped.observation import CLOCK_TERMS, TERMS

    doc = inspect.getdoc(QuadrupedEnv)
    lines = doc[doc.index("## Observation space"):doc.index("## Rewards")].splitlines()
    top = next(i for i, line in enumerate(lines) if line.startswith("indices ") and "unit" in line)
    unit, frame = lines[top].index("unit"), lines[top].index("frame")
    end = next(i for i in range(top + 2, len(lines)) if lines[i].startswith("==="))
    rows = [(line.split()[0], line.split()[1], line[unit:frame].strip(), line[frame:].strip())
            for line in lines[top + 2:end] if line[:1] != " "]
    env = QuadrupedEnv(gait_clock=True)
    expected = []
    for term in TERMS + CLOCK_TERMS:
        s = env.OBS_SLICES[term.name]
        expected.append((f"{s.start}-{s.stop - 1}" if s.stop - s.start > 1 else f"{s.start}", term.name, term.unit,
                         term.frame))
    assert rows == expected
    assert env.OBS_NOISE_SCALES == {t.name: t.noise for t in TERMS + CLOCK_TERMS if t.noise}
    meta = env.deploy_metadata()["observation_terms"]
    assert {name: meta[name]["unit"] for name in meta} == {t.name: t.unit for t in TERMS + CLOCK_TERMS}
    env.close()
