"""The compiled model a quadruped env runs: the robot of ``envs.quadruped.robots`` in our scene, with its terrain.

``terrain="flat"`` is the scene as it is (:func:`~envs.quadruped.robots.robot_model`); :func:`add_rough_terrain`
fills the scene's heightfield with the rough field (``terrain="rough"``, on :func:`rough_model`); :func:`tiles_model`
builds the scene around the tile grid of ``OpenClaw/QuadrupedTerrain-v1``. The heights come from
``envs.quadruped.terrain``.

**The feet on a heightfield** collide with it through explicit contact pairs ``foot_<leg>_terrain``
(:func:`add_foot_pairs`; MuJoCo skips the dynamic contact of a geom pair it lists) on a stiff contact,
``HFIELD_FOOT_SOLREF`` and ``HFIELD_FOOT_SOLIMP``; the feet's own soft contact holds on planes and boxes. MuJoCo
collides a sphere with every triangle prism under it, and a prism's sides are vertical walls down to the field's
base. A foot that sinks into its soft contact (solref 0.02 s: 4.8 mm median, 17 mm in 5 % of a walking policy's
contacts) near an edge between two triangles reaches into the neighbouring prism through its wall, and that
contact's normal leans sideways though the ground is flat there. On the flat level-0 slope tile, 32 % of a walking
student's foot contacts leaned more than 26 deg from vertical (11 % more than 60 deg), against 2.5 % on the boxes;
with its training noise it fell in 13 of 40 episodes there and in 0 of 40 on a plane at the same place. Stiff, the
feet sink 0.8 mm (median), 4 % of their contacts lean more than 26 deg and none more than 60, and the same noisy
policy falls in 0 of 40 (``benchmarks/RESULTS.md``, issue 38: "the heightfield's prism walls"). A pair's friction
is its foot's: the env writes both at once (``Randomization._set_foot_friction``).

**The collision midphase** (MuJoCo's walk down two bodies' trees of geom bounds) is off in the scene
(``assets/quadruped.xml``): its world holds two geoms, the plane and the heightfield, and testing each geom pair is
cheaper (3-7 us an env step on every robot). The tile grid's world holds ~46 (the box slots, the borders, the
heightfield), and the midphase pays there when a robot body holds several colliding geoms (legs that collide, the
package robots' collision geoms: 18-31 us an env step less with it), not when each holds one (our Go1's feet and
trunk: 5 us more), so :func:`tiles_model` turns it back on for the first. Either way the contacts, their order and so
the trajectories are the same to the bit (``benchmarks/RESULTS.md``, issue 38: "the terrain step's margin").
"""

from __future__ import annotations

import copy
import functools

import mujoco
import numpy as np

from envs.quadruped.config import ACTION_SCALE
from envs.quadruped.robots import LEGS, LegGeometry, robot_model, robot_named, robot_spec
from envs.quadruped.terrain import CELL, STRIDE, TerrainGrid, lattice, rough_heights, size_scale, terrain_grid
from envs.quadruped.terrain_boxes import PARKED, SLACK, reach, stepped_boxes, window_slots

BORDER = 50.0  # m of flat ground around the tile grid
VIEW_SAMPLES = 81  # the rendered window of the tile grid: 81 x 81 samples ...
VIEW_CELL = 0.1  # ... 0.1 m apart (an 8 m square around the robot; software OpenGL draws ~10 k cells fast)
HFIELD_FOOT_SOLREF = (0.008, 1.0)  # s, -: the feet's contacts with the heightfield (time constant: 2 timesteps)
HFIELD_FOOT_SOLIMP = (0.9, 0.95, 0.001, 0.5, 2.0)  # MuJoCo's default impedance


def add_foot_pairs(spec: mujoco.MjSpec, robot: str) -> None:
    """Add the feet's contact pairs with the heightfield geom ``terrain`` to ``spec`` (the module docstring), each with
    its foot's friction and ``condim``: the pair's first geom is the heightfield, its second the foot."""
    for leg in LEGS:
        foot = spec.geom(robot_named(robot).foot_geom_name(leg))
        spec.add_pair(name=f"foot_{leg}_terrain", geomname1="terrain", geomname2=foot.name, condim=int(foot.condim),
                      friction=[foot.friction[i] for i in (0, 0, 1, 2, 2)],  # sliding twice, torsional, rolling twice
                      solref=list(HFIELD_FOOT_SOLREF), solimp=list(HFIELD_FOOT_SOLIMP))


