"""A misbehaving OpenAI-compatible model server for fault tests (runs in the test process).

``FaultyModelServer`` listens on one fixed 127.0.0.1 port for its whole life, so a
node configured with its URL can be pointed at it once and the test switches its
behaviour between tasks:

- ``down()`` / ``up()``: close the listening socket (connection refused), reopen it;
- ``script(purpose, replies)``: replies for requests whose system message starts with
  ``# harness_ros: <purpose>`` (decide, consolidate, summarize...), served in order,
  the last one repeated. A reply is a loopback reply spec (text, ``{"tool_calls": ...}``,
  ``{"status": 500}``), or ``{"garbage": "text"}`` (HTTP 200 with a non-JSON body),
  or any of those with ``"delay_s"`` (answer late).

Every request is kept in ``requests`` as ``(purpose, body)``.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from harness_ros.testing.loopback_llm import _completion

__all__ = ["FaultyModelServer"]


def purpose_of(body: dict[str, Any]) -> str:
    messages = body.get("messages") or [{}]
    content = messages[0].get("content") or ""
    if isinstance(content, list):
        content = " ".join(str(part.get("text", "")) for part in content)
    first = str(content).splitlines()[0] if content else ""
    return first.removeprefix("# harness_ros: ").strip() if first.startswith("# harness_ros: ") else "unknown"


class FaultyModelServer:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._scripts: dict[str, list[Any]] = {}
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self._httpd: ThreadingHTTPServer | None = None
        self.port = 0
        self.up()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def up(self) -> None:
        """Listen again on the same port (allow_reuse_address is set by the server class)."""
        self._httpd = ThreadingHTTPServer(("127.0.0.1", self.port), self._handler())
        self.port = self._httpd.server_address[1]
        threading.Thread(target=self._httpd.serve_forever, name="faulty-model", daemon=True).start()

    def down(self) -> None:
        """Stop listening: the next connection is refused."""
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    close = down

    def script(self, purpose: str, replies: list[Any]) -> None:
        with self._lock:
            self._scripts[purpose] = list(replies)

    def count(self, purpose: str) -> int:
        with self._lock:
            return sum(1 for seen, _ in self.requests if seen == purpose)

    def _next(self, body: dict[str, Any]) -> Any:
        purpose = purpose_of(body)
        with self._lock:
            self.requests.append((purpose, body))
            script = self._scripts.get(purpose)
            if not script:
                return {"status": 500, "error": f"no reply scripted for {purpose!r}"}
            return script.pop(0) if len(script) > 1 else script[0]

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                return

            def _send(self, status: int, data: bytes, content_type: str = "application/json") -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                spec = server._next(body)
                if isinstance(spec, dict) and spec.get("delay_s"):
                    time.sleep(float(spec["delay_s"]))  # a slow model, server side
                    spec = {k: v for k, v in spec.items() if k != "delay_s"} or "late"
                try:
                    if isinstance(spec, dict) and "garbage" in spec:
                        self._send(200, str(spec["garbage"]).encode(), "application/json")
                    elif isinstance(spec, dict) and "status" in spec:
                        error = {
                            "error": {"message": spec.get("error", "scripted error"), "type": "server_error"}
                        }
                        self._send(int(spec["status"]), json.dumps(error).encode())
                    else:
                        self._send(200, json.dumps(_completion(spec, str(body.get("model")), 1)).encode())
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout): nothing to answer

        return Handler
