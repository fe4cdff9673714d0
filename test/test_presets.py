"""The presets of config/robot_nav2.yaml against real servers in another process.

test/support/preset_servers.py serves every action and service the config binds,
with the Kilted nav2_msgs / control_msgs test stand-ins the venv holds (the upstream
fields; test/test_distro_matrix.py covers Humble and Jazzy too), prints each
goal it receives and publishes /clock. The client node uses sim time, so the goal
stamps must carry the server's clock, not the wall clock. Each received goal is
compared whole with the expected message: the mapped fields as the binding fills
them, every other field at its message default.
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("rclpy")
pytest.importorskip("nav2_msgs")
pytest.importorskip("control_msgs")

from support.processes import ServerProcess
from support.spinning_node import spinning_node
from support.waiting import wait_for

from harness_ros.config import HarnessConfig, ToolBinding, load_config
from harness_ros.errors import ToolError
from harness_ros.tools.contracts import CancelToken

pytestmark = pytest.mark.ros

REPO_ROOT = Path(__file__).resolve().parents[1]
SCRIPT = REPO_ROOT / "test" / "support" / "preset_servers.py"
DISCOVERY_S = 10.0
SIM_STAMP = {"sec": 1000, "nanosec": 250_000_000}


@pytest.fixture
def servers(ros_env: dict[str, str]) -> Iterator[Callable[[str], ServerProcess]]:
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
    from rclpy.parameter import Parameter

    with spinning_node(ros_context, "preset_test_client") as client:
        client.set_parameters([Parameter("use_sim_time", Parameter.Type.BOOL, True)])
        yield client


@pytest.fixture
def config(monkeypatch: pytest.MonkeyPatch) -> HarnessConfig:
    # The venv's stand-ins are Kilted's: the grippers pick the parallel gripper preset.
    monkeypatch.setenv("ROS_DISTRO", "kilted")
    return load_config(REPO_ROOT / "config" / "robot_nav2.yaml")


def tools_of(node: Any, config: HarnessConfig, server: ServerProcess) -> dict[str, Any]:
    from harness_ros.ros.ros_tools import build_ros_tools

    tools = {tool.spec.name: tool for tool in build_ros_tools(node, config.tools)}
    for tool in tools.values():
        client = tool._client
        found = (
            client.wait_for_server(timeout_sec=DISCOVERY_S)
            if hasattr(client, "wait_for_server")
            else client.wait_for_service(timeout_sec=DISCOVERY_S)
        )
        assert found, f"server of {tool.spec.name} not discovered; server output:\n{server.output}"
    return tools


def wait_for_sim_time(node: Any) -> None:
    """Wait (bounded) until the node clock follows the server's /clock."""
    wanted = SIM_STAMP["sec"] * 10**9 + SIM_STAMP["nanosec"]
    followed = wait_for(
        lambda: node.get_clock().now().nanoseconds == wanted,
        DISCOVERY_S,
        what="the node clock to follow /clock",
    )
    assert followed, followed


def received(server: ServerProcess, name: str, timeout_s: float = 5.0) -> dict[str, Any]:
    """The last goal or request ``name`` received, as the server printed it."""
    prefix = f"goal {name} "
    deadline = time.monotonic() + timeout_s
    tick = threading.Event()
    while True:
        lines = [line for line in list(server.lines) if line.startswith(prefix)]
        if lines:
            return json.loads(lines[-1][len(prefix) :])
        assert time.monotonic() < deadline, f"{name} received nothing; output:\n{server.output}"
        tick.wait(0.02)


def default_goal(type_string: str) -> dict[str, Any]:
    from harness_ros.ros.interfaces import message_to_jsonable, request_class

    kind = "action" if "/action/" in type_string else "srv"
    binding = ToolBinding(
        name="x", description="d", type=type_string, **{kind if kind == "action" else "service": "/x"}
    )
    return message_to_jsonable(request_class(binding)())


