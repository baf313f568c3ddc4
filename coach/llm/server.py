"""Bundled offline OpenAI-compatible hint server (standard library only): the HTTP side.

Serves on 127.0.0.1 by default:

* ``GET /healthz`` -> ``{"ok": true}``
* ``GET /v1/models`` -> OpenAI list of :data:`coach.llm.completions.MODELS`
* ``POST /v1/chat/completions`` -> OpenAI ``chat.completion``
* ``GET /stats`` -> ``{"total": N, "models": {model: N}, "max_in_flight": K}`` (chat requests)

What each model answers (the coach ``openclaw-coach``, the fault models) is the chat-completion protocol of
:mod:`coach.llm.completions`; this module receives requests, checks the key and sends the answers,
the transport faults included.

Transport faults (``trickle_s``: seconds between two bytes, 1 s by default): ``fault-slow`` waits ``slow_s`` s
before answering; ``fault-trickle`` sends the headers at once, then the body one byte every ``trickle_s`` s;
``fault-slow-headers`` sends the status line and headers one byte every ``trickle_s`` s, then the body;
``fault-drop`` sends the headers and half the body, then closes the connection; ``fault-huge`` answers
:data:`~coach.llm.completions.HUGE_BYTES` bytes of text (no Content-Length: the body ends when the
connection closes); ``fault-long`` answers :data:`~coach.llm.completions.LONG_BYTES` bytes of text (with a
Content-Length). Their answers to a non-JSON message are otherwise the coach's (``pong``). With ``api_key``
set, ``/v1/*`` requires ``Authorization: Bearer <key>``.

Switches (:class:`~coach.llm.completions.ServerQuirks`, CLI flags) make it behave like third-party servers such as
llama.cpp's ``llama-server``: ``response_format=False`` rejects requests that carry a
``response_format`` (400, as servers without structured output do); ``echo=True`` answers every chat
with the last user message (a base model that echoes its prompt); ``any_model=True`` answers any
model id with the coach (llama.cpp ignores the name); ``without_v1=True`` also serves the API at the
root (``/chat/completions``, ``/models``), as llama.cpp does. ``/stats`` counts the requests that
carried a ``response_format``.

CLI: ``python -m coach.llm.server [--host 127.0.0.1] [--port 8765] [--api-key-env VAR]
[--no-response-format] [--echo] [--any-model] [--without-v1]``.
"""

from __future__ import annotations

import argparse
import errno
import hmac
import json
import os
import signal
import socket
import sys
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from coach.llm.completions import MODELS, ChatError, ServerQuirks, checked_request, completion, models_list


