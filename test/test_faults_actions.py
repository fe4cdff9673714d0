"""Fault test: the action server process is SIGKILLed mid-goal (real servers, real DDS).

The tool must come back with a failure envelope within its timeout (plus the bounded
cancel confirmation), never hang; a goal to a restarted server must then succeed.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from support.waiting import wait_for

pytest.importorskip("rclpy")
pytest.importorskip("test_msgs")

from support.processes import ServerProcess
from support.spinning_node import spinning_node

from harness_ros.config import ToolBinding
from harness_ros.tools.contracts import CancelToken

pytestmark = pytest.mark.ros

TIMEOUT_S = 3.0


def status_publishers(node: Any) -> set[bytes]:
    """Endpoint ids of the publishers of /fibonacci's status topic that ``node`` knows."""
    return {
        bytes(info.endpoint_gid) for info in node.get_publishers_info_by_topic("/fibonacci/_action/status")
    }


@pytest.fixture
def client_node(ros_context: Any) -> Iterator[Any]:
    with spinning_node(ros_context, "fault_tool_client") as node:
        yield node


def test_action_server_killed_mid_goal_fails_within_timeout_then_restart_works(
    client_node: Any, ros_env: dict[str, str]
) -> None:
    from harness_ros.ros.ros_tools import _CANCEL_WAIT_S, ActionTool

    binding = ToolBinding.model_validate(
        {
            "name": "fib",
            "description": "compute Fibonacci numbers",
            "action": "/fibonacci",
            "type": "test_msgs/action/Fibonacci",
            "timeout_s": TIMEOUT_S,
            "server_wait_s": 10.0,
        }
    )
    tool = ActionTool(client_node, binding)
    slow = ServerProcess("slow", ros_env)
    servers = [slow]
    try:
        assert tool._client.wait_for_server(timeout_sec=15.0), "action server not discovered"
        outcome: dict[str, Any] = {}
        finished = threading.Event()
        running = threading.Event()  # first feedback seen by the client: the goal is in flight

        def run() -> None:
            start = time.monotonic()
            outcome["result"] = tool.execute(
                {"order": 5}, cancel=CancelToken(), feedback=lambda _tool, _data: running.set()
            )
            outcome["elapsed"] = time.monotonic() - start
            finished.set()

        threading.Thread(target=run, daemon=True).start()
        assert slow.wait_for_line("goal accepted", 10.0), slow.lines
        assert running.wait(10.0), "no feedback from the running goal"
        ghosts = status_publishers(client_node)
        slow.kill()  # mid-goal: accepted, running, no result yet

        assert finished.wait(TIMEOUT_S + _CANCEL_WAIT_S + 5.0), "the tool hung after its server died"
        result = outcome["result"]
        assert result["success"] is False
        assert result["reason"].startswith("timed out after 3.0 s; cancel not confirmed"), result
        assert result["run_id"]  # the accepted goal is named in the failure
        # The tool's own deadline, plus scheduling slack on a loaded 2-core machine.
        assert outcome["elapsed"] <= TIMEOUT_S + _CANCEL_WAIT_S + 2.0

        restarted = ServerProcess("succeed", ros_env)
        servers.append(restarted)
        assert restarted.wait_for_line("serving (succeed)", 15.0), restarted.lines
        # The dead server's endpoints linger in the graph until their lease expires, so
        # server_is_ready() says nothing about the new one: wait until it is discovered.
        assert wait_for(lambda: bool(status_publishers(client_node) - ghosts), 15.0)
        # Its status topic can be matched before its goal service's reply path: a goal sent
        # in that window fails honestly (timed out, not accepted). Restarting works when a
        # goal succeeds within the discovery window.
        attempts: list[dict[str, Any]] = []

        def goal_succeeds() -> bool:
            attempts.append(tool.execute({"order": 5}, cancel=CancelToken()))
            return attempts[-1]["success"] is True

        assert wait_for(goal_succeeds, 30.0), attempts
        again = attempts[-1]
        assert all(a["success"] is False for a in attempts[:-1])  # never a false success
        assert again["result"] == {"sequence": [0, 1, 1, 2, 3, 5]}
        assert restarted.wait_for_line("succeeded", 5.0)
    finally:
        tool.destroy()
        for server in servers:
            server.kill()
