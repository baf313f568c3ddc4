"""The one walk over a config's plain tree (``OmegaConf.to_container``: dicts and lists), for the checks that read
every value: a NaN anywhere (:func:`agents.training.checks.validate`), a secret anywhere
(:func:`agents.overrides.config_secret`)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any


def config_leaves(node: Any, descend: Callable[[Any], bool] = lambda key: True,
                  prefix: str = "") -> Iterator[tuple[str, Any, Any]]:
    """``(path, key, value)`` of every leaf below ``node``, depth first in order; ``path`` as an override names it
    (``distill.stages[0].alpha``). A dict or list under a key that ``descend`` refuses is a leaf itself."""
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for key, value in items:
        path = f"{prefix}.{key}" if prefix and isinstance(key, str) else f"{prefix}[{key}]" if prefix else str(key)
        if isinstance(value, (dict, list)) and descend(key):
            yield from config_leaves(value, descend, path)
        else:
            yield path, key, value
