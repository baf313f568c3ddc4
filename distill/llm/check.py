"""Connectivity check for the LLM channel.

``python -m distill.llm.check [--llm configs/llm/default.yaml] [--base-url URL] [--hint-model M]
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
from pathlib import Path

from distill.llm.channel import ChannelConfig, ChannelError, CheckResult, check_models, models_of, open_channel, safe_url

DEFAULT_LLM_CONFIG = Path(__file__).resolve().parents[1] / "configs" / "llm" / "default.yaml"


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
    parser = argparse.ArgumentParser(prog="python -m distill.llm.check",
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
