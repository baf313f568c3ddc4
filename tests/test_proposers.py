"""Proposers under one verification path: random search, CMA-ES, the LLM-seeded CMA-ES, and parameters per context."""

from __future__ import annotations

import json
import threading

import gymnasium as gym
import numpy as np
import pytest

from agents.teachers.adaptive import AdaptiveControllerTeacher, parameter_schema
from agents.vec_env import make_vec_env
from coach.contexts import ContextTable
from coach.llm.client import LLMChannel
from coach.llm.hints import HintParseError, build_request, parse_answer
from coach.llm.proposer import LLMProposer
from coach.llm.server import start_server
from coach.llm.settings import ChannelConfig
from coach.proposals import ParameterSchema, ProposalOutcome, ProposalService, Verification
from coach.search import CMAProposer, HybridProposer, ParameterBox, RandomProposer
from envs.controllers import FAMILIES
from envs.controllers.grasp import GraspParams
from envs.controllers.trot import TrotParams
from envs.quadruped import default_leg_geometry
from test_train import ROOT, cli_here

SCHEMA = ParameterSchema("toy", {"a": (0.0, 1.0), "b": (-2.0, 2.0), "n": (1, 20), "xy": (-0.5, 0.5)}, frozenset({"n"}))
START = {"a": 0.5, "b": 0.0, "n": 10, "xy": [0.0, 0.0]}
TARGET = {"a": 0.9, "b": -1.5, "n": 4, "xy": [0.3, -0.2]}


def distance(params: dict) -> float:
    box = ParameterBox(SCHEMA, START)
    return float(np.linalg.norm(box.to_unit(params) - box.to_unit(TARGET)))


def toy_verifier(current, proposed, start):
    """Score = minus the distance to TARGET in the unit box; adopts what is closer."""
    before, after = -distance(current), -distance({**current, **proposed})
    return Verification(after > before, "toy", {"score": before}, {"score": after})


def drive(service: ProposalService, n: int, key: str = "ctx") -> ContextTable:
    """``n`` proposals for ``key``, one after another, applied to a table as the teacher applies them."""
    table = ContextTable(START)
    for _ in range(n):
        entry = table.entry(key)
        assert service.submit(key, entry.version, build_request(SCHEMA, entry.params, {}, {}))
        assert service.wait_idle(30)
        for outcome in service.poll():
            table.apply(outcome, 0, max_age=3)
    return table


def test_parameter_box_round_trips_lists_and_whole_numbers():
    box = ParameterBox(SCHEMA, START)
    assert box.dim == 5
    back = box.from_unit(box.to_unit(TARGET))
    assert back["n"] == 4 and isinstance(back["n"], int) and back["xy"] == pytest.approx(TARGET["xy"])
    assert box.from_unit(np.full(5, 2.0)) == {"a": 1.0, "b": 2.0, "n": 20, "xy": [0.5, 0.5]}  # clipped into the box


def test_the_trots_height_scan_fields_are_searched_only_on_an_env_with_a_height_scan():
    """``scan_following`` and ``scan_clearance`` act only where the env's controller spec carries a height scan (the
    terrain env): on the flat and rough envs no proposer proposes them (no budget spent on what does nothing)."""
    family, terrain_only = FAMILIES["quadruped"], set(TrotParams.TERRAIN_FIELDS)
    assert terrain_only == {"scan_following", "scan_clearance"}
    specs = {}
    for env_id in ("OpenClaw/Quadruped-v1", "OpenClaw/QuadrupedRough-v1", "OpenClaw/QuadrupedTerrain-v1"):
        env = gym.make(env_id)
        specs[env_id] = env.unwrapped.controller_spec
        env.close()
    for env_id in ("OpenClaw/Quadruped-v1", "OpenClaw/QuadrupedRough-v1"):
        assert set(parameter_schema(family, specs[env_id]).bounds) == set(TrotParams.BOUNDS) - terrain_only, env_id
    assert parameter_schema(family, specs["OpenClaw/QuadrupedTerrain-v1"]).bounds == TrotParams.BOUNDS
    assert set(parameter_schema(family, None).bounds) == set(TrotParams.BOUNDS) - terrain_only  # the default env

    flat = parameter_schema(family, specs["OpenClaw/Quadruped-v1"])
    request = build_request(flat, TrotParams().to_dict(), {}, {})
    assert terrain_only.isdisjoint(request["schema"])  # what the LLM is offered
    for proposer in (RandomProposer(flat, seed=0), CMAProposer(flat, seed=0)):
        assert terrain_only.isdisjoint(proposer.propose("go1", request).params), proposer.name
    with pytest.raises(HintParseError, match="unknown parameter"):
        parse_answer(json.dumps({"decision": 1, "params": {"scan_following": 0.5}, "confidence": 1.0}), flat)
    venv = make_vec_env("OpenClaw/Quadruped-v1", {}, 1)
    teacher = AdaptiveControllerTeacher(venv, family, specs["OpenClaw/Quadruped-v1"],
                                        ProposalService(RandomProposer(flat, seed=0)))
    assert teacher.schema == flat  # the teacher's requests offer the same parameters
    teacher.close()


