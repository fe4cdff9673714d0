"""One task client for ``harness-ros task``, the demo and the eval (issue 28, finding 3).

A stand-in for the harness node in its own process drops each task's first instruction,
as DDS drops a volatile message sent before both sides matched; every entry point must
send it again and follow the task to its end. Which class they use is checked too.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.processes import ServerProcess
from test_node_trust_boundary import HARNESS_ROS

from harness_ros.commands.task import EXIT_SUCCEEDED

pytestmark = pytest.mark.ros

STAND_IN = Path(__file__).resolve().parent / "support" / "task_stand_in.py"
PACKAGE = Path(__file__).resolve().parents[1] / "harness_ros"
SIM = Path(__file__).resolve().parents[1] / "sim" / "harness_ros_sim"


@pytest.fixture
def stand_in(ros_env: dict[str, str]) -> Iterator[ServerProcess]:
    process = ServerProcess("/harness", ros_env, script=STAND_IN)
    try:
        assert process.wait_for_line("ready", 60), process.output
        yield process
    finally:
        process.stop()


def _dropped_then_answered(stand_in: ServerProcess, task_id: str) -> None:
    assert stand_in.wait_for_line(f"answered {task_id}", 10), stand_in.output
    assert stand_in.lines.index(f"dropped {task_id}") < stand_in.lines.index(f"answered {task_id}")


def test_the_task_client_sends_a_lost_first_instruction_again(
    stand_in: ServerProcess, ros_env: dict[str, str]
) -> None:
    from harness_ros.ros.task_client import TaskClient, TaskResult

    events: list[dict[str, object]] = []
    with TaskClient("/harness", domain_id=int(ros_env["ROS_DOMAIN_ID"])) as client:
        assert client.send_task("fetch the cup", on_event=events.append, connect_timeout_s=60)
        assert client.wait_until_complete(10)
        assert client.is_task_complete()
        result = client.get_result()
    assert isinstance(result, TaskResult)
    assert (result.status, result.outcome, result.data["report"]) == ("completed", "succeeded", "stand-in")
    assert [e["type"] for e in result.events] == ["task_started", "done"] == [e["type"] for e in events]
    _dropped_then_answered(stand_in, result.task_id)


def test_harness_ros_task_sends_a_lost_first_instruction_again(
    stand_in: ServerProcess, ros_env: dict[str, str]
) -> None:
    result = subprocess.run(
        [HARNESS_ROS, "task", "fetch the cup", "--connect-timeout", "60", "--timeout", "60"],
        env=ros_env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == EXIT_SUCCEEDED, (result.stdout, result.stderr, stand_in.output)
    assert "done: SUCCEEDED" in result.stdout
    [answered] = [line for line in stand_in.lines if line.startswith("answered ")]
    _dropped_then_answered(stand_in, answered.split()[1])


def test_the_eval_sends_a_lost_first_instruction_again(
    stand_in: ServerProcess, ros_env: dict[str, str]
) -> None:
    # Finding: EvalClient.run_task published the instruction once, after the graph match only;
    # a lost first message left the episode waiting for its whole timeout.
    from harness_ros_sim.ros.eval_runner import EvalClient

    client = EvalClient(int(ros_env["ROS_DOMAIN_ID"]))
    try:
        started = time.monotonic()
        task_id, end, events = client.run_task("fetch the cup", timeout_s=30, alive=lambda: None)
        took = time.monotonic() - started
    finally:
        client.close()
    assert (end.get("status"), end.get("outcome")) == ("completed", "succeeded"), (end, stand_in.output)
    assert took < 25, f"the episode waited {took:.1f} s: the instruction was not sent again"
    assert [e["type"] for e in events] == ["task_started", "done"]
    _dropped_then_answered(stand_in, task_id)


def test_the_demo_sends_a_lost_first_instruction_again(
    stand_in: ServerProcess, ros_env: dict[str, str], tmp_path: Path
) -> None:
    from harness_ros.ros.task_client import TaskClient
    from harness_ros_sim.demo.runner import DemoOptions, DemoRunner
    from harness_ros_sim.demo.scenarios import DEMO_TASKS

    task = DEMO_TASKS[1]
    assert task.operator_answer is None  # no operator stand-in process for this one
    lines: list[str] = []
    runner = DemoRunner(DemoOptions(workdir=tmp_path, task_timeout_s=60), write=lines.append)
    with TaskClient("/harness", domain_id=int(ros_env["ROS_DOMAIN_ID"])) as client:
        assert client.wait_for(client.is_connected, 60)
        outcome = runner._run_task(client, 2, task)
    assert (outcome.status, outcome.outcome) == ("completed", "succeeded"), "\n".join(lines)
    assert "  outcome: SUCCEEDED (the model made no claim; no evaluator judged the goal)" in lines
    _dropped_then_answered(stand_in, outcome.task_id)


def test_the_three_entry_points_use_the_one_task_client() -> None:
    """Nothing but the task client publishes instructions or reads the node's events."""
    users = (PACKAGE / "commands/task.py", SIM / "demo/runner.py", SIM / "ros/eval_runner.py")
    for user in users:
        text = user.read_text(encoding="utf-8")
        assert "TaskClient" in text, user
        for own_endpoint in ("/instruction", "/events", "/cancel_task", "EVENTS_QOS"):
            assert own_endpoint not in text, f"{user} talks to {own_endpoint!r} itself"
    assert "harness_ros.commands" not in (SIM / "demo" / "runner.py").read_text(encoding="utf-8")
    assert "harness_ros_sim.demo" not in (SIM / "ros" / "eval_runner.py").read_text(encoding="utf-8")
