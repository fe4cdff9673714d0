"""``harness-ros console`` in headless Chromium, against a real harness node over DDS.

Processes on this test's ROS domain: a camera/depth/scan publisher, a test action server,
the harness node (model: the loopback OpenAI-compatible server in this process) and
``harness-ros console``. Chromium (Debian's package, scripts/ensure_chromium.sh) is driven
over the DevTools protocol on its debugging pipe (no driver package needed). The page:

- without the token reads nothing (every API answer 401, a token in the query string too);
- shows the first decision's images (``~/model_view/<view>``) and the model's hostile
  text as text;
- a tampered approval hash is refused; the Approve button lets the tool run;
- the Cancel button stops a task waiting on an operator question.

The time from the node publishing a decision (its event's time) to the page rendering it
is measured and printed.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import select
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.processes import ServerProcess

from harness_ros.testing.loopback_llm import LoopbackLLMServer, finish_reply

REPO = Path(__file__).resolve().parents[1]
SUPPORT = REPO / "test" / "support"
HARNESS_ROS = str(Path(sys.executable).with_name("harness-ros"))
HOSTILE = "<img src=x onerror=\"document.title='pwned'\"><script>document.title='pwned'</script>"
WAIT_S = 60.0

pytestmark = pytest.mark.ros


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def _purpose(body: dict[str, Any]) -> str:
    first = str(body["messages"][0].get("content", "")).splitlines()[0]
    return first.removeprefix("# harness_ros:").strip()


def _policy(body: dict[str, Any]) -> Any:
    kind = _purpose(body)
    if kind == "consolidate":
        return json.dumps({"memory_entries": [], "tool_experience_entries": []})
    if kind == "summarize":
        return json.dumps({"summary": "nothing yet"})
    text = json.dumps(body["messages"])
    if any(message.get("role") == "tool" for message in body["messages"]):
        return finish_reply("done")
    if "ask the operator" in text:
        return {"tool_calls": [{"name": "ask_operator", "arguments": {"question": HOSTILE}}]}
    return {"content": HOSTILE, "tool_calls": [{"name": "fibonacci_approved", "arguments": {"order": 5}}]}


def _config(tmp_path: Path, url: str) -> Path:
    fibonacci = {
        "description": "Compute a Fibonacci sequence on the robot's test server.",
        "action": "/fibonacci",
        "type": "test_msgs/action/Fibonacci",
        "physical": False,
        "timeout_s": 10,
        "required_arguments": ["order"],
    }
    config = {
        "embodiment_profile_file": str(REPO / "profiles" / "mobile_manipulator.md"),
        "memory": {"dir": str(tmp_path / "memory")},
        "harness": {"runs_dir": str(tmp_path / "runs"), "max_turns": 6},
        "model": {
            "model": "openai/loopback",
            "api_base": url,
            "api_key_env": "LOOPBACK_TOKEN",
            "timeout_s": 20,
            "max_retries": 0,
            "vision": True,
        },
        "observations": {
            "views": {name: {"topic": f"/cam/{name}/image"} for name in ("front", "torso", "wrist")}
        },
        "tools": [{"name": "fibonacci_approved", **fibonacci, "requires_approval": True}],
        "graph_check_timeout_s": 0,
    }
    path = tmp_path / "harness.yaml"
    path.write_text(json.dumps(config), encoding="utf-8")
    return path


class Page:
    """One Chromium tab over the DevTools protocol, on the pipe Chromium opens with
    ``--remote-debugging-pipe`` (fd 3 in, fd 4 out; NUL-terminated JSON messages)."""

    def __init__(self, to_browser: int, from_browser: int) -> None:
        self._out, self._in = to_browser, from_browser
        self._buffer = b""
        self._id = 0
        self.session: str | None = None

    def _read_message(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            ready, _, _ = select.select([self._in], [], [], max(0.0, deadline - time.monotonic()))
            assert ready, "Chromium did not answer in time"
            chunk = os.read(self._in, 1 << 20)
            assert chunk, "Chromium closed its DevTools pipe"
            self._buffer += chunk
        message, _, self._buffer = self._buffer.partition(b"\0")
        return dict(json.loads(message))

    def send(
        self, method: str, params: dict[str, Any] | None = None, *, browser: bool = False
    ) -> dict[str, Any]:
        self._id += 1
        ident = self._id
        request: dict[str, Any] = {"id": ident, "method": method, "params": params or {}}
        if self.session is not None and not browser:
            request["sessionId"] = self.session
        os.write(self._out, json.dumps(request).encode() + b"\0")
        deadline = time.monotonic() + WAIT_S
        while True:
            message = self._read_message(deadline)
            if message.get("id") == ident:
                assert "error" not in message, message
                return dict(message.get("result") or {})

    def eval(self, expression: str) -> Any:
        result = self.send(
            "Runtime.evaluate", {"expression": expression, "awaitPromise": True, "returnByValue": True}
        )
        assert "exceptionDetails" not in result, result
        return result["result"].get("value")

    def until(self, expression: str, what: str, timeout_s: float = WAIT_S) -> Any:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            value = self.eval(expression)
            if value:
                return value
            time.sleep(0.05)  # polling the page, not waiting for ROS
        text = self.eval("document.body.innerText")
        pytest.fail(f"{what}: not within {timeout_s:g} s; page text:\n{text[-3000:]}")


@pytest.fixture
def stack(tmp_path: Path, ros_env: dict[str, str]) -> Iterator[tuple[str, Path]]:
    """The node, its sensors and action server, and the console; yields (console link, tmp)."""
    if _chromium() is None:
        pytest.skip("Chromium is not installed (scripts/ensure_chromium.sh installs Debian's chromium)")
    env = {**ros_env, "LOOPBACK_TOKEN": "not-a-real-key"}
    started: list[subprocess.Popen[Any]] = []
    server = ServerProcess("succeed", env)

    def spawn(args: list[str], log: str) -> subprocess.Popen[Any]:
        handle = (tmp_path / log).open("wb")
        proc = subprocess.Popen(args, env=env, stdout=handle, stderr=subprocess.STDOUT, cwd=REPO)
        started.append(proc)
        return proc

    with LoopbackLLMServer(_policy) as llm:
        spawn([sys.executable, str(SUPPORT / "frame_publisher.py")], "frames.log")
        spawn([HARNESS_ROS, "node", "--config", str(_config(tmp_path, llm.url))], "node.log")
        console = subprocess.Popen(
            [HARNESS_ROS, "console", "--port", "0"], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
        )
        started.append(console)
        try:
            assert console.stdout is not None
            line = console.stdout.readline().decode()
            found = re.search(r"(http://127\.0\.0\.1:\d+/#token=\S+)", line)
            assert found, f"no link printed: {line!r}"
            yield found.group(1), tmp_path
        finally:
            for proc in started:
                proc.terminate()
            for proc in started:
                try:
                    proc.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(timeout=5)
            server.stop()


def _above_four(fd: int) -> int:
    high = fcntl.fcntl(fd, fcntl.F_DUPFD, 10)
    os.close(fd)
    return high


def _browse(link: str, profile: Path) -> list[float]:
    chromium = _chromium()
    assert chromium is not None
    to_browser_r, to_browser_w = os.pipe()
    from_browser_r, from_browser_w = os.pipe()
    # The child's ends above fd 4, so that wiring them to 3 and 4 overwrites neither.
    to_browser_r, from_browser_w = (_above_four(fd) for fd in (to_browser_r, from_browser_w))
    command = [
        chromium,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--remote-debugging-pipe",
        f"--user-data-dir={profile}",
        "about:blank",
    ]

    # The shell puts the pipe ends at fds 3 and 4 of the browser, where it expects them.
    wired = ["bash", "-c", f'exec "$0" "$@" 3<&{to_browser_r} 4>&{from_browser_w}', *command]
    browser = subprocess.Popen(
        wired,
        stdout=subprocess.DEVNULL,
        stderr=(profile.parent / "chromium.log").open("wb"),
        pass_fds=(to_browser_r, from_browser_w),
    )
    os.close(to_browser_r)
    os.close(from_browser_w)
    try:
        page = Page(to_browser_w, from_browser_r)
        target = page.send("Target.createTarget", {"url": link.split("#", 1)[0]}, browser=True)
        attached = page.send(
            "Target.attachToTarget", {"targetId": target["targetId"], "flatten": True}, browser=True
        )
        page.session = attached["sessionId"]
        return _drive(page, link)
    finally:
        browser.terminate()
        try:
            browser.wait(timeout=15)
        except subprocess.TimeoutExpired:
            browser.kill()
            browser.wait(timeout=5)
        os.close(to_browser_w)
        os.close(from_browser_r)


def _drive(page: Page, link: str) -> list[float]:
    token = link.split("#token=", 1)[1]
    # ---- without the token: the shell page, and nothing readable or writable
    page.until(
        "document.getElementById('login') !== null && !document.getElementById('login').hidden", "login"
    )
    statuses = page.eval(
        """Promise.all([
          fetch('/api/state').then(r => r.status),
          fetch('/api/stream').then(r => r.status),
          fetch('/api/view/front').then(r => r.status),
          fetch('/api/instruction', {method: 'POST', body: '{"text": "go"}'}).then(r => r.status),
          fetch('/api/cancel', {method: 'POST', body: '{"task_id": "x"}'}).then(r => r.status),
          fetch('/api/state?token=TOKEN').then(r => r.status),
        ])""".replace("TOKEN", token)
    )
    assert statuses == [401] * 6
    assert "task" not in (page.eval("document.getElementById('events').innerText")).lower()

    # ---- with the token (in the fragment: never sent to the server)
    page.send("Page.navigate", {"url": link})
    page.until("document.getElementById('connection').textContent === 'connected'", "connected")
    assert page.eval("location.hash") == ""  # taken out of the address bar
    page.eval(
        "document.getElementById('instruction').value = 'compute the Fibonacci sequence of order 5';"
        "document.getElementById('instruction-form').requestSubmit(); true"
    )
    page.until("document.querySelector('.approval .approve') !== null", "the approval card")
    # the first decision's images, as the model saw them
    page.until(
        "['front','torso','wrist'].every(v => {"
        " const i = document.querySelector(`figure[data-view=${v}] img`);"
        " return i && i.dataset.version && i.naturalWidth > 0; })",
        "the model's three views",
    )
    # the model's hostile text is shown as text: no element, no script ran
    shown = page.eval(
        "Array.from(document.querySelectorAll('#events li[data-type=model_response]'))"
        ".map(l => l.textContent)"
    )
    assert any(HOSTILE in text for text in shown), shown
    assert page.eval("document.querySelectorAll('img[src=x], #events script').length") == 0
    assert "pwned" not in page.eval("document.title")
    # a changed request is refused (the hash the page was shown, tampered with)
    refused = page.eval(
        """(() => { const card = document.querySelector('.approval');
          return fetch('/api/approval', {method: 'POST', headers: {'Authorization': 'Bearer TOKEN',
            'Content-Type': 'application/json'}, body: JSON.stringify({request_id: card.dataset.requestId,
            hash: '0'.repeat(64), approved: true})})
            .then(r => r.json().then(b => [r.status, b.error])); })()""".replace("TOKEN", token)
    )
    assert refused[0] == 409 and "not the request you were shown" in refused[1], refused
    assert page.eval("document.querySelectorAll('#events li[data-type=tool_result]').length") == 0
    # the operator approves in the page: the tool runs and the task completes
    page.eval("document.querySelector('.approval .approve').click(); true")
    page.until("document.querySelector('#events li[data-type=done]') !== null", "the first task's done")
    results = page.eval(
        "Array.from(document.querySelectorAll('#events li[data-type=tool_result]')).map(l => l.textContent)"
    )
    assert any("fibonacci_approved" in text and "denied" not in text.lower() for text in results), results
    assert "completed" in page.eval("document.querySelector('#events li[data-type=done]').textContent")

    # ---- a cancel in the page stops the task (it waits for an answer)
    page.until("document.getElementById('cancel').disabled", "no running task")
    page.eval(
        "document.getElementById('instruction').value = 'ask the operator which cup';"
        "document.getElementById('instruction-form').requestSubmit(); true"
    )
    page.until("document.querySelector('.question') !== null", "the question card")
    question = page.eval("document.querySelector('.question').textContent")
    assert HOSTILE in question
    page.eval("document.getElementById('cancel').click(); true")
    page.until("document.querySelectorAll('#events li[data-type=done]').length === 2", "the cancel's done")
    last = page.eval("Array.from(document.querySelectorAll('#events li[data-type=done]')).pop().textContent")
    assert "cancelled" in last, last
    latencies: list[float] = page.eval("window.harnessConsole.shown.map(s => s.shown - s.published)")
    return latencies


def test_console_in_headless_chromium(stack: tuple[str, Path]) -> None:
    link, tmp_path = stack
    latencies = _browse(link, tmp_path / "chromium")
    assert latencies, "no decision was timed"
    print(
        f"\nconsole: decision published -> on screen: {len(latencies)} decisions, "
        f"max {max(latencies) * 1000:.0f} ms, mean {sum(latencies) / len(latencies) * 1000:.0f} ms"
    )
    assert max(latencies) < 1.0, latencies