def test_random_search_stays_in_bounds_is_seeded_and_goes_through_the_verifier(tmp_path):
    draws = [RandomProposer(SCHEMA, seed=3).propose("k", build_request(SCHEMA, START, {}, {})).params for _ in range(2)]
    assert draws[0] == draws[1]  # the same seed, the same proposal
    service = ProposalService(RandomProposer(SCHEMA, seed=0), tmp_path / "r.jsonl", verifier=toy_verifier)
    table = drive(service, 20)
    lines = [json.loads(x) for x in (tmp_path / "r.jsonl").read_text().splitlines()]
    for line in lines:
        p = line["params"]
        assert 0 <= p["a"] <= 1 and -2 <= p["b"] <= 2 and 1 <= p["n"] <= 20 and isinstance(p["n"], int)
        assert len(p["xy"]) == 2 and line["proposer"] == "random" and "verification" in line
    stats = service.stats()
    assert stats["verified"] == 20 and stats["adopted"] == table.entry("ctx").version >= 1
    assert distance(table.entry("ctx").params) < distance(START)  # only improvements were adopted


def test_cma_gets_much_closer_than_random_search_with_the_same_number_of_checks():
    cma = ProposalService(CMAProposer(SCHEMA, sigma=0.3, seed=0), verifier=toy_verifier)
    rand = ProposalService(RandomProposer(SCHEMA, seed=0), verifier=toy_verifier)
    found = {name: distance(drive(s, 160).entry("ctx").params) for name, s in (("cma", cma), ("random", rand))}
    assert found["cma"] < 0.15 and found["cma"] < found["random"], found
    assert cma.stats()["search_generations"] == 20  # told generation by generation (8 candidates each)


def test_cma_proposes_an_unscored_candidate_again_and_stops_at_the_verification_budget():
    calls = []

    def over_budget_once(current, proposed, start):
        calls.append(proposed)
        if len(calls) == 1:
            return Verification(False, "not verified", {}, {})  # as when the CPU budget is spent
        return toy_verifier(current, proposed, start)

    service = ProposalService(CMAProposer(SCHEMA, seed=0), verifier=over_budget_once, max_verified=9)
    drive(service, 9)  # a generation of 8, then its first candidate again, at the end of the queue
    assert calls[8] == calls[0] and calls[0] not in calls[1:8] and service.stats()["search_requeued"] == 1
    assert service.stats()["search_generations"] == 1
    assert not service.submit("ctx", 0, build_request(SCHEMA, START, {}, {}))
    assert service.stats()["over_max_verified"] == 1


def test_the_check_cap_counts_proposals_in_flight_for_other_contexts():
    """Several contexts' proposals in flight at once never make more checks than distill.max_verified."""
    release = threading.Event()

    def slow_verifier(current, proposed, start):
        release.wait(timeout=30)
        return toy_verifier(current, proposed, start)

    service = ProposalService(RandomProposer(SCHEMA, seed=0), verifier=slow_verifier, max_verified=2)
    request = build_request(SCHEMA, START, {}, {})
    assert service.submit("a", 0, request) and service.submit("b", 0, request)
    assert not service.submit("c", 0, request)  # two in flight may both be checked: the cap is reached
    release.set()
    assert service.wait_idle(30)
    assert len(service.poll()) == 2 and service.stats()["verified"] == 2
    assert not service.submit("c", 0, request) and service.stats()["over_max_verified"] == 2
    service.close()


