"""Scripted omnidirectional trot for ``OpenClaw/Quadruped-v1``: phase clock -> foot trajectories -> leg IK -> actions.

The controller reads only the observation of ``OpenClaw/Quadruped-v1`` (or ``QuadrupedRough-v1``): the
command, IMU feedback - projected gravity (levels the body by lengthening the lower legs), forward velocity
and yaw rate (close the loop on the stride, which slips and lags behind the soft servos) - and the env's
gait clock (each leg's phase as sin/cos, and the frequency). It keeps no state of its own, so its action
is a function of what a student policy observes.

Measured with the default parameters, 50 seeded 20 s episodes (seeds 0-49), commands drawn from the
default ranges (vx in [-1, 1] m/s, vy in [-0.5, 0.5] m/s, yaw rate in [-1, 1] rad/s): flat 0 falls,
mean tracking error 0.163 m/s; rough (5 cm) 0 falls, 0.171 m/s. Standing still at a zero command drifts
< 0.05 m/s. Top speeds (flat): forward ~0.75 m/s, backward ~1.0 m/s, sideways 0.5 m/s, yaw 1 rad/s; the
largest errors come from the fastest forward and mixed commands, where the stride reaches ``max_stride``.

Gait: a trot - diagonal legs (FR+RL, FL+RR) in phase, the two pairs half a cycle apart (the env's
``QuadrupedEnv.GAIT_PHASE_OFFSETS``). Each leg spends
``duty_factor`` of the cycle in stance, moving its foot backwards in the body frame at the commanded
velocity (plus the yaw-rate term ``w x r_foot``, ``r_foot`` the foot's neutral position), and the rest in
swing, where the foot returns forwards along a half-sine arc ``swing_height`` high. Stride per leg =
``velocity_gain * v_foot * T_stance``, where the commanded velocity first gets the feedback terms
``forward_gain * (vx_cmd - v_x)``, ``lateral_gain * (vy_cmd - v_y)`` and ``yaw_rate_gain * (wz_cmd - w_z)``
(body frame, instantaneous IMU readings).

Legs: the foot target (hip frame: x forward, y left, z up, origin on the abduction axis) is turned into
joint angles by analytic IK - abduction from the leg's lateral offset, then the 2-link (thigh, calf)
planar problem in the rotated sagittal plane, knee bent backwards (negative angle) as on Go1.

Servo lag: joint damping + servo kv (2.5 N·m·s/rad) against Kp 35 is a ~70 ms lag, so targets are led by
``damping_compensation * c / Kp * qdot`` and aimed at the middle of the next control interval.

Servo sag: Go1's servos are soft (Kp 35 N·m/rad), so a stance leg carrying half the robot (~62 N) sags
~0.3 rad at the knee. ``load_compensation`` adds the feed-forward target offset ``tau / Kp`` with
``tau = -J^T f`` for the foot's share ``f`` of the weight; 1.0 compensates the modelled load fully.

Arrays: :meth:`TrotController.act` and the methods it calls are written once against an array namespace ``xp``,
numpy for numpy arrays, torch for torch tensors (a GPU simulator's observations: the trot as a batched teacher on
the device, issue 80): the same float64 arithmetic on either, on the input's device; numpy's results are
bit-identical to the numpy-only code's, torch's agree with them within 1e-6 (``tests/test_trot_torch.py``: its
transcendental functions may differ in the last bit). torch is imported only when a tensor comes in.
"""

from __future__ import annotations

import functools
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from envs.array_math import array_namespace
from envs.controllers.params_file import read_params
from envs.quadruped import LegGeometry, QuadrupedEnv, default_leg_geometry
from envs.typed import check_fields

PARAMS_DIR = Path(__file__).resolve().parent / "trot_params"  # <robot>.json: tuned parameters (tune.py)
SCAN_REACH = 0.2  # m around a foot's neutral point where the swing looks for the highest ground
SCAN_BLUR = 0.05  # m: the ground under a foot is the scan averaged with weights exp(-(d / SCAN_BLUR)^2)


def has_height_scan(spec: Any) -> bool:
    """Whether an env's controller spec carries a height scan (the terrain env's
    :class:`~envs.quadruped.TerrainLegGeometry`: ``scan_obs``, the scan's slice of the observation)."""
    return getattr(spec, "scan_obs", None) is not None


