"""Robots with modes and grippers that are joints (issue 42, items 8 and 9), against a
stand-in of stretch_driver in another process (test/support/stretch_driver_stand_in.py:
its mode-switch Trigger services, its FollowJointTrajectory server that refuses goals
outside position mode, a NavigateToPose server that moves only in navigation mode).

- A tool's ``prerequisites`` are service calls the harness makes before every call of
  the tool: the server sees them in order, each is a ``prerequisite`` event, and the
  trajectory's step records it. A failed one fails the call and the tool never runs.
- A gripper commanded as a joint (``gripper_aperture``, metres) with ``grasp``: the
  aperture reached is in the result; a close stopped short by an object is a success
  with ``holding: true`` although the server aborted the goal; a close on nothing holds
  nothing.
"""

from __future__ import annotations

import copy
import json
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("rclpy")
pytest.importorskip("nav2_msgs")
pytest.importorskip("control_msgs")

from support.processes import ServerProcess
from support.spinning_node import spinning_node

from harness_ros.config import HarnessConfig, load_config
from harness_ros.events import EventType, HarnessEvent
from harness_ros.harness import Harness
from harness_ros.model.contracts import ModelReply, ToolCall, Usage
from harness_ros.tools.contracts import CancelToken

pytestmark = pytest.mark.ros

REPO_ROOT = Path(__file__).resolve().parents[1]
SCRIPT = REPO_ROOT / "test" / "support" / "stretch_driver_stand_in.py"
PRESETS = REPO_ROOT / "config" / "presets"
TRAJECTORY = "/stretch_controller/follow_joint_trajectory"
DISCOVERY_S = 10.0

CONFIG = f"""
tools:
  - preset: {PRESETS / "navigate_to_location.yaml"}
    action: /navigate_to_pose
    base_motion: false            # no clearance source here: this test is about modes
    lookups: {{locations: {{kitchen: {{x: 1.0, y: 2.0, yaw: 90}}}}}}
    prerequisites: [{{service: /switch_to_navigation_mode}}]
  - preset: {PRESETS / "move_arm_to.yaml"}
    action: {TRAJECTORY}
    goal: {{trajectory.joint_names: [joint_lift, wrist_extension]}}
    lookups: {{arm_poses: {{reach: [0.8, 0.3]}}}}
    prerequisites: [{{service: /switch_to_position_mode}}]
  - preset: {PRESETS / "open_joint_gripper.yaml"}
    action: {TRAJECTORY}
  - preset: {PRESETS / "close_joint_gripper.yaml"}
    action: {TRAJECTORY}
"""


def _call(name: str, **arguments: Any) -> ModelReply:
    call = ToolCall(f"id_{name}", name, json.dumps(arguments), arguments)
    return ModelReply(text=None, tool_calls=(call,), usage=Usage(10, 2), model="scripted")


class _Scripted:
    """Decide replies in order, then finish_task."""

    name = "scripted/test"

    def __init__(self, steps: Sequence[ModelReply]) -> None:
        self.steps = list(steps)
        self.requests: list[list[dict[str, Any]]] = []

    def complete(
        self, messages: list[dict[str, Any]], *, tools: Any = None, json_mode: bool = False
    ) -> ModelReply:
        self.requests.append(copy.deepcopy(messages))
        if self.steps:
            return self.steps.pop(0)
        return _call("finish_task", outcome="succeeded", summary="done")


@pytest.fixture
def driver(ros_env: dict[str, str]) -> Iterator[Callable[[str], ServerProcess]]:
    started: list[ServerProcess] = []

    def start(behaviour: str) -> ServerProcess:
        server = ServerProcess(behaviour, {**ros_env, "ROS_DISTRO": "kilted"}, script=SCRIPT)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


@pytest.fixture
def node(ros_context: Any) -> Iterator[Any]:
    with spinning_node(ros_context, "modes_test_client") as client:
        yield client


@pytest.fixture
def config(tmp_path: Path) -> HarnessConfig:
    path = tmp_path / "stretch.yaml"
    path.write_text(CONFIG, encoding="utf-8")
    return load_config(path)