class _State:
    """Thread-safe request counters."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.models: Counter[str] = Counter()
        self.total = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self.response_format = 0

    def enter(self, model: str, response_format: bool) -> None:
        with self.lock:
            self.models[model] += 1
            self.response_format += response_format
            self.total += 1
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)

    def leave(self) -> None:
        with self.lock:
            self.in_flight -= 1

    def snapshot(self) -> dict[str, Any]:
        with self.lock:
            return {"total": self.total, "models": dict(self.models), "in_flight": self.in_flight,
                    "max_in_flight": self.max_in_flight, "response_format": self.response_format}


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    request_queue_size = 128
    allow_reuse_address = True

    def __init__(self, addr: tuple[str, int], api_key: str | None, slow_s: float, quirks: ServerQuirks,
                 trickle_s: float = 1.0) -> None:
        if ":" in addr[0]:
            self.address_family = socket.AF_INET6
        super().__init__(addr, _Handler)
        self.api_key = api_key
        self.slow_s = slow_s
        self.trickle_s = trickle_s
        self.quirks = quirks
        self.stopping = threading.Event()
        self.state = _State()


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    server_version = "openclaw-hint/1"
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet server
        pass

    # -- responses
    def _send(self, status: int, body: dict, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(body).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError, OSError):
            pass  # the client gave up (e.g. timed out)

    def _head(self, length: int | None) -> bytes:
        """Status line and headers of a 200 JSON response (no Content-Length when ``length`` is None)."""
        lines = [f"{self.protocol_version} 200 OK", f"Server: {self.version_string()}",
                 f"Date: {self.date_time_string()}", "Content-Type: application/json"]
        if length is not None:
            lines.append(f"Content-Length: {length}")
        else:
            lines.append("Connection: close")
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")

    def _trickle(self, data: bytes) -> bool:
        """Write ``data`` one byte every ``trickle_s`` s; False when the client left or the server stops."""
        for i in range(len(data)):
            if self.server.stopping.wait(self.server.trickle_s):
                return False
            try:
                self.wfile.write(data[i:i + 1])
            except OSError:
                return False
        return True

    def _send_faulty(self, model: str, body: dict) -> None:
        """The 200 answer ``body``, sent the way the transport fault ``model`` sends it (module docstring)."""
        if model not in ("fault-trickle", "fault-slow-headers", "fault-drop", "fault-huge"):
            self._send(200, body)
            return
        data = json.dumps(body).encode()
        self.close_connection = True
        try:
            if model == "fault-trickle":
                self.wfile.write(self._head(len(data)))
                self._trickle(data)
            elif model == "fault-slow-headers":
                if self._trickle(self._head(len(data))):
                    self.wfile.write(data)
            elif model == "fault-drop":
                self.wfile.write(self._head(len(data)) + data[: len(data) // 2])
                self.wfile.flush()
                self.connection.shutdown(socket.SHUT_RDWR)  # mid-body: the client sees the connection end
            elif model == "fault-huge":
                self.wfile.write(self._head(None))
                for start in range(0, len(data), 64 * 1024):
                    if self.server.stopping.is_set():
                        return
                    self.wfile.write(data[start:start + 64 * 1024])
        except OSError:
            pass  # the client gave up

    def _error(self, status: int, message: str, type_: str, code: str | None,
               headers: dict[str, str] | None = None) -> None:
        self._send(status, {"error": {"message": message, "type": type_, "param": None,
                                      "code": code}}, headers)

    def _authorized(self) -> bool:
        key = self.server.api_key
        if key is None:
            return True
        got = self.headers.get("Authorization", "")
        return hmac.compare_digest(got.encode(), f"Bearer {key}".encode())

    def _unauthorized(self) -> None:
        # never echo the key that was sent
        self._error(401, "Incorrect API key provided.", "invalid_request_error", "invalid_api_key")

    def _not_found(self, method: str, path: str) -> None:
        self._error(404, f"Unknown request URL: {method} {path}. Check the base URL (it should "
                    "end in /v1).", "invalid_request_error", "unknown_url")

    # -- routes
    def _path(self) -> str:
        """The request path; with ``without_v1``, the root-level API paths are mapped onto /v1."""
        path = urlsplit(self.path).path.rstrip("/")  # absolute-form targets too (a client that takes this for a proxy)
        if self.server.quirks.without_v1 and path in ("/models", "/chat/completions"):
            return "/v1" + path
        return path

    def do_GET(self) -> None:  # noqa: N802 - http.server naming
        path = self._path()
        if path == "/healthz":
            self._send(200, {"ok": True})
        elif path == "/stats":
            self._send(200, self.server.state.snapshot())
        elif path == "/v1/models":
            if not self._authorized():
                self._unauthorized()
                return
            self._send(200, models_list())
        else:
            self._not_found("GET", path)

    def do_POST(self) -> None:  # noqa: N802 - http.server naming
        path = self._path()
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length > 0 else b""
        if path != "/v1/chat/completions":
            self._not_found("POST", path)
            return
        try:
            req = json.loads(raw or b"null")
        except ValueError:
            req = None
        model = req.get("model") if isinstance(req, dict) else None
        self.server.state.enter(str(model), isinstance(req, dict) and req.get("response_format") is not None)
        try:
            self._chat(req, model)
        finally:
            self.server.state.leave()

    def _chat(self, req: Any, model: Any) -> None:
        if not self._authorized():
            self._unauthorized()
            return
        try:
            request = checked_request(req, model, self.server.quirks)
            if request.model == "fault-slow" and self.server.stopping.wait(self.server.slow_s):
                return  # shutting down: drop the request
            body = completion(request, echo=self.server.quirks.echo)
        except ChatError as err:
            self._error(err.status, err.message, err.type, err.code, err.headers)
            return
        self._send_faulty(request.model, body)


class HintServer:
    """A running :func:`start_server` instance; use as a context manager or call :meth:`close`."""

    def __init__(self, httpd: _Server, thread: threading.Thread) -> None:
        self._httpd = httpd
        self._thread = thread
        host, port = httpd.server_address[:2]
        self.host = str(host)
        self.port = int(port)
        shown = f"[{self.host}]" if ":" in self.host else self.host
        self.url = f"http://{shown}:{self.port}/v1"
        self._closed = False

    def request_counts(self) -> dict[str, Any]:
        """``{"total": N, "models": {...}, "in_flight": k, "max_in_flight": K}``."""
        return self._httpd.state.snapshot()

    def close(self) -> None:
        """Stop serving (slow requests are interrupted) and release the port."""
        if self._closed:
            return
        self._closed = True
        self._httpd.stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5.0)

    def __enter__(self) -> HintServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"HintServer(url={self.url!r})"


def start_server(host: str = "127.0.0.1", port: int = 0, api_key: str | None = None,
                 slow_s: float = 30.0, quirks: ServerQuirks = ServerQuirks(), trickle_s: float = 1.0) -> HintServer:
    """Start the server in a background daemon thread (``port=0`` picks a free port); ``slow_s``: how long
    ``fault-slow`` waits (s), ``trickle_s``: seconds between two bytes of ``fault-trickle`` / ``fault-slow-headers``."""
    httpd = _Server((host, port), api_key, slow_s, quirks, trickle_s)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05},
                              name="openclaw-hint-server", daemon=True)
    thread.start()
    return HintServer(httpd, thread)


def main(argv: list[str] | None = None) -> int:
    """CLI entry point: serve until Ctrl-C (or SIGTERM)."""
    parser = argparse.ArgumentParser(prog="python -m coach.llm.server",
                                     description="Offline OpenAI-compatible hint server.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--api-key-env", default=None, metavar="VAR",
                        help="require the key held in this environment variable (it must be set)")
    parser.add_argument("--no-response-format", action="store_true",
                        help="reject requests with a response_format (400), like servers without structured output")
    parser.add_argument("--echo", action="store_true", help="answer with the prompt (a base model that echoes)")
    parser.add_argument("--any-model", action="store_true", help="answer any model id (llama.cpp ignores it)")
    parser.add_argument("--without-v1", action="store_true", help="also serve the API without /v1 (as llama.cpp)")
    args = parser.parse_args(argv)
    quirks = ServerQuirks(response_format=not args.no_response_format, echo=args.echo, any_model=args.any_model,
                          without_v1=args.without_v1)
    key = os.environ.get(args.api_key_env, "").strip() if args.api_key_env else ""
    if args.api_key_env and not key:
        print(f"error: --api-key-env {args.api_key_env}: that variable is unset or empty, so the server would "
              f"accept every request; export {args.api_key_env}=<key> or drop --api-key-env", file=sys.stderr)
        return 2
    try:
        server = start_server(args.host, args.port, api_key=key or None, quirks=quirks)
    except OSError as err:
        busy = err.errno == errno.EADDRINUSE
        print(f"error: cannot listen on {args.host}:{args.port} ({err.strerror}); "
              + ("another process (perhaps another hint server) holds that port: stop it or pass --port <free port>"
                 if busy else "check --host and --port"), file=sys.stderr)
        return 2
    auth = f"key from ${args.api_key_env} required" if key else "no key required"
    print(f"OpenClaw hint server at {server.url} ({auth}); models: {', '.join(MODELS)}",
          flush=True)
    def _stop(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, _stop)  # a plain `kill` also shuts down cleanly
    try:
        while True:
            time.sleep(1.0)
    except KeyboardInterrupt:
        print("stopping", file=sys.stderr)
    finally:
        server.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
