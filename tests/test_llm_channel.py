"""The LLM key channel against the real bundled server over loopback (no mocks).

One module over ~450 lines on purpose: every test shares one module-scoped server (one process start) and
``--dist loadscope`` keeps them on one worker; split, each part would start its own server."""

from __future__ import annotations

import dataclasses
import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from coach.llm.check import check_channel
from coach.llm.client import LLMChannel
from coach.llm.completions import MODELS, ServerQuirks
from coach.llm.errors import ChannelError
from coach.llm.hints import response_format
from coach.llm.server import start_server
from coach.llm.settings import ChannelConfig, load_config, resolve_api_key
from coach.proposals import latency_percentiles

ROOT = Path(__file__).resolve().parents[1]
SECRET = "sk-test-S3CRET-0123456789abcdefXYZ"
VAR = "OPENCLAW_LLM_API_KEY"
REQUEST = {"task": "quadruped", "schema": {"kp": [10.0, 60.0], "gait_freq": [1.0, 3.0]},
           "params": {"kp": 30.0, "gait_freq": 2.0}, "summary": {"return": 12.5},
           "outcome": {"improved": False}}


@pytest.fixture
def server():
    srv = start_server(slow_s=5.0)
    yield srv
    srv.close()


def make(url: str, key: str = "unused", **kw) -> LLMChannel:
    base = dict(base_url=url, timeout_s=2.0, max_retries=2, backoff_s=0.01)
    base.update(kw)
    return LLMChannel(ChannelConfig(**base), key)


def user(text: str) -> list[dict]:
    return [{"role": "user", "content": text}]


def chat_total(srv) -> int:
    return srv.request_counts()["total"]


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("OPENCLAW_") and "proxy" not in k.lower()}
    env.update(extra)
    return env


# ------------------------------------------------------------------------------------ happy path
def test_coach_answers_json_hint(server):
    with make(server.url) as ch:
        res = ch.chat("openclaw-coach", user(json.dumps(REQUEST)), seed=3, n=3)
        assert res.attempts == 1 and len(res.texts) == 3 and res.text == res.texts[0]
        for text in res.texts:
            answer = json.loads(text)
            assert answer["decision"] in (1, -1)
            assert isinstance(answer["params"], dict)
            assert 0.0 <= float(answer["confidence"]) <= 1.0
        assert res.prompt_tokens > 0 and res.completion_tokens > 0
        again = ch.chat("openclaw-coach", user(json.dumps(REQUEST)), seed=3, n=3)
        assert again.texts == res.texts  # same seed -> same answers
        assert ch.chat("openclaw-coach", user("Reply with the word: pong")).text == "pong"
        stats = ch.stats()
    assert stats["calls"] == 3 and stats["attempts"] == 3 and stats["errors_by_kind"] == {}
    assert stats["prompt_tokens"] > 0 and stats["latency_p95_s"] >= stats["latency_p50_s"] > 0


def test_models_health_and_stats_endpoints(server):
    root = server.url.rsplit("/v1", 1)[0]
    with urllib.request.urlopen(server.url + "/models", timeout=5) as r:
        listing = json.load(r)
    assert listing["object"] == "list"
    assert {m["id"] for m in listing["data"]} == set(MODELS)
    assert all(m["object"] == "model" for m in listing["data"])
    with urllib.request.urlopen(root + "/healthz", timeout=5) as r:
        assert json.load(r) == {"ok": True}
    with make(server.url) as ch:
        assert "openclaw-coach" in ch.list_models()
    assert chat_total(server) == 0


# ------------------------------------------------------------------------------------ faults
def test_malformed_and_refusal_are_returned_as_text(server):
    with make(server.url) as ch:
        assert ch.chat("fault-malformed", user(json.dumps(REQUEST))).text.startswith("Sure!")
        refusal = ch.chat("fault-refuse", user(json.dumps(REQUEST)))
        assert "can't help" in refusal.text and refusal.finish_reasons == ["stop"]


def test_no_choices_is_bad_response(server):
    with make(server.url) as ch, pytest.raises(ChannelError) as ei:
        ch.chat("fault-nochoices", user("hi"))
    assert ei.value.kind == "bad_response" and "choices" in ei.value.message
    assert chat_total(server) == 1  # a 200 is not retried


