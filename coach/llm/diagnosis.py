"""What went wrong with one request of the LLM channel, and what to fix: a failure -> :class:`ChannelError`.

:meth:`Diagnosis.of` picks one case of :data:`CASES` from the exception and how far the request got
(:class:`coach.llm.deadline.Attempt`: connected, headers, body bytes) and fills in its message:

* the body was over the channel's limit (``bad_response``/``too_large``; never retried), or unreadable;
* the deadline (``llm.timeout_s``) struck while connecting, waiting for the headers, or mid-body (``timeout``);
* the connection failed: dropped mid-body or before the headers, refused, cut by a proxy (``proxy``), or
  never opened (``connection``);
* the server answered with an error status: 401/403 (``auth``), 404 for an unknown model (``not_found``,
  listing the models the server has) or for a wrong URL (``bad_url``), 429 (``rate_limit``), 5xx
  (``server``), any other 4xx (``client``).

Every message goes through the channel's ``redact`` (the key never shows); server text is redacted before
it is cut short, so no part of the key survives a cut.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping

import openai

from coach.llm.deadline import Attempt, BodyTooLarge
from coach.llm.errors import ChannelError
from coach.llm.settings import ChannelConfig, is_loopback, safe_url

PROXY_VARS = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy")

# case -> (kind, detail, message); every message may name {url} (credentials stripped), {model}, {tries}
# ("after N attempts") and {key} (which key was sent); the other {fields} come with the case (Diagnosis._case)
CASES: dict[str, tuple[str, str | None, str]] = {
    # the response itself
    "too_large": ("bad_response", "too_large",
                  "the response from {url} for model '{model}' is {size}, over the channel's limit of {limit} bytes "
                  "(MAX_RESPONSE_BYTES; a hint answer is well under 1 KiB); not retried: check that the server "
                  "honours max_tokens (llm.max_tokens={max_tokens}) and that llm.base_url is an OpenAI-compatible API"),
    "unreadable": ("bad_response", None, "unreadable response from {url} for model '{model}': {error}"),
    # the deadline struck
    "timeout_connect": ("timeout", "connect",
                        "timed out connecting to {url} after {took:.1f} s ({setting} s, {tries}); check the host "
                        "name, port and network, or raise llm.timeout_s"),
    "timeout_headers": ("timeout", "headers",
                        "timed out waiting for response headers from {url} for model '{model}' after {took:.1f} s "
                        "({setting} s for the whole request, {tries}); the server is slow or overloaded: raise "
                        "llm.timeout_s or check the server"),
    "timeout_body": ("timeout", "body",
                     "timed out mid-body after {took:.1f} s (the server sent headers, then the body trickled: "
                     "{body_bytes}{of} bytes in {body_s:.1f} s) from {url} for model '{model}' ({setting} s for the "
                     "whole request, {tries}); the server is slow, overloaded or stalling: raise llm.timeout_s or "
                     "check the server"),
    # the connection
    "dropped_mid_body": ("connection", "dropped",
                         "connection dropped mid-body by {url}{via} for model '{model}' after the headers and "
                         "{body_bytes}{of} bytes of the body ({tries}; {retried}); the server (or a proxy/load "
                         "balancer) closed it before the answer was complete: check the server's logs and limits"),
    "proxy": ("proxy", None,
              "cannot connect to {url} ({tries}) while proxy variable(s) {proxies} are set; check the proxy, or add "
              "the host to NO_PROXY / unset them"),
    "refused": ("connection", "refused",
                "connection refused at {url}: is the server running? (start one with `python -m coach.llm.server`, "
                "or set llm.base_url: null for the bundled server)"),
    "dropped": ("connection", "dropped",
                "connection dropped by {url} for model '{model}' before the response headers ({tries}; {retried}): "
                "{reason}; the server closed it without answering: check the server's logs"),
    "cannot_connect": ("connection", None,
                       "cannot connect to {url} ({tries}): {reason}; check the host name, port and network"),
    # the server's error status
    "401": ("auth", None,
            "401 from {url}: {key} was rejected; check it (a server started with a key needs llm.api_key_env)"),
    "403": ("auth", None, "403 from {url}: {key} may not use model '{model}' ({detail}); check its permissions"),
    "404_model": ("not_found", None,
                  "model '{model}' is unknown to {url}; available: {available} (set llm.hint_model / "
                  "llm.judge_model or OPENCLAW_HINT_MODEL)"),
    "404": ("bad_url", None,
            "404 from {url}/chat/completions ({detail}): no chat endpoint there; llm.base_url must be the "
            "OpenAI-compatible API root, usually ending in /v1"),
    "429": ("rate_limit", None,
            "429 from {url} for model '{model}' ({tries}): rate limited ({detail}); lower llm.max_concurrency, raise "
            "llm.backoff_s / llm.max_retries, or check your quota"),
    "5xx": ("server", None, "{status} from {url} for model '{model}' ({tries}): server error ({detail}); check the "
            "server"),
    "4xx": ("client", None, "{status} from {url} for model '{model}': {detail}; the request was rejected (not "
            "retried): check the request parameters"),
    # anything else the openai client raises
    "other": ("client", None, "{error}"),
}


def _chain_text(exc: BaseException) -> str:
    """Messages of ``exc`` and its causes/contexts, lower-cased."""
    seen: list[str] = []
    cur: BaseException | None = exc
    while cur is not None and len(seen) < 10:
        seen.append(f"{type(cur).__name__}: {cur}")
        cur = cur.__cause__ or cur.__context__
    return " | ".join(seen).lower()


def _of_bytes(attempt: Attempt) -> str:
    """`` of N`` when the response declared its length N, else ''."""
    return f" of {attempt.declared_bytes}" if attempt.declared_bytes is not None else ""


def _available(list_models: Callable[[], list[str]]) -> str:
    """Comma-separated model list from /models, or why it could not be listed."""
    try:
        models = list_models()
    except ChannelError as err:
        return f"<could not list /models: {err.kind}>"
    return ", ".join(models) if models else "<none listed>"


class Diagnosis:
    """The what-to-fix diagnosis of one channel's failed requests.

    ``base_url``: the channel's validated API root; ``redact``: the channel's key redaction.
    """

    def __init__(self, cfg: ChannelConfig, base_url: str, redact: Callable[[str], str]) -> None:
        self.cfg = cfg
        self.base_url = base_url
        self.redact = redact

    def of(self, exc: Exception, attempt: Attempt, model: str, attempts: int,
           list_models: Callable[[], list[str]], limit_s: float | None = None) -> ChannelError:
        """The ChannelError for one failed request: ``attempt`` is its progress, ``attempts`` how many were made,
        ``list_models`` the channel's ``/models`` list (asked only to name the models when one is unknown),
        ``limit_s`` the request's deadline, s (default ``llm.timeout_s``)."""
        case, fields = self._case(exc, attempt, self.cfg.timeout_s if limit_s is None else limit_s)
        kind, detail, message = CASES[case]
        if case == "404_model":
            fields["available"] = _available(list_models)
        var = self.cfg.api_key_env
        message = message.format(url=safe_url(self.base_url), model=model,
                                 tries=f"after {attempts} attempt{'s' if attempts != 1 else ''}",
                                 key="no key (llm.api_key_env=null)" if var is None else f"the key in ${var}",
                                 **fields)
        return ChannelError(kind, self.redact(message), status=fields.get("status"), detail=detail)

    def _case(self, exc: Exception, attempt: Attempt, limit_s: float) -> tuple[str, dict]:
        """Which case of :data:`CASES` ``exc`` is, and the fields its message names."""
        too_large = attempt.too_large
        if too_large is None and isinstance(exc, BodyTooLarge):
            too_large = exc
        if too_large is not None:
            size = (f"{too_large.size} bytes (its Content-Length; not read)" if too_large.declared
                    else f"more than {too_large.limit} bytes (reading stopped after {too_large.size})")
            return "too_large", {"size": size, "limit": too_large.limit, "max_tokens": self.cfg.max_tokens}
        error = {"error": f"{type(exc).__name__}: {str(exc)[:200]}"}
        if not isinstance(exc, openai.OpenAIError):
            return "unreadable", error
        if isinstance(exc, openai.APITimeoutError):  # an APIConnectionError too: first
            return self._timeout(attempt, limit_s)
        if isinstance(exc, openai.APIConnectionError):
            return self._connection(exc, attempt)
        if isinstance(exc, openai.APIStatusError):
            return self._status(exc)
        return "other", error

    def _timeout(self, attempt: Attempt, limit_s: float) -> tuple[str, dict]:
        """Where the deadline struck: connecting, waiting for the headers, or mid-body."""
        setting = f"llm.timeout_s={self.cfg.timeout_s:g}"
        if limit_s != self.cfg.timeout_s:
            setting += f", at most {limit_s:g} s for the models list"
        took = attempt.elapsed()
        fields = {"setting": setting, "took": took}
        if attempt.phase == "body":
            assert attempt.headers_at is not None
            return "timeout_body", {**fields, "body_bytes": attempt.body_bytes, "of": _of_bytes(attempt),
                                    "body_s": attempt.started + took - attempt.headers_at}
        return f"timeout_{attempt.phase}", fields

    def _connection(self, exc: openai.APIConnectionError, attempt: Attempt) -> tuple[str, dict]:
        """A failed connection: dropped mid-body, refused behind a proxy, refused, dropped, never opened."""
        chain = _chain_text(exc)
        proxies = [] if is_loopback(self.base_url) else [v for v in PROXY_VARS if os.environ.get(v)]
        retried = (f"retried up to llm.max_retries={self.cfg.max_retries} times, each within "
                   f"llm.timeout_s={self.cfg.timeout_s:g} s")
        if attempt.headers_at is not None:
            via = f" (or the proxy named by {', '.join(proxies)})" if proxies else ""
            return "dropped_mid_body", {"via": via, "body_bytes": attempt.body_bytes, "of": _of_bytes(attempt),
                                        "retried": retried}
        if proxies:
            return "proxy", {"proxies": ", ".join(proxies)}
        if "refused" in chain:
            return "refused", {}
        reason = self.redact(chain.split(" | ")[-1])[:160]
        return ("dropped" if attempt.connected else "cannot_connect"), {"reason": reason, "retried": retried}

    def _status(self, exc: openai.APIStatusError) -> tuple[str, dict]:
        """The server's error status, with its message (``detail``, redacted and cut short)."""
        status = exc.status_code
        body = exc.body
        message = body.get("message") if isinstance(body, Mapping) else body
        detail = self.redact(" ".join(str(message if message else exc.message).split()))[:200]
        fields = {"status": status, "detail": detail}
        if status == 404:
            low = detail.lower()
            unknown_model = exc.code == "model_not_found" or (
                "model" in low and any(w in low for w in ("not found", "does not exist", "unknown")))
            return ("404_model" if unknown_model else "404"), fields
        if status in (401, 403, 429):
            return str(status), fields
        return ("5xx" if status >= 500 else "4xx"), fields
