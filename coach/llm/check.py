"""Connectivity check for the LLM channel.

``python -m coach.llm.check [--llm configs/llm/default.yaml] [--base-url URL] [--hint-model M]
[--judge-model M] [llm=NAME] [llm.KEY=VALUE ...]`` loads the ``llm`` config (``llm=NAME`` is
``configs/llm/NAME.yaml``; ``llm.KEY=VALUE`` overrides one key, as on ``train.py``'s command line),
applies the environment overrides, starts the bundled server when ``base_url`` is null, and sends
each configured model (hint and judge) one minimal chat call (each attempt over within ``llm.timeout_s`` s,
however slowly the server answers). An answer that echoes the prompt fails. When the server answered (an
echo too), it then probes once with a made-up model id and warns when the server answers it anyway (it
ignores model names), and says which URL form worked (with or without ``/v1``; when the configured one finds
no chat endpoint, it tries the other and says so). Prints model, answer and latency, or the diagnosis
of what to fix; exits 0 when all succeed, 1 otherwise. :func:`check_channel` does the same from Python;
at training start the adaptive teacher (an LLM proposer) runs :func:`check_models` on the channel it
opened. This module is the one place for the model check.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import uuid
from collections.abc import Mapping
from dataclasses import dataclass

from coach.llm.client import LLMChannel, open_channel
from coach.llm.errors import ChannelError
from coach.llm.settings import DEFAULT_LLM_CONFIG, ChannelConfig, load_config, safe_url

PING = "Reply with the word: pong"


@dataclass
class CheckResult:
    """The outcome for one model."""

    model: str
    ok: bool
    latency_s: float | None
    answer: str
    error_kind: str | None
    message: str


def models_of(cfg: ChannelConfig) -> list[str]:
    """Hint and judge model, deduplicated, in that order."""
    return list(dict.fromkeys([cfg.hint_model, cfg.judge]))


def check_models(channel: LLMChannel, models: list[str]) -> list[CheckResult]:
    """One minimal chat call per model on an open ``channel``; never raises ChannelError.

    An answer that repeats the prompt is an echo, not an answer: that model fails the check.
    """
    results: list[CheckResult] = []
    for model in models:
        try:
            res = channel.chat(model, [{"role": "user", "content": PING}], n_tokens=16, temperature=0.0)
        except ChannelError as err:
            results.append(CheckResult(model, False, None, "", err.kind, channel.redact(err.message)))
            continue
        answer = channel.redact(res.text.strip())
        if PING.lower() in answer.lower():
            results.append(CheckResult(model, False, res.latency_s, answer, "bad_response", (
                f"model '{model}' echoed the prompt instead of answering it (a base model without a chat template, "
                "or a server that returns the prompt); use an instruction-tuned model or a server that applies "
                "its chat template")))
            continue
        results.append(CheckResult(model, True, res.latency_s, answer, None, "ok"))
    return results


def ignores_model_names(channel: LLMChannel) -> str | None:
    """Probe once with a model id no server has: a warning when it answers anyway (else None).

    llama.cpp's server answers any name with the one model it loaded, so a typo in llm.hint_model
    would go unnoticed.
    """
    bogus = f"openclaw-no-such-model-{uuid.uuid4().hex[:8]}"
    try:
        channel.chat(bogus, [{"role": "user", "content": PING}], n_tokens=1, temperature=0.0)
    except ChannelError:
        return None
    return (f"the server at {safe_url(channel.base_url)} answered the made-up model id '{bogus}': it ignores model "
            "names (llama.cpp does), so llm.hint_model / llm.judge_model are not checked; make sure it serves the "
            "model you mean")


def check_channel(cfg: ChannelConfig, environ: Mapping[str, str] = os.environ,
                  notes: list[str] | None = None) -> list[CheckResult]:
    """One minimal chat call per configured model; never raises ChannelError.

    With a ``notes`` list, also probes whether the server ignores model names and which URL form
    works (module docstring), appending what it finds.
    """
    results = _check_once(cfg, environ, notes)
    if notes is None or cfg.base_url is None:
        return results
    url = cfg.base_url.rstrip("/")
    if all(r.error_kind == "bad_url" for r in results):
        other = url[: -len("/v1")] if url.endswith("/v1") else url + "/v1"
        if all(r.ok for r in _check_once(dataclasses.replace(cfg, base_url=other), environ, None)):
            notes.append(f"{safe_url(url)} has no chat endpoint but {safe_url(other)} answers: set "
                         f"llm.base_url={safe_url(other)}")
    elif any(r.latency_s is not None for r in results):  # an answer came (an echo too): this URL form works
        form = "the /v1 API root" if url.endswith("/v1") else "no /v1 (the server serves the API at its root)"
        notes.append(f"URL form that worked: {safe_url(url)} ({form})")
    return results


def _check_once(cfg: ChannelConfig, environ: Mapping[str, str], notes: list[str] | None) -> list[CheckResult]:
    models = models_of(cfg)
    try:
        channel, server = open_channel(cfg, environ)
    except ChannelError as err:
        return [CheckResult(m, False, None, "", err.kind, err.message) for m in models]
    try:
        results = check_models(channel, models)
        if notes is not None and any(r.latency_s is not None for r in results):  # the server answered
            warning = ignores_model_names(channel)
            if warning is not None:
                notes.append(f"warning: {warning}")
        return results
    finally:
        channel.close()
        if server is not None:
            server.close()


def main(argv: list[str] | None = None) -> int:
    """CLI entry point; returns the exit status."""
    parser = argparse.ArgumentParser(prog="python -m coach.llm.check",
                                     description="Check the LLM channel (one call per model).")
    parser.add_argument("--llm", default=None,
                        help=f"llm config YAML (default {DEFAULT_LLM_CONFIG})")
    parser.add_argument("--base-url", default=None)
    parser.add_argument("--hint-model", default=None)
    parser.add_argument("--judge-model", default=None)
    parser.add_argument("overrides", nargs="*", metavar="llm.KEY=VALUE",
                        help="train.py-style overrides: llm=NAME (configs/llm/NAME.yaml), llm.KEY=VALUE")
    args = parser.parse_args(argv)
    try:
        cfg = load_config(args.llm, args.overrides).with_env_overrides(os.environ)
        changes = {k: v for k, v in (("base_url", args.base_url), ("hint_model", args.hint_model),
                                     ("judge_model", args.judge_model)) if v}
        cfg = dataclasses.replace(cfg, **changes)
    except (OSError, ValueError) as err:
        print(f"llm config error: {err}", file=sys.stderr)
        return 1
    where = "bundled local server" if cfg.base_url is None else safe_url(cfg.base_url)
    key_note = ("not needed" if cfg.base_url is None else
                "none, llm.api_key_env=null" if cfg.api_key_env is None else f"${cfg.api_key_env}")
    print(f"LLM channel: {where} (key: {key_note}, timeout {cfg.timeout_s:g} s per request)")
    notes: list[str] = []
    results = check_channel(cfg, os.environ, notes)
    for r in results:
        if r.ok:
            answer = r.answer if len(r.answer) <= 60 else r.answer[:57] + "..."
            print(f"  ok    {r.model:<24} {1000 * (r.latency_s or 0.0):8.1f} ms  {answer!r}")
        else:
            print(f"  FAIL  {r.model:<24} [{r.error_kind}] {r.message}")
    for note in notes:
        print(f"  {note}")
    ok = all(r.ok for r in results)
    print("all models answered" if ok else "LLM channel check FAILED (see above)")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
