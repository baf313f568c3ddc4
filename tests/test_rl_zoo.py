"""The shipped RL Zoo hyper-parameter files hold the tuned settings, in the form RL Zoo reads.

RL Zoo itself is not installed by the test extra: ``pip install rl_zoo3`` downgrades Pillow (13 -> 11.3,
via moviepy), so its loader is not run here; docs/envs.md ("RL Zoo") lists the RL Zoo commands that were run.
"""

from __future__ import annotations

from pathlib import Path

import torch
import yaml

from agents.factory import learner_kwargs
from agents.export.rl_zoo import OUT_DIR, sb3_parameters, training_config, tuned_pairs, zoo_equivalent, zoo_files
from agents.vec_env import env_kwargs, make_vec_env


def _zoo_eval(expression: str):
    """What RL Zoo does with ``policy_kwargs`` / ``normalize`` strings: ``eval`` with ``nn`` = ``torch.nn``."""
    return eval(expression, {"nn": torch.nn})  # noqa: S307  (the expressions are our own generated files)


def test_shipped_files_are_generated_from_the_tuned_configs():
    generated = zoo_files()
    assert sorted(generated) == sorted({agent for _, agent in tuned_pairs()})
    for agent, (entries, notes) in generated.items():
        path = OUT_DIR / f"{agent}.yml"
        assert yaml.safe_load(path.read_text()) == entries, f"{path} is stale: run python -m agents.export.rl_zoo"
        for note in notes:
            assert f"# {note}\n" in path.read_text()
        comments = [line for line in path.read_text().splitlines() if line.startswith("#")]
        assert len(comments) == len(set(comments)), f"{path} repeats a comment line"


def test_each_entry_reproduces_our_learner_settings():
    """Each entry holds the settings of the tuned config that wrote it: of the tuned configs sharing an env id (e.g.
    the terrain recipes), the last in file order (RL Zoo's file holds one entry per id)."""
    writers = {}
    for env, agent in tuned_pairs():
        writers[(training_config(env, agent).env.id, agent)] = (env, agent)
    for env, agent in writers.values():
        cfg = training_config(env, agent)
        entry = yaml.safe_load((OUT_DIR / f"{agent}.yml").read_text())[cfg.env.id]
        venv = make_vec_env(cfg.env.id, env_kwargs(cfg), 1)
        accepted = sb3_parameters(agent)
        ours = {k: v for k, v in zoo_equivalent(learner_kwargs(cfg, venv)).items() if k in accepted}
        venv.close()
        assert entry["n_envs"] == cfg.train.num_envs and entry["n_timesteps"] == cfg.train.total_timesteps
        assert _zoo_eval(entry.pop("policy_kwargs")) == ours.pop("policy_kwargs")
        for key, value in ours.items():
            assert entry.get(key) == value, (cfg.env.id, key)
        if cfg.env.normalize_obs:
            assert _zoo_eval(entry["normalize"])["norm_obs"] is True
        else:
            assert "normalize" not in entry or _zoo_eval(entry["normalize"])["norm_obs"] is False


def test_tuned_env_arguments_are_named_for_the_command_line():
    claw = (Path(OUT_DIR) / "sac.yml").read_text()
    assert """--env-kwargs "reward_type:'dense'\"""" in claw  # configs/tuned/claw_sac.yaml: the dense reward
