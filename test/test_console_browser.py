"""``harness-ros console`` in headless Chromium, against a real harness node over DDS.

Processes on this test's ROS domain: a camera/depth/scan publisher, a test action server,
the harness node (model: the loopback OpenAI-compatible server in this process) and
``harness-ros console``. Chromium (Debian's package, scripts/ensure_chromium.sh) is driven
over the DevTools protocol on its debugging pipe (support/devtools.py). The page:

- without the token reads nothing (every API answer 401, a token in the query string too);
- shows the first decision's images (``~/model_view/<view>/compressed``) and the model's hostile
  text as text;
- a tampered approval hash is refused; the Approve button lets the tool run;
- the Cancel button stops a task waiting on an operator question.

The time from the node publishing a decision (its event's time) to the page rendering it
is measured and printed.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.devtools import Page, chromium, open_page
from support.processes import ServerProcess

from harness_ros.testing.loopback_llm import LoopbackLLMServer, finish_reply

REPO = Path(__file__).resolve().parents[1]
SUPPORT = REPO / "test" / "support"
HARNESS_ROS = str(Path(sys.executable).with_name("harness-ros"))
HOSTILE = "<img src=x onerror=\"document.title='pwned'\"><script>document.title='pwned'</script>"

pytestmark = pytest.mark.ros


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


@pytest.fixture
def stack(tmp_path: Path, ros_env: dict[str, str]) -> Iterator[tuple[str, Path]]:
    """The node, its sensors and action server, and the console; yields (console link, tmp)."""
    if chromium() is None:
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


def _browse(link: str, profile: Path) -> list[float]:
    with open_page(link.split("#", 1)[0], profile) as page:
        return _drive(page, link)


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