def rough_model(robot: str, leg_collisions: bool = False) -> mujoco.MjModel:
    """:func:`~envs.quadruped.robots.robot_model` with the feet's heightfield pairs, for :func:`add_rough_terrain`
    (a fresh copy each call; built once per process)."""
    return copy.deepcopy(_rough_model(robot, leg_collisions))


@functools.lru_cache(maxsize=None)
def _rough_model(robot: str, leg_collisions: bool) -> mujoco.MjModel:
    spec = robot_spec(robot, leg_collisions)
    add_foot_pairs(spec, robot)
    return spec.compile()


def add_rough_terrain(model: mujoco.MjModel, seed: int, bump_height: float) -> None:
    """Fill ``model``'s heightfield ``terrain`` with the rough field of ``seed``
    (:func:`~envs.quadruped.terrain.rough_heights`): heights in [0, ``bump_height``] m, flat (0) at the spawn,
    and make it the colliding, visible ground.

    Ground level stays z = 0 (the plane's height; bumps only rise above it, mean ~h/2), so the spawn
    pose, fall height and base-height target are the same as on flat ground. World geoms are static in
    MuJoCo (their poses are computed once), so only hfield data, size and collision flags are edited.
    """
    m = model
    hid = m.hfield("terrain").id
    nrow, ncol = int(m.hfield_nrow[hid]), int(m.hfield_ncol[hid])
    heights = rough_heights(seed, nrow, ncol, float(m.hfield_size[hid, 0]), float(m.hfield_size[hid, 1]))
    m.hfield_data[m.hfield_adr[hid] : m.hfield_adr[hid] + nrow * ncol] = heights.ravel()
    m.hfield_size[hid, 2] = max(bump_height, 1e-6)
    gid = m.geom("terrain").id
    m.geom_contype[gid], m.geom_conaffinity[gid] = 1, 0
    m.geom_rgba[gid] = (0.72, 0.68, 0.6, 1.0)
    m.geom_group[gid] = 0  # group 3 (hidden) in the XML
    # The plane would duplicate every contact at terrain minima: no collisions, and hidden (coplanar).
    fid = m.geom("floor").id
    m.geom_contype[fid] = m.geom_conaffinity[fid] = 0
    m.geom_matid[fid] = -1
    m.geom_rgba[fid] = (0.0, 0.0, 0.0, 0.0)