def tools_of(node: Any, config: HarnessConfig, server: ServerProcess) -> dict[str, Any]:
    from harness_ros.ros.ros_tools import build_ros_tools

    tools = {tool.spec.name: tool for tool in build_ros_tools(node, config.tools)}
    clients = [tool._client for tool in tools.values()]
    clients += [p._call._client for tool in tools.values() for p in tool.prerequisites]
    for client in clients:
        found = (
            client.wait_for_server(timeout_sec=DISCOVERY_S)
            if hasattr(client, "wait_for_server")
            else client.wait_for_service(timeout_sec=DISCOVERY_S)
        )
        assert found, f"a server was not discovered; server output:\n{server.output}"
    return tools


def wait_for(condition: Callable[[], bool], timeout_s: float) -> bool:
    """Poll ``condition`` (the server's output, read by its own thread) until ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    tick = threading.Event()
    while not condition():
        if time.monotonic() >= deadline:
            return False
        tick.wait(0.02)
    return True


def seen(server: ServerProcess) -> list[str]:
    """What the stand-in was asked, in order, without the goals' JSON."""
    out = []
    for line in list(server.lines):
        if line.startswith("call "):
            out.append(line)
        elif line.startswith("goal "):
            name, mode = line.split(" ")[1:3]
            out.append(f"goal {name} {mode}")
    return out


def run_task(tools: dict[str, Any], steps: Sequence[ModelReply], runs: Path) -> list[HarnessEvent]:
    harness = Harness(model=_Scripted(steps), tools=list(tools.values()), runs_dir=runs)
    return list(harness.run("fetch the cup", task_id="t1"))


# ---------------------------------------------------------------------- item 8: prerequisites


def test_the_harness_switches_modes_before_each_tool_and_records_it(
    node: Any, driver: Any, config: HarnessConfig, tmp_path: Path
) -> None:
    server = driver("modes")
    tools = tools_of(node, config, server)
    events = run_task(
        tools,
        [
            _call("navigate_to_location", location="kitchen"),
            _call("move_arm_to", pose="reach"),
            _call("move_arm_to", pose="reach"),
        ],
        tmp_path / "runs",
    )
    done = events[-1]
    assert done.type is EventType.DONE and done.payload.get("status") == "completed", done.payload.to_data()

    # The driver saw each mode switch before the goal that needs it (always made, even
    # when the mode is already right: the third call), and every goal in its mode.
    assert wait_for(lambda: len(seen(server)) == 6, 5.0), server.output
    assert seen(server) == [
        "call /switch_to_navigation_mode mode=position",
        "goal /navigate_to_pose mode=navigation",
        "call /switch_to_position_mode mode=navigation",
        f"goal {TRAJECTORY} mode=position",
        "call /switch_to_position_mode mode=position",
        f"goal {TRAJECTORY} mode=position",
    ]
    results = [e.payload.get("result") for e in events if e.type is EventType.TOOL_RESULT]
    assert [r["success"] for r in results[:3]] == [True, True, True], results

    # Each switch is an event between the call and its result ...
    kinds = [
        (e.type.value, e.payload.get("tool")) for e in events if e.type.value.startswith(("tool_", "prereq"))
    ]
    assert kinds[:3] == [
        ("tool_call", "navigate_to_location"),
        ("prerequisite", "navigate_to_location"),
        ("tool_result", "navigate_to_location"),
    ]
    first = next(e for e in events if e.type is EventType.PREREQUISITE)
    assert (
        first.payload.get("service") == "/switch_to_navigation_mode" and first.payload.get("success") is True
    )
    assert (
        first.payload.get("message") == "Now in navigation mode."
        and first.payload.get("call_id") == "id_navigate_to_location"
    )

    # ... and the trajectory (what memory and the report read) keeps it with its step.
    trajectory = json.loads((tmp_path / "runs" / "t1" / "trajectory.json").read_text(encoding="utf-8"))
    steps = trajectory["events"]
    assert [s["tool"] for s in steps] == ["navigate_to_location", "move_arm_to", "move_arm_to"]
    assert steps[0]["prerequisites"] == [
        {"service": "/switch_to_navigation_mode", "success": True, "message": "Now in navigation mode."}
    ]
    assert steps[1]["prerequisites"] == [
        {"service": "/switch_to_position_mode", "success": True, "message": "Now in position mode."}
    ]
    # `harness-ros task` prints it between the call and its result.
    from harness_ros.progress import format_event

    assert (
        format_event(first.to_dict())
        == "[turn 1]   first /switch_to_navigation_mode: ok Now in navigation mode."
    )
    # The HTML report lists each switch under its turn.
    from harness_ros.report import render_report

    html = render_report(tmp_path / "runs" / "t1")
    assert html.count("<code>prerequisite</code>") == 3 and "/switch_to_navigation_mode" in html