def test_each_context_has_its_own_search_and_table_entry():
    service = ProposalService(CMAProposer(SCHEMA, seed=0), verifier=toy_verifier)
    table = ContextTable(START)
    for key in ("go2/stairs_up/level1", "go2/rough/level1"):
        for _ in range(12):
            assert service.submit(key, table.entry(key).version,
                                  build_request(SCHEMA, table.entry(key).params, {}, {}))
            assert service.wait_idle(30)
            for outcome in service.poll():
                assert outcome.key == key
                table.apply(outcome, 0, 3)
    assert set(table.entries) == {"go2/stairs_up/level1", "go2/rough/level1"}
    assert all(e.version >= 1 and e.teaching for e in table.entries.values())


def test_the_table_decides_adopted_kept_masked_and_stale_and_round_trips_as_json():
    table = ContextTable(START)
    verified = Verification(True, "", {"score": -1.0}, {"score": -0.5})
    assert table.entry("c").teaching is False  # nothing decided yet: masked
    assert table.apply(ProposalOutcome("c", 0, True, {"a": 0.7}, "", "cma", verified), 100, 2) == "adopted"
    assert table.apply(ProposalOutcome("c", 1, True, {}, "", "cma"), 200, 2) == "kept"
    assert table.apply(ProposalOutcome("c", 1, False, {}, "", "llm"), 300, 2) == "masked"
    assert not table.entry("c").teaching
    assert table.apply(ProposalOutcome("c", 1, True, {"a": 0.8}, "", "llm"), 400, 2) == "adopted"  # late: 1 behind
    assert table.apply(ProposalOutcome("c", 0, True, {"a": 0.1}, "", "llm"), 500, 2) == "stale"  # 2 behind
    entry = table.entry("c")
    assert entry.params["a"] == 0.8 and entry.version == 2 and entry.proposer == "llm" and entry.teaching
    assert [h["step"] for h in entry.history] == [100, 400] and entry.history[0]["score"] == -0.5
    again = ContextTable.from_json(json.loads(json.dumps(table.to_json())))
    assert again.to_json() == table.to_json() and again.entry("new").params == START


@pytest.fixture(scope="module")
def coach():
    server = start_server()
    config = ChannelConfig(base_url=server.url, timeout_s=2.0, max_retries=1, backoff_s=0.01)
    yield LLMChannel(config, "unused"), config
    server.close()


def test_hybrid_asks_the_llm_first_then_searches_from_the_better_of_its_proposal_and_the_current(coach, tmp_path):
    channel, config = coach
    schema = parameter_schema(FAMILIES["claw"], None)
    current = json.loads(json.dumps(GraspParams().to_dict()))
    hybrid = HybridProposer(LLMProposer(channel, config, schema), CMAProposer(schema, sigma=0.1, seed=0))

    def prefers_the_llm(cur, proposed, start):  # scores the coach's advice (approach height 0.06 m) the highest
        before, after = -abs(cur["approach_height"] - 0.06), -abs({**cur, **proposed}["approach_height"] - 0.06)
        return Verification(after > before, "", {"score": before}, {"score": after})

    service = ProposalService(hybrid, tmp_path / "r.jsonl", verifier=prefers_the_llm)
    request = build_request(schema, current, {"min_reach_distance": 0.3, "grasped_steps": 0}, {"success": False})
    for _ in range(3):
        assert service.submit("gantry", 0, request) and service.wait_idle(30)
        service.poll()
    lines = [json.loads(x) for x in (tmp_path / "r.jsonl").read_text().splitlines()]
    assert [line["proposer"] for line in lines] == ["llm_cma"] * 3
    assert lines[0]["by"] == "llm" and "answers" in lines[0] and "search" in lines[1] and "search" in lines[2]
    llm_height = lines[0]["params"]["approach_height"]
    assert abs(llm_height - 0.06) < 0.005 and abs(current["approach_height"] - 0.06) > 0.015
    box = ParameterBox(schema, current)  # the search started at the LLM's proposal, not at the current parameters
    es = hybrid.search._searches["gantry"].es
    np.testing.assert_allclose(es.x0, box.to_unit({**current, **lines[0]["params"]}))


