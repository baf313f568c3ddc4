"""Connectivity check for the LLM channel.

``python -m distill.check [--llm configs/llm/default.yaml] [--base-url URL] [--hint-model M]
[--judge-model M]`` loads the ``llm`` config, applies the environment overrides, starts the bundled
server when ``base_url`` is null, and sends each configured model (hint and judge) one minimal chat
call. Prints model, answer and latency, or the diagnosis of what to fix; exits 0 when all succeed,
1 otherwise. :func:`check_channel` does the same for use at training start.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from distill.channel import (ChannelConfig, ChannelError, LLMChannel, resolve_api_key,
                             safe_url, validate_base_url)
from distill.hint_server import HintServer, start_server

PING = "Reply with the word: pong"
DEFAULT_LLM_CONFIG = Path(__file__).resolve().parents[1] / "configs" / "llm" / "default.yaml"


@dataclass
class CheckResult:
    """The outcome for one model."""

    model: str
    ok: bool
    latency_s: float | None
    answer: str
    error_kind: str | None
    message: str


def open_channel(cfg: ChannelConfig, environ: Mapping[str, str] = os.environ
                 ) -> tuple[LLMChannel, HintServer | None]:
    """A channel for ``cfg``; when ``base_url`` is null, also the bundled server it talks to.

    Diagnoses before any request: a bad/doubled base_url (``bad_url``) and, for an explicit
    base_url, a missing key (``key_missing``). The caller closes both (server may be None).
    """
    if cfg.base_url is None:
        server = start_server()
        try:
            key = resolve_api_key(cfg, environ, required=False)
            return LLMChannel(dataclasses.replace(cfg, base_url=server.url), key), server
        except BaseException:
            server.close()
            raise
    validate_base_url(cfg.base_url)
    return LLMChannel(cfg, resolve_api_key(cfg, environ, required=True)), None


def models_of(cfg: ChannelConfig) -> list[str]:
    """Hint and judge model, deduplicated, in that order."""
    return list(dict.fromkeys([cfg.hint_model, cfg.judge]))


def check_channel(cfg: ChannelConfig, environ: Mapping[str, str] = os.environ
                  ) -> list[CheckResult]:
    """One minimal chat call per configured model; never raises ChannelError."""
    models = models_of(cfg)
    try:
        channel, server = open_channel(cfg, environ)
    except ChannelError as err:
        return [CheckResult(m, False, None, "", err.kind, err.message) for m in models]
    try:
        return check_models(channel, models)
    finally:
        channel.close()
        if server is not None:
            server.close()


def check_models(channel: LLMChannel, models: list[str]) -> list[CheckResult]:
    """One minimal chat call per model on an open ``channel``; never raises ChannelError."""
    results: list[CheckResult] = []
    for model in models:
        try:
            res = channel.chat(model, [{"role": "user", "content": PING}], n_tokens=16, temperature=0.0)
        except ChannelError as err:
            results.append(CheckResult(model, False, None, "", err.kind, channel.redact(err.message)))
            continue
        results.append(CheckResult(model, True, res.latency_s, channel.redact(res.text.strip()), None, "ok"))
    return results


def load_config(path: str | os.PathLike[str] | None) -> ChannelConfig:
    """Read an ``llm`` config YAML (OmegaConf) into a validated ChannelConfig."""
    from omegaconf import OmegaConf

    file = Path(path) if path else DEFAULT_LLM_CONFIG
    repo_root = DEFAULT_LLM_CONFIG.parents[2]
    if not file.exists() and not file.is_absolute() and (repo_root / file).exists():
        file = repo_root / file  # a repo-relative path given from another directory
    data = OmegaConf.to_container(OmegaConf.load(file), resolve=True)
    if not isinstance(data, dict):
        raise ValueError(f"{file}: expected a mapping of llm settings")
    return ChannelConfig.from_mapping(data)


def main(argv: list[str] | None = None) -> int:
    """CLI entry point; returns the exit status."""
    parser = argparse.ArgumentParser(prog="python -m distill.check",
                                     description="Check the LLM channel (one call per model).")
    parser.add_argument("--llm", default=None,
                        help=f"llm config YAML (default {DEFAULT_LLM_CONFIG})")
    parser.add_argument("--base-url", default=None)
    parser.add_argument("--hint-model", default=None)
    parser.add_argument("--judge-model", default=None)
    args = parser.parse_args(argv)
    try:
        cfg = load_config(args.llm).with_env_overrides(os.environ)
        changes = {k: v for k, v in (("base_url", args.base_url), ("hint_model", args.hint_model),
                                     ("judge_model", args.judge_model)) if v}
        cfg = dataclasses.replace(cfg, **changes)
    except (OSError, ValueError) as err:
        print(f"llm config error: {err}", file=sys.stderr)
        return 1
    where = "bundled local server" if cfg.base_url is None else safe_url(cfg.base_url)
    key_note = "not needed" if cfg.base_url is None else f"${cfg.api_key_env}"
    print(f"LLM channel: {where} (key: {key_note}, timeout {cfg.timeout_s:g} s)")
    results = check_channel(cfg, os.environ)
    for r in results:
        if r.ok:
            answer = r.answer if len(r.answer) <= 60 else r.answer[:57] + "..."
            print(f"  ok    {r.model:<24} {1000 * (r.latency_s or 0.0):8.1f} ms  {answer!r}")
        else:
            print(f"  FAIL  {r.model:<24} [{r.error_kind}] {r.message}")
    ok = all(r.ok for r in results)
    print("all models answered" if ok else "LLM channel check FAILED (see above)")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