def test_a_failed_prerequisite_fails_the_call_and_the_tool_does_not_run(
    node: Any, driver: Any, config: HarnessConfig, tmp_path: Path
) -> None:
    server = driver("position_fails")
    tools = tools_of(node, config, server)
    events = run_task(tools, [_call("move_arm_to", pose="reach")], tmp_path / "runs")

    assert wait_for(lambda: len(seen(server)) >= 1, 5.0), server.output
    assert seen(server) == ["call /switch_to_position_mode mode=position"]  # no goal was sent
    result = next(e for e in events if e.type is EventType.TOOL_RESULT)
    assert result.payload.get("result")["success"] is False
    assert result.payload.get("result")["reason"] == (
        "prerequisite call to service '/switch_to_position_mode' failed, so 'move_arm_to' was not "
        "executed: Cannot change mode while runstopped."
    )
    assert result.payload.get("refusal") == "prerequisite_failed"
    step = json.loads((tmp_path / "runs" / "t1" / "trajectory.json").read_text(encoding="utf-8"))["events"][0]
    assert step["refusal"] == "prerequisite_failed"
    assert step["prerequisites"] == [
        {
            "service": "/switch_to_position_mode",
            "success": False,
            "reason": "Cannot change mode while runstopped.",
        }
    ]


# ---------------------------------------------------------------------- item 9: a joint gripper


def _goal(server: ServerProcess) -> dict[str, Any]:
    line = [line for line in list(server.lines) if line.startswith(f"goal {TRAJECTORY} ")][-1]
    return json.loads(line.split(" ", 3)[3])


def test_a_joint_gripper_closing_on_an_object_holds_it(node: Any, driver: Any, config: HarnessConfig) -> None:
    server = driver("object")
    tools = tools_of(node, config, server)

    opened = tools["open_gripper"].execute({}, cancel=CancelToken())
    assert opened["success"] is True, opened
    assert opened["result"]["aperture_m"] == pytest.approx(0.07) and opened["result"]["holding"] is False
    assert _goal(server)["trajectory"]["joint_names"] == ["gripper_aperture"]

    closed = tools["close_gripper"].execute({}, cancel=CancelToken())
    # The driver aborted the goal (the fingers stopped on the object), yet it is a grasp.
    assert closed["success"] is True, closed
    assert closed["result"]["holding"] is True
    assert closed["result"]["aperture_m"] == pytest.approx(0.04)
    assert closed["result"]["stopped_short"] is True
    assert "aborted the goal" in closed["result"]["server_reported"]
    assert _goal(server)["trajectory"]["points"][0]["positions"] == [-0.02]


def test_a_joint_gripper_closing_on_nothing_holds_nothing(
    node: Any, driver: Any, config: HarnessConfig
) -> None:
    server = driver("empty")
    tools = tools_of(node, config, server)
    closed = tools["close_gripper"].execute({}, cancel=CancelToken())
    assert closed["success"] is True, closed
    assert closed["result"]["holding"] is False
    assert closed["result"]["aperture_m"] == pytest.approx(-0.02)


def test_a_joint_gripper_goal_refused_before_moving_stays_a_failure(
    node: Any, driver: Any, config: HarnessConfig
) -> None:
    # In navigation mode the driver refuses every trajectory goal (no feedback, no motion):
    # no aperture is claimed and the close is a failure, not a grasp.
    server = driver("modes")
    tools = tools_of(node, config, server)
    assert tools["navigate_to_location"].prerequisites[0].run(CancelToken())["success"] is True
    closed = tools["close_gripper"].execute({}, cancel=CancelToken())
    assert closed["success"] is False
    assert "only accepts goals in position or trajectory mode" in closed["reason"]
    assert closed["result"]["holding"] is None and closed["result"]["aperture_m"] is None
