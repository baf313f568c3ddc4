"""One check per kind of value, read from a dataclass's field annotations: :func:`check_fields`.

Every env's constructor arguments (:class:`envs.base.EnvConfig`, ``gym.make`` and Hydra's ``env.kwargs``
alike) and every scripted controller's parameters (``TrotParams``, ``GraspParams``: ``distill.controller_params``
files, proposals) go through it before their own checks (bounds, names that need a table or the model). A value
is accepted as its declared kind or refused with ``ValueError`` naming the field, never coerced into it: a string
is not a boolean, 1.5 is not a whole number, ``true`` is not a number.

=======================  ==================================================================  ==============
declared kind            accepted values                                                     kept as
=======================  ==================================================================  ==============
``bool``                 ``True``/``False`` (Hydra's ``true``/``false``), numpy booleans     ``bool``
``int``                  integers, numpy integers; not booleans, not floats (``2.0``)        ``int``
``float``                finite integers and floats, numpy ones; not booleans                ``float``
``str``                  strings                                                             ``str``
``Literal[a, b]``        exactly one of the listed values                                    the value
``tuple[X, Y]``          a list, tuple or 1-D array of that length, each entry its kind      ``tuple``
``tuple[X, ...]``        a list, tuple or 1-D array of any length, each entry ``X``          ``tuple``
``dict[K, V]``           a mapping, each key ``K`` and value ``V``                           ``dict``
``X | Y`` (``None``)     the first member kind that accepts it                               its ``kept``
``Any``                  anything                                                            the value
=======================  ==================================================================  ==============
"""

from __future__ import annotations

import functools
import math
import types
from collections.abc import Mapping, Sequence
from dataclasses import fields
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints

import numpy as np

_BOOLS = (bool, np.bool_)
_NUMBERS = (int, float, np.integer, np.floating)
_SINGULAR_PLURAL = {bool: ("true or false", "booleans (true or false)"), int: ("a whole number", "whole numbers"),
                    float: ("a finite number", "finite numbers"), str: ("a string", "strings"),
                    type(None): ("None (null)", "None (null)"), Any: ("any value", "any values")}


class _Refused(Exception):
    """A value that is not of the kind asked for (internal to :func:`checked`)."""


@functools.cache
def field_kinds(cls: type) -> dict[str, Any]:
    """The declared kind (resolved annotation) of each dataclass field of ``cls``, in field order."""
    hints = get_type_hints(cls)
    return {f.name: hints[f.name] for f in fields(cls)}


def checked(value: Any, kind: Any) -> Any:
    """``value`` as ``kind`` (module table); ``ValueError`` saying what ``kind`` accepts when it is not one."""
    try:
        return _as_kind(value, kind)
    except _Refused:
        raise ValueError(f"must be {describe(kind)}") from None


def check_fields(obj: Any, owner: str = "") -> None:
    """Check every dataclass field of ``obj`` against its declared kind and keep the value as that kind.

    Raises ``ValueError`` ``"<owner><field>=<value> must be <what the kind accepts>"`` for the first field
    that is not of its kind (``owner``: a prefix such as ``"TrotParams."``; empty for an env's arguments)."""
    for name, kind in field_kinds(type(obj)).items():
        value = getattr(obj, name)
        try:
            setattr(obj, name, checked(value, kind))
        except ValueError as err:
            raise ValueError(f"{owner}{name}={value!r} {err}") from None


def describe(kind: Any, plural: bool = False) -> str:
    """What ``kind`` accepts, in words (``"a list of 2 finite numbers"``); ``TypeError`` for a kind the
    check does not know (a field must be declared as one of the module table's kinds)."""
    origin, args = get_origin(kind), get_args(kind)
    if kind in _SINGULAR_PLURAL:
        return _SINGULAR_PLURAL[kind][plural]
    if origin is Literal:
        return ("one of " if not plural else "each one of ") + ", ".join(repr(a) for a in args)
    if origin in (Union, types.UnionType):
        return ", or ".join(describe(member, plural) for member in args)
    if origin is tuple:
        lists = "lists" if plural else "a list"
        if len(args) == 2 and args[1] is Ellipsis:
            return f"{lists} of {describe(args[0], plural=True)}"
        if len(set(args)) == 1:
            return f"{lists} of {len(args)} {describe(args[0], plural=True)}"
        return f"{lists} [{', '.join(describe(a) for a in args)}]"
    if origin is dict:
        maps = "mappings" if plural else "a mapping"
        return f"{maps} of {describe(args[0], plural=True)} to {describe(args[1], plural=True)}"
    raise TypeError(f"no check for the declared kind {kind!r}; declare one of envs.typed's kinds")


def _as_kind(value: Any, kind: Any) -> Any:
    """``value`` kept as ``kind``, or :class:`_Refused`."""
    origin, args = get_origin(kind), get_args(kind)
    if kind is Any:
        return value
    if origin in (Union, types.UnionType):
        for member in args:
            try:
                return _as_kind(value, member)
            except _Refused:
                continue
        raise _Refused
    if origin is Literal:
        if any(type(value) is type(a) and value == a for a in args):
            return value
        raise _Refused
    if origin is tuple:
        return _as_tuple(value, args)
    if origin is dict:
        if not isinstance(value, Mapping):
            raise _Refused
        return {_as_kind(k, args[0]): _as_kind(v, args[1]) for k, v in value.items()}
    return _as_scalar(value, kind)


def _as_scalar(value: Any, kind: Any) -> Any:
    """``value`` kept as the scalar ``kind`` (``bool``, ``int``, ``float``, ``str``, ``None``), or :class:`_Refused`."""
    if kind is type(None) and value is None:
        return None
    if kind is bool and isinstance(value, _BOOLS):
        return bool(value)
    numeric = isinstance(value, _NUMBERS) and not isinstance(value, _BOOLS)
    if kind is int and numeric and isinstance(value, (int, np.integer)):
        return int(value)
    if kind is float and numeric and math.isfinite(value):
        return float(value)
    if kind is str and isinstance(value, str):
        return str(value)
    if kind not in _SINGULAR_PLURAL:
        describe(kind)  # TypeError: a kind no check knows
    raise _Refused


def _as_tuple(value: Any, args: tuple) -> tuple:
    """``value`` (a list, tuple or 1-D array) as a tuple whose entries are of the kinds ``args``, or :class:`_Refused`."""
    is_list = isinstance(value, Sequence) and not isinstance(value, str)
    if not (is_list or isinstance(value, np.ndarray) and value.ndim == 1):
        raise _Refused
    kinds = [args[0]] * len(value) if len(args) == 2 and args[1] is Ellipsis else list(args)
    if len(kinds) != len(value):
        raise _Refused
    return tuple(_as_kind(v, k) for v, k in zip(value, kinds))
