"""The start-up graph check compares the servers' types by hash, not only by name.

A server built against another distribution's nav2_msgs / control_msgs has the same
action names and type names as this node's, yet DDS never matches a client of one
definition with a server of the other. The servers here are test/support/preset_servers.py
in a process of their own with a distribution's stand-ins (test/support/ros_distros.py);
the graph check runs in this process, whose types are the venv's (Kilted).

A peer without a type hash (ROS 2 Humble's middleware sends none) cannot run here (only
Kilted's rmw installs); its endpoints read as a version-0 hash, so that verdict is
checked on rclpy's own endpoint objects with such a hash.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("rclpy")

from support.processes import ServerProcess
from support.ros_distros import distro_env, missing
from support.spinning_node import spinning_node

from harness_ros.config import load_config

pytestmark = pytest.mark.ros

REPO_ROOT = Path(__file__).resolve().parents[1]
SERVERS = REPO_ROOT / "test" / "support" / "preset_servers.py"
ROBOT = REPO_ROOT / "config" / "robot_nav2.yaml"
CHECK_S = 20.0
"""The graph check's wait: discovery of a whole server process takes up to a few seconds."""

NAV2 = {"/navigate_to_pose", "/drive_on_heading", "/backup", "/spin"}
"""Every Nav2 action of robot_nav2.yaml: Humble's NavigateToPose result is empty and its
behaviours have neither disable_collision_checks nor error codes (docs/robot.md)."""
TRAJECTORY = "/arm_controller/follow_joint_trajectory"
"""Kilted's FollowJointTrajectory feedback adds index and multi_dof_index."""
SERVICES = {"/arm_driver/reset_faults", "/arm_driver/enable_motors"}
"""std_srvs: the same definition everywhere."""


def require(distro: str) -> None:
    why = missing(distro)
    if why is not None:
        pytest.skip(why)


def check_against(distro: str, ros_context: Any, ros_env: dict[str, str], monkeypatch: Any) -> Any:
    from harness_ros.ros.graph_check import check_graph

    # this process binds the grippers as the servers' distribution serves them, so
    # only the definitions differ, not the type names
    monkeypatch.setenv("ROS_DISTRO", distro)
    config = load_config(ROBOT)
    # the tools only: the servers process publishes no camera or scan
    config = config.model_copy(update={"observations": type(config.observations)()})
    server = ServerProcess("succeed", distro_env(distro, ros_env), script=SERVERS)
    try:
        assert server.wait_for_line("ready", 30), server.output
        with spinning_node(ros_context, "type_hash_test") as node:
            return check_graph(node, config, timeout_s=CHECK_S)
    finally:
        server.stop()


