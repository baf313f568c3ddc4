"""A scripted controller's parameters saved as JSON: :func:`read_params`.

One format for every parameter file: the trot's tuned ``trot_params/<robot>.json`` (``python -m
envs.controllers.tune``), the proposers benchmark's offline reference (``offline_params.json``) and a user's file for
``distill.controller_params=<path>``: a JSON object with the parameters under ``"params"`` (beside anything else,
e.g. the search's record), or the parameters as the whole object.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def read_params(path: Path) -> dict[str, Any]:
    """The parameters in the file at ``path`` (module docstring), unvalidated: the controller's params class checks
    names and bounds. Raises ``ValueError`` naming what is wrong with the file."""
    try:
        data = json.loads(Path(path).read_text())
    except OSError as err:
        raise ValueError(f"cannot read {path}: {err.strerror}") from None
    except json.JSONDecodeError as err:
        raise ValueError(f"{path} is not JSON: {err}") from None
    params = data.get("params", data) if isinstance(data, dict) else data
    if not isinstance(params, dict):
        raise ValueError(f"{path} holds no object of parameters (a JSON object, or one under \"params\")")
    return params
