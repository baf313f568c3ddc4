"""Where the envs' model files come from: ``assets/`` of this repository and the PyPI packages of the extras.

:func:`asset_path` finds an MJCF shipped in ``assets/``; :func:`installed_package_dir` and :func:`package_file`
locate a model inside an installed package (located, never imported) and raise :class:`MissingExtra`, naming
the pyproject extra that installs it, when it is absent.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

ASSETS_DIR = Path(__file__).resolve().parent.parent / "assets"


def asset_path(name: str) -> Path:
    """Absolute path of an MJCF file shipped in ``assets/``."""
    path = ASSETS_DIR / name
    if not path.is_file():
        raise FileNotFoundError(f"MJCF asset {path} is missing; reinstall the package from a full checkout")
    return path


class MissingExtra(ImportError, ValueError):
    """An env argument needs a PyPI package that is not installed; the message names the pyproject extra that
    installs it. A ``ValueError`` too: to the env's callers it is a bad argument value for this installation."""


def installed_package_dir(module: str, package: str, extra: str, needed_by: str, alternative: str) -> Path:
    """The directory of the installed module ``module`` of PyPI package ``package`` (located, not imported:
    nothing of it runs); :class:`MissingExtra` naming ``pip install -e ".[<extra>]"`` and ``alternative`` when
    it is absent. ``needed_by`` names what needs it (``"robot='go2'"``)."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise MissingExtra(
            f"{needed_by} loads its model from the {package} package, which is not installed; "
            f'install the extra: pip install -e ".[{extra}]" (setup.sh does), or {alternative}'
        )
    return Path(next(iter(spec.submodule_search_locations)))


def package_file(package_dir: Path, relative: str, package: str, extra: str) -> Path:
    """``package_dir / relative``, checked; :class:`MissingExtra` telling to reinstall the extra when missing."""
    path = package_dir / relative
    if not path.is_file():
        raise MissingExtra(f"{path} is missing from the installed {package}; reinstall it: "
                           f'pip install --force-reinstall -e ".[{extra}]"')
    return path
