"""A scripted controller's parameters saved as JSON: :func:`read_params`.

One format for every parameter file: the trot's tuned ``trot_params/<robot>.json`` (``python -m
envs.controllers.tune``), the proposers benchmark's offline reference (``offline_params.json``) and a user's file for
``distill.controller_params=<path>``: a JSON object with the parameters under ``"params"`` (beside anything else,
e.g. the search's record), or the parameters as the whole object. A file may say what it was made for
(``"robot": "go2"``, as ``tune.py`` writes): given the env's controller spec, a file made for another is refused.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from envs.declarations import ControllerSpec


def read_params(path: Path, spec: ControllerSpec | None = None) -> dict[str, Any]:
    """The parameters in the file at ``path`` (module docstring), unvalidated: the controller's params class checks
    names and bounds. ``spec``: the controller spec of the env they will drive (``env.controller_spec``), whose
    :meth:`~envs.declarations.ControllerSpec.tuned_for` the file must not contradict; None: not checked. Raises
    ``ValueError`` naming what is wrong with the file (for another robot: the file and both robots)."""
    try:
        data = json.loads(Path(path).read_text())
    except OSError as err:
        raise ValueError(f"cannot read {path}: {err.strerror}") from None
    except json.JSONDecodeError as err:
        raise ValueError(f"{path} is not JSON: {err}") from None
    made_for = data if isinstance(data, dict) and "params" in data else {}
    for key, value in (spec.tuned_for() if spec is not None else {}).items():
        if made_for.get(key, value) != value:
            raise ValueError(f"{path} holds parameters for {key} {made_for[key]!r}, but this env's {key} is {value!r}; "
                             f"use a file made for {value!r}")
    params = data.get("params", data) if isinstance(data, dict) else data
    if not isinstance(params, dict):
        raise ValueError(f"{path} holds no object of parameters (a JSON object, or one under \"params\")")
    return params