def _float64(xp: Any, x: Any, like: Any) -> Any:
    """``x`` (an array, a tensor or a number) as float64 in the namespace ``xp``, on ``like``'s device (torch)."""
    return np.asarray(x, dtype=np.float64) if xp is np else xp.asarray(x, dtype=xp.float64, device=like.device)


class _LegArrays(NamedTuple):
    """The controller's constant arrays (float64), per leg (FR, FL, RR, RL) or per joint (our 12, leg-major)."""

    leg_x: Any  # (4,) abduction axis x, body frame (m)
    leg_y: Any  # (4,) abduction axis y (m)
    side: Any  # (4,) +1 left, -1 right
    h2t: Any  # (4,) abduction axis -> thigh joint, lateral (m)
    thigh: Any  # (4,) thigh joint -> knee (m)
    calf: Any  # (4,) knee -> foot centre (m)
    calf_offset: Any  # (4, 3) the foot's angle on the calf from the calf's -z axis, at the knee (rad)
    kp: Any  # (4, 3) servo stiffness (N·m/rad)
    lag: Any  # (4, 3) servo lag c / Kp (s)
    default_pose: Any  # (12,) joint angles of action 0 (rad)
    action_scale: Any  # (12,) joint target per unit action (rad)
    axis_sign: Any  # (12,) +1 where a joint turns about +x/+y, -1 about -x/-y
    scan_points: Any  # (P, 2) height scan points, body frame (m); None without a scan

    @classmethod
    def of(cls, spec: LegGeometry) -> _LegArrays:
        """The arrays of ``spec`` as numpy arrays."""
        calf_angle = np.arctan2(-spec.calf[:, 0], -spec.calf[:, 1])
        return cls(leg_x=spec.hip[:, 0], leg_y=spec.hip[:, 1], side=np.sign(spec.hip[:, 1]), h2t=spec.hip_to_thigh,
                   thigh=spec.thigh, calf=np.hypot(spec.calf[:, 0], spec.calf[:, 1]),
                   calf_offset=np.stack([np.zeros(4), np.zeros(4), calf_angle], axis=-1),
                   kp=spec.kp.reshape(4, 3), lag=(spec.damping / spec.kp).reshape(4, 3),
                   default_pose=spec.default_pose, action_scale=spec.action_scale, axis_sign=spec.axis_sign,
                   scan_points=getattr(spec, "scan_points", None))

    def tensors(self, torch: Any, device: Any) -> _LegArrays:
        """The same arrays as float64 ``torch`` tensors on ``device``."""
        as_tensor = functools.partial(torch.as_tensor, dtype=torch.float64, device=device)
        return _LegArrays(*(None if a is None else as_tensor(a) for a in self))


@functools.lru_cache(maxsize=None)
def _tuned_params(name: str) -> tuple[tuple[str, float], ...] | None:
    """The parameters in ``trot_params/<name>.json`` (read once per process), or ``None`` without a file."""
    path = PARAMS_DIR / f"{name}.json"
    return tuple(read_params(path).items()) if path.is_file() else None


