"""The console's ROS client sends an instruction again until the node answers it.

A stand-in for the harness node in its own process (support/task_stand_in.py) drops
each task's first instruction, as DDS drops a volatile message sent before both sides
matched; the console must send it again, as ``TaskClient`` does, and show the task.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from support.processes import ServerProcess
from support.waiting import wait_for

pytestmark = pytest.mark.ros

STAND_IN = Path(__file__).resolve().parent / "support" / "task_stand_in.py"


@pytest.fixture
def stand_in(ros_env: dict[str, str]) -> Iterator[ServerProcess]:
    process = ServerProcess("/harness", ros_env, script=STAND_IN)
    try:
        assert process.wait_for_line("ready", 60), process.output
        yield process
    finally:
        process.stop()


def test_the_console_sends_a_lost_first_instruction_again(
    stand_in: ServerProcess, ros_env: dict[str, str]
) -> None:
    from harness_ros.console import ConsoleState
    from harness_ros.ros.console_client import ConsoleRosClient
    from harness_ros.ros.task_client import ANSWER_WAIT_S

    state = ConsoleState("/harness")
    client = ConsoleRosClient(state, "/harness", domain_id=int(ros_env["ROS_DOMAIN_ID"]))
    client.start()
    try:
        assert wait_for(lambda: state.snapshot()["connected"], 60)
        task_id = client.send_instruction("fetch the cup")
        assert stand_in.wait_for_line(f"dropped {task_id}", 10), stand_in.output
        assert stand_in.wait_for_line(f"answered {task_id}", ANSWER_WAIT_S + 10), stand_in.output
        assert wait_for(
            lambda: [t["state"] for t in state.snapshot()["tasks"] if t["task_id"] == task_id] == ["done"], 10
        )
        (task,) = state.snapshot()["tasks"]
        assert (task["status"], task["outcome"], task["report"]) == ("completed", "succeeded", "stand-in")
        # Answered: not sent a third time (the stand-in answers every copy after the first).
        assert not wait_for(lambda: stand_in.lines.count(f"answered {task_id}") > 1, ANSWER_WAIT_S + 1)
        assert state.snapshot()["warnings"] == []
    finally:
        client.close()
