"""ActionTool / ServiceTool against real servers in a separate process.

The servers (test/support/action_servers.py) run in their own process on the test's
private ROS domain; the client node spins a MultiThreadedExecutor in a thread, as the
harness node does, and the tools are executed from the test thread.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

pytest.importorskip("rclpy")
pytest.importorskip("test_msgs")

from support.processes import ServerProcess
from support.spinning_node import spinning_node

from harness_ros.config import ToolBinding
from harness_ros.errors import ToolError
from harness_ros.tools.contracts import CancelToken

pytestmark = pytest.mark.ros

DISCOVERY_S = 10.0


@pytest.fixture
def servers(ros_env: dict[str, str]) -> Iterator[Callable[[str], ServerProcess]]:
    started: list[ServerProcess] = []

    def start(behaviour: str) -> ServerProcess:
        server = ServerProcess(behaviour, ros_env)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


@pytest.fixture
def node(ros_context: Any) -> Iterator[Any]:
    with spinning_node(ros_context, "tool_test_client") as client:
        yield client


def binding(**fields: Any) -> ToolBinding:
    base: dict[str, Any] = {"name": "fib", "description": "compute Fibonacci numbers"}
    if "service" not in fields:
        base.update(action="/fibonacci", type="test_msgs/action/Fibonacci")
    base.update(fields)
    return ToolBinding.model_validate(base)


def service_binding(**fields: Any) -> ToolBinding:
    """A binding to the /basic test_msgs/srv/BasicTypes service of action_servers.py."""
    return binding(name="basic", service="/basic", type="test_msgs/srv/BasicTypes", **fields)


def ready(tool: Any) -> Any:
    """Wait (bounded) until the tool's server is discovered; never sleep."""
    client = tool._client
    if hasattr(client, "wait_for_server"):
        assert client.wait_for_server(timeout_sec=DISCOVERY_S), "action server not discovered"
    else:
        assert client.wait_for_service(timeout_sec=DISCOVERY_S), "service not discovered"
    return tool


class Feedback:
    def __init__(self) -> None:
        self.events: list[tuple[str, dict[str, Any]]] = []
        self.arrived = threading.Event()

    def __call__(self, tool: str, feedback: dict[str, Any]) -> None:
        self.events.append((tool, feedback))
        self.arrived.set()


def test_action_success_reports_result_run_id_and_feedback(node: Any, servers: Any) -> None:
    from harness_ros.ros.ros_tools import ActionTool

    servers("succeed")
    tool = ready(ActionTool(node, binding(evaluated=True, post_condition="numbers computed")))
    assert tool.spec.input_schema["properties"]["order"]["maximum"] == 2**31 - 1
    assert tool.spec.evaluated and tool.spec.post_condition == "numbers computed"
    sink = Feedback()
    # One round trip first: the client seeing the server's feedback publisher does not mean
    # that publisher has matched the client's subscription yet (discovery is per side; under
    # load a first goal's feedback was lost, CI 2026-12-02). An answered goal shows the server
    # side has discovered this client; its feedback writer matches in the same discovery round.
    assert tool.execute({"order": 1}, cancel=CancelToken())["success"] is True

    result = tool.execute({"order": 5}, cancel=CancelToken(), feedback=sink)

    assert result["success"] is True, result
    assert result["result"] == {"sequence": [0, 1, 1, 2, 3, 5]}
    assert len(result["run_id"]) == 32 and int(result["run_id"], 16) >= 0
    assert sink.arrived.wait(2.0)
    assert sink.events[0][0] == "fib"
    assert sink.events[0][1]["sequence"][:2] == [0, 1]
    tool.destroy()


def test_action_failures_abort_and_success_flag_false(node: Any, servers: Any) -> None:
    from harness_ros.ros.ros_tools import ActionTool

    servers("fail")
    aborted = ready(ActionTool(node, binding()))
    flagged = ready(
        ActionTool(
            node,
            binding(
                name="nested",
                action="/nested",
                type="test_msgs/action/NestedMessage",
                success_field="nested_field.bool_value",
                # Its derived schema (about 550 tokens) is over the default definition budget.
                max_definition_tokens=1000,
            ),
        )
    )

    result = aborted.execute({"order": 3}, cancel=CancelToken())
    assert result["success"] is False
    assert result["reason"] == "action server '/fibonacci' aborted the goal"
    assert result["run_id"]

    result = flagged.execute({"nested_field": {"int8_value": -3}}, cancel=CancelToken())
    assert result["success"] is False
    assert result["reason"] == "action server '/nested' reported nested_field.bool_value = false"
    assert result["result"]["nested_field"]["int8_value"] == -3


