"""The adaptive teacher: protocol, vote, asynchronous service against the bundled server, verification in
simulation, the controller teacher's buffers, and train.py wiring.

One module over ~450 lines on purpose: its sections share one module-scoped bundled server (one process start)
and ``--dist loadscope`` keeps them on one worker; split, each part would start its own server."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import gymnasium as gym

import numpy as np
import pytest
import torch
from stable_baselines3.common.buffers import DictReplayBuffer, ReplayBuffer

from agents.controller_policy import ControllerPolicy
from agents.students.replay_buffer import REPLAY_EXTENSIONS, TeacherReplaySamples
from agents.students.teacher_actions import with_teacher_actions
from agents.teachers.adaptive import AdaptiveControllerTeacher, parameter_schema
from agents.teachers.controller import ControllerTeacher
from coach.verifier import CONFIRM_SEED, ShadowVerifier, rollout_metrics
from agents.vec_env import make_vec_env
from coach.llm.client import LLMChannel
from coach.llm.hints import HintParseError, ParsedHint, build_request, parse_answer, vote
from coach.llm.proposer import LLMProposer
from coach.llm.server import start_server
from coach.llm.settings import ChannelConfig
from coach.proposals import ParameterSchema, Proposal, ProposalService, Verification
from coach.search import ParameterBox
from distill.teachers import RecordedActionTeacher, TeacherActions
from envs.controllers import FAMILIES
from envs.controllers.grasp import GraspParams
from envs.controllers.trot import TrotParams
from envs.declarations import ControllerSpec
from envs.quadruped import default_leg_geometry

ROOT = Path(__file__).resolve().parent.parent
# the schemas on the families' default envs (spec None: the claw, the flat quadruped)
CLAW_SCHEMA, QUADRUPED_SCHEMA = parameter_schema(FAMILIES["claw"], None), parameter_schema(FAMILIES["quadruped"], None)
SCHEMA = ParameterSchema("claw", {"lift_speed": (0.05, 0.75), "close_steps": (1, 20), "xy_offset": (-0.015, 0.015)},
                    frozenset({"close_steps"}))
CLAW_FAIL = build_request(CLAW_SCHEMA, GraspParams().to_dict(),
                          {"min_reach_distance": 0.3, "grasped_steps": 0}, {"success": False})


def answer(**overrides) -> str:
    return json.dumps({"decision": 1, "hint": "h", "params": {"lift_speed": 0.3}, "confidence": 0.9, **overrides})


# ---------------------------------------------------------------- protocol


def test_parse_answer_validates_and_clips():
    hint = parse_answer(answer(params={"lift_speed": 2.0, "close_steps": 3.6, "xy_offset": [0.0, -1]}), SCHEMA)
    assert hint.decision == 1 and hint.params == {"lift_speed": 0.75, "close_steps": 4, "xy_offset": [0.0, -0.015]}
    assert set(hint.clipped) == {"lift_speed", "close_steps", "xy_offset"}
    for bad in ("not json", "[1, 2]", answer(decision=0), answer(decision=True), answer(confidence=1.5),
                answer(params={"unknown": 1.0}), answer(params={"lift_speed": "fast"}),
                answer(params={"lift_speed": float("nan")}), json.dumps({"decision": 1, "params": {}})):
        with pytest.raises(HintParseError):
            parse_answer(bad, SCHEMA)


def test_vote_needs_a_strict_majority_of_all_answers_and_merges_by_median():
    yes = [ParsedHint(1, {"lift_speed": v, "xy_offset": [v, -v]}, 0.9, "") for v in (0.1, 0.2, 0.6)]
    result = vote(yes, 3)
    assert result.accepted and result.params == {"lift_speed": 0.2, "xy_offset": [0.2, -0.2]}
    assert not vote([yes[0], None, None], 3).accepted  # one valid answer of three: masked
    no = ParsedHint(-1, {}, 0.9, "")
    assert not vote([yes[0], no, None], 3).accepted
    assert vote([yes[0], yes[1], no], 3).votes == [1, 1, -1]
    assert not vote([yes[0], yes[1]], 4).accepted  # 2 of 4 is not a majority


def test_integer_parameters_stay_whole_numbers_when_an_even_number_of_answers_is_merged(server):
    # llama-server's Gemma 3 270M said +1 twice of three with release_steps 3 and 20: the median 11.5 is no valid
    # parameter (GraspParams refuses it); whole-number parameters take the lower median, a value an answer gave
    two = [ParsedHint(1, {"close_steps": v, "lift_speed": v / 40}, 0.9, "") for v in (3, 20)]
    assert vote(two, 2, frozenset({"close_steps"})).params == {"close_steps": 3, "lift_speed": 0.2875}
    outcome = run_one(service_for(server, hint_model="fault-random", num_answers=2))
    assert outcome.accepted and outcome.params
    for name in CLAW_SCHEMA.integers:
        assert isinstance(outcome.params[name], int), (name, outcome.params[name])
    GraspParams.from_dict({**GraspParams().to_dict(), **outcome.params})


def test_recorded_action_teacher_masks():
    """(A SAC student is taught the recorded action itself, |a| = 1 included: tests/test_squashed_distill.py.)"""
    recorded = TeacherActions(torch.tensor([[0.5, -1.0], [0.0, 0.2]]), torch.tensor([1.0, 0.0]))
    plain = RecordedActionTeacher(0.3).targets(None, teacher_actions=recorded)
    assert torch.equal(plain.dist.mean, recorded.actions) and plain.coverage == 0.5


# ---------------------------------------------------------------- the service against the real server


@pytest.fixture(scope="module")
def server():
    srv = start_server(slow_s=3.0)
    yield srv
    srv.close()


def service_for(server, tmp_path=None, task="claw", **cfg) -> ProposalService:
    settings = {"base_url": server.url, "timeout_s": 0.5, "max_retries": 1, "backoff_s": 0.01, **cfg}
    config = ChannelConfig(**settings)
    records = tmp_path / "records.jsonl" if tmp_path is not None else None
    return ProposalService(LLMProposer(LLMChannel(config, "unused"), config, parameter_schema(FAMILIES[task], None)),
                           records_path=records)


def run_one(service: ProposalService, request=CLAW_FAIL, key="gantry", timeout=20.0):
    assert service.submit(key, 0, request)
    assert service.wait_idle(timeout)
    [outcome] = service.poll()
    return outcome


def test_happy_path_accepts_a_coach_hint_and_records_it(server, tmp_path):
    service = service_for(server, tmp_path)
    outcome = run_one(service)
    assert outcome.accepted and outcome.reason == "3 of 3 answers accepted"
    assert abs(outcome.params["move_speed"] - 0.75) < 0.03  # "never reached the cube: approach faster"
    stats = service.stats()
    assert stats["queries"] == 1 and stats["requests"] == 3 and stats["acceptance_rate"] == 1.0
    assert stats["tokens"] > 0 and stats["latency_p50_s"] > 0
    line = json.loads((tmp_path / "records.jsonl").read_text())
    assert line["accepted"] and line["votes"] == [1, 1, 1] and len(line["answers"]) == 3
    assert line["request"]["task"] == "claw" and "prompt_hash" in line


def test_a_claw_student_that_succeeds_keeps_its_teacher_and_a_quadruped_that_tracks_loses_it(server):
    params = json.loads(json.dumps(GraspParams(move_speed=0.5).to_dict()))  # as sent: tuples become lists
    ok = build_request(CLAW_SCHEMA, params, {"min_reach_distance": 0.0}, {"success": True})
    outcome = run_one(service_for(server), ok)
    assert outcome.accepted and outcome.params == params  # the same parameters keep teaching
    tracks = build_request(QUADRUPED_SCHEMA, TrotParams().to_dict(), {"tracking_error": 0.05}, {"fell": False})
    outcome = run_one(service_for(server, task="quadruped"), tracks)
    assert not outcome.accepted and outcome.reason.startswith("0 of 3 answers accepted"), outcome.reason


@pytest.mark.parametrize(
    "model, counter",
    [("fault-malformed", "parse_errors"), ("fault-refuse", "parse_errors"), ("fault-slow", "timeouts"),
     ("fault-500", "errors"), ("fault-429", "errors"), ("fault-nochoices", "errors")],
)
def test_each_fault_masks_the_segment_and_is_counted(server, model, counter):
    service = service_for(server, hint_model=model, num_answers=1)
    outcome = run_one(service)
    assert outcome is not None and not outcome.accepted and outcome.params == {}
    assert service.stats()[counter] == 1


def test_cache_hit_makes_no_second_request(server):
    service = service_for(server)
    first = run_one(service)
    before = server.request_counts()["total"]
    second = run_one(service)
    assert server.request_counts()["total"] == before
    assert service.stats()["cache_hits"] == 3 and second.params == first.params


def test_budget_exhaustion_masks_without_requests(server):
    service = service_for(server, max_calls=3)
    assert run_one(service).accepted
    before = server.request_counts()["total"]
    other = build_request(CLAW_SCHEMA, {}, {"min_reach_distance": 0.5}, {"success": False})
    assert not run_one(service, other).accepted
    assert server.request_counts()["total"] == before and service.stats()["budget_exhausted"] == 3


def test_one_query_per_context_in_flight(server):
    service = service_for(server, hint_model="fault-slow", num_answers=1, max_retries=0)
    assert service.submit(0, 0, CLAW_FAIL)
    assert not service.submit(0, 1, CLAW_FAIL) and service.stats()["skipped"] == 1
    assert service.submit(1, 0, CLAW_FAIL)  # other contexts are not blocked
    assert service.wait_idle(20)


def test_64_concurrent_queries_complete():
    server = start_server()
    service = service_for(server, max_concurrency=4, timeout_s=5.0)
    requests = [build_request(CLAW_SCHEMA, {}, {"min_reach_distance": 0.1 + i / 100}, {"success": False})
                for i in range(64)]
    threads = [threading.Thread(target=service.submit, args=(i, 0, r)) for i, r in enumerate(requests)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert service.wait_idle(60)
    outcomes = service.poll()
    assert len(outcomes) == 64 and all(o.accepted for o in outcomes)
    assert server.request_counts()["max_in_flight"] <= 4
    server.close()


def test_records_replay_without_any_llm(server, tmp_path):
    live = service_for(server, tmp_path)
    recorded = run_one(live)
    proposer = LLMProposer(None, live.proposer.cfg, CLAW_SCHEMA)
    assert proposer.load_records(tmp_path / "records.jsonl") == 3
    replay = ProposalService(proposer)
    again = run_one(replay)
    assert again.accepted and again.params == recorded.params and replay.stats()["requests"] == 0
    other = build_request(CLAW_SCHEMA, {}, {"min_reach_distance": 0.9}, {"success": False})
    assert not run_one(replay, other).accepted  # not in the records: masked, never guessed


def test_finish_records_queries_in_flight_as_cancelled_and_drops_their_late_answers(tmp_path):
    with start_server(slow_s=1.0) as slow:
        service = service_for(slow, tmp_path, hint_model="fault-slow", num_answers=1, timeout_s=5.0, max_retries=0)
        assert service.submit(0, 7, CLAW_FAIL)
        assert service.finish(0.1) == 1 and not service.submit(1, 0, CLAW_FAIL)
        time.sleep(1.5)  # the slow answer arrives after the end: dropped
    [line] = [json.loads(x) for x in (tmp_path / "records.jsonl").read_text().splitlines()]
    assert line["cancelled"] and line["version"] == 7 and "training ended" in line["reason"]
    stats = service.stats()
    assert stats["cancelled"] == 1 and stats["queries"] == 0 and service.poll() == []


def test_most_answers_timing_out_is_reported_with_the_setting_to_raise(server):
    slow = service_for(server, hint_model="fault-slow", num_answers=2, timeout_s=0.2, max_retries=0)
    for env in (0, 1):
        assert slow.submit(env, 0, CLAW_FAIL)
    assert slow.wait_idle(20)
    warning = slow.proposer.warning()
    assert "4 of 4" in warning and "llm.timeout_s=0.2" in warning and "no answer came" in warning
    assert service_for(server).proposer.warning() is None
    fine = service_for(server)
    run_one(fine)
    run_one(fine, build_request(CLAW_SCHEMA, {}, {"min_reach_distance": 0.7}, {"success": False}))
    assert fine.proposer.warning() is None


# ---------------------------------------------------------------- verification in simulation


def claw_verifier(**kw) -> ShadowVerifier:
    settings = {"rollouts": 2, "steps": 100, "margin": 0.01, **kw}
    return ShadowVerifier("OpenClaw/Claw-v0", {}, FAMILIES["claw"], ControllerSpec(0.04), **settings)


def claw_start(seed: int = 5):
    """The reset options that replay the episode of ``seed`` (its goal and cube pose)."""
    env = gym.make("OpenClaw/Claw-v0")
    obs, _ = env.reset(seed=seed)
    env.close()
    return FAMILIES["claw"].episode_start(obs)


def test_one_rollout_plays_fixed_parameters_and_each_contexts_own():
    """:func:`rollout_metrics` is the verifier's rollout, and with a callable each episode takes its task context's
    parameters after its reset (the proposers benchmark's validation of a context table)."""
    kwargs = {"object_mass": [0.5, 1.0], "object_friction": [0.4, 0.7], "object_size": [0.015, 0.03]}  # claw_hard
    family, spec, params = FAMILIES["claw"], ControllerSpec(0.04), GraspParams().to_dict()
    slow = {**params, "move_speed": 0.05, "close_command": 0.3}  # never reaches the cube
    env = gym.make("OpenClaw/Claw-v0", **kwargs)
    fixed = rollout_metrics(env, family, spec, params, range(3), {}, 100)
    assert ShadowVerifier("OpenClaw/Claw-v0", kwargs, family, spec, 3, 100, 0.0)(params, {}, {}).current == fixed
    contexts = []

    def params_for(context):
        contexts.append(context.name)
        return params

    assert rollout_metrics(env, family, spec, params_for, range(3), {}, 100) == fixed
    assert len(contexts) == 3 and all(name.startswith("gantry/mass=") for name in contexts)
    assert rollout_metrics(env, family, spec, lambda context: slow, range(3), {}, 100)["score"] < fixed["score"]
    env.close()


def test_verifier_adopts_what_works_better_in_simulation_and_keeps_what_does_not():
    verifier, start = claw_verifier(), claw_start()
    slow = {**GraspParams().to_dict(), "move_speed": 0.05, "close_command": 0.3}  # never reaches the cube
    better = verifier(slow, GraspParams().to_dict(), start)
    assert better.adopted and better.current["success"] == 0.0 and better.proposed["success"] == 1.0
    assert better.proposed["lift"] > 0.05 and better.proposed["final_distance"] < 0.025
    worse = verifier(GraspParams().to_dict(), {"move_speed": 0.05, "close_command": 0.3}, start)
    assert not worse.adopted and "verify_margin" in worse.reason and worse.current == better.proposed
    same = verifier(GraspParams().to_dict(), {}, start)  # no gain is not enough
    assert not same.adopted and same.current == same.proposed


class FixedProposer:
    """Proposes the same parameters every time (a proposer that is not the subject of the test)."""

    name, workers, patience_s = "fixed", 1, 1.0

    def __init__(self, params):
        self.params = params

    def propose(self, key, request):
        return Proposal(True, dict(self.params), "fixed")

    def tell(self, key, proposal, verification):
        pass

    def stats(self):
        return {}

    def warning(self):
        return None


GO2 = ("OpenClaw/Quadruped-v1", {"robot": "go2"})


def test_a_proposal_that_wins_only_on_the_checks_seeds_is_adopted_without_confirmation_and_kept_with_it(tmp_path):
    """From real Go2 rollouts: a half-tuned trot (halfway between the class defaults and ``trot_params/go2.json``)
    and candidates near it, which win or lose by little, so one that beats it on the check's seeds 0, 1 can lose on
    the held-out ones. The first such candidate of a seeded draw is adopted by the plain check and kept out by
    the confirmation, which says so in its result, the counters and the records."""
    family, margin = FAMILIES["quadruped"], 0.01
    env = gym.make(GO2[0], **GO2[1])
    spec = env.unwrapped.controller_spec
    plain = ShadowVerifier(*GO2, family, spec, 2, 100, margin)
    confirmed = ShadowVerifier(*GO2, family, spec, 2, 100, margin, confirm_rollouts=4)
    untuned, tuned = TrotParams().to_dict(), TrotParams.for_robot("go2").to_dict()
    box = ParameterBox(parameter_schema(family, spec), untuned)
    middle = 0.5 * (box.to_unit(untuned) + box.to_unit(tuned))
    request = build_request(QUADRUPED_SCHEMA, box.from_unit(middle), {}, {})
    current = request["params"]  # as the service verifies them: the request's (4 significant digits)
    held_out = confirmed.confirm_seeds(0)  # the seeds of the confirmed verifier's first confirmation
    held_current = rollout_metrics(env, family, spec, current, held_out, {}, 100)
    rng = np.random.default_rng(0)
    for _ in range(20):  # the first candidate that wins the check and not the held-out seeds (the 3rd, here)
        candidate = box.from_unit(middle + 0.15 * rng.standard_normal(box.dim))
        first = plain(current, candidate, {})
        if first.adopted:
            held = rollout_metrics(env, family, spec, {**current, **candidate}, held_out, {}, 100)
            if held["score"] - held_current["score"] <= margin:
                break
    else:
        pytest.fail("no candidate of the draw won the check's seeds and lost the held-out ones")
    env.close()
    assert first.adopted and first.confirmation is None and not first.not_confirmed  # without confirmation: adopted
    assert first.proposed["score"] - first.current["score"] > margin

    records = tmp_path / "records.jsonl"
    service = ProposalService(FixedProposer(candidate), records, verifier=confirmed)
    assert service.submit("go2", 0, request, {}) and service.wait_idle(120)
    [kept] = service.poll()
    service.close()
    check = kept.verification
    assert kept.accepted and kept.params == {} and not check.adopted and check.not_confirmed  # kept the current
    assert (check.current, check.proposed) == (first.current, first.proposed)  # the same first check
    assert check.confirmation.seeds == list(held_out) and not check.confirmation.passed
    assert (check.confirmation.current, check.confirmation.proposed) == (held_current, held)  # played those seeds
    assert "passed the first check" in check.reason and "verify_confirm_rollouts=4" in check.reason
    stats = service.stats()
    assert stats["verified"] == stats["not_adopted"] == stats["not_confirmed"] == 1 and stats["adopted"] == 0
    assert stats["verify_cpu_s"] > 0
    line = json.loads(records.read_text())
    assert line["verification"]["confirmation"]["passed"] is False
    assert line["verification"]["confirmation"]["seeds"] == list(held_out)
    assert line["verification"]["proposed"]["score"] > line["verification"]["current"]["score"]


def test_confirmation_seeds_are_never_the_checks_and_never_repeat():
    family, spec = FAMILIES["claw"], ControllerSpec(0.04)
    for rollouts, k in ((1, 1), (2, 4), (8, 3), (CONFIRM_SEED, 16)):
        verifier = ShadowVerifier("OpenClaw/Claw-v0", {}, family, spec, rollouts, 10, 0.0, confirm_rollouts=k)
        seen = set()
        for n in range(500):
            seeds = set(verifier.confirm_seeds(n))
            assert len(seeds) == k and not any(s in range(rollouts) for s in seeds) and not seeds & seen
            assert min(seeds) >= CONFIRM_SEED > 2000  # nor the proposers benchmark's validation seeds 1000.., 2000..
            seen |= seeds
    with pytest.raises(ValueError, match="confirm_rollouts=-1"):
        ShadowVerifier("OpenClaw/Claw-v0", {}, family, spec, 2, 10, 0.0, confirm_rollouts=-1)
    with pytest.raises(ValueError, match="first held-out seed"):
        ShadowVerifier("OpenClaw/Claw-v0", {}, family, spec, CONFIRM_SEED + 1, 10, 0.0, confirm_rollouts=1)
    # a verifier rotates: its confirmations play new seeds each, recorded in the result (real claw rollouts)
    verifier, start = claw_verifier(confirm_rollouts=2), claw_start()
    slow = {**GraspParams().to_dict(), "move_speed": 0.05, "close_command": 0.3}  # never reaches the cube
    results = [verifier(slow, GraspParams().to_dict(), start) for _ in range(2)]
    assert [r.confirmation.seeds for r in results] == [list(verifier.confirm_seeds(0)), list(verifier.confirm_seeds(1))]
    assert all(r.adopted and r.confirmation.passed and not r.not_confirmed for r in results)
    assert "confirmed on held-out seeds" in results[0].reason
    rejected = verifier(GraspParams().to_dict(), {"move_speed": 0.05, "close_command": 0.3}, start)
    assert not rejected.adopted and rejected.confirmation is None  # failed the first check: nothing confirmed
    assert verifier(slow, GraspParams().to_dict(), start).confirmation.seeds == list(verifier.confirm_seeds(2))


def test_verification_rejects_fault_random_hints_that_a_plain_run_adopts(server, tmp_path):
    current = GraspParams().to_dict()
    request = build_request(CLAW_SCHEMA, current, {"min_reach_distance": 0.3, "grasped_steps": 0},
                            {"success": False})
    plain = service_for(server, hint_model="fault-random")
    adopted = run_one(plain, request)
    assert adopted.accepted and adopted.verification is None
    assert any(adopted.params[k] != v for k, v in current.items())  # random parameters would teach
    checked = ProposalService(plain.proposer, tmp_path / "records.jsonl", verifier=claw_verifier())
    assert checked.submit("gantry", 0, request, claw_start())
    assert checked.wait_idle(60)
    [kept] = checked.poll()
    assert kept.accepted and kept.params == {} and not kept.verification.adopted  # teaches with the current ones
    assert kept.verification.current["success"] == 1.0
    stats = checked.stats()
    assert stats["verified"] == 1 and stats["not_adopted"] == 1 and stats["adoption_rate"] == 0.0
    assert 0 < stats["verify_cpu_s"] == stats["verify_cpu_s_per_hint"]
    record = json.loads((tmp_path / "records.jsonl").read_text())
    assert record["accepted"] and not record["verification"]["adopted"]
    assert record["verification"]["current"]["score"] > record["verification"]["proposed"]["score"]


def test_coach_learns_from_the_simulators_verdicts_and_unchanged_proposals_are_not_checked(server):
    calls = []

    def verifier(current, proposed, start):  # adopts the first proposal it sees, rejects the rest
        calls.append(dict(proposed))
        adopted = len(calls) == 1
        return Verification(adopted, "", {"score": 0.0}, {"score": 1.0 if adopted else -1.0})

    base = service_for(server)
    service = ProposalService(base.proposer, verifier=verifier)
    current = GraspParams().to_dict()
    reach = build_request(CLAW_SCHEMA, current, {"min_reach_distance": 0.3, "grasped_steps": 0},
                          {"success": False})
    first = run_one(service, reach)
    assert first.verification.adopted and abs(first.params["approach_height"] - 0.06) < 0.01
    again = run_one(service, {**reach, "summary": {**reach["summary"], "min_reach_distance": 0.4}})
    assert again.verification.adopted is False  # same advice, the change adopted before: checked again
    assert calls[1]["approach_height"] == calls[0]["approach_height"]
    hold = build_request(CLAW_SCHEMA, current, {"min_reach_distance": 0.0, "grasped_steps": 0},
                         {"success": False})
    assert not run_one(service, hold).verification.adopted  # new advice: rejected
    kept = run_one(service, {**hold, "summary": {**hold["summary"], "steps": 50}})
    assert kept.accepted and kept.verification is None and kept.params == hold["params"]
    assert len(calls) == 3 and service.stats()["unchanged"] == 1  # rejected advice is not proposed again


def test_verification_over_its_cpu_budget_keeps_the_current_parameters(server):
    base = service_for(server)
    calls = []

    def verifier(current, proposed, start):
        calls.append(1)
        deadline = time.thread_time() + 0.05  # burn CPU: the budget counts CPU time
        while time.thread_time() < deadline:
            pass
        return Verification(True, "verified", {"score": 0.0}, {"score": 1.0})

    service = ProposalService(base.proposer, verifier=verifier, verify_budget_s_per_min=0.01)
    first = run_one(service)
    assert first.accepted and first.params and first.verification.adopted
    other = build_request(CLAW_SCHEMA, GraspParams().to_dict(), {"min_reach_distance": 0.5}, {"success": False})
    second = run_one(service, other)
    assert second.accepted and second.params == {} and "verify_budget_s_per_min" in second.reason
    assert len(calls) == 1 and service.stats()["verify_over_budget"] == 1


# ---------------------------------------------------------------- the env wrapper and the buffers


def test_the_controller_teachers_actions_are_the_controllers_actions_on_the_students_observations():
    venv = ControllerTeacher(make_vec_env("OpenClaw/Claw-v0", {}, 2), FAMILIES["claw"], ControllerSpec(0.04))
    reference = ControllerPolicy("grasp", 2, ControllerSpec(0.04))
    plain = make_vec_env("OpenClaw/Claw-v0", {}, 2)  # stepped with the student's actions too
    venv.seed(3)
    plain.seed(3)
    obs = venv.reset()
    np.testing.assert_array_equal(plain.reset()["observation"], obs["observation"])
    starts = np.ones(2, dtype=bool)
    rng = np.random.default_rng(0)
    for _ in range(150):  # crosses an episode end (100 steps)
        expected, _ = reference.predict(obs, episode_start=starts)
        actions = rng.uniform(-1, 1, size=(2, 5)).astype(np.float32)
        obs, _, dones, _ = venv.step(actions)
        np.testing.assert_array_equal(plain.step(actions)[0]["observation"], obs["observation"])  # the student's act
        np.testing.assert_array_equal(venv.teacher_actions.actions, expected.astype(np.float32))
        assert (venv.teacher_actions.weights == 1.0).all()
        starts = dones
    venv.close()
    plain.close()


def test_trot_envs_with_different_parameters_each_get_their_own_action():
    """ControllerPolicy batches the stateless trot per parameter set; mixed sets give every env its own."""
    venv = gym.make_vec("OpenClaw/Quadruped-v1", num_envs=6, vectorization_mode="sync")
    obs, _ = venv.reset(seed=1)
    policy = ControllerPolicy("trot", 6, default_leg_geometry())
    policy.controllers[1].params = TrotParams(swing_height=0.08)
    policy.controllers[4].params = TrotParams(frequency_hz=2.5, duty_factor=0.6)
    for _ in range(20):
        actions, _ = policy.predict(obs)
        np.testing.assert_array_equal(actions, np.stack([c.act(o) for c, o in zip(policy.controllers, obs)]))
        assert not np.array_equal(actions[1], policy.controllers[0].act(obs[1]))
        obs, *_ = venv.step(actions)


def test_failing_llm_masks_samples_and_the_env_keeps_stepping(server):
    service = service_for(server, hint_model="fault-500", num_answers=1)
    venv = AdaptiveControllerTeacher(make_vec_env("OpenClaw/Claw-v0", {}, 2), FAMILIES["claw"], ControllerSpec(0.04), service,
                                     segment_steps=10)
    venv.reset()
    deadline, steps = time.monotonic() + 20, 0  # step on (at least 60 steps) until two proposals have failed
    while steps < 60 or (service.stats()["errors"] < 2 and time.monotonic() < deadline):
        venv.step(np.zeros((2, 5), dtype=np.float32))
        assert (venv.teacher_actions.weights == 0.0).all()
        steps += 1
    assert service.wait_idle(20) and service.stats()["errors"] >= 2
    venv.close()


@pytest.mark.parametrize("buffer_cls", [ReplayBuffer, DictReplayBuffer])
def test_teacher_replay_buffer_samples_like_sb3_and_aligns_the_teachers_actions(buffer_cls):
    import gymnasium as gym

    class Teacher:  # what the buffer reads from a controller teacher at every add
        teacher_actions: TeacherActions

    box = gym.spaces.Box(-1, 1, (2,), np.float32)
    space = gym.spaces.Dict({"o": box}) if buffer_cls is DictReplayBuffer else box
    plain, ours, teacher = buffer_cls(64, space, box, n_envs=2), buffer_cls(64, space, box, n_envs=2), Teacher()
    ours = with_teacher_actions(ours, teacher, REPLAY_EXTENSIONS)
    for t in range(40):
        o = np.full((2, 2), t, np.float32) + np.array([[0], [100]], np.float32)
        obs = {"o": o} if isinstance(space, gym.spaces.Dict) else o
        teacher.teacher_actions = TeacherActions(np.repeat(o[:, :1], 2, axis=1), np.ones(2, np.float32))
        for b in (plain, ours):
            b.add(obs, obs, np.zeros((2, 2), np.float32), np.zeros(2), np.zeros(2), [{}, {}])
    np.random.seed(5)
    a = plain.sample(32)
    np.random.seed(5)
    b = ours.sample(32)
    obs_a = a.observations["o"] if isinstance(a.observations, dict) else a.observations
    obs_b = b.observations["o"] if isinstance(b.observations, dict) else b.observations
    assert torch.equal(obs_a, obs_b) and isinstance(b, TeacherReplaySamples)
    assert torch.equal(b.teacher_actions.actions[:, 0], obs_b[:, 0]) and (b.teacher_actions.weights == 1.0).all()


# ---------------------------------------------------------------- through train.py


def run_train(*args, env=None):
    return subprocess.run([sys.executable, str(ROOT / "train.py"), "train=smoke", "train.progress_bar=false", *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=400, env=env)


def test_train_with_llm_hints_offline_by_default(tmp_path):
    run_dir = tmp_path / "run"
    result = run_train("distill=adaptive", f"hydra.run.dir={run_dir}", f"distill.records_dir={tmp_path / 'rec'}")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "HTTP Request" not in (run_dir / "train.log").read_text() + result.stdout + result.stderr  # not a line per hint
    table = result.stdout.split("\nsummary\n")[1].split("\n\n")[0].splitlines()
    value_columns = {len(line) - len(line.strip().split(maxsplit=1)[1]) for line in table}
    assert len(table) > 10 and len(value_columns) == 1, table  # the console summary's values line up
    rows = list(csv.DictReader((run_dir / "progress.csv").open()))
    accepted = [float(r["hints/accepted"]) for r in rows if r.get("hints/accepted")]
    assert accepted and accepted[-1] > 0
    kl = [float(r["distill/kl"]) for r in rows if r.get("distill/kl")]
    assert kl and all(np.isfinite(kl))
    records = list((tmp_path / "rec").glob("quadruped-ppo-run-*.jsonl"))
    assert len(records) == 1
    lines = [json.loads(line) for line in records[0].read_text().splitlines()]
    final = [r for r in rows if r.get("hints/queries")][-1]  # after training ended: matches the records
    answered = [line for line in lines if not line.get("cancelled")]
    assert float(final["hints/queries"]) == len(answered) > 0
    assert float(final["hints/accepted"]) == sum(line["accepted"] for line in answered)
    assert float(final["hints/cancelled"]) == len(lines) - len(answered)
    assert not final["teacher/coverage"]  # no samples after training ended: no coverage figure
    verified = [line["verification"] for line in answered if "verification" in line]
    assert float(final["hints/verified"]) == len(verified) and float(final["hints/verify_cpu_s"]) > 0
    assert float(final["hints/adopted"]) == sum(v["adopted"] for v in verified)
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["teacher_hints_verified"] == len(verified) and summary["teacher_verify_cpu_s_per_hint"] > 0


def test_the_teacher_retires_once_its_alpha_stays_zero(tmp_path):
    """distill.schedule_steps=2048 of 4096: from step 2048 the controller and the hint queries stop."""
    run_dir = tmp_path / "run"
    result = run_train("distill=adaptive", "distill.schedule_steps=2048", f"hydra.run.dir={run_dir}",
                       f"distill.records_dir={tmp_path / 'rec'}")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "step 2048: the controller teacher's alpha is 0 from here on" in result.stderr
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["teacher_retired_at_step"] == 2048 and summary["teacher_coverage"] > 0.5
    assert "teacher_warning" not in summary  # coverage counts the samples it taught, not the retired ones
    rows = [r for r in csv.DictReader((run_dir / "progress.csv").open()) if r.get("hints/queries")]
    at_retirement = next(r for r in rows if float(r["time/total_timesteps"]) >= 2048)
    alphas = [float(r["distill/alpha"]) for r in csv.DictReader((run_dir / "progress.csv").open()) if r.get("distill/alpha")]
    assert alphas == pytest.approx([0.25])  # 0.5 -> 0 over 2048 steps: the update at 1024; none once it is 0
    queries_after = float(rows[-1]["hints/queries"]) - float(at_retirement["hints/queries"])
    assert float(at_retirement["hints/queries"]) > 0 and queries_after <= 4  # at most the 4 envs' in-flight ones


def test_train_continues_when_every_hint_fails(tmp_path):
    # the judge passes the connectivity check (it answers) but never with valid JSON: every segment is masked
    run_dir = tmp_path / "run"
    result = run_train("distill=adaptive", "llm.judge_model=fault-malformed", f"hydra.run.dir={run_dir}",
                       f"distill.records_dir={tmp_path / 'rec'}")
    assert result.returncode == 0, result.stderr[-3000:]
    rows = list(csv.DictReader((run_dir / "progress.csv").open()))
    last = [r for r in rows if r.get("hints/queries")][-1]
    assert float(last["hints/queries"]) > 0 and float(last["hints/accepted"]) == 0
    assert float(last["hints/parse_errors"]) >= 3 * float(last["hints/queries"]) - 3  # in-flight ones may lag
    assert all(float(r["distill/coverage"]) == 0.0 for r in rows if r.get("distill/coverage"))
    assert json.loads((run_dir / "summary.json").read_text())["steps"] >= 4096


def test_bad_verification_settings_stop_before_training_naming_the_key(tmp_path):
    result = run_train("distill=adaptive", "distill.verify_margin=-0.1", f"hydra.run.dir={tmp_path}")
    assert result.returncode == 2 and "distill.verify_margin=-0.1" in result.stderr


def test_train_stops_before_training_when_the_channel_check_fails(tmp_path):
    result = run_train("env=claw", "agent=sac", "distill=adaptive", "llm.hint_model=fault-500", "llm.max_retries=0",
                       f"hydra.run.dir={tmp_path}", f"distill.records_dir={tmp_path / 'rec'}")
    assert result.returncode == 2 and "fault-500" in result.stderr and "500" in result.stderr


def test_train_with_hosted_endpoint_and_no_key_says_which_variable_to_set(tmp_path):
    env = {k: v for k, v in __import__("os").environ.items() if k != "OPENCLAW_LLM_API_KEY"}
    result = run_train("distill=adaptive", "llm.base_url=http://127.0.0.1:9/v1", f"hydra.run.dir={tmp_path}", env=env)
    assert result.returncode == 2 and "OPENCLAW_LLM_API_KEY" in result.stderr


def test_an_adopted_gait_frequency_drives_the_env_clock_and_the_observation(server):
    # The offline coach answers a quadruped segment with a trot frequency of 2 + 1.5 |v_cmd| Hz; once
    # accepted, the env's gait clock runs at it and the student's observation shows it.
    config = ChannelConfig(base_url=server.url, timeout_s=0.5, max_retries=1, backoff_s=0.01)
    service = ProposalService(LLMProposer(LLMChannel(config, "unused"), config, QUADRUPED_SCHEMA))
    venv = AdaptiveControllerTeacher(make_vec_env("OpenClaw/Quadruped-v1", {}, 1), FAMILIES["quadruped"], default_leg_geometry(), service,
                                     segment_steps=10)
    controller = venv.policy.controllers[0]
    obs = venv.reset()
    for _ in range(400):
        obs, _, _, _ = venv.step(np.zeros((1, 12), dtype=np.float32))
        if venv.teacher_actions.weights[0] == 1.0:  # the first teacher action from a hint
            break
        time.sleep(0.01)
    frequency = controller.params.frequency_hz
    assert venv.teacher_actions.weights[0] == 1.0 and frequency != 2.5
    clock = venv.get_attr("unwrapped")[0]
    assert clock.gait_frequency_hz == frequency
    phase = clock.gait_phase
    obs, _, _, _ = venv.step(np.zeros((1, 12), dtype=np.float32))
    assert obs[0, 56] == np.float32(frequency) and clock.gait_phase == pytest.approx((phase + 0.02 * frequency) % 1.0)
    venv.close()
