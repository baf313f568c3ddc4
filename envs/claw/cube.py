"""The claw's cube (:class:`Cube`): its physical properties - mass (kg), the pads' sliding friction on it, half
edge (m); :data:`envs.claw.scene.OBJECT_PROPERTIES` - each fixed or drawn per episode, written into the env's
model, and the halves of their ranges an episode's draws fell in (its task context). ``ClawEnv``'s docstring,
section "Object properties and task contexts", is the spec.
"""

from __future__ import annotations

import math
from typing import Any

import mujoco
import numpy as np

from envs.claw.config import ClawConfig
from envs.claw.scene import OBJECT_PROPERTIES, TABLE_TOP_Z


class Cube:
    """The cube of one env's ``model`` (and ``data``, reset after each draw) with the arm's ``pad_geoms``.

    Fixed properties (``config``'s numbers) are written once, unless nominal (the model then stays the one
    ``claw.xml`` compiles to); drawn ones (``config``'s ``(low, high)`` pairs, :attr:`drawn`) at every
    :meth:`draw`. :attr:`properties` are the episode's values (``{"mass": kg, "friction": -, "size": m}``),
    :attr:`rest_z` its resting centre height (m, world), :attr:`object_class` the half of each drawn
    property's range its draw fell in (``{property: word}``).
    """

    def __init__(self, model: mujoco.MjModel, data: mujoco.MjData, pad_geoms: list[int], config: ClawConfig) -> None:
        self.model, self.data, self.pad_geoms = model, data, pad_geoms
        self.body, self.geom = model.body("object").id, model.geom("object").id
        if self.model_values() != {name: p.nominal for name, p in OBJECT_PROPERTIES.items()}:
            raise RuntimeError("the claw model's cube mass, size or pad friction changed; update envs/claw/scene.py")
        fixed = {name: getattr(config, p.argument) for name, p in OBJECT_PROPERTIES.items()}
        self.drawn = {name: fixed.pop(name) for name in list(fixed) if isinstance(fixed[name], tuple)}
        if any(value != OBJECT_PROPERTIES[name].nominal for name, value in fixed.items()):
            self.write(fixed)
        self.properties = self.model_values()
        self.rest_z = TABLE_TOP_Z + self.properties["size"]
        self.object_class: dict[str, str] = {}

    def class_option(self, options: dict[str, Any]) -> dict[str, str]:
        """The reset option ``object_class`` (``{property: word}`` of drawn properties), checked; ``{}`` when absent."""
        chosen = options.get("object_class", {})
        valid = {name: OBJECT_PROPERTIES[name].halves for name in self.drawn}
        choices = "; ".join(f"{name}: {' or '.join(words)}" for name, words in valid.items()) or "none"
        if not isinstance(chosen, dict) or any(valid.get(k) is None or w not in valid[k] for k, w in chosen.items()):
            raise ValueError(
                f"options['object_class']={chosen!r} must map drawn object properties to the half of their range; "
                f"valid: {choices} (a property is drawn when its argument, object_<property>, is a [low, high] range)"
            )
        return chosen

    def draw(self, rng: np.random.Generator, object_class: dict[str, str]) -> None:
        """Draw the episode's drawn properties from ``rng`` (each in its ``object_class`` half, if given), write
        the model and reset the data to it."""
        drawn, self.object_class = {}, {}
        for name, (low, high) in self.drawn.items():
            halves, mid = OBJECT_PROPERTIES[name].halves, 0.5 * (low + high)
            word = object_class.get(name)
            lo, hi = (low, high) if word is None else (low, mid) if word == halves[0] else (mid, high)
            drawn[name] = float(rng.uniform(lo, hi))
            self.object_class[name] = word or halves[drawn[name] >= mid]
        self.write(drawn)
        mujoco.mj_resetData(self.model, self.data)
        self.properties.update(drawn)
        self.rest_z = TABLE_TOP_Z + self.properties["size"]

    def write(self, values: dict[str, float]) -> None:
        """Write cube properties (``{"mass": kg, "friction": -, "size": m}``, all or some) into the model and
        recompute what the compiler derives from them (``mj_setConst`` and the solver's scale
        ``stat.meaninertia``, the mean diagonal of the mass matrix at ``qpos0``), so the model is the one
        ``claw.xml`` compiles to with these values; ``self.data`` is left to be reset."""
        m, b, g = self.model, self.body, self.geom
        mass, half = values.get("mass", float(m.body_mass[b])), values.get("size", float(m.geom_size[g, 0]))
        m.body_mass[b] = mass
        m.body_inertia[b] = mass * (2.0 * half) ** 2 / 6.0  # solid cube
        m.geom_size[g] = half
        m.geom_rbound[g] = math.sqrt(3.0) * half
        m.geom_aabb[g, 3:] = half
        if "friction" in values:
            m.geom_friction[self.pad_geoms, 0] = values["friction"]
        mujoco.mj_setConst(m, self.data)
        mass_matrix = np.zeros((m.nv, m.nv))
        mujoco.mj_fullM(m, self.data, mass_matrix)
        m.stat.meaninertia = np.trace(mass_matrix) / m.nv

    def model_values(self) -> dict[str, float]:
        """The model's cube properties: mass (kg), the pads' sliding friction, half edge (m)."""
        m = self.model
        return {"mass": float(m.body_mass[self.body]),
                "friction": float(m.geom_friction[self.pad_geoms[0], 0]),
                "size": float(m.geom_size[self.geom, 0])}