def test_servers_of_another_distros_interfaces_are_reported_per_tool_with_the_fix(
    ros_context: Any, ros_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    require("humble")
    report = check_against("humble", ros_context, ros_env, monkeypatch)

    # by name and type name everything is there ...
    assert not report.missing_actions and not report.wrong_type_actions, report.describe()
    assert not report.missing_services and not report.wrong_type_services, report.describe()
    # ... but the Nav2 and trajectory servers speak other definitions
    assert not report.ok
    mismatched = {m.name: m for m in report.wire_mismatches}
    assert set(mismatched) == {*NAV2, TRAJECTORY}, report.describe()
    assert not SERVICES & set(mismatched)
    assert mismatched["/navigate_to_pose"].part == "get_result reply"  # the goal is the same
    assert mismatched["/spin"].part == "send_goal request"  # disable_collision_checks
    assert mismatched[TRAJECTORY].part == "feedback"
    assert mismatched["/navigate_to_pose"].tools == ("navigate_to_pose", "navigate_to_location")
    assert mismatched["/navigate_to_pose"].nodes == ("/preset_servers",)
    navigate = mismatched["/navigate_to_pose"]
    assert navigate.theirs.startswith("RIHS01_") and navigate.ours.startswith("RIHS01_")
    assert navigate.theirs != navigate.ours

    text = report.describe()
    assert text.startswith("5 of 8 configured endpoints are not usable:"), text  # services are usable
    line = next(problem for problem in report.problems() if "'/navigate_to_pose'" in problem)
    assert line.startswith(
        "the server at '/navigate_to_pose' (tool navigate_to_pose, navigate_to_location) speaks "
        "nav2_msgs/action/NavigateToPose of another definition than this node's: its get_result "
        f"reply has type hash {navigate.theirs} (/preset_servers), this node's {navigate.ours}; "
        "this node's nav2_msgs looks like ROS 2 Kilted (Nav2 1.4"
    ), line
    assert "build this node against the robot's nav2_msgs (docs/robot.md#one-route-per-distribution)" in line
    assert not report.unverified, report.describe()


def test_servers_of_the_same_distros_interfaces_are_clean(
    ros_context: Any, ros_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    report = check_against("kilted", ros_context, ros_env, monkeypatch)
    assert report.ok, report.describe()
    assert report.wire_mismatches == () and report.unverified == () and report.pending == 0
    assert report.notes() == []


# ------------------------------------------------------- peers and nodes without a hash


def endpoint(node_name: str, version: int, value: bytes) -> Any:
    from rclpy.topic_endpoint_info import TopicEndpointInfo
    from rclpy.type_hash import TypeHash

    return TopicEndpointInfo(
        node_name=node_name, node_namespace="/", topic_type_hash=TypeHash(version, value)
    )


def test_a_peer_without_a_type_hash_is_said_to_be_unverifiable() -> None:
    from harness_ros.ros.graph_check import GraphReport, Unverified, WirePart, _hash_of, wire_verdict

    humble = endpoint("nav2_behaviors", 0, bytes(32))  # what a Humble peer's reads as
    assert _hash_of(humble) is None
    assert _hash_of(endpoint("x", 1, bytes.fromhex("ab" * 32))) == "RIHS01_" + "ab" * 32

    own = {
        "std_srvs/srv/Trigger_Request": "RIHS01_" + "11" * 32,
        "std_srvs/srv/Trigger_Response": "RIHS01_" + "22" * 32,
    }
    parts = [
        WirePart("request", "_Request", (("/driver", _hash_of(humble)),), request_reply=True),
        WirePart("reply", "_Response", (("/driver", None),), request_reply=True),
    ]
    verdict = wire_verdict("service", "/reset", "std_srvs/srv/Trigger", parts, own)
    assert isinstance(verdict, Unverified)
    assert verdict.why.startswith("the peer's endpoints carry no type hash (ROS 2 Humble sends none)")
    report = GraphReport(unverified=(verdict,), checked=1)
    assert report.ok  # a note, not a problem
    assert report.notes() == [f"the types of service '/reset' cannot be verified: {verdict.why}"]
    assert "cannot be verified" in report.describe()

    # this node built by Humble: no type description of its own
    hashed = [WirePart(p.part, p.suffix, (("/driver", "RIHS01_" + "33" * 32),), True) for p in parts]
    own_none = wire_verdict("service", "/reset", "std_srvs/srv/Trigger", hashed, {})
    assert isinstance(own_none, Unverified) and own_none.why.startswith(
        "this node's interface package has no type"
    )
    # only the request seen yet: the check reads the graph again before it says so
    request = WirePart("request", "_Request", (("/driver", own["std_srvs/srv/Trigger_Request"]),), True)
    partial = wire_verdict(
        "service", "/reset", "std_srvs/srv/Trigger", [request, WirePart("reply", "_Response", (), True)], own
    )
    assert isinstance(partial, Unverified) and partial.why.startswith("only part of the server's endpoints")
    assert GraphReport(unverified=(partial,), pending=1).pending == 1


def test_this_nodes_hashes_come_from_the_installed_type_description() -> None:
    from harness_ros.ros.graph_check import own_type_hashes

    hashes = own_type_hashes("nav2_msgs/action/NavigateToPose")
    assert set(hashes) >= {
        "nav2_msgs/action/NavigateToPose_SendGoal_Request",
        "nav2_msgs/action/NavigateToPose_GetResult_Response",
        "nav2_msgs/action/NavigateToPose_FeedbackMessage",
    }
    assert all(value.startswith("RIHS01_") for value in hashes.values())
    assert own_type_hashes("std_srvs/srv/Trigger")["std_srvs/srv/Trigger_Request"].startswith("RIHS01_")
    assert own_type_hashes("no_such_msgs/msg/Nothing") == {}
