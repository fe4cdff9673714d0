"""``harness-ros console`` in headless Chromium against the simulated robot over DDS.

What ``make demo`` runs, as processes on this test's ROS domain: ``harness-ros sim``,
``harness-ros node`` with a copy of config/sim.yaml (the scripted demo policy;
``navigate_to`` needs the operator's approval, 6 s to answer) and ``harness-ros console``.
Chromium is driven over its DevTools pipe (support/devtools.py). In the page:

- the first decision's images (the sim's three cameras, as the model saw them) are shown;
- a request that changed under the operator is refused: the Approve button of a card
  the page showed, clicked after the node re-published that request as expired (its
  task then failed) and the instruction sent again got a second pending request, is
  refused and nothing runs (the scripted policy does not ask again within a task);
- the ``~/model_view/front/compressed`` topic is on the graph (the name RViz's Image
  display reads as image_transport's compressed transport);
- Approve on the current card lets ``navigate_to`` run: the sim drives there;
- Cancel stops the task.

With ``HARNESS_CONSOLE_SCREENSHOT=<file.png>`` the page is saved there once the views
are shown (docs/images/console.png was taken so).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from support.devtools import Page, chromium, open_page
from support.waiting import wait_for

pytest.importorskip("harness_sim_msgs", reason="build it first: scripts/build_interfaces.sh .venv")

from harness_ros_sim.ros.children import node_command, sim_command

pytestmark = [pytest.mark.ros, pytest.mark.timeout(300)]

REPO = Path(__file__).resolve().parents[1]
HARNESS_ROS = str(Path(sys.executable).with_name("harness-ros"))
FETCH = "Fetch the red cup from the kitchen table and put it on the coffee table."
APPROVAL_TIMEOUT_S = 6.0
WAIT_S = 90.0


def _config(tmp_path: Path) -> Path:
    """config/sim.yaml with navigate_to under the operator's approval."""
    source = REPO / "config" / "sim.yaml"
    config: dict[str, Any] = yaml.safe_load(source.read_text(encoding="utf-8"))
    config["embodiment_profile_file"] = str((source.parent / config["embodiment_profile_file"]).resolve())
    config["skills"]["dir"] = str((source.parent / config["skills"]["dir"]).resolve())
    config["safety"]["approval_timeout_s"] = APPROVAL_TIMEOUT_S
    (navigate,) = [tool for tool in config["tools"] if tool["name"] == "navigate_to"]
    navigate["requires_approval"] = True
    path = tmp_path / "sim_approval.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


@pytest.fixture
def console_on_sim(tmp_path: Path, ros_env: dict[str, str]) -> Iterator[tuple[str, Path]]:
    if chromium() is None:
        pytest.skip("Chromium is not installed (scripts/ensure_chromium.sh installs Debian's chromium)")
    env = {key: value for key, value in ros_env.items() if key != "HARNESS_MODEL"}
    node = node_command(_config(tmp_path), memory=tmp_path / "memory", runs=tmp_path / "runs")
    started: list[subprocess.Popen[Any]] = []
    try:
        for name, command in (("sim", sim_command(4.0)), ("node", node)):
            with (tmp_path / f"{name}.log").open("wb") as log:
                started.append(subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT))
        console = subprocess.Popen(
            [HARNESS_ROS, "console", "--port", "0"], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
        )
        started.append(console)
        assert console.stdout is not None
        line = console.stdout.readline().decode()
        found = re.search(r"(http://127\.0\.0\.1:\d+/#token=\S+)", line)
        assert found, f"no link printed: {line!r}"
        yield found.group(1), tmp_path
    finally:
        for process in reversed(started):
            process.terminate()
        for process in reversed(started):
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=5)


def ros_context_node(context: Any) -> Any:
    import rclpy

    return rclpy.create_node("console_sim_probe", context=context)


def _events(page: Page, kind: str) -> list[str]:
    return list(
        page.eval(
            f"Array.from(document.querySelectorAll('#events li[data-type={kind}]')).map(l => l.textContent)"
        )
    )


def _logs(tmp_path: Path) -> str:
    return "\n".join(
        f"--- {name}.log\n" + (tmp_path / f"{name}.log").read_text(errors="replace")[-3000:]
        for name in ("sim", "node")
    )