def test_the_teacher_keeps_parameters_per_terrain_context_and_each_env_uses_its_own():
    venv = make_vec_env("OpenClaw/QuadrupedTerrain-v1", {}, 3)
    service = ProposalService(RandomProposer(parameter_schema(FAMILIES["quadruped"], default_leg_geometry()),
                                            seed=0))  # unverified: adopted
    teacher = AdaptiveControllerTeacher(venv, FAMILIES["quadruped"], default_leg_geometry(), service, segment_steps=5)
    teacher.seed(0)
    teacher.reset()
    names = [c.name for c in teacher.contexts]
    assert all(n.startswith("openclaw_go1/") and "/level" in n for n in names)
    assert (teacher.weights() == 0).all()  # no proposal decided yet: masked
    for _ in range(30):
        teacher.step(np.zeros((3, 12), np.float32))
        service.wait_idle(10)
    for i, context in enumerate(teacher.contexts):
        entry = teacher.table.entry(context.name)
        assert entry.teaching and entry.version >= 1
        assert teacher.policy.controllers[i].params.to_dict() == entry.params
    assert teacher.teacher_actions.weights.tolist() == [1.0, 1.0, 1.0]
    saved = teacher.context_state()
    teacher.restore_context_state(json.loads(json.dumps(saved)))
    assert teacher.context_state() == saved
    clocks = [env.gait_frequency_hz for env in teacher.get_attr("unwrapped")]
    assert clocks == [teacher.table.entry(c.name).params["frequency_hz"] for c in teacher.contexts]
    teacher.retire(100)  # the student goes on with the clock its evaluation envs have: the starting parameters'
    assert [env.gait_frequency_hz for env in teacher.get_attr("unwrapped")] == [saved["start"]["frequency_hz"]] * 3
    teacher.close()


def test_a_pooled_table_teaches_every_context_with_one_set_checked_on_episodes_of_every_context():
    """distill.per_context=false: the claw's object classes share one entry, whose checks replay no class."""
    kwargs = {"object_mass": [0.5, 1.0], "object_friction": [0.4, 0.7]}
    venv = make_vec_env("OpenClaw/Claw-v0", kwargs, 3)
    starts = []

    def verifier(current, proposed, start):
        starts.append(start)
        return Verification(True, "toy", {"score": 0.0}, {"score": 1.0})

    spec = venv.get_attr("unwrapped", indices=[0])[0].controller_spec
    service = ProposalService(RandomProposer(parameter_schema(FAMILIES["claw"], spec), seed=0), verifier=verifier)
    teacher = AdaptiveControllerTeacher(venv, FAMILIES["claw"], spec, service, segment_steps=5, per_context=False)
    teacher.seed(0)
    teacher.reset()
    classes = {c.name for c in venv.env_method("task_context")}
    assert all(c.startswith("gantry/mass=") for c in classes)
    assert [c.name for c in teacher.contexts] == ["all"] * 3 and all(c.options == {} for c in teacher.contexts)
    for _ in range(30):
        teacher.step(np.zeros((3, 5), np.float32))
        service.wait_idle(10)
    assert set(teacher.table.entries) == {"all"} and teacher.table.entry("all").version >= 1
    assert starts and all("object_class" not in s for s in starts)  # checked on episodes of every class
    pooled = GraspParams.from_dict(teacher.table.params_for("gantry/mass=heavy/friction=low"))
    assert pooled != GraspParams() and all(c.params == pooled for c in teacher.policy.controllers)
    saved = json.loads(json.dumps(teacher.context_state()))
    assert saved["per_context"] is False
    teacher.restore_context_state(saved)
    assert teacher.context_state() == saved and [c.name for c in teacher.contexts] == ["all"] * 3
    teacher.close()
    older = {k: v for k, v in ContextTable(START).to_json().items() if k != "per_context"}  # saved before pooling
    assert ContextTable.from_json(older).per_context


# ---------------------------------------------------------------- through train.py, resume and export

