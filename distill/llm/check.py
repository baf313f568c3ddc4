"""Connectivity check for the LLM channel.

``python -m distill.llm.check [--llm configs/llm/default.yaml] [--base-url URL] [--hint-model M]
[--judge-model M] [llm=NAME] [llm.KEY=VALUE ...]`` loads the ``llm`` config (``llm=NAME`` is
``configs/llm/NAME.yaml``; ``llm.KEY=VALUE`` overrides one key, as on ``train.py``'s command line),
applies the environment overrides, starts the bundled server when ``base_url`` is null, and sends
each configured model (hint and judge) one minimal chat call (each attempt over within ``llm.timeout_s`` s,
however slowly the server answers). An answer that echoes the prompt fails.
When the server answered (an echo too), it then probes once with a made-up model id and warns when the server answers it anyway (it ignores
model names), and says which URL form worked (with or without ``/v1``; when the configured one finds
no chat endpoint, it tries the other and says so). Prints model, answer and latency, or the diagnosis
of what to fix; exits 0 when all succeed, 1 otherwise. :func:`check_channel` does the same for use
at training start.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from collections.abc import Mapping
from pathlib import Path

from distill.llm.channel import (ChannelConfig, ChannelError, CheckResult, check_models, ignores_model_names,
                                 models_of, open_channel, safe_url)

DEFAULT_LLM_CONFIG = Path(__file__).resolve().parents[2] / "configs" / "llm" / "default.yaml"


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


def load_config(path: str | os.PathLike[str] | None, overrides: list[str] = ()) -> ChannelConfig:
    """Read an ``llm`` config YAML (OmegaConf) and ``train.py``-style overrides into a validated ChannelConfig.

    ``overrides``: ``llm=NAME`` (use ``configs/llm/NAME.yaml``) and ``llm.KEY=VALUE`` items.
    """
    from omegaconf import OmegaConf

    dotlist = []
    for item in overrides:
        key, eq, value = item.partition("=")
        if key == "llm" and eq:
            path = DEFAULT_LLM_CONFIG.with_name(f"{value}.yaml")
            if not path.is_file():
                names = sorted(p.stem for p in DEFAULT_LLM_CONFIG.parent.glob("*.yaml"))
                raise ValueError(f"llm={value}: no {path}; choose one of: {', '.join(names)}")
        elif key.startswith("llm.") and eq:
            dotlist.append(f"{key[len('llm.'):]}={value}")
        else:
            raise ValueError(f"override {item!r} is not llm=NAME or llm.KEY=VALUE (e.g. llm.api_key_env=MY_KEY)")
    file = Path(path) if path else DEFAULT_LLM_CONFIG
    repo_root = DEFAULT_LLM_CONFIG.parents[2]
    if not file.exists() and not file.is_absolute() and (repo_root / file).exists():
        file = repo_root / file  # a repo-relative path given from another directory
    merged = OmegaConf.merge(OmegaConf.load(file), OmegaConf.from_dotlist(dotlist))
    data = OmegaConf.to_container(merged, resolve=True)
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