def test_rejected_goal_is_a_failure(node: Any, servers: Any) -> None:
    from harness_ros.ros.ros_tools import ActionTool

    servers("reject")
    tool = ready(ActionTool(node, binding()))
    result = tool.execute({"order": 3}, cancel=CancelToken())
    assert result == {"success": False, "reason": "goal rejected by action server '/fibonacci'"}


def test_timeout_cancels_the_goal_then_operator_cancel(node: Any, servers: Any) -> None:
    from harness_ros.ros.ros_tools import ActionTool, ServiceTool

    server = servers("slow")
    tool = ready(ActionTool(node, binding(timeout_s=1.0)))

    started = time.monotonic()
    result = tool.execute({"order": 3}, cancel=CancelToken())
    elapsed = time.monotonic() - started
    assert result["success"] is False
    assert result["reason"] == "timed out after 1.0 s; goal cancelled"
    assert result["last_feedback"] == {"sequence": [0, 1]}
    assert 1.0 <= elapsed < 1.0 + 2.5

    # Operator cancel, triggered by the first feedback: no timers, no sleeps.
    token = CancelToken()
    tool_long = ready(ActionTool(node, binding(name="fib_long", timeout_s=30.0)))
    result = tool_long.execute(
        {"order": 3}, cancel=token, feedback=lambda _tool, _fb: token.cancel("operator pressed stop")
    )
    assert result["success"] is False
    assert result["reason"] == "cancelled by operator; goal cancelled"

    # A service call cannot be cancelled: the tool stops waiting and says so.
    service = ready(ServiceTool(node, service_binding(timeout_s=0.5)))
    started = time.monotonic()
    result = service.execute({}, cancel=CancelToken())
    assert result == {
        "success": False,
        "reason": "timed out after 0.5 s; a service call cannot be cancelled, the server may still act",
    }
    assert time.monotonic() - started < 0.5 + 1.0

    output = server.stop()
    lines = output.splitlines()
    assert lines.count("cancel requested") == 2
    assert lines.count("canceled") == 2


def test_missing_servers_fail_within_their_wait(node: Any) -> None:
    from harness_ros.ros.ros_tools import ActionTool, ServiceTool

    action = ActionTool(node, binding(action="/nobody_home", server_wait_s=0.5))
    service = ServiceTool(
        node, binding(name="svc", service="/no_service", type="test_msgs/srv/BasicTypes", server_wait_s=0.5)
    )
    for tool, expected in (
        (action, "action server '/nobody_home' not available after 0.5 s"),
        (service, "service '/no_service' not available after 0.5 s"),
    ):
        started = time.monotonic()
        result = tool.execute({}, cancel=CancelToken())
        # Refused before acting: memory records a refusal, never a failure of the tool.
        assert result == {"success": False, "reason": expected, "refusal": "server_unavailable"}
        assert 0.5 <= time.monotonic() - started < 1.5


def test_base_motion_does_not_wait_for_its_server(node: Any) -> None:
    # The safety filter read clearance just before execute(): waiting seconds for a server
    # would send the goal on an old reading, so base motion fails at once instead.
    from harness_ros.ros.ros_tools import ActionTool

    tool = ActionTool(node, binding(action="/nobody_drives", server_wait_s=5.0, base_motion=True))
    started = time.monotonic()
    result = tool.execute({}, cancel=CancelToken())
    assert time.monotonic() - started < 0.5
    assert result["success"] is False
    assert "base motion does not wait for its server" in result["reason"]
    assert result["refusal"] == "server_unavailable"


def test_invalid_arguments_fail_before_any_server_is_needed(node: Any) -> None:
    from harness_ros.ros.ros_tools import ActionTool

    tool = ActionTool(node, binding(action="/nobody_home"))
    result = tool.execute({"order": "five"}, cancel=CancelToken())
    assert result["success"] is False
    assert "field 'order': expected an integer (int32), got str 'five'" in result["reason"]
    assert result["refusal"] == "invalid_arguments"
    result = tool.execute({"ordr": 3}, cancel=CancelToken())
    assert "unknown field 'ordr'" in result["reason"]