def test_slow_server_times_out_quickly(server):
    with make(server.url, timeout_s=0.3, max_retries=1) as ch:
        t0 = time.monotonic()
        with pytest.raises(ChannelError) as ei:
            ch.chat("fault-slow", user("hi"))
        elapsed = time.monotonic() - t0
    assert ei.value.kind == "timeout" and "timeout_s" in ei.value.message
    assert "waiting for response headers" in ei.value.message and ei.value.detail == "headers"
    assert 0.5 <= elapsed < 0.3 * 2 + 2.0
    assert server.request_counts()["models"]["fault-slow"] == 2
    t0 = time.monotonic()
    server.close()  # interrupts the sleeping handlers
    assert time.monotonic() - t0 < 2.0


@pytest.mark.parametrize("model,kind", [("fault-500", "server"), ("fault-429", "rate_limit")])
def test_retryable_status_is_retried_then_fails(server, model, kind):
    with make(server.url, max_retries=2) as ch:
        with pytest.raises(ChannelError) as ei:
            ch.chat(model, user("hi"))
        assert ch.stats()["attempts"] == 3 and ch.stats()["errors_by_kind"] == {kind: 1}
    assert ei.value.kind == kind and "3 attempts" in ei.value.message
    assert server.request_counts()["models"][model] == 3


def test_unknown_model_is_not_found_without_retry(server):
    with make(server.url, max_retries=3) as ch, pytest.raises(ChannelError) as ei:
        ch.chat("no-such-model", user("hi"))
    assert ei.value.kind == "not_found"
    assert "no-such-model" in ei.value.message and "openclaw-coach" in ei.value.message  # listed
    assert server.request_counts()["models"]["no-such-model"] == 1


def test_wrong_path_is_bad_url(server):
    root = server.url.rsplit("/v1", 1)[0]
    with make(root + "/api", max_retries=3) as ch, pytest.raises(ChannelError) as ei:
        ch.chat("openclaw-coach", user("hi"))
    assert ei.value.kind == "bad_url" and "/v1" in ei.value.message


def test_doubled_v1_is_bad_url_before_any_request(server):
    with pytest.raises(ChannelError) as ei:
        make(server.url + "/v1")
    assert ei.value.kind == "bad_url" and server.url in ei.value.message
    cfg = ChannelConfig(base_url=server.url + "/v1/")
    [res] = check_channel(cfg, {VAR: "whatever"})
    assert not res.ok and res.error_kind == "bad_url"
    assert chat_total(server) == 0


def test_connection_refused():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ch = make(f"http://127.0.0.1:{port}/v1", max_retries=1)
    with ch, pytest.raises(ChannelError) as ei:
        ch.chat("openclaw-coach", user("hi"))
    assert ei.value.kind == "connection" and "is the server running" in ei.value.message
    assert ch.stats()["attempts"] == 2


# ------------------------------------------------------------------------------------ keys
def test_right_key_is_accepted():
    with start_server(api_key=SECRET) as srv:
        [res] = check_channel(ChannelConfig(base_url=srv.url), {VAR: f"  {SECRET}\n"})
    assert res.ok and res.answer == "pong"


def test_wrong_key_is_auth_and_never_leaks():
    with start_server(api_key="the-server-key-000") as srv:
        [res] = check_channel(ChannelConfig(base_url=srv.url), {VAR: SECRET})
        assert not res.ok and res.error_kind == "auth"
        assert VAR in res.message and "401" in res.message and SECRET not in res.message
        with make(srv.url, key=SECRET) as ch:
            with pytest.raises(ChannelError) as ei:
                ch.chat("openclaw-coach", user("hi"))
            assert ch.stats()["attempts"] == 1  # 401 is not retried
            assert SECRET not in repr(ch) and SECRET not in str(ch.stats())
            assert ch.redact(f"key={SECRET}") == "key=***"
        err = ei.value
        assert err.kind == "auth" and SECRET not in str(err) and SECRET not in repr(err.args)
        assert err.__cause__ is None and err.__suppress_context__
        proc = subprocess.run([sys.executable, "-m", "coach.llm.check", "--base-url", srv.url],
                              cwd=ROOT, env=clean_env(**{VAR: SECRET}), capture_output=True,
                              text=True, timeout=60)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert "auth" in out and "401" in out and VAR in out
    assert SECRET not in out


