"""The console's API rules, through Starlette's TestClient (the real app, a recording backend).

No token, a wrong token, a token in the query string or in a cookie alone: 401 on every
read and write path. An approval whose hash is not the pending request's is refused and
never reaches the node. The shell page carries no data and forbids inline script.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from starlette.testclient import TestClient

from harness_ros.cli import main
from harness_ros.console import ConsoleState, approval_hash
from harness_ros.console.app import CONTENT_SECURITY_POLICY, build_app

TOKEN = "s3cret-token-for-tests"
HOSTILE = "<img src=x onerror=alert(1)><script>document.title='pwned'</script>"

READS = ["/api/state", "/api/stream", "/api/view/front"]
WRITES = [
    ("/api/instruction", {"text": "go"}),
    ("/api/revise", {"task_id": "t1", "text": "faster"}),
    ("/api/cancel", {"task_id": "t1"}),
    ("/api/approval", {"request_id": "r1", "hash": "x", "approved": True}),
    ("/api/answer", {"question_id": "q1", "text": "yes"}),
]


class Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[Any, ...]]] = []

    def send_instruction(self, text: str) -> str:
        self.calls.append(("instruction", (text,)))
        return "task-new"

    def revise(self, task_id: str, text: str) -> None:
        self.calls.append(("revise", (task_id, text)))

    def cancel(self, task_id: str, reason: str) -> None:
        self.calls.append(("cancel", (task_id,)))

    def decide(self, request_id: str, approved: bool) -> None:
        self.calls.append(("decide", (request_id, approved)))

    def answer(self, question_id: str, text: str) -> None:
        self.calls.append(("answer", (question_id, text)))


@pytest.fixture
def console() -> tuple[TestClient, ConsoleState, Recorder]:
    state = ConsoleState("/harness")
    state.add_event({"type": "task_started", "task_id": "t1", "time": 1.0, "data": {"instruction": HOSTILE}})
    state.set_approval(
        {"request_id": "r1", "tool": "pick", "arguments": {"object": "cup"}, "status": "pending"}
    )
    state.set_question({"question_id": "q1", "question": HOSTILE, "status": "pending", "task_id": "t1"})
    state.set_view("front", b"\xff\xd8jpeg", 5.0)
    backend = Recorder()
    return TestClient(build_app(state, backend, TOKEN)), state, backend


def _auth(**extra: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {TOKEN}", **extra}


def _request(client: TestClient, path: str, body: dict[str, Any] | None, **kwargs: Any) -> Any:
    if body is None:
        if path == "/api/stream":  # a good token would stream forever: only refusals are read whole
            with client.stream("GET", path, **kwargs) as reply:
                return reply
        return client.get(path, **kwargs)
    return client.post(path, json=body, **kwargs)


ALL = [(path, None) for path in READS] + WRITES


@pytest.mark.parametrize(("path", "body"), ALL)
def test_every_path_needs_the_token(console: Any, path: str, body: Any) -> None:
    client, _, backend = console
    assert _request(client, path, body).status_code == 401
    assert _request(client, path, body, headers={"Authorization": "Bearer wrong"}).status_code == 401
    assert _request(client, path, body, headers={"X-Harness-Token": TOKEN[:-1]}).status_code == 401
    assert backend.calls == []


@pytest.mark.parametrize(("path", "body"), ALL)
def test_a_token_in_the_query_string_is_refused(console: Any, path: str, body: Any) -> None:
    client, _, backend = console
    for query in (f"?token={TOKEN}", f"?access_token={TOKEN}"):
        assert _request(client, path + query, body).status_code == 401
        # even next to a good header: the URL would carry the secret into logs and history
        assert _request(client, path + query, body, headers=_auth()).status_code == 401
    assert backend.calls == []


@pytest.mark.parametrize(("path", "body"), ALL)
def test_a_cookie_alone_is_refused(console: Any, path: str, body: Any) -> None:
    client, _, backend = console
    client.cookies.set("token", TOKEN)
    client.cookies.set("X-Harness-Token", TOKEN)
    assert _request(client, path, body).status_code == 401
    assert backend.calls == []


def test_reads_with_the_token(console: Any) -> None:
    client, _, _ = console
    snapshot = client.get("/api/state", headers=_auth()).json()
    assert snapshot["tasks"][0]["instruction"] == HOSTILE  # data, passed on as it was written
    assert snapshot["approvals"][0]["hash"] == approval_hash(snapshot["approvals"][0])
    view = client.get("/api/view/front", headers={"X-Harness-Token": TOKEN})
    assert view.status_code == 200
    assert view.headers["content-type"] == "image/jpeg"
    assert view.content == b"\xff\xd8jpeg"


def test_writes_with_the_token_reach_the_backend(console: Any) -> None:
    client, _state, backend = console
    shown = approval_hash({"request_id": "r1", "tool": "pick", "arguments": {"object": "cup"}})
    assert client.post("/api/answer", json={"question_id": "q1", "text": " yes "}, headers=_auth()).json()[
        "ok"
    ]
    assert client.post("/api/cancel", json={"task_id": "t1"}, headers=_auth()).status_code == 200
    body = {"request_id": "r1", "hash": shown, "approved": True}
    assert client.post("/api/approval", json=body, headers=_auth()).status_code == 200
    assert backend.calls == [("answer", ("q1", "yes")), ("cancel", ("t1",)), ("decide", ("r1", True))]
    # a cancel for a task that is not running is refused here, not sent
    assert client.post("/api/cancel", json={"task_id": "other"}, headers=_auth()).status_code == 409
    assert len(backend.calls) == 3


def test_an_approval_of_a_changed_request_is_refused(console: Any) -> None:
    client, state, backend = console
    shown = approval_hash({"request_id": "r1", "tool": "pick", "arguments": {"object": "cup"}})
    # the node published the request again under the same id with other arguments
    state.set_approval(
        {"request_id": "r1", "tool": "pick", "arguments": {"object": "knife"}, "status": "pending"}
    )
    reply = client.post(
        "/api/approval", json={"request_id": "r1", "hash": shown, "approved": True}, headers=_auth()
    )
    assert reply.status_code == 409
    assert "not the request you were shown" in reply.json()["error"]
    # a request that is no longer pending is refused too, even with its current hash
    current = approval_hash({"request_id": "r1", "tool": "pick", "arguments": {"object": "knife"}})
    state.set_approval(
        {"request_id": "r1", "tool": "pick", "arguments": {"object": "knife"}, "status": "expired"}
    )
    reply = client.post(
        "/api/approval", json={"request_id": "r1", "hash": current, "approved": True}, headers=_auth()
    )
    assert reply.status_code == 409
    assert backend.calls == []


def test_the_shell_page_has_no_data_and_no_inline_script(console: Any) -> None:
    client, _, _ = console
    page = client.get("/")
    assert page.status_code == 200
    assert page.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
    assert "script-src 'self'" in CONTENT_SECURITY_POLICY
    assert "unsafe-inline" not in CONTENT_SECURITY_POLICY
    assert HOSTILE not in page.text and "t1" not in page.text
    assert '<script src="/static/console.js"' in page.text
    assert "<script>" not in page.text
    script = client.get("/static/console.js")
    assert script.status_code == 200 and "textContent" in script.text
    assert "innerHTML" not in script.text  # node text reaches the DOM as text only
    assert client.get("/static/../app.py").status_code == 404


def test_the_stream_starts_with_the_snapshot(console: Any) -> None:
    client, _state, _ = console
    with client.stream("GET", "/api/stream", headers=_auth()) as reply:
        assert reply.status_code == 200
        assert reply.headers["content-type"].startswith("text/event-stream")
        lines = reply.iter_lines()
        first = next(line for line in lines if line.startswith("data: "))
        snapshot = json.loads(first[len("data: ") :])
        assert snapshot["kind"] == "snapshot"
        assert snapshot["current_task"] == "t1"


def test_a_non_loopback_host_needs_expose(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["console", "--host", "0.0.0.0", "--port", "0"]) == 2
    assert "--expose" in capsys.readouterr().err
