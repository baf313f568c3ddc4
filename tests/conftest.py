"""Import ``envs`` first: it picks a headless GL backend before anything imports mujoco.

SB3's ``learn()`` without a logger of ours (unit tests that drive a learner directly) makes an empty
``$TMPDIR/SB3-<date>`` directory per call; ``SB3_LOGDIR`` sends them all to one directory, removed at exit.
"""

import atexit
import os
import shutil
import subprocess
import sys
import tempfile

import envs  # noqa: F401
import pytest

if "SB3_LOGDIR" not in os.environ:
    os.environ["SB3_LOGDIR"] = tempfile.mkdtemp(prefix="openclaw-tests-sb3-")
    atexit.register(shutil.rmtree, os.environ["SB3_LOGDIR"], True)


@pytest.fixture
def check_missing_extra(tmp_path):
    """``check(module, extra, env_id, kwargs, train_overrides)``: in Pythons where ``module`` is not installed (a
    ``sitecustomize`` hides it), ``gym.make(env_id, **kwargs)`` raises an ImportError naming
    ``pip install -e ".[<extra>]"`` while ``gym.make(env_id)`` still works, and ``train.py <train_overrides>
    train=smoke`` exits 2 with that command and writes no checkpoint."""

    def check(module: str, extra: str, env_id: str, kwargs: dict, train_overrides: list[str]) -> None:
        (tmp_path / "sitecustomize.py").write_text(f"import sys\nsys.modules[{module!r}] = None  # not installed\n")
        env = {**os.environ, "PYTHONPATH": str(tmp_path)}
        code = ("import envs, gymnasium as gym\n"
                f"try:\n    gym.make({env_id!r}, **{kwargs!r})\n"
                "except ImportError as e:\n    print('ERR', e)\n"
                f"gym.make({env_id!r})  # the default needs no package\n")
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
        assert out.returncode == 0 and f'not installed; install the extra: pip install -e ".[{extra}]"' in out.stdout, (
            out.stdout + out.stderr)
        run = tmp_path / "run"
        train = subprocess.run([sys.executable, "train.py", *train_overrides, f"hydra.run.dir={run}", "train=smoke"],
                               capture_output=True, text=True, timeout=300, env=env)
        assert train.returncode == 2, train.stdout + train.stderr
        assert f'pip install -e ".[{extra}]"' in train.stderr
        assert not (run / "checkpoints").exists()

    return check