@dataclass
class TrotParams:
    """Trot gait parameters. ``BOUNDS`` holds the allowed (low, high) of each; :meth:`validate` checks them.

    ==================  ======  =====================================================================
    field               unit    meaning
    ==================  ======  =====================================================================
    frequency_hz        Hz      gait cycles/s (each leg steps once); the env's clock runs at it
    duty_factor         -       fraction of the cycle a foot is on the ground
    body_height         m       commanded trunk (hip axis) height above the ground
    swing_height        m       apex of the foot's swing arc above its stance height
    velocity_gain       -       stride = gain x commanded foot speed x stance time (slip compensation)
    stance_width        m       extra outward lateral foot offset (negative = narrower stance)
    foot_x_offset       m       fore-aft shift of every foot's neutral position (positive = forward)
    load_compensation   -       fraction of the servo sag under the modelled leg load fed forward
    damping_compensation -      fraction of the servo's velocity lag fed forward (target lead c/Kp * qdot)
    attitude_gain       m       stance-leg length change per unit of projected-gravity tilt (levelling)
    yaw_rate_gain       -       yaw-rate feedback: commanded wz += gain * (wz_cmd - gyro_z)
    forward_gain        -       forward velocity feedback: commanded vx += gain * (vx_cmd - v_x)
    lateral_gain        -       lateral velocity feedback: commanded vy += gain * (vy_cmd - v_y)
    max_stride          m       longest stride (foot travel per stance, any direction); longer ones are scaled
                                down, so velocity feedback cannot drive the thighs past their action range
    scan_following      -       with a height scan: each leg's length += gain x (the ground under its foot
                                below the mean ground under the four feet), so the trunk stays level
    scan_clearance      m       with a height scan: the swing apex is at least this far above the highest
                                ground within ``SCAN_REACH`` m of the foot's neutral point
    ==================  ======  =====================================================================

    The ``scan_*`` fields (``TERRAIN_FIELDS``) act only on an env whose controller spec carries a height scan
    (``OpenClaw/QuadrupedTerrain-v1``); :meth:`bounds_for` leaves them out elsewhere, so proposers do not search them.
    """

    frequency_hz: float = QuadrupedEnv.GAIT_FREQUENCY_HZ
    duty_factor: float = 0.5
    body_height: float = 0.27
    swing_height: float = 0.04
    velocity_gain: float = 0.9
    stance_width: float = 0.015
    foot_x_offset: float = -0.02
    load_compensation: float = 1.0
    damping_compensation: float = 1.4
    attitude_gain: float = 0.12
    yaw_rate_gain: float = 0.8
    forward_gain: float = 1.0
    lateral_gain: float = 0.0
    max_stride: float = 0.26
    scan_following: float = 1.0
    scan_clearance: float = 0.08

    TERRAIN_FIELDS = ("scan_following", "scan_clearance")
    BOUNDS = {
        "frequency_hz": QuadrupedEnv.GAIT_FREQUENCY_RANGE,
        "duty_factor": (0.35, 0.75),
        "body_height": (0.20, 0.32),
        "swing_height": (0.02, 0.12),
        "velocity_gain": (0.5, 2.5),
        "stance_width": (-0.03, 0.06),
        "foot_x_offset": (-0.06, 0.06),
        "load_compensation": (0.0, 1.5),
        "damping_compensation": (0.0, 1.5),
        "attitude_gain": (0.0, 0.5),
        "yaw_rate_gain": (0.0, 3.0),
        "forward_gain": (0.0, 2.0),
        "lateral_gain": (0.0, 2.0),
        "max_stride": (0.05, 0.3),
        "scan_following": (0.0, 1.5),
        "scan_clearance": (0.0, 0.15),
    }

    def validate(self) -> TrotParams:
        """Raise ``ValueError`` naming the first field that is not a number (:func:`envs.typed.check_fields`:
        ``true`` is not one), or every field outside ``BOUNDS``; the fields are floats after it."""
        check_fields(self, "TrotParams.")
        bad = []
        for f in fields(self):
            v = getattr(self, f.name)
            lo, hi = self.BOUNDS[f.name]
            if not lo <= v <= hi:
                bad.append(f"{f.name}={v!r} (allowed [{lo}, {hi}])")
        if bad:
            raise ValueError("invalid TrotParams: " + "; ".join(bad))
        return self

    @classmethod
    def from_dict(cls, values: dict) -> TrotParams:
        """Build validated params from a dict (e.g. proposed by an LLM); unknown keys raise ``ValueError``."""
        unknown = sorted(set(values) - set(cls.BOUNDS))
        if unknown:
            raise ValueError(f"unknown TrotParams field(s) {unknown}; valid: {', '.join(cls.BOUNDS)}")
        return cls(**values).validate()

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def bounds_for(cls, spec: Any) -> dict[str, tuple[float, float]]:
        """The ``BOUNDS`` of the fields that act on an env whose controller spec is ``spec``: the ``TERRAIN_FIELDS``
        only where it carries a height scan (:func:`has_height_scan`; ``None``, the flat env's spec, has none)."""
        scan = has_height_scan(spec)
        return {name: bounds for name, bounds in cls.BOUNDS.items() if scan or name not in cls.TERRAIN_FIELDS}

    @classmethod
    def for_robot(cls, robot: str, terrain: bool = False) -> TrotParams:
        """The robot's defaults: its tuned parameters (``trot_params/<robot>.json``, written by
        ``python -m envs.controllers.tune``) where they exist, else the class defaults (tuned by hand for
        ``openclaw_go1``). ``terrain``: on the terrain curriculum, ``trot_params/<robot>_terrain.json`` first."""
        tuned = (_tuned_params(f"{robot}_terrain") if terrain else None) or _tuned_params(robot)
        return cls() if tuned is None else cls.from_dict(dict(tuned))


