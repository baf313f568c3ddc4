"""Ctrl-C and SIGTERM around work that must end cleanly: training and evaluation share these.

* :func:`sigterm_as_keyboard_interrupt` treats SIGTERM (a cluster pre-emption) like Ctrl-C, so one save
  path serves both;
* :func:`signals_deferred` holds both while files that must be whole are written (a checkpoint, a
  summary, an evaluation's outputs) and records those that arrive, for the caller to act on afterwards.

Python delivers signals to the main thread only; off it both are no-ops.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

STOPPING = (signal.SIGINT, signal.SIGTERM)


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


@contextmanager
def sigterm_as_keyboard_interrupt() -> Iterator[None]:
    """Inside the block a SIGTERM raises :class:`KeyboardInterrupt`, as Ctrl-C does."""
    if not _main_thread():
        yield
        return

    def handler(signum, frame):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextmanager
def signals_deferred() -> Iterator[list[int]]:
    """Hold Ctrl-C and SIGTERM inside the block; the yielded list receives those that arrive."""
    arrived: list[int] = []
    held = STOPPING if _main_thread() else ()
    previous = {sig: signal.signal(sig, lambda signum, frame: arrived.append(signum)) for sig in held}
    try:
        yield arrived
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