@pytest.mark.parametrize("value", [None, "", "   \t"])
def test_missing_key_names_the_variable(value):
    env = {} if value is None else {"MY_LLM_KEY": value}
    cfg = ChannelConfig(base_url="http://127.0.0.1:9/v1", api_key_env="MY_LLM_KEY")
    with pytest.raises(ChannelError) as ei:
        resolve_api_key(cfg, env)
    assert ei.value.kind == "key_missing"
    assert "MY_LLM_KEY" in ei.value.message and "export MY_LLM_KEY=" in ei.value.message
    assert resolve_api_key(cfg, env, required=False) == "no-key"
    [res] = check_channel(cfg, env)
    assert res.error_kind == "key_missing"


def test_bundled_server_needs_no_key():
    [res] = check_channel(ChannelConfig(), {})
    assert res.ok and res.answer == "pong"


# ------------------------------------------------------------------------------------ budget
def test_call_budget_blocks_without_request(server):
    with make(server.url, max_calls=2) as ch:
        ch.chat("openclaw-coach", user("hi"))
        ch.chat("openclaw-coach", user("hi"))
        before = chat_total(server)
        with pytest.raises(ChannelError) as ei:
            ch.chat("openclaw-coach", user("hi"))
        assert ei.value.kind == "budget" and "max_calls" in ei.value.message
        assert chat_total(server) == before == 2
        assert ch.stats()["errors_by_kind"] == {"budget": 1}


def test_token_budget(server):
    with make(server.url, max_tokens_budget=5) as ch:
        ch.chat("openclaw-coach", user(json.dumps(REQUEST)))
        with pytest.raises(ChannelError) as ei:
            ch.chat("openclaw-coach", user("hi"))
    assert ei.value.kind == "budget" and "max_tokens_budget" in ei.value.message
    assert chat_total(server) == 1


# ------------------------------------------------------------------------------------ concurrency
def test_64_concurrent_calls_bounded_by_max_concurrency(server):
    results: list[str] = []
    errors: list[BaseException] = []
    lock = threading.Lock()
    with make(server.url, max_concurrency=4) as ch:
        def work(i: int) -> None:
            try:
                text = ch.chat("openclaw-coach", user(json.dumps({**REQUEST, "i": i})), seed=i).text
                with lock:
                    results.append(text)
            except BaseException as exc:  # noqa: BLE001
                with lock:
                    errors.append(exc)

        threads = [threading.Thread(target=work, args=(i,), daemon=True) for i in range(64)]
        for t in threads:
            t.start()
        deadline = time.monotonic() + 60
        for t in threads:
            t.join(timeout=max(0.0, deadline - time.monotonic()))
        assert not any(t.is_alive() for t in threads), "deadlock: calls still running"
        assert not errors and len(results) == 64
        assert ch.stats()["calls"] == 64
    counts = server.request_counts()
    assert counts["total"] == 64 and 1 <= counts["max_in_flight"] <= 4


