"""Deterministic scripted coaches: the "models" of the bundled offline hint server.

They read a hint request (see :mod:`coach.llm.hints`) and answer like a sensible LLM would, by rules
a robotics engineer would write down. ``rng`` adds small, seeded jitter so that the ``m`` sampled
answers of one request differ a little (as sampled LLM answers do) and the vote has work to do.
Like a hosted LLM they know only the request: :data:`COACHES` is keyed by its ``task``, the env
family's name in ``envs.controllers.FAMILIES`` (the table that maps families to controllers, which
``coach.llm`` may not import); a task without a coach gets decision -1.

Quadruped (scripted trot): when the student already tracks its command (error < 0.1 m/s, no fall)
no teacher is needed (decision -1, the hint's influence decays as the student learns). Otherwise the
gait is matched to the commanded speed ``v`` (m/s): cadence ``frequency_hz = 2.0 + 1.5 v`` and a
stride gain that keeps each stride below 0.12 m (long strides saturate the action range); after a
fall the gait becomes more conservative (longer stance, lower swing).

Claw (scripted grasp): success -> +1 with the current parameters (keep teaching what worked: one
lifted cube does not mean the student can do without the teacher; declining after successes let a
student's training success fall from 0.87 back to 0.55, ``benchmarks/RESULTS.md``, issue 14). Otherwise
the failure mode picks the change: never reached
the cube -> move faster with a firmer gain; reached but never held it -> grasp a little lower,
with tighter alignment and a longer squeeze; held but dropped it -> carry slower with a full grip.

Both read the request's ``simulator_checks`` (recent verdicts of the hint verifier, when it runs):
advice whose change the check adopted is given again with that change; advice it only rejected
becomes "keep the current parameters". Only the changed parameters are jittered.
"""

from __future__ import annotations

import math
import random
from typing import Any


def coach_answer(request: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    """The answer object ``{decision, hint, params, confidence}`` for one request."""
    coach = COACHES.get(request.get("task"))
    if coach is None:
        return {"decision": -1, "hint": f"unknown task {request.get('task')!r}", "params": {}, "confidence": 0.0}
    decision, hint, changes = coach(request.get("summary", {}), request.get("outcome", {}))
    new = True  # a new change is jittered; one the simulator adopted before is repeated exactly
    if decision == 1:
        hint, changes, new = _learn_from_checks(hint, changes, request.get("simulator_checks", []))
    schema = request.get("schema", {})
    params = {k: v for k, v in request.get("params", {}).items() if k in schema}
    params.update({k: _jitter(k, v, schema, rng) if new else v for k, v in changes.items() if k in schema})
    confidence = round(min(1.0, max(0.0, 0.8 + rng.uniform(-0.1, 0.1))), 3)
    return {"decision": decision, "hint": hint, "params": params, "confidence": confidence}


def _quadruped(summary: dict[str, Any], outcome: dict[str, Any]) -> tuple[int, str, dict[str, Any]]:
    fell = bool(outcome.get("fell", False))
    error = float(summary.get("tracking_error", math.inf))
    if not fell and error < 0.1:
        return -1, "student tracks the command; no teacher needed", {}
    speed = math.hypot(float(summary.get("command_vx", 0.0)), float(summary.get("command_vy", 0.0)))
    frequency = 2.0 + 1.5 * speed
    duty = 0.6 if fell else 0.5
    stance_time = duty / frequency
    gain = min(1.8, 0.12 / max(speed * stance_time, 1e-3))
    changes = {"frequency_hz": frequency, "duty_factor": duty, "velocity_gain": gain,
               "swing_height": 0.06 if fell else 0.07, "body_height": 0.27}
    why = "fell: slower, longer stance" if fell else f"tracking error {error:.2f} m/s: match cadence to {speed:.2f} m/s"
    return 1, why, changes


def _claw(summary: dict[str, Any], outcome: dict[str, Any]) -> tuple[int, str, dict[str, Any]]:
    if outcome.get("success"):
        return 1, "goal reached: keep these parameters", {}
    if float(summary.get("min_reach_distance", math.inf)) > 0.02:
        return 1, "never reached the cube: approach faster", {"move_speed": 0.75, "gain": 1.0, "approach_height": 0.06}
    if int(summary.get("grasped_steps", 0)) == 0:
        return 1, "reached but never held it: grasp lower, align tighter", {
            "grasp_height_offset": 0.0, "xy_tol": 0.005, "close_steps": 4, "close_command": 1.0}
    return 1, "dropped the cube: carry slower with a full grip", {"lift_speed": 0.3, "close_command": 1.0}


COACHES = {"quadruped": _quadruped, "claw": _claw}


def _learn_from_checks(hint: str, changes: dict[str, Any], checks: list[dict[str, Any]]
                       ) -> tuple[str, dict[str, Any], bool]:
    """(hint, changes, new) after the simulator's recent verdicts on the same advice (same ``hint``).

    The change the check adopted most recently is proposed again, exactly; advice the check has only
    rejected becomes "keep the current parameters" (no change, nothing to check).
    """
    same = [c for c in checks if c.get("hint") == hint]
    adopted = [c for c in same if c.get("adopted")]
    if adopted:
        return hint, dict(adopted[-1]["changes"]), False
    if same:
        return f"{hint}: the simulator rejected it {len(same)}x, keep the current parameters", {}, False
    return hint, changes, True


def random_answer(request: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    """The adversarial coach (``fault-random``): always +1, confident, every parameter uniform in its bounds.

    Valid JSON and in bounds, so it passes parsing and the vote; only a check of what the parameters do
    can tell it from a good hint. Lists keep the length of the current value.
    """
    def draw(lo: float, hi: float) -> float:
        return round(rng.uniform(lo, hi), 4)

    params = {}
    for name, (lo, hi) in request.get("schema", {}).items():
        current = request.get("params", {}).get(name)
        params[name] = [draw(lo, hi) for _ in current] if isinstance(current, list) else draw(lo, hi)
    return {"decision": 1, "hint": "trust me", "params": params, "confidence": 0.95}


def _jitter(name: str, value: Any, schema: dict[str, list[float]], rng: random.Random) -> Any:
    """Value moved by up to 2% of its range, kept in bounds (lists component-wise; integers untouched)."""
    lo, hi = schema[name]
    if isinstance(value, list):
        return [_jitter(name, v, schema, rng) for v in value]
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return round(min(hi, max(lo, float(value) + rng.uniform(-0.02, 0.02) * (hi - lo))), 4)