@functools.lru_cache(maxsize=2)
def tiles_model(robot: str, seed: int, leg_collisions: bool = False) -> tuple[mujoco.MjModel, TerrainGrid]:
    """The robot in our scene on the tile grid of ``seed`` sized for its legs, and the grid (built once per
    process; treat the model as read-only: an env runs a copy); ``leg_collisions``: as
    :func:`~envs.quadruped.robots.robot_spec`'s.

    The smooth columns (rough, slopes) are the heightfield ``terrain`` on the 0.1 m collision lattice
    (:func:`~envs.quadruped.terrain.lattice`), the stepped ones (stairs, obstacles) boxes
    (:func:`~envs.quadruped.terrain_boxes.stepped_boxes`), of which the world body holds a window around the robot
    (geoms ``terrain_box_<k>``, parked far away until an env's :class:`~envs.quadruped.terrain_boxes.BoxWindow`
    fills them), all colliding and never drawn (group 3), within flat border boxes ``BORDER`` m wide at z = 0; the feet
    meet the heightfield through their pairs (module docstring); the plane is hidden and inert;
    ``terrain_view`` is a ``VIEW_SAMPLES`` x ``VIEW_SAMPLES`` heightfield, ``VIEW_CELL`` m apart, that only
    renders (the terrain env fills it around the robot)."""
    base = robot_model(robot)
    geometry = LegGeometry.from_model(base, robot_named(robot), 0.02, ACTION_SCALE)
    grid = terrain_grid(seed, size_scale(float(geometry.thigh[0] + np.hypot(*geometry.calf[0]))))
    spec = robot_spec(robot, leg_collisions)
    smooth = lattice(grid.heights[:, : grid.stepped_from + 1])  # up to the first stepped sample: the ramp to it is smooth
    nx, ny = smooth.shape
    low, high = float(smooth.min()), float(smooth.max())
    half_x, half_y = (nx - 1) * STRIDE * CELL / 2, (ny - 1) * STRIDE * CELL / 2
    field = spec.hfield("terrain")
    field.nrow, field.ncol = ny, nx  # MuJoCo's rows run along y, its columns along x
    field.size = (half_x, half_y, max(high - low, 1e-6), 0.1)
    field.userdata = ((smooth.T - low) / max(high - low, 1e-6)).ravel().astype(np.float32)
    geom = spec.geom("terrain")
    geom.pos = (half_x, half_y, low)
    geom.contype = 1  # collides, never drawn (group 3, transparent): the view below is what renders
    add_foot_pairs(spec, robot)
    half = reach(base, geometry) + SLACK * grid.scale
    spec.add_numeric(name="terrain_box_window", data=[half, SLACK * grid.scale])
    for k in range(window_slots(stepped_boxes(grid)[0], half)):
        spec.worldbody.add_geom(name=f"terrain_box_{k}", type=mujoco.mjtGeom.mjGEOM_BOX, pos=(PARKED + k, PARKED, PARKED),
                                size=(1e-3, 1e-3, 1e-3), material="terrain", rgba=(0.72, 0.68, 0.6, 1.0), group=3,
                                contype=1, conaffinity=0, condim=3)
    low, high = float(grid.heights.min()), float(grid.heights.max())
    half = (VIEW_SAMPLES - 1) * VIEW_CELL / 2
    spec.add_hfield(name="terrain_view", nrow=VIEW_SAMPLES, ncol=VIEW_SAMPLES, size=(half, half, max(high - low, 1e-6), 0.1),
                    userdata=np.zeros(VIEW_SAMPLES * VIEW_SAMPLES, dtype=np.float32))
    spec.worldbody.add_geom(name="terrain_view", type=mujoco.mjtGeom.mjGEOM_HFIELD, hfieldname="terrain_view",
                            pos=(0, 0, low), material="terrain", rgba=(0.72, 0.68, 0.6, 1.0), contype=0, conaffinity=0)
    floor = spec.geom("floor")  # hidden and inert: the heightfield and the border are the ground
    floor.contype = floor.conaffinity = 0
    floor.rgba = (0, 0, 0, 0)
    floor.material = ""
    ex, ey = grid.extent
    for name, cx, cy, hx, hy in (("border_south", -BORDER / 2, ey / 2, BORDER / 2, ey / 2 + BORDER),
                                 ("border_north", ex + BORDER / 2, ey / 2, BORDER / 2, ey / 2 + BORDER),
                                 ("border_west", ex / 2, -BORDER / 2, ex / 2, BORDER / 2),
                                 ("border_east", ex / 2, ey + BORDER / 2, ex / 2, BORDER / 2)):
        spec.worldbody.add_geom(name=name, type=mujoco.mjtGeom.mjGEOM_BOX, pos=(cx, cy, -0.5), size=(hx, hy, 0.5),
                                material="floor", contype=1, conaffinity=0, condim=3)
    spec.modelname = f"{spec.modelname}_terrain"
    model = spec.compile()
    if _several_colliding_geoms_in_a_body(model):  # the midphase pays against the box slots (module docstring)
        model.opt.disableflags &= ~int(mujoco.mjtDisableBit.mjDSBL_MIDPHASE)
    return model, grid


def _several_colliding_geoms_in_a_body(model: mujoco.MjModel) -> bool:
    """Whether a body other than the world holds more than one geom that collides (``contype`` or ``conaffinity``)."""
    colliding = (model.geom_contype | model.geom_conaffinity) > 0
    return bool((np.bincount(model.geom_bodyid[colliding], minlength=model.nbody)[1:] > 1).any())
