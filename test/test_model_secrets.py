"""Secrets never leave the model adapter (issue 47, items 5 and 6).

A real OpenAI-compatible server on 127.0.0.1 answers 401 and quotes back what it was
sent: the key, the Authorization header and the URL it was asked on. The error the
adapter raises, the task's events, ``events.jsonl``, the report and the trajectory must
hold none of it.
"""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from harness_ros.errors import LLMError
from harness_ros.events import EventType
from harness_ros.harness import Harness
from harness_ros.model import LiteLLMModel
from harness_ros.model.redact import redact_secrets
from harness_ros.tools import success, tool

KEY = "sk-proj-Zq9xT4wLmN2vB7cR1dF6gH3jK8pQ5sY0"
USER, PASSWORD = "robot", "hunter2-secret-pw"


class EchoingUnauthorized:
    """Answers every request 401 with the key, the Authorization header and the URL it saw."""

    def __init__(self) -> None:
        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length", "0")))
                auth = self.headers.get("Authorization", "")
                message = (
                    f"Incorrect API key provided: {auth.removeprefix('Bearer ')}. "
                    f"Header was Authorization: {auth}; url http://{USER}:{PASSWORD}@{self.headers.get('Host')}"
                    f"{self.path}"
                )
                body = json.dumps({"error": {"message": message, "type": "invalid_request_error"}}).encode()
                self.send_response(401)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server() -> Iterator[EchoingUnauthorized]:
    running = EchoingUnauthorized()
    yield running
    running.close()


def _model(api_base: str) -> LiteLLMModel:
    return LiteLLMModel(
        "openai/echoing",
        api_base=api_base,
        api_key=KEY,
        max_retries=0,
        timeout_s=20,
        sleep=lambda _: None,
        completion_kwargs={"_skip_mcp_handler": True},
    )


BASIC = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
"""What httpx sends for a URL with credentials: ``Authorization: Basic <this>``."""


def _assert_clean(text: str) -> None:
    assert KEY not in text
    assert BASIC not in text
    assert KEY[8:] not in text  # no tail of it either
    assert PASSWORD not in text
    assert f"{USER}:" not in text


@pytest.mark.parametrize("credentials", ["", f"{USER}:{PASSWORD}@"], ids=["key", "key-and-url-credentials"])
def test_a_401_that_echoes_the_key_raises_an_error_without_it(
    server: EchoingUnauthorized, credentials: str
) -> None:
    model = _model(f"http://{credentials}127.0.0.1:{server.port}/v1")
    with pytest.raises(LLMError) as raised:
        model.complete([{"role": "user", "content": "hello"}])
    message = str(raised.value)
    assert "Incorrect API key provided: " in message  # still says what went wrong
    assert "***" in message.split("Incorrect API key provided: ", 1)[1]
    shown = "***@" if credentials else ""
    assert f"api_base 'http://{shown}127.0.0.1:{server.port}/v1'" in message
    _assert_clean(message)
    assert raised.value.__cause__ is None  # no traceback quoting the provider's exception


def test_a_task_whose_model_answers_401_keeps_the_key_out_of_events_and_report(
    server: EchoingUnauthorized, tmp_path: Path
) -> None:
    @tool(description="Look around.")
    def look() -> dict[str, Any]:
        return success()

    model = _model(f"http://{USER}:{PASSWORD}@127.0.0.1:{server.port}/v1")
    harness = Harness(model=model, tools=[look], runs_dir=tmp_path / "runs")
    events = list(harness.run("where is the cup?", task_id="secret"))
    done = events[-1]
    assert done.type is EventType.DONE
    assert done.payload.get("status") == "failed"
    assert "model provider failed" in json.dumps(done.payload.to_data())
    _assert_clean(json.dumps([event.to_dict() for event in events]))
    folder = tmp_path / "runs" / "secret"
    written = sorted(path.name for path in folder.iterdir())
    assert "events.jsonl" in written and "report.md" in written
    for path in folder.iterdir():
        if path.is_file():
            _assert_clean(path.read_text(encoding="utf-8", errors="replace"))


@pytest.mark.parametrize(
    ("text", "hidden"),
    [
        ("Authorization: Bearer abc.def-ghi_123", "abc.def-ghi_123"),
        ("headers {'authorization': 'Basic dXNlcjpwYXNz'}", "dXNlcjpwYXNz"),
        ('{"api_key": "plain-value-42"}', "plain-value-42"),
        ("x-api-key=zzzz9999yyyy", "zzzz9999yyyy"),
        ("key sk-ant-api03-AbCdEfGhIjKlMnOp was refused", "AbCdEfGhIjKlMnOp"),
        ("Google said AIzaSyA1234567890abcdefghijklmnop", "AIzaSyA1234567890abcdefghijklmnop"),
        ("GET https://token123456@example.com/v1 failed", "token123456"),
        ("GET https://me:p%40ss@example.com/v1 failed", "p%40ss"),
    ],
)
def test_redact_secrets_masks_tokens_keys_and_url_credentials(text: str, hidden: str) -> None:
    redacted = redact_secrets(text)
    assert hidden not in redacted
    assert "***" in redacted


def test_redact_secrets_masks_a_given_value_and_keeps_ordinary_text() -> None:
    assert redact_secrets("the key opaque-42-value was wrong", ["opaque-42-value"]) == "the key *** was wrong"
    plain = "Model call failed: connection refused at http://127.0.0.1:8080/v1 (task-list)"
    assert redact_secrets(plain, ["ab", None]) == plain
