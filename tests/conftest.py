"""Import ``envs`` first: it picks a headless GL backend before anything imports mujoco.

SB3's ``learn()`` without a logger of ours (unit tests that drive a learner directly) makes an empty
``$TMPDIR/SB3-<date>`` directory per call; ``SB3_LOGDIR`` sends them all to one directory, removed at exit.
"""

import atexit
import os
import shutil
import tempfile

import envs  # noqa: F401

if "SB3_LOGDIR" not in os.environ:
    os.environ["SB3_LOGDIR"] = tempfile.mkdtemp(prefix="openclaw-tests-sb3-")
    atexit.register(shutil.rmtree, os.environ["SB3_LOGDIR"], True)