def test_the_viewer_configs_name_the_model_view_topics() -> None:
    """RViz's Image display takes a topic ending in /compressed as image_transport's
    compressed transport of its base topic; the shipped configs name what the node publishes."""
    from harness_ros.ros.model_view import model_view_topic

    topics = {"/harness" + model_view_topic(view).removeprefix("~") for view in ("front", "torso", "wrist")}
    assert all(topic.endswith("/compressed") for topic in topics), topics
    rviz = yaml.safe_load((REPO / "config" / "harness.rviz").read_text(encoding="utf-8"))
    shown = {d["Topic"]["Value"] for d in rviz["Visualization Manager"]["Displays"] if "Topic" in d}
    assert topics <= shown, shown
    layout = (REPO / "config" / "foxglove_layout.json").read_text(encoding="utf-8")
    assert all(f'"imageTopic": "{topic}"' in layout for topic in topics), layout


def test_console_drives_the_sim(console_on_sim: tuple[str, Path], ros_context: Any) -> None:
    link, tmp_path = console_on_sim
    started = time.monotonic()
    with open_page(link, tmp_path / "chromium") as page:
        page.until("document.getElementById('connection')?.textContent === 'connected'", "connected", WAIT_S)
        page.eval(
            f"document.getElementById('instruction').value = {FETCH!r};"
            "document.getElementById('instruction-form').requestSubmit(); true"
        )
        # The first decision: its card, and the three views the model was shown.
        first = page.until(
            "(() => { const c = document.querySelector('.approval'); return c && c.dataset.requestId; })()",
            "the first approval card",
            WAIT_S,
        )
        page.until(
            "['front','torso','wrist'].every(v => {"
            " const i = document.querySelector(`figure[data-view=${v}] img`);"
            " return i && i.dataset.version && i.naturalWidth > 0; })",
            "the model's three views",
        )
        # On the topic name RViz's Image display reads as image_transport's compressed transport.
        probe = ros_context_node(ros_context)
        try:
            assert wait_for(lambda: probe.count_publishers("/harness/model_view/front/compressed") == 1, 20)
        finally:
            probe.destroy_node()
        shot = os.environ.get("HARNESS_CONSOLE_SCREENSHOT")
        if shot:
            page.screenshot(tmp_path / "console.png")
            shutil.copyfile(tmp_path / "console.png", shot)
        assert "navigate_to" in page.eval("document.querySelector('.approval').textContent")

        # The operator looks at the card, and the request changes under them: the node lets
        # it expire (the task ends), the instruction is sent again and the node asks again
        # (a second pending request). The button they were shown is refused; nothing runs.
        page.eval("window.shownApprove = document.querySelector('.approval .approve'); true")
        page.until(
            "document.querySelector('#events li[data-type=done]') !== null",
            "the first task's end after its approval expired",
            APPROVAL_TIMEOUT_S + WAIT_S,
        )
        page.until("document.getElementById('cancel').disabled", "no running task")
        page.eval(
            f"document.getElementById('instruction').value = {FETCH!r};"
            "document.getElementById('instruction-form').requestSubmit(); true"
        )
        second = page.until(
            f"(() => {{ const c = document.querySelector('.approval');"
            f" return c && c.dataset.requestId !== {first!r} && c.dataset.requestId; }})()",
            "the second task's approval card",
            WAIT_S,
        )
        page.eval("window.shownApprove.click(); true")
        feedback = page.until(
            "document.getElementById('feedback').textContent", "the page's answer to the stale click"
        )
        assert feedback.startswith("refused:") and first in feedback and "not pending" in feedback, feedback
        results = _events(page, "tool_result")
        assert len(results) == 1 and "approval denied/timed out" in results[0], results

        # Approve on the card now shown: navigate_to runs in the sim.
        page.eval("document.querySelector('.approval .approve').click(); true")
        page.until(
            "Array.from(document.querySelectorAll('#events li[data-type=tool_result]'))"
            ".some(l => l.textContent.includes('navigate_to') && !l.textContent.includes('approval denied'))",
            "navigate_to's result after the approval",
            WAIT_S,
        )
        assert second not in page.eval("document.getElementById('approvals').textContent")
        ran = [text for text in _events(page, "tool_result") if "approval denied" not in text]
        assert ran and "navigate_to" in ran[0], ran

        # Cancel stops the task.
        page.eval("document.getElementById('cancel').click(); true")
        page.until("document.querySelectorAll('#events li[data-type=done]').length === 2", "the end", WAIT_S)
        done = _events(page, "done")
        assert len(done) == 2 and "cancelled" in done[1], "\n".join(done) + "\n" + _logs(tmp_path)
    print(f"\nconsole on the sim: {time.monotonic() - started:.1f} s from the page's first load")