def test_cma_teacher_trains_saves_its_table_resumes_it_and_exports_it(tmp_path):
    run = tmp_path / "run"
    first = cli_here("train.py", "train=smoke", "train.progress_bar=false", "train.video=false", "distill=adaptive",
                   "distill.proposer=cma", "distill.controller_params=untuned", "distill.segment_steps=20",
                   "distill.verify_budget_s_per_min=null", f"distill.records_dir={tmp_path / 'rec'}",
                   f"hydra.run.dir={run}")
    assert first.returncode == 0, first.stderr[-3000:]
    summary = json.loads((run / "summary.json").read_text())
    assert summary["teacher_proposer"] == "cma" and summary["teacher_hints_verified"] >= 1
    [records] = (tmp_path / "rec").glob("*.jsonl")
    lines = [json.loads(x) for x in records.read_text().splitlines()]
    assert {line["proposer"] for line in lines} == {"cma"} and {line["key"] for line in lines} == {"openclaw_go1"}
    saved = sorted((run / "checkpoints").glob("step_*"))[-1]
    table = json.loads((saved / "context_params.json").read_text())
    entry = table["contexts"]["openclaw_go1"]
    assert entry["teaching"] and entry["version"] == summary["teacher_hints_adopted"] == len(entry["history"])

    steps = int(json.loads((saved / "meta.json").read_text())["num_timesteps"])
    resumed = cli_here("train.py", f"resume={run}", f"train.total_timesteps={steps + 2048}")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    after = json.loads((sorted((run / "checkpoints").glob("step_*"))[-1] / "context_params.json").read_text())
    again = after["contexts"]["openclaw_go1"]
    assert again["history"][:len(entry["history"])] == entry["history"]  # continued, not started again
    assert again["version"] >= entry["version"]

    exported = cli_here("export.py", f"run={run}", f"out_dir={tmp_path / 'export'}")
    assert exported.returncode == 0, exported.stderr[-3000:]
    beside = json.loads((tmp_path / "export" / "context_params.json").read_text())
    assert beside["contexts"].keys() == after["contexts"].keys()


@pytest.mark.parametrize("override, named", [
    ("distill.proposer=bayes", ["distill.proposer='bayes'", "llm_cma"]),
    ("distill.verify_on=episode", ["distill.verify_on='episode'", "context, segment"]),
    ("distill.max_verified=0", ["distill.max_verified=0", "null"]),
    ("distill.search_sigma=2", ["distill.search_sigma=2", "(0, 1]"]),
    ("distill.verify_confirm_rollouts=-1", ["distill.verify_confirm_rollouts=-1", ">= 1", "0 for no confirmation"]),
    ("distill.controller_params=no/such.json", ["distill.controller_params='no/such.json'", "cannot read",
                                                 "tuned or untuned", "JSON file"]),
])
def test_bad_proposer_settings_stop_before_training_naming_the_fix(tmp_path, override, named):
    result = cli_here("train.py", "train=smoke", "distill=adaptive", override, f"hydra.run.dir={tmp_path / 'r'}")
    assert result.returncode == 2 and all(n in result.stderr for n in named), result.stderr[-2000:]
    assert not (tmp_path / "r").exists()


def test_the_controller_teacher_starts_from_a_parameter_file_and_a_wrong_one_stops_before_training(tmp_path):
    """distill.controller_params=<file>: the trot's parameter files, the proposers benchmark's offline reference or a
    plain object; fields it leaves out take the class defaults; another family's fields stop train.py."""
    from agents.teachers.controller import starting_params

    plain = tmp_path / "grasp.json"
    plain.write_text(json.dumps({"close_steps": 12, "xy_offset": [0.001, 0.0]}))
    params = starting_params(FAMILIES["claw"], str(plain))
    assert params == GraspParams(close_steps=12, xy_offset=(0.001, 0.0))
    wrapped = tmp_path / "offline.json"
    wrapped.write_text(json.dumps({"params": {"close_steps": 7}, "score": 0.7}))
    assert starting_params(FAMILIES["claw"], str(wrapped)).close_steps == 7
    trot_file = ROOT / "envs" / "controllers" / "trot_params" / "go2.json"
    assert starting_params(FAMILIES["quadruped"], str(trot_file)) == TrotParams.for_robot("go2")
    result = cli_here("train.py", "train=smoke", "env=claw", "distill=scripted",
                      f"distill.controller_params={trot_file}", f"hydra.run.dir={tmp_path / 'r'}")
    assert result.returncode == 2 and "unknown GraspParams field" in result.stderr, result.stderr[-2000:]
    assert "JSON file of the claw controller's parameters" in result.stderr and not (tmp_path / "r").exists()