# ------------------------------------------------------------------------------------ config + CLI
def test_config_validation_and_overrides():
    with pytest.raises(ValueError, match="valid keys: base_url, api_key_env"):
        ChannelConfig.from_mapping({"base_ur1": "x"})
    for bad in ({"timeout_s": 0}, {"max_retries": -1}, {"max_concurrency": 0},
                {"num_answers": 0}, {"max_retries": 1.5}, {"hint_model": ""}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            ChannelConfig.from_mapping(bad)
    default = load_config(ROOT / "configs/llm/default.yaml")
    assert default == ChannelConfig() and default.judge == "openclaw-coach"
    hosted = load_config(ROOT / "configs/llm/openai.yaml")
    assert hosted.base_url == "https://api.openai.com/v1" and hosted.api_key_env == "OPENAI_API_KEY"
    over = default.with_env_overrides({"OPENCLAW_LLM_BASE_URL": "http://h:1/v1",
                                       "OPENCLAW_HINT_MODEL": "m1", "OPENCLAW_JUDGE_MODEL": " "})
    assert (over.base_url, over.hint_model, over.judge) == ("http://h:1/v1", "m1", "m1")
    assert dataclasses.replace(over, judge_model="j").judge == "j"


def test_check_cli_default_config_prints_pong():
    proc = subprocess.run([sys.executable, "-m", "coach.llm.check"], cwd=ROOT, env=clean_env(),
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "pong" in proc.stdout and "openclaw-coach" in proc.stdout


def test_proxy_failure_mentions_proxy_variables(monkeypatch):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    for var in ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{port}")
    with make("http://llm.invalid/v1", max_retries=0) as ch, pytest.raises(ChannelError) as ei:
        ch.chat("openclaw-coach", user("hi"))
    assert ei.value.kind == "proxy" and "HTTP_PROXY" in ei.value.message


def test_server_cli_refuses_unset_key_variable_and_explains_a_busy_port():
    cli = [sys.executable, "-m", "coach.llm.server", "--port", "0"]
    unset = subprocess.run([*cli, "--api-key-env", "OPENCLAW_TEST_UNSET_KEY"], cwd=ROOT, env=clean_env(),
                           capture_output=True, text=True, timeout=60)
    assert unset.returncode == 2, unset.stdout + unset.stderr
    assert "OPENCLAW_TEST_UNSET_KEY" in unset.stderr and "unset" in unset.stderr
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        taken = subprocess.run([*cli[:-1], str(port)], cwd=ROOT, env=clean_env(), capture_output=True,
                               text=True, timeout=60)
    assert taken.returncode == 2, taken.stdout + taken.stderr
    assert f"127.0.0.1:{port}" in taken.stderr and "--port" in taken.stderr and "Traceback" not in taken.stderr


# ------------------------------------------------------------------------------- structured output
def test_structured_output_is_sent_when_the_server_accepts_it(server):
    schema = response_format(REQUEST, "json_schema")
    assert schema["json_schema"]["schema"]["properties"]["params"]["properties"]["kp"]["maximum"] == 60.0
    with make(server.url) as ch:
        for _ in range(2):
            res = ch.chat("openclaw-coach", user(json.dumps(REQUEST)), response_format=schema)
            assert json.loads(res.text)["decision"] in (1, -1)
        assert ch.stats()["structured_fallbacks"] == 0 and ch.stats()["plain_models"] == []
    assert server.request_counts()["response_format"] == 2 and chat_total(server) == 2


def test_structured_output_falls_back_to_plain_once_per_model_when_rejected():
    with start_server(quirks=ServerQuirks(response_format=False)) as srv, make(srv.url) as ch:
        for _ in range(2):
            res = ch.chat("openclaw-coach", user(json.dumps(REQUEST)), response_format={"type": "json_object"})
            assert json.loads(res.text)["decision"] in (1, -1)
        assert srv.request_counts()["response_format"] == 1 and chat_total(srv) == 3  # rejected once, remembered
        ch.chat("fault-refuse", user("hi"), response_format={"type": "json_object"})  # remembered per model
        with pytest.raises(ChannelError) as ei:  # a 400 the plain request gets too is not blamed on the format
            ch.chat("fault-malformed", user("hi"), n=17, response_format={"type": "json_object"})
        assert ei.value.kind == "client"
        stats = ch.stats()
    assert stats["structured_fallbacks"] == 2 and stats["plain_models"] == ["fault-refuse", "openclaw-coach"]
    assert stats["calls"] == 4 and stats["errors_by_kind"] == {"client": 1}


def test_structured_output_off_reads_the_same_from_yaml_and_the_check_cli():
    # YAML reads a bare `off` as false: an llm YAML file and `python -m coach.llm.check llm.structured_output=off`
    # (OmegaConf) get False where train.py's Hydra override keeps the string; both mean off
    assert load_config(None, ["llm.structured_output=off"]).structured_output == "off"
    assert response_format(REQUEST, load_config(None, ["llm.structured_output=off"]).structured_output) is None
    with pytest.raises(ValueError, match="structured_output"):
        ChannelConfig(structured_output=True)
    with start_server() as srv:
        proc = run_check(f"llm.base_url={srv.url}", "llm.structured_output=off", **{VAR: "k"})
    assert proc.returncode == 0, proc.stdout + proc.stderr


# ------------------------------------------------------------------------------- circuit breaker
def fail(ch, calls: int) -> None:
    """``calls`` failing calls (HTTP 500) in a row: enough to open a breaker of ``breaker_failures=calls``."""
    for _ in range(calls):
        with pytest.raises(ChannelError):
            ch.chat("fault-500", user("hi"))


def test_circuit_breaker_backs_off_a_server_that_fails_every_request_and_retries_later(server):
    with make(server.url, max_retries=0, breaker_failures=3, breaker_cooldown_s=0.5) as ch:
        fail(ch, 3)
        with pytest.raises(ChannelError) as ei:
            ch.chat("fault-500", user("hi"))
        assert ei.value.kind == "unavailable" and "breaker_cooldown_s" in ei.value.message
        assert chat_total(server) == 3 and ch.stats()["calls"] == 3  # not hammered, no budget spent
        time.sleep(0.6)
        with pytest.raises(ChannelError) as ei:  # the trial call after the pause fails: a longer pause
            ch.chat("fault-500", user("hi"))
        assert ei.value.kind == "server" and chat_total(server) == 4
        with pytest.raises(ChannelError) as ei:
            ch.chat("openclaw-coach", user("hi"))
        assert ei.value.kind == "unavailable"
        time.sleep(0.6)
        with pytest.raises(ChannelError):  # still paused: the pause doubled to 1 s
            ch.chat("openclaw-coach", user("hi"))
        time.sleep(0.5)
        assert ch.chat("openclaw-coach", user("hi")).text == "pong"  # retried later: the server is back
        with pytest.raises(ChannelError) as ei:  # a success closed it: one failure does not reopen it
            ch.chat("fault-500", user("hi"))
        assert ei.value.kind == "server" and ch.chat("openclaw-coach", user("hi")).text == "pong"
        assert ch.stats()["breaker_opened"] == 2


# ------------------------------------------------------------------------------- what llama.cpp exposed
def run_check(*args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "coach.llm.check", *args], cwd=ROOT, env=clean_env(**env),
                          capture_output=True, text=True, timeout=60)


def test_check_fails_a_model_that_echoes_the_prompt():
    with start_server(quirks=ServerQuirks(echo=True)) as srv:
        [res] = check_channel(ChannelConfig(base_url=srv.url), {VAR: "k"})
    assert not res.ok and res.error_kind == "bad_response" and "echoed the prompt" in res.message
    # llama-server with a base model: the echo fails, and the other two diagnoses still come (the server answered)
    with start_server(quirks=ServerQuirks(echo=True, any_model=True, without_v1=True)) as srv:
        proc = run_check(f"llm.base_url={srv.url[: -len('/v1')]}", **{VAR: "k"})
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1 and "echoed the prompt" in out and "ignores model names" in out, out
    assert "no /v1" in out, out


def test_check_cli_takes_train_overrides_warns_on_ignored_model_names_and_names_the_url_form():
    root_too = ServerQuirks(any_model=True, without_v1=True)
    with start_server(api_key=SECRET, quirks=root_too) as srv:
        root = srv.url[: -len("/v1")]
        proc = run_check(f"llm.base_url={root}", "llm.api_key_env=MY_LLM_KEY", "llm.hint_model=typo-model",
                         MY_LLM_KEY=SECRET)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "ignores model names" in out and "no /v1" in out and SECRET not in out
    with start_server() as srv:  # the OpenAI layout: only /v1
        root = srv.url[: -len("/v1")]
        proc = run_check(f"llm.base_url={root}", **{VAR: "k"})
        named = run_check(f"llm.base_url={srv.url}", **{VAR: "k"})
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1 and f"set llm.base_url={srv.url}" in out, out
    assert named.returncode == 0 and "/v1 API root" in named.stdout and "ignores" not in named.stdout
    bad = run_check("llm.no_such_key=1")
    assert bad.returncode == 1 and "valid keys" in bad.stderr


def test_a_server_that_needs_no_key_takes_api_key_env_null():
    """llama-server / vLLM started without a key: ``llm.api_key_env=null`` instead of a made-up variable;
    a server that does want a key then answers 401, and the error says which setting to use."""
    keyless = ChannelConfig(base_url="http://127.0.0.1:9/v1", api_key_env=None)
    assert resolve_api_key(keyless, {}) == "no-key"
    with start_server() as srv:
        proc = run_check(f"llm.base_url={srv.url}", "llm.api_key_env=null")
    assert proc.returncode == 0 and "key: none, llm.api_key_env=null" in proc.stdout, proc.stdout + proc.stderr
    with start_server(api_key=SECRET) as srv:
        [res] = check_channel(dataclasses.replace(keyless, base_url=srv.url), {})
    assert res.error_kind == "auth" and "no key (llm.api_key_env=null) was rejected" in res.message
    assert "needs llm.api_key_env" in res.message


def test_latency_percentiles_interpolate_and_are_absent_without_calls():
    assert latency_percentiles([]) == {}
    assert latency_percentiles([0.4]) == {"latency_p50_s": 0.4, "latency_p95_s": 0.4}
    stats = latency_percentiles([4.0, 1.0, 3.0, 2.0])  # order does not matter
    assert stats == {"latency_p50_s": pytest.approx(2.5), "latency_p95_s": pytest.approx(3.85)}


# ------------------------------------------------------------------------------- whole-request deadline
# The server trickles a byte every 0.2 s: far below timeout_s, so a per-read timeout never fires; only a
# deadline on the whole request ends these calls. Bounds are loose: timeout_s per attempt, plus 3 s.
@pytest.fixture
def trickler():
    srv = start_server(trickle_s=0.2)
    yield srv
    srv.close()


def timed_failure(ch: LLMChannel, model: str) -> tuple[ChannelError, float]:
    t0 = time.monotonic()
    with pytest.raises(ChannelError) as ei:
        ch.chat(model, user("hi"))
    return ei.value, time.monotonic() - t0


def test_trickling_body_times_out_mid_body_within_the_deadline(trickler):
    with make(trickler.url, timeout_s=1.0, max_retries=1) as ch:
        err, elapsed = timed_failure(ch, "fault-trickle")
        assert ch.stats()["attempts"] == 2 and ch.stats()["errors_by_kind"] == {"timeout": 1}
    assert elapsed < 1.0 * 2 + 3.0
    assert err.kind == "timeout" and err.detail == "body", err.message
    assert "timed out mid-body after" in err.message and "the body trickled" in err.message
    assert "llm.timeout_s=1" in err.message
    assert trickler.request_counts()["models"]["fault-trickle"] == 2


def test_trickling_headers_time_out_waiting_for_the_headers(trickler):
    with make(trickler.url, timeout_s=1.0, max_retries=0) as ch:
        err, elapsed = timed_failure(ch, "fault-slow-headers")
    assert elapsed < 1.0 + 3.0
    assert err.kind == "timeout" and err.detail == "headers", err.message
    assert "timed out waiting for response headers" in err.message and "llm.timeout_s=1" in err.message


def test_the_deadline_also_holds_through_a_proxy(trickler, monkeypatch):
    # the bundled server serves absolute-form targets, so it can stand in for an HTTP proxy
    for var in ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy",
                "NO_PROXY", "no_proxy"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{trickler.port}")
    with make("http://llm.invalid/v1", timeout_s=1.0, max_retries=0) as ch:
        err, elapsed = timed_failure(ch, "fault-trickle")
    assert elapsed < 1.0 + 3.0
    assert err.kind == "timeout" and err.detail == "body", err.message
    assert trickler.request_counts()["models"]["fault-trickle"] == 1  # it went through the "proxy"


def test_connection_dropped_mid_body_is_not_cannot_connect(server):
    with make(server.url, max_retries=2) as ch:
        err, _ = timed_failure(ch, "fault-drop")
        assert ch.stats()["attempts"] == 3  # retryable
    assert "connection dropped mid-body" in err.message and "cannot connect" not in err.message, err.message
    assert err.kind == "connection" and err.detail == "dropped"
    assert "llm.timeout_s" in err.message and "3 attempts" in err.message


def test_a_huge_answer_is_refused_naming_its_size_and_the_limit(server, monkeypatch):
    from coach.llm import client

    with make(server.url, max_retries=2) as ch:
        err, elapsed = timed_failure(ch, "fault-huge")  # no Content-Length: cut off while reading
    limit = client.MAX_RESPONSE_BYTES
    assert err.kind == "bad_response" and err.detail == "too_large", err.message
    assert f"{limit} bytes" in err.message and "more than" in err.message
    assert server.request_counts()["models"]["fault-huge"] == 1 and elapsed < 2.0 + 3.0  # not retried
    monkeypatch.setattr(client, "MAX_RESPONSE_BYTES", 10_000)
    with make(server.url) as ch:
        err, _ = timed_failure(ch, "fault-long")  # its Content-Length says it is too large: not read at all
    assert err.kind == "bad_response" and err.detail == "too_large", err.message
    assert "10000 bytes" in err.message and "Content-Length" in err.message
    with make(server.url) as ch:
        assert ch.chat("openclaw-coach", user("hi")).text == "pong"


def test_check_cli_with_a_trickling_model_exits_in_time_with_the_mid_body_diagnosis(trickler):
    t0 = time.monotonic()
    proc = run_check(f"llm.base_url={trickler.url}", "llm.hint_model=fault-trickle", "llm.timeout_s=1",
                     "llm.max_retries=1", **{VAR: "k"})
    elapsed = time.monotonic() - t0
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert "[timeout]" in out and "timed out mid-body after" in out and "llm.timeout_s=1" in out, out
    # 2 attempts of 1 s + backoff + 3 s, and up to 15 s to start Python and import openai on a loaded machine
    assert elapsed < 1.0 * 2 + 3.0 + 15.0, out


# ------------------------------------------------------------------------------- stats add up
def test_breaker_refusals_count_as_failed_calls(server, tmp_path):
    from coach.llm.proposer import LLMProposer
    from coach.proposals import ParameterSchema, ProposalService

    with make(server.url, max_retries=0, breaker_failures=2, breaker_cooldown_s=60) as ch:
        fail(ch, 2)
        with pytest.raises(ChannelError) as ei:
            ch.chat("openclaw-coach", user("hi"))
        assert ei.value.kind == "unavailable"
        stats = ch.stats()
    assert stats["breaker_refused"] == 1 and stats["failed"] == 3 and stats["ok"] == 0
    assert stats["queries"] == stats["ok"] + stats["failed"] == 3
    cfg = ChannelConfig(base_url=server.url, hint_model="fault-500", max_retries=0, breaker_failures=1,
                        breaker_cooldown_s=60, num_answers=3)
    schema = ParameterSchema("quadruped", {"kp": (10.0, 60.0), "gait_freq": (1.0, 3.0)})
    service = ProposalService(LLMProposer(LLMChannel(cfg, "unused"), cfg, schema))
    assert service.submit(0, 0, REQUEST) and service.wait_idle(20)
    stats = service.stats()
    service.close()
    assert stats["calls"] == 3 and stats["calls_failed"] == 3 and stats["calls_ok"] == 0
    assert stats["breaker_refused"] == 2 and stats["circuit_open"] == 2
    assert stats["calls"] == stats["calls_ok"] + stats["calls_failed"]


# ------------------------------------------------------------------------------- records stay small
def test_long_answers_are_capped_in_the_records(server, tmp_path):
    from coach.llm.proposer import LLMProposer
    from coach.llm.completions import LONG_BYTES
    from coach.proposals import ParameterSchema, ProposalService

    cfg = ChannelConfig(base_url=server.url, hint_model="fault-long", num_answers=2)
    schema = ParameterSchema("quadruped", {"kp": (10.0, 60.0), "gait_freq": (1.0, 3.0)})
    records = tmp_path / "records.jsonl"
    service = ProposalService(LLMProposer(LLMChannel(cfg, "unused"), cfg, schema), records_path=records)
    assert service.submit(0, 0, REQUEST) and service.wait_idle(20)
    service.close()
    [line] = [json.loads(x) for x in records.read_text().splitlines()]
    assert records.stat().st_size < 16 * 1024, f"{records.stat().st_size} bytes of records"
    from coach.llm.proposer import RECORD_TEXT_BYTES

    for answer in line["answers"]:
        assert answer["text"].endswith(f"…[truncated, {LONG_BYTES} bytes]")
        assert answer["text_bytes"] == LONG_BYTES and answer["truncated"] is True
        assert len(answer["text"].encode()) <= RECORD_TEXT_BYTES + 64
    assert LLMProposer(None, cfg, schema).load_records(records) == 0  # a truncated answer is not the answer: never replayed