class TrotController:
    """The trot as a function of the observation: ``act(obs)`` returns an action in ``[-1, 1]^12``.

    ``obs`` must carry the env's gait clock (``OpenClaw/Quadruped-v1``, ``gait_clock=True``): the leg
    phases and the frequency are read from it, so the controller keeps no state and the student that
    learns from it sees everything its action depends on. ``params.frequency_hz`` is the frequency the
    controller asks the env's clock for; :meth:`env_settings` names the env call that applies it.

    ``spec``: the robot's :class:`~envs.quadruped.LegGeometry` (the env's ``controller_spec``: link lengths,
    hip positions, foot radius, mass, servo gains and damping, joint axes, default pose, action scale and
    control period, all read from the compiled model); ``None``: ``openclaw_go1``'s. ``params``:
    ``None`` takes the robot's defaults (:meth:`TrotParams.for_robot`).

    ``act`` and the methods it calls take numpy arrays or torch tensors (on any device with float64: a GPU's
    observations give the actions on the GPU); the spec's constant arrays become float64 tensors once per device.
    """

    batched = True  # act() also takes a batch of observations, numpy or torch (the interface: envs/controllers)

    def __init__(self, params: TrotParams | None = None, spec: LegGeometry | None = None) -> None:
        self.spec = spec = spec if spec is not None else default_leg_geometry()
        if not spec.dt > 0:
            raise ValueError(f"dt={spec.dt} must be > 0 (the env's control period, 0.02 s)")
        self.params = (params or TrotParams.for_robot(spec.robot, terrain=has_height_scan(spec))).validate()
        self.dt = float(spec.dt)
        self._sl = {**QuadrupedEnv.OBS_SLICES, **QuadrupedEnv.CLOCK_SLICES}
        self._numpy = _LegArrays.of(spec)
        self._tensors: dict[Any, _LegArrays] = {}  # device -> the same as float64 tensors, made on first use

    def _math(self, x: Any) -> tuple[Any, _LegArrays]:
        """The namespace of ``x`` (numpy or torch) and the constant arrays in it, on ``x``'s device."""
        xp = array_namespace(x)
        if xp is np:
            return np, self._numpy
        if x.device not in self._tensors:
            self._tensors[x.device] = self._numpy.tensors(xp, x.device)
        return xp, self._tensors[x.device]

    def reset(self) -> None:
        """Nothing to restart: the gait clock lives in the env (the controller is stateless)."""

    def env_settings(self) -> dict[str, tuple]:
        """Env methods (name -> arguments) that make the env match ``params``: the gait clock's frequency."""
        return {"set_gait_frequency": (self.params.frequency_hz,)}

    def env_kwargs(self) -> dict[str, Any]:
        """The same as env constructor arguments (for envs made later, e.g. a training run's evaluation envs)."""
        return {"gait_frequency_hz": self.params.frequency_hz}

    # ------------------------------------------------------------------ gait
    def foot_targets(self, command: Any, leg_phase: Any, frequency_hz: Any, gravity: Any = None,
                     terrain: tuple[Any, Any] | None = None) -> tuple[Any, Any]:
        """Foot positions (..., 4, 3) in each leg's hip frame (m, float64) and the stance mask (..., 4) at the leg
        phases.

        ``command`` (..., 3): vx, vy (m/s), yaw rate (rad/s); ``leg_phase`` (..., 4): each leg's phase (FR, FL,
        RR, RL) in cycles, [0, 1); ``frequency_hz`` (...): the clock's rate (Hz; an array, or a number);
        ``gravity`` (..., 3): projected gravity (body frame); ``terrain``: (extra leg length, swing apex) (..., 4)
        each (m) from :meth:`terrain_terms`, or None. Leading dimensions are a batch of robots. The arrays are numpy
        arrays or torch tensors on one device (the results are ``command``'s kind).
        """
        xp, c = self._math(command)
        p = self.params
        T_stance = (p.duty_factor / _float64(xp, frequency_hz, command))[..., None]
        vx, vy, wz = command[..., 0:1], command[..., 1:2], command[..., 2:3]
        # Ground speed of each foot relative to the trunk during stance: v + w x r, r = neutral foot position.
        side = c.side
        foot_vx = vx - wz * (c.leg_y + side * (c.h2t + p.stance_width))
        foot_vy = vy + wz * (c.leg_x + p.foot_x_offset)
        stride_x = p.velocity_gain * foot_vx * T_stance
        stride_y = p.velocity_gain * foot_vy * T_stance
        shrink = xp.clip(p.max_stride / xp.clip(xp.hypot(stride_x, stride_y), 1e-9, None), None, 1.0)
        stride_x, stride_y = stride_x * shrink, stride_y * shrink

        stance = leg_phase < p.duty_factor
        u = xp.where(stance, leg_phase / p.duty_factor, (leg_phase - p.duty_factor) / (1.0 - p.duty_factor))
        # stance: +S/2 -> -S/2 linearly; swing: -S/2 -> +S/2 along a cosine blend, half-sine height.
        frac = xp.where(stance, 0.5 - u, -0.5 + 0.5 * (1.0 - xp.cos(np.pi * u)))
        apex = p.swing_height if terrain is None else terrain[1]
        lift = xp.where(stance, 0.0, apex * xp.sin(np.pi * u))

        depth = xp.full_like(leg_phase, p.body_height - self.spec.foot_radius, dtype=xp.float64)
        if terrain is not None:
            depth = depth + terrain[0]
        if gravity is not None and p.attitude_gain > 0:
            # Nose down -> g_x > 0: lengthen the front legs. Right side down -> g_y < 0: lengthen the right legs.
            gx, gy = gravity[..., 0:1], gravity[..., 1:2]
            depth = depth + p.attitude_gain * (xp.sign(c.leg_x) * gx + side * gy)
        feet = xp.stack([p.foot_x_offset + frac * stride_x,
                         side * (c.h2t + p.stance_width) + frac * stride_y,
                         -depth + lift], axis=-1)
        return feet, stance

    def terrain_terms(self, scan: Any) -> tuple[Any, Any]:
        """(extra leg length, swing apex) (..., 4) (m) from the height scan ``scan`` (..., P) (float64, numpy or
        torch): trunk height above the ground at the spec's ``scan_points`` (``TrotParams``' ``scan_*`` fields)."""
        xp, c = self._math(scan)
        p, points = self.params, c.scan_points
        neutral_x = c.leg_x + p.foot_x_offset
        neutral_y = c.leg_y + c.side * (c.h2t + p.stance_width)
        dx = points[None, :, 0] - neutral_x[:, None]  # (4, P)
        dy = points[None, :, 1] - neutral_y[:, None]
        distance = xp.hypot(dx, dy)
        under = xp.exp(-(distance / SCAN_BLUR) ** 2)
        under /= under.sum(axis=1, keepdims=True)  # (4, P): weights of the points under each foot
        height = scan @ under.T  # (..., 4): trunk height above the ground under each foot
        near = xp.where(distance <= SCAN_REACH, 0.0, np.inf)  # (4, P)
        lowest = xp.amin(scan[..., None, :] + near, axis=-1)  # (..., 4): above the highest ground near the foot
        longer = p.scan_following * (height - height.mean(axis=-1, keepdims=True))
        apex = xp.clip(height - lowest + p.scan_clearance, p.swing_height, None)
        return longer, apex

    # ------------------------------------------------------------------ kinematics
    def inverse_kinematics(self, feet: Any) -> Any:
        """Planar-model joint angles (..., 4, 3) [abduction, thigh, knee] (rad) placing each foot centre at ``feet``
        (..., 4, 3, hip frame, m; numpy or torch): abduction about +x, thigh and knee about +y, the knee angle measured
        to the knee -> foot-centre line (:meth:`joint_angles` turns them into the robot's joint coordinates)."""
        xp, c = self._math(feet)
        x, y, z = feet[..., 0], feet[..., 1], feet[..., 2]
        h2t, thigh_len, calf_len = c.h2t, c.thigh, c.calf
        d = c.side * h2t
        r2 = y * y + z * z
        h = xp.sqrt(xp.clip(r2 - h2t**2, 1e-6, None))  # leg length projected on the sagittal plane
        abd = xp.arctan2(z, y) - xp.arctan2(-h, d)
        abd = (abd + np.pi) % (2 * np.pi) - np.pi
        L2 = x * x + h * h
        cos_knee = xp.clip((L2 - thigh_len**2 - calf_len**2) / (2 * thigh_len * calf_len), -1.0, 1.0)
        knee = -xp.arccos(cos_knee)
        beta = xp.arctan2(-x, h)  # foot direction from the thigh joint, measured from straight down
        thigh = beta - xp.arctan2(calf_len * xp.sin(knee), thigh_len + calf_len * xp.cos(knee))
        return xp.stack([abd, thigh, knee], axis=-1)

    def joint_angles(self, q: Any) -> Any:
        """The robot's joint angles (..., 12) (rad) for planar-model angles ``q`` (..., 4, 3; numpy or torch): the
        knee less the foot's angular offset on the calf, each joint's sign as its axis (Mini Cheetah turns about -y)."""
        _, c = self._math(q)
        q = q - c.calf_offset
        return q.reshape(*q.shape[:-2], 12) * c.axis_sign

    def _load_offsets(self, q: Any, feet: Any, stance: Any) -> Any:
        """Target offsets tau/Kp (..., 4, 3) (rad) so that the stance servos hold their share of the weight at ``q``
        (rad; ``feet`` in the hip frames, m; ``stance`` the legs on the ground)."""
        xp, c = self._math(q)
        spec = self.spec
        n = xp.clip(stance.sum(axis=-1, keepdims=True, dtype=xp.float64), 1.0, None)
        f = self.params.load_compensation * spec.mass * spec.gravity / n * stance  # upward ground force per foot
        q1, q2 = q[..., 1], q[..., 2]
        thigh_len, calf_len = c.thigh, c.calf
        px = -thigh_len * xp.sin(q1) - calf_len * xp.sin(q1 + q2)
        off = xp.stack([-feet[..., 1] * f,  # abduction: tau = -(r x f)_x = -y f
                        px * f,  # thigh: tau = -(d pz / d q1) f = px f
                        -calf_len * xp.sin(q1 + q2) * f], axis=-1)  # knee: tau = -(d pz / d q2) f
        return off / c.kp

    # ------------------------------------------------------------------ policy
    def act(self, obs: Any) -> Any:
        """Action in ``[-1, 1]^12`` for ``obs`` (a QuadrupedEnv observation with the gait clock), or actions
        (N, 12) for a batch of observations (N, obs_dim): the trot keeps no state, so one call serves N robots.

        ``obs``: a numpy array (or sequence), or a torch tensor on any device; the actions are float32 of the same
        kind, a tensor on ``obs``'s device computed there (no copy to the host)."""
        xp, c = self._math(obs)
        obs = xp.asarray(obs)
        if obs.ndim not in (1, 2) or obs.shape[-1] < QuadrupedEnv.CLOCK_OBS_DIM:
            raise ValueError(
                f"the trot needs the gait clock in the observation (at least {QuadrupedEnv.CLOCK_OBS_DIM} values: "
                f"OpenClaw/Quadruped-v1, QuadrupedRough-v1 or QuadrupedTerrain-v1); got shape {tuple(obs.shape)}"
            )
        sl = self._sl
        leg_phase = (xp.arctan2(obs[..., sl["phase_sin"]], obs[..., sl["phase_cos"]]) / (2.0 * np.pi)) % 1.0
        frequency = _float64(xp, obs[..., sl["gait_frequency"]][..., 0], obs)
        target = _float64(xp, obs[..., sl["command"]], obs)
        lin_vel, yaw_rate = obs[..., sl["lin_vel"]], obs[..., sl["ang_vel"]][..., 2]
        gravity = obs[..., sl["gravity"]]
        p = self.params
        # Velocity feedback from the IMU: counter yaw drift and sideways drift of the open-loop gait.
        command = xp.stack([target[..., 0] + p.forward_gain * (target[..., 0] - lin_vel[..., 0]),
                            target[..., 1] + p.lateral_gain * (target[..., 1] - lin_vel[..., 1]),
                            target[..., 2] + p.yaw_rate_gain * (target[..., 2] - yaw_rate)], axis=-1)
        # The target is held for the next dt (zero-order hold): aim at the trajectory's midpoint over it,
        # and lead it by the servo damping lag c/Kp * qdot (c = joint damping + servo kv).
        terrain = None
        if has_height_scan(self.spec):
            terrain = self.terrain_terms(_float64(xp, obs[..., self.spec.scan_obs], obs))
        feet0, _ = self.foot_targets(command, leg_phase, frequency, gravity, terrain)
        # the phase a control period later, in the phase's own precision (float32 from the env: at a
        # stance/swing boundary the rounding decides which half of the cycle a leg aims for)
        advance = xp.asarray(frequency[..., None] * self.dt, dtype=leg_phase.dtype)
        feet1, stance = self.foot_targets(command, (leg_phase + advance) % 1.0, frequency, gravity, terrain)
        q0, q1 = self.inverse_kinematics(feet0), self.inverse_kinematics(feet1)
        q = 0.5 * (q0 + q1)
        if p.damping_compensation > 0:
            q = q + p.damping_compensation * c.lag * (q1 - q0) / self.dt
        if p.load_compensation > 0:
            q = q + self._load_offsets(q, 0.5 * (feet0 + feet1), stance)
        action = (self.joint_angles(q) - c.default_pose) / c.action_scale
        return xp.asarray(xp.clip(action, -1.0, 1.0), dtype=xp.float32)


