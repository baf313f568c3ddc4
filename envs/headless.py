"""Choose a working OpenGL backend for MuJoCo before it is first needed.

MuJoCo reads ``MUJOCO_GL`` when ``mujoco`` is imported and when a rendering context is made. On a
machine without a display the default (GLFW) cannot open a window, so :func:`configure` picks
``egl`` (GPU or Mesa's software EGL) or ``osmesa`` (pure software) when ``MUJOCO_GL`` is unset.
"""

from __future__ import annotations

import ctypes.util
import logging
import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import mujoco

_INSTALL_HINT = (
    "no headless OpenGL backend works: install Mesa's EGL or OSMesa "
    "(Debian/Ubuntu: `apt-get install libegl1 libgl1-mesa-dri` or `apt-get install libosmesa6`), "
    "or set MUJOCO_GL to a backend that works on this machine (egl, osmesa, glfw)"
)


def has_display() -> bool:
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def configure() -> str | None:
    """Set ``MUJOCO_GL`` (and ``PYOPENGL_PLATFORM``) for headless use if the user has not chosen.

    Returns the backend in effect, or ``None`` when a display is present and MuJoCo's default applies.
    """
    logging.getLogger("OpenGL").setLevel(logging.WARNING)  # PyOpenGL logs an INFO line on every import
    chosen = os.environ.get("MUJOCO_GL")
    if chosen:
        return chosen
    if has_display():
        return None
    for backend, library in (("egl", "EGL"), ("osmesa", "OSMesa")):
        if ctypes.util.find_library(library):
            os.environ["MUJOCO_GL"] = backend
            os.environ.setdefault("PYOPENGL_PLATFORM", backend)
            return backend
    return None


def ensure_gl_backend() -> None:
    """Raise a one-line, actionable error if offscreen rendering cannot work here."""
    if os.environ.get("MUJOCO_GL") or has_display():
        return
    raise RuntimeError(_INSTALL_HINT)


def make_renderer(model: mujoco.MjModel, height: int, width: int) -> mujoco.Renderer:
    """A ``mujoco.Renderer``; a one-line ``RuntimeError`` saying how to fix it when no GL context can be made."""
    ensure_gl_backend()
    import mujoco

    try:
        return mujoco.Renderer(model, height, width)
    except Exception as err:  # FatalError, ImportError, GLError ... depending on the backend and the failure
        backend = os.environ.get("MUJOCO_GL") or "glfw (the default)"
        reason = str(err).strip().splitlines()[0] if str(err).strip() else ""
        raise RuntimeError(
            f"MuJoCo cannot render with MUJOCO_GL={backend} ({type(err).__name__}: {reason}); fix: `import envs` "
            "before `mujoco` (it picks the backend), or export MUJOCO_GL=egl (apt-get install libegl1 "
            "libgl1-mesa-dri) or MUJOCO_GL=osmesa (apt-get install libosmesa6)"
        ) from err
