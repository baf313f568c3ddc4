"""The students copy SB3 code: fail loudly when the installed SB3 no longer matches the copies.

Each copy records the sha256 of the SB3 source it follows beside it; ``pyproject.toml`` pins SB3 to
the minor series those hashes were taken from.
"""

from __future__ import annotations

import hashlib
import inspect
import re
import tomllib
from pathlib import Path

import pytest
import stable_baselines3
from stable_baselines3 import PPO, SAC
from stable_baselines3.common.buffers import BaseBuffer, DictReplayBuffer, ReplayBuffer

from agents.students import PPOStudent, SACStudent
from agents.students.replay_sampling import SB3_SAMPLE_SHA256
from agents.students.replay_buffer import SB3_GET_SAMPLES_SHA256

ROOT = Path(__file__).resolve().parents[1]


def minor(version: str) -> tuple[int, int]:
    """(major, minor) of a version string such as ``2.9.2``."""
    major, minor_, *_ = version.split(".")
    return int(major), int(minor_)


def sha256_of_source(function) -> str:
    return hashlib.sha256(inspect.getsource(function).encode()).hexdigest()


@pytest.mark.parametrize(
    ("original", "recorded", "copy"),
    [
        (PPO.train, PPOStudent.SB3_TRAIN_SHA256, "agents/students/ppo.py (PPOStudent.train, _log_update)"),
        (SAC.train, SACStudent.SB3_TRAIN_SHA256, "agents/students/sac.py (SACStudent.train)"),
        (BaseBuffer.sample, SB3_SAMPLE_SHA256, "agents/students/replay_sampling.py"),
        (ReplayBuffer._get_samples, SB3_GET_SAMPLES_SHA256["ReplayBuffer"],
         "agents/students/replay_targets.py and replay_sampling.py"),
        (DictReplayBuffer._get_samples, SB3_GET_SAMPLES_SHA256["DictReplayBuffer"],
         "agents/students/replay_targets.py and replay_sampling.py"),
    ],
    ids=["PPO.train", "SAC.train", "BaseBuffer.sample", "ReplayBuffer._get_samples", "DictReplayBuffer._get_samples"],
)
def test_copied_sb3_code_matches_the_installed_sb3(original, recorded, copy):
    found = sha256_of_source(original)
    assert found == recorded, (
        f"stable-baselines3 {stable_baselines3.__version__}: {original.__qualname__} is not the code that {copy} "
        f"copies (source sha256 {found}, recorded {recorded}). Diff the installed source against the copy, port "
        "the change, run `pytest tests/test_distill.py -k bit_identical` (alpha=0 must stay bit-identical to SB3), "
        "then record the new hash beside the copy and move the stable-baselines3 pin in pyproject.toml"
    )


def test_installed_sb3_is_in_the_pinned_series():
    spec = next(d for d in tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
                if d.startswith("stable-baselines3"))
    pin = re.fullmatch(r"stable-baselines3>=(\d+\.\d+),<(\d+\.\d+)", spec)
    assert pin is not None, f"pyproject.toml: {spec!r} is not a minor-series pin '>=X.Y,<X.Z'"
    low, high = (minor(v) for v in pin.groups())
    assert low <= minor(stable_baselines3.__version__) < high, (
        f"stable-baselines3 {stable_baselines3.__version__} is installed but pyproject.toml pins {spec}; "
        "install a version in that series (pip install -e .) or re-check the copies as the test above says"
    )