class QuadrupedSegment:
    """Statistics of a stretch of quadruped steps for a hint request: command vs measured velocity (body frame).

    ``add(obs, info)`` per step; :meth:`summary` gives the mean command and velocity (m/s, yaw rate
    rad/s), the mean tracking error (m/s) and whether the robot fell.
    """

    def __init__(self) -> None:
        self.steps, self.sums, self.fell = 0, np.zeros(7), False

    def add(self, obs: np.ndarray, info: dict[str, Any]) -> None:
        s = QuadrupedEnv.OBS_SLICES
        cmd, vel = obs[s["command"]], obs[s["lin_vel"]]
        self.sums += (cmd[0], cmd[1], cmd[2], vel[0], vel[1], obs[s["ang_vel"]][2], info.get("tracking_error", 0.0))
        self.fell |= bool(info.get("fell", False))
        self.steps += 1

    def summary(self) -> tuple[dict[str, Any], dict[str, Any]]:
        """``(summary, outcome)`` of the hint request (:func:`coach.llm.hints.build_request`)."""
        m = self.sums / max(self.steps, 1)
        summary = {"command_vx": m[0], "command_vy": m[1], "command_yaw_rate": m[2], "mean_vx": m[3],
                   "mean_vy": m[4], "mean_yaw_rate": m[5], "tracking_error": m[6], "steps": self.steps,
                   "units": "m/s, rad/s, body frame"}
        return summary, {"fell": self.fell, "tracking_error": m[6]}


