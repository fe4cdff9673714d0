"""A small OpenAI-compatible chat-completions server on 127.0.0.1.

Integration tests and the loopback demo point litellm at it (``openai/<any>`` with
``api_base=server.url``) so the real HTTP and serialisation path is exercised.
Replies are scripted: a list of reply specs served in order, or a callable that
sees each request. Every request body is kept in ``requests`` for assertions.

A reply spec is either a plain string (assistant text), ``{"tool_calls": [{"name":
..., "arguments": {...}}]}``, ``{"content": ..., "tool_calls": [...]}``, or
``{"status": 500}`` to answer with an HTTP error.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["LoopbackLLMServer", "ReplySpec", "finish_reply"]

ReplySpec = str | dict[str, Any]


def finish_reply(summary: str, outcome: str = "succeeded") -> dict[str, Any]:
    """A reply that ends the task the way every task ends: a ``finish_task`` call."""
    return {"tool_calls": [{"name": "finish_task", "arguments": {"outcome": outcome, "summary": summary}}]}


def _completion(spec: ReplySpec, model: str, index: int) -> dict[str, Any]:
    if isinstance(spec, str):
        spec = {"content": spec}
    tool_calls = [
        {
            "id": call.get("id", f"call_{index}_{n}"),
            "type": "function",
            "function": {
                "name": call["name"],
                "arguments": call["arguments"]
                if isinstance(call.get("arguments"), str)
                else json.dumps(call.get("arguments", {})),
            },
        }
        for n, call in enumerate(spec.get("tool_calls", []))
    ]
    message: dict[str, Any] = {"role": "assistant", "content": spec.get("content")}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return {
        "id": f"chatcmpl-loopback-{index}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {"index": 0, "message": message, "finish_reason": "tool_calls" if tool_calls else "stop"}
        ],
        "usage": {
            "prompt_tokens": int(spec.get("prompt_tokens", 100)),
            "completion_tokens": int(spec.get("completion_tokens", 10)),
            "total_tokens": int(spec.get("prompt_tokens", 100)) + int(spec.get("completion_tokens", 10)),
        },
    }


class LoopbackLLMServer:
    """``with LoopbackLLMServer(replies) as server: ... server.url ...``"""

    def __init__(
        self,
        replies: Iterable[ReplySpec] | Callable[[dict[str, Any]], ReplySpec] = (),
        *,
        delay_s: float = 0.0,
    ) -> None:
        self._script = replies if callable(replies) else list(replies)
        self._lock = threading.Lock()
        self._delay_s = delay_s
        self.requests: list[dict[str, Any]] = []
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="loopback-llm", daemon=True)

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        if isinstance(host, bytes):  # an AF_UNIX-style address type; this server binds AF_INET
            host = host.decode()
        return f"http://{host}:{port}/v1"

    def __enter__(self) -> LoopbackLLMServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def _next_reply(self, body: dict[str, Any]) -> tuple[int, ReplySpec]:
        with self._lock:
            self.requests.append(body)
            index = len(self.requests)
            if callable(self._script):
                return index, self._script(body)
            if not self._script:
                return index, {"status": 500, "error": "loopback script exhausted"}
            return index, self._script.pop(0)

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # quiet test output
                return

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                if self.path.rstrip("/").endswith("/models"):
                    self._send(200, {"object": "list", "data": [{"id": "loopback", "object": "model"}]})
                else:
                    self._send(404, {"error": {"message": "not found"}})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                except json.JSONDecodeError:
                    self._send(400, {"error": {"message": "body is not JSON"}})
                    return
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._send(404, {"error": {"message": f"unknown path {self.path}"}})
                    return
                index, spec = server._next_reply(body)
                if server._delay_s:
                    time.sleep(server._delay_s)
                if isinstance(spec, dict) and "status" in spec:
                    message = spec.get("error", "scripted error")
                    self._send(int(spec["status"]), {"error": {"message": message, "type": "server_error"}})
                    return
                self._send(200, _completion(spec, str(body.get("model", "loopback")), index))

        return Handler
