"""``harness-ros task`` takes its exit status from the harness node, never from a forger.

A harness node process whose task fails (the model ends it with ``finish_task``
``failed``, after a slow model turn), a forger process that publishes a ``done``
``succeeded`` under the running task's id on ``/harness/events``, and the real CLI
in a third process, all over DDS on this test's private domain (issue 24, item 3).
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from support.processes import ServerProcess
from support.spinning_node import spinning_node
from test_node_trust_boundary import HARNESS_ROS, REPO, write_config
from test_ros_node import loopback_policy, purpose

from harness_ros.commands.task import EXIT_FAILED, EXIT_NO_OUTCOME
from harness_ros.testing.loopback_llm import LoopbackLLMServer

pytestmark = pytest.mark.ros

FORGER = Path(__file__).resolve().parent / "support" / "forger.py"


def failing_policy(body: dict[str, Any]) -> Any:
    """Call fibonacci, then give up with finish_task(failed): the real outcome is failed."""
    if purpose(body) in ("consolidate", "summarize"):
        return loopback_policy(body)
    if any(message.get("role") == "tool" for message in body["messages"]):
        arguments = {"outcome": "failed", "summary": "The sequence could not be checked."}
        return {"tool_calls": [{"name": "finish_task", "arguments": arguments}]}
    return {"tool_calls": [{"name": "fibonacci", "arguments": {"order": 5}}]}


@pytest.fixture
def failing_node(tmp_path: Path, ros_env: dict[str, str]) -> Iterator[Path]:
    """A harness node process whose tasks fail, each model turn taking 2.5 s (the forger's
    window); its log path."""
    env = {**ros_env, "LOOPBACK_TOKEN": "not-a-real-key"}
    server = ServerProcess("succeed", env)
    with LoopbackLLMServer(failing_policy, delay_s=2.5) as llm:
        log = tmp_path / "node.log"
        with log.open("wb") as handle:
            node = subprocess.Popen(
                [HARNESS_ROS, "node", "--config", str(write_config(tmp_path, llm.url))],
                env=env,
                stdout=handle,
                stderr=subprocess.STDOUT,
                cwd=REPO,
            )
        try:
            yield log
        finally:
            node.terminate()
            try:
                node.wait(timeout=15)
            except subprocess.TimeoutExpired:
                node.kill()
                node.wait(timeout=5)
            server.stop()


@pytest.fixture
def forgers(ros_env: dict[str, str]) -> Iterator[Callable[..., ServerProcess]]:
    started: list[ServerProcess] = []

    def start(*args: str) -> ServerProcess:
        mode, *rest = args
        forger = ServerProcess(mode, ros_env, script=FORGER, args=tuple(rest))
        started.append(forger)
        return forger

    yield start
    for forger in started:
        forger.stop()


def run_task(ros_env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [HARNESS_ROS, "task", "compute Fibonacci of order 5", "--connect-timeout", "60", "--timeout", "120"],
        env=ros_env,
        capture_output=True,
        text=True,
        timeout=200,
        check=False,
    )


def test_a_forged_done_does_not_set_the_exit_status(
    failing_node: Path, forgers: Callable[..., ServerProcess], ros_env: dict[str, str]
) -> None:
    # Finding: another participant published {"type": "done", "outcome": "succeeded"} under
    # the running task's id; the command exited 0 while the real task ended failed.
    forger = forgers("done", "/forger")
    assert forger.wait_for_line("matched", 60), failing_node.read_text(errors="replace") + forger.output
    result = run_task(ros_env)
    forged = [line for line in forger.lines if line.startswith("forged ")]
    assert forged, f"the forger never saw the task start:\n{forger.output}\n{result.stdout}{result.stderr}"
    assert forged[0].split()[1] in result.stdout, "the forger forged another task than the CLI's"
    assert result.returncode == EXIT_FAILED, (
        result.returncode,
        result.stdout,
        result.stderr,
        failing_node.read_text(errors="replace")[-3000:],
    )
    assert "done: FAILED" in result.stdout, result.stdout
    assert "SUCCEEDED" not in result.stdout and "all done" not in result.stdout, "the forged done was printed"
    assert "did not come from /harness's own publisher" in result.stderr, result.stderr


def test_an_impostor_with_the_node_name_makes_the_events_untrusted(
    failing_node: Path, forgers: Callable[..., ServerProcess], ros_env: dict[str, str], ros_context: Any
) -> None:
    forgers("done", "/harness")  # claims the harness node's own name
    with spinning_node(ros_context, "graph_watcher") as watcher:
        deadline = time.monotonic() + 60
        claimants: list[Any] = []
        while time.monotonic() < deadline:
            claimants = [
                info
                for info in watcher.get_publishers_info_by_topic("/harness/events")
                if (info.node_namespace, info.node_name) == ("/", "harness")
            ]
            if len(claimants) == 2:
                break
            time.sleep(0.05)  # the graph has no event to wait on
        assert len(claimants) == 2, failing_node.read_text(errors="replace")
    result = run_task(ros_env)
    assert result.returncode == EXIT_NO_OUTCOME, (result.returncode, result.stdout, result.stderr)
    assert "2 publishers on /harness/events claim to be node /harness" in result.stderr, result.stderr
    assert "DDS Security" in result.stderr


def test_the_eval_takes_an_episode_end_from_the_node_not_a_forger(
    failing_node: Path, forgers: Callable[..., ServerProcess], ros_env: dict[str, str]
) -> None:
    # Finding (issue 30): the eval's client believed any publisher on /harness/events, so a
    # forged done "succeeded" ended the episode while the real task went on to fail.
    from harness_ros_sim.ros.eval_runner import EvalClient

    forger = forgers("done", "/forger")
    assert forger.wait_for_line("matched", 60), failing_node.read_text(errors="replace") + forger.output
    client = EvalClient(int(ros_env["ROS_DOMAIN_ID"]))
    try:
        deadline = time.monotonic() + 60
        while not (client.harness_ready() and client.node.count_publishers("/harness/events") == 2):
            assert time.monotonic() < deadline, failing_node.read_text(errors="replace") + forger.output
            time.sleep(0.05)  # the graph has no event to wait on
        task_id, end, events = client.run_task(
            "compute Fibonacci of order 5", timeout_s=120, alive=lambda: None
        )
    finally:
        client.close()
    forged = [line for line in forger.lines if line.startswith("forged ")]
    assert forged == [f"forged {task_id}"], f"the forger did not forge this task:\n{forger.output}"
    assert end.get("outcome") == "failed", (end, failing_node.read_text(errors="replace")[-3000:])
    assert not any((e.get("data") or {}).get("report") == "all done" for e in events), (
        "a forged event was kept"
    )
    assert [e["type"] for e in events].count("done") == 1