def test_service_success_and_reported_failure(node: Any, servers: Any) -> None:
    from harness_ros.ros.ros_tools import ServiceTool

    servers("succeed")
    tool = ready(ServiceTool(node, service_binding(success_field="bool_value", message_field="string_value")))
    assert tool.spec.input_schema["properties"]["int8_value"]["minimum"] == -128
    result = tool.execute({"string_value": "hello", "uint16_value": 7}, cancel=CancelToken())
    assert result["success"] is True, result
    assert result["result"]["string_value"] == "ok: hello"
    assert result["result"]["uint16_value"] == 7
    second = tool.execute({}, cancel=CancelToken())
    assert len(result["run_id"]) == 32 and second["run_id"] != result["run_id"]


def test_service_failure_uses_the_message_field(node: Any, servers: Any) -> None:
    from harness_ros.ros.ros_tools import ServiceTool

    servers("fail")
    tool = ready(ServiceTool(node, service_binding(success_field="bool_value", message_field="string_value")))
    result = tool.execute({}, cancel=CancelToken())
    assert result["success"] is False
    assert result["reason"] == "gripper jammed"


def test_build_ros_tools_rejects_bad_bindings(node: Any) -> None:
    from harness_ros.ros.ros_tools import ActionTool, ServiceTool, build_ros_tools

    tools = build_ros_tools(
        node,
        [
            binding(),
            service_binding(required_arguments=["int8_value"]),
        ],
    )
    assert [type(t) for t in tools] == [ActionTool, ServiceTool]
    assert tools[1].spec.input_schema["required"] == ["int8_value"]
    for tool in tools:
        tool.destroy()

    with pytest.raises(
        ToolError, match=r"tool 'ghost': interface type 'ghost_msgs/action/Go'.*not installed"
    ):
        build_ros_tools(node, [binding(name="ghost", type="ghost_msgs/action/Go")])
    with pytest.raises(ToolError, match=r"success_field 'done' is not a field"):
        build_ros_tools(node, [binding(success_field="done")])
    with pytest.raises(ToolError, match=r"success_field 'sequence' .* is not a boolean"):
        build_ros_tools(node, [binding(success_field="sequence")])
    with pytest.raises(ToolError, match=r"required field\(s\) \['orderr'\]"):
        build_ros_tools(node, [binding(required_arguments=["orderr"])])


def graph_config(tools: list[dict[str, Any]], views: dict[str, str], scan: str | None = None) -> Any:
    from harness_ros.config import HarnessConfig

    observations: dict[str, Any] = {"views": {name: {"topic": topic} for name, topic in views.items()}}
    if scan is not None:
        observations["clearance"] = {"scan_topic": scan}
    return HarnessConfig.model_validate({"observations": observations, "tools": tools})


def test_graph_check_reports_missing_and_wrong_types_by_name(node: Any, servers: Any) -> None:
    from sensor_msgs.msg import Image
    from std_msgs.msg import String

    from harness_ros.ros.graph_check import TypeMismatch, check_graph

    servers("succeed")
    node.create_publisher(Image, "/camera/front", 10)
    node.create_publisher(String, "/scan", 10)
    fib = {"name": "fib", "description": "d", "action": "/fibonacci", "type": "test_msgs/action/Fibonacci"}
    basic = {"name": "basic", "description": "d", "service": "/basic", "type": "test_msgs/srv/BasicTypes"}

    # Returns as soon as everything is there (discovery of the server process included).
    present = check_graph(node, graph_config([fib, basic], {"front": "/camera/front"}), timeout_s=DISCOVERY_S)
    assert present.ok, present.describe()
    assert present.describe() == "all 3 configured topics, actions and services are present"

    tools = [
        fib,
        basic,
        {**fib, "name": "nav", "action": "/navigate"},
        {**basic, "name": "reset", "service": "/reset"},
        {**fib, "name": "wrong", "type": "test_msgs/action/NestedMessage"},
    ]
    started = time.monotonic()
    report = check_graph(
        node,
        graph_config(tools, {"front": "/camera/front", "wrist": "wrist/image"}, scan="/scan"),
        timeout_s=1.0,
    )
    assert time.monotonic() - started < 1.0 + 1.0
    assert not report.ok
    assert report.missing_topics == ("/wrist/image",)
    assert report.wrong_type_topics == (
        TypeMismatch("/scan", "sensor_msgs/msg/LaserScan", ("std_msgs/msg/String",)),
    )
    assert report.missing_actions == ("/navigate",)
    assert report.missing_services == ("/reset",)
    assert report.wrong_type_actions == (
        TypeMismatch("/fibonacci", "test_msgs/action/NestedMessage", ("test_msgs/action/Fibonacci",)),
    )
    text = report.describe()
    assert "no publisher on topic '/wrist/image'" in text
    assert "no action server '/navigate'" in text
    assert "no service server '/reset'" in text
    assert "topic '/scan' has type std_msgs/msg/String, expected sensor_msgs/msg/LaserScan" in text
    assert text.startswith("5 of 8 configured endpoints are not usable:")