def merged(base: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in changes.items():
        out[key] = (
            merged(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
        )
    return out


def quaternion(yaw_deg: float) -> dict[str, float]:
    half = math.radians(yaw_deg) / 2
    return {"x": 0.0, "y": 0.0, "z": math.sin(half), "w": math.cos(half)}


def run(tool: Any, arguments: dict[str, Any], feedback: Any = None) -> dict[str, Any]:
    return tool.execute(arguments, cancel=CancelToken(), feedback=feedback)


def test_every_preset_sends_the_expected_goal(node: Any, servers: Any, config: HarnessConfig) -> None:
    server = servers("succeed")
    tools = tools_of(node, config, server)
    wait_for_sim_time(node)
    progress: list[tuple[str, dict[str, Any]]] = []

    # navigate_to_pose: map frame, the node's (sim) clock, a normalised quaternion.
    result = run(
        tools["navigate_to_pose"], {"x": 1.5, "y": -2.0, "yaw": 90}, lambda t, f: progress.append((t, f))
    )
    assert result["success"] is True, result
    assert result["result"] == {}
    nav_default = default_goal("nav2_msgs/action/NavigateToPose")
    assert received(server, "navigate_to_pose") == merged(
        nav_default,
        {
            "pose": {
                "header": {"frame_id": "map", "stamp": SIM_STAMP},
                "pose": {"position": {"x": 1.5, "y": -2.0, "z": 0.0}, "orientation": quaternion(90)},
            },
            "behavior_tree": "",
        },
    )
    assert progress == [
        (
            "navigate_to_pose",
            {
                "distance_remaining_m": 1.5,
                "navigation_time_s": 2.5,
                "estimated_time_remaining_s": 0.0,
                "recoveries": 1,
            },
        )
    ]

    # navigate_to_location: the named location's coordinates and heading.
    assert run(tools["navigate_to_location"], {"location": "kitchen"})["success"] is True
    assert received(server, "navigate_to_location".replace("_location", "_pose")) == merged(
        nav_default,
        {
            "pose": {
                "header": {"frame_id": "map", "stamp": SIM_STAMP},
                "pose": {"position": {"x": 4.2, "y": -1.5, "z": 0.0}, "orientation": quaternion(90.0)},
            }
        },
    )

    # Nav2 behaviours: distance in target.x, a fixed speed, a Duration time allowance.
    drive = run(tools["drive_forward"], {"distance": 0.5})
    assert drive == {"success": True, "result": {"elapsed_s": 3.0}, "run_id": drive["run_id"]}
    behaviour = {"time_allowance": {"sec": 30, "nanosec": 0}, "disable_collision_checks": False}
    assert received(server, "DriveOnHeading") == merged(
        default_goal("nav2_msgs/action/DriveOnHeading"),
        {"target": {"x": 0.5, "y": 0.0, "z": 0.0}, "speed": 0.15, **behaviour},
    )
    assert run(tools["back_up"], {"distance": 0.3, "direction": "backward"})["success"] is True
    assert received(server, "BackUp") == merged(
        default_goal("nav2_msgs/action/BackUp"),
        {"target": {"x": 0.3, "y": 0.0, "z": 0.0}, "speed": 0.1, **behaviour},
    )
    assert run(tools["spin"], {"angle": 90})["success"] is True
    spin = received(server, "Spin")
    assert spin["target_yaw"] == pytest.approx(math.pi / 2, rel=1e-6)
    assert spin == {**default_goal("nav2_msgs/action/Spin"), **behaviour, "target_yaw": spin["target_yaw"]}

    # move_arm_to: joint names from the config, the named pose's positions, a Duration.
    assert run(tools["move_arm_to"], {"pose": "ready", "duration": 2.5})["success"] is True
    trajectory = received(server, "follow_joint_trajectory")
    fjt_default = default_goal("control_msgs/action/FollowJointTrajectory")
    point = {
        "positions": [0.0, 0.6, -1.2, 0.0, 0.9, 0.0],
        "velocities": [],
        "accelerations": [],
        "effort": [],
        "time_from_start": {"sec": 2, "nanosec": 500_000_000},
    }
    assert trajectory == merged(
        fjt_default,
        {"trajectory": {"joint_names": [f"joint_{i}" for i in range(1, 7)], "points": [point]}},
    )

    # Grippers (Kilted: ParallelGripperCommand): constants only, one position; the result
    # projection reaches the model.
    opened = run(tools["open_gripper"], {})
    assert opened["result"] == {"position": [0.08], "effort": [2.0], "stalled": False, "reached_goal": True}
    joint_state = default_goal("control_msgs/action/ParallelGripperCommand")["command"]
    assert received(server, "gripper_cmd") == {"command": {**joint_state, "position": [0.08]}}
    assert run(tools["close_gripper"], {})["success"] is True
    assert received(server, "gripper_cmd") == {"command": {**joint_state, "position": [0.0]}}

    # std_srvs services.
    trigger = run(tools["reset_arm_faults"], {})
    assert trigger["success"] is True and trigger["result"]["message"] == "faults cleared"
    assert received(server, "reset_faults") == {}
    assert run(tools["set_arm_motors"], {"enable": True})["result"]["message"] == "motors on"
    assert received(server, "enable_motors") == {"data": True}
    for tool in tools.values():
        tool.destroy()


def test_error_codes_reach_the_model_as_words(node: Any, servers: Any, config: HarnessConfig) -> None:
    tools = tools_of(node, config, servers("fail"))

    navigate = run(tools["navigate_to_pose"], {"x": 1.0, "y": 1.0})
    assert navigate["success"] is False
    assert navigate["reason"] == (
        "action server '/navigate_to_pose' aborted the goal: "
        "no valid path (error code 208): no path around the sofa"
    )
    assert (navigate["error"], navigate["error_code"]) == ("no valid path", 208)

    drive = run(tools["drive_forward"], {"distance": 1.0})
    assert "collision ahead (error code 723): obstacle in the way" in drive["reason"]
    assert drive["result"] == {"elapsed_s": 3.0}

    arm = run(tools["move_arm_to"], {"pose": "home"})
    assert arm["success"] is False
    assert "goal tolerance violated (error code -5): wrist_1_joint off by 0.2 rad" in arm["reason"]

    # A gripper closing on an object stalls short of its goal; without the controller's
    # allow_stalling the goal is aborted: a failure, with the stall in the result.
    grasp = run(tools["close_gripper"], {})
    assert grasp["success"] is False
    assert grasp["reason"] == "action server '/gripper_controller/gripper_cmd' aborted the goal"
    assert grasp["result"] == {"position": [0.031], "effort": [40.0], "stalled": True, "reached_goal": False}

    refused = run(tools["reset_arm_faults"], {})
    assert refused == {
        "success": False,
        "reason": "driver refused: e-stop pressed",
        "run_id": refused["run_id"],
        "result": refused["result"],
    }
    for tool in tools.values():
        tool.destroy()


def test_error_words_come_from_the_installed_type_when_the_binding_has_none(
    node: Any, servers: Any, config: HarnessConfig
) -> None:
    bare = [
        tool.model_copy(update={"error_codes": {}})
        if tool.name in ("drive_forward", "navigate_to_pose")
        else tool
        for tool in config.tools
    ]
    tools = tools_of(node, config.model_copy(update={"tools": bare}), servers("fail"))
    # 723 is DriveOnHeading's COLLISION_AHEAD constant on this distribution.
    drive = run(tools["drive_forward"], {"distance": 1.0})
    assert (drive["error"], drive["error_code"]) == ("collision ahead", 723)
    # 208 is a planner's code, no constant of NavigateToPose: named by its number.
    navigate = run(tools["navigate_to_pose"], {"x": 1.0, "y": 1.0})
    assert navigate["reason"] == (
        "action server '/navigate_to_pose' aborted the goal: "
        "unlisted error code (error code 208): no path around the sofa"
    )
    for tool in tools.values():
        tool.destroy()


def test_a_navigation_that_succeeded_with_an_error_code_is_a_success(
    node: Any, servers: Any, config: HarnessConfig
) -> None:
    # Nav2 (Kilted on) fills the error code before it decides the status: a goal reached
    # after a failed spin comes back SUCCEEDED with 703. The status decides.
    tools = tools_of(node, config, servers("recovered"))
    navigate = run(tools["navigate_to_pose"], {"x": 1.0, "y": 1.0})
    assert navigate == {"success": True, "result": {}, "run_id": navigate["run_id"]}
    for tool in tools.values():
        tool.destroy()


def test_a_bad_binding_fails_at_start_up_naming_the_field_path(ros_context: Any) -> None:
    from harness_ros.ros.ros_tools import build_ros_tools

    config = load_config(REPO_ROOT / "config" / "robot_nav2.yaml")
    arm = next(t for t in config.tools if t.name == "move_arm_to")
    with spinning_node(ros_context, "preset_startup") as client:
        bad_path = arm.model_copy(
            update={"goal": {**arm.goal, "trajectory.points[0].position": {"arg": "pose"}}}
        )
        bad_path.goal.pop("trajectory.points[0].positions")
        with pytest.raises(
            ToolError,
            match=r"tool 'move_arm_to': goal field 'trajectory\.points\[0\]\.position': "
            r"no such field",
        ):
            build_ros_tools(client, [bad_path])
        bad_value = arm.model_copy(update={"lookups": {"arm_poses": {"home": ["up", 0, 0, 0, 0, 0]}}})
        with pytest.raises(
            ToolError,
            match=r"tool 'move_arm_to': field 'trajectory\.points\[0\]\.positions\[0\]': "
            r"expected a number",
        ):
            build_ros_tools(client, [bad_value])