def quadruped_episode_start(obs: np.ndarray) -> dict[str, Any]:
    """Reset options that rebuild a quadruped episode from its first observation: the command (m/s, rad/s)."""
    return {"command": np.asarray(obs[QuadrupedEnv.OBS_SLICES["command"]], dtype=np.float64).tolist()}


class QuadrupedScore:
    """Score of one quadruped rollout (higher is better): minus the mean tracking error (m/s), minus the episode's
    stance slip (m/s, the env's gait measure ``info["stance_slip"]``: a gait that skates pays for it as for a
    tracking error), minus 1 if it fell.

    ``add(obs, info)`` per step; :meth:`metrics` also reports the error, the slip and the fall (0/1).
    """

    def __init__(self) -> None:
        self.error_sum, self.steps, self.fell, self.slip = 0.0, 0, False, 0.0

    def add(self, obs: np.ndarray, info: dict[str, Any]) -> None:
        self.error_sum += float(info["tracking_error"])
        self.steps += 1
        self.fell |= bool(info.get("fell", False))
        self.slip = float(info["stance_slip"])  # the episode's so far (an env run with gait_measures)

    def metrics(self) -> dict[str, float]:
        error = self.error_sum / max(self.steps, 1)
        return {"score": -error - self.slip - float(self.fell), "tracking_error": error, "stance_slip": self.slip,
                "fall": float(self.fell)}