def test_goal_to_a_killed_server_fails_after_the_accept_timeout(node: Any, servers: Any) -> None:
    from harness_ros.ros.ros_tools import _CANCEL_WAIT_S, ActionTool

    server = servers("succeed")
    tool = ready(ActionTool(node, binding(accept_timeout_s=1.0, timeout_s=30.0)))
    server.proc.kill()  # SIGKILL: no goodbye, its endpoints stay until the lease expires
    server.proc.wait(timeout=10)
    assert tool._client.server_is_ready(), "precondition: the dead server still looks ready"

    started = time.monotonic()
    result = tool.execute({"order": 3}, cancel=CancelToken())
    elapsed = time.monotonic() - started

    assert result["success"] is False
    assert result["reason"] == (
        "action server '/fibonacci' did not accept the goal within 1.0 s; "
        "cancel by goal id not answered within 2.0 s (is the server down?)"
    )
    assert len(result["run_id"]) == 32 and int(result["run_id"], 16) >= 0
    assert 1.0 <= elapsed < 1.0 + _CANCEL_WAIT_S + 1.0  # not the 30 s goal timeout
    tool.destroy()


def test_lost_goal_response_is_cancelled_by_its_id(
    node: Any, servers: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from action_msgs.msg import GoalStatus, GoalStatusArray
    from rclpy.qos import qos_profile_action_status_default
    from rclpy.task import Future

    from harness_ros.ros.ros_tools import ActionTool

    server = servers("slow")  # runs every goal until it is cancelled
    tool = ready(ActionTool(node, binding(accept_timeout_s=1.0, timeout_s=30.0)))
    send = tool._client.send_goal_async
    sent_ids: list[str] = []

    def lossy_send(goal: Any, **kwargs: Any) -> Future:
        sent_ids.append(bytes(kwargs["goal_uuid"].uuid).hex())
        send(goal, **kwargs)  # the server gets the goal and runs it...
        return Future()  # ...but its "accepted" response never reaches the tool

    monkeypatch.setattr(tool._client, "send_goal_async", lossy_send)
    canceled = threading.Event()  # the server's own status report for that goal id

    def on_status(message: GoalStatusArray) -> None:
        for status in message.status_list:
            ours = sent_ids and bytes(status.goal_info.goal_id.uuid).hex() == sent_ids[0]
            if ours and status.status == GoalStatus.STATUS_CANCELED:
                canceled.set()

    node.create_subscription(
        GoalStatusArray, "/fibonacci/_action/status", on_status, qos_profile_action_status_default
    )
    started = time.monotonic()
    result = tool.execute({"order": 3}, cancel=CancelToken())
    elapsed = time.monotonic() - started

    assert result == {
        "success": False,
        "reason": "action server '/fibonacci' did not accept the goal within 1.0 s; "
        "the goal was running after all; the server accepted its cancel",
        "run_id": sent_ids[0],
    }
    assert elapsed < 1.0 + 2.0
    assert canceled.wait(5.0), "the server did not report the goal canceled"
    lines = server.stop().splitlines()
    assert lines.count("goal accepted") == 1
    assert lines.count("cancel requested") == 1
    tool.destroy()


def test_a_lost_goal_request_is_sent_again_with_the_same_goal_id(node: Any, servers: Any) -> None:
    """DDS matching is asymmetric: a first request can vanish. The tool resends the same
    goal (same id) once unanswered, and the server runs it exactly once."""
    from rclpy.task import Future

    from harness_ros.ros.ros_tools import ActionTool

    server = servers("succeed")
    tool = ready(ActionTool(node, binding()))
    real_send = tool._client.send_goal_async
    sent_ids: list[bytes] = []

    def lose_the_first(goal: Any, **kwargs: Any) -> Any:
        sent_ids.append(bytes(kwargs["goal_uuid"].uuid))
        if len(sent_ids) == 1:
            return Future()  # never answered: the request was lost on the way
        return real_send(goal, **kwargs)

    tool._client.send_goal_async = lose_the_first  # type: ignore[method-assign]
    result = tool.execute({"order": 3}, cancel=CancelToken())
    assert result["success"] is True, result
    assert len(sent_ids) == 2 and sent_ids[0] == sent_ids[1]
    assert server.wait_for_line("succeeded", 5.0)
    assert server.lines.count("goal accepted") == 1, server.lines
    tool.destroy()
