"""The start-up graph check's messages point at the cause: a missing topic comes with the
graph's near-miss names, a server bound by two tools is reported once, and a graph where
nothing configured is visible names the discovery variables of this process.

The publisher is test/support/fault_sensor_publisher.py in its own process.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("rclpy")

from support.spinning_node import spinning_node

from harness_ros.config import HarnessConfig

pytestmark = pytest.mark.ros

PUBLISHER = Path(__file__).resolve().parent / "support" / "fault_sensor_publisher.py"
DISCOVERY_S = 20.0


def test_near_misses_are_pure_name_logic() -> None:
    from harness_ros.ros.graph_check import near_misses

    assert near_misses("/scan", ["/scan_raw", "/odom", "/tf"]) == ("/scan_raw",)
    assert near_misses("/front/scan", ["/robot1/front/scan", "/cmd_vel"]) == ("/robot1/front/scan",)
    assert near_misses("/scan", ["/odom", "/scan"]) == ()  # the name itself is no near miss


def test_missing_topic_lists_near_misses_and_a_shared_server_is_reported_once(
    ros_context: Any, ros_env: dict[str, str]
) -> None:
    from harness_ros.ros.graph_check import check_graph

    publisher = subprocess.Popen(
        [sys.executable, str(PUBLISHER), "--topics", "/scan", "--rate", "5"],
        env=ros_env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
    )
    drive = {"action": "/drive_on_heading", "type": "nav2_msgs/action/DriveOnHeading"}
    config = HarnessConfig.model_validate(
        {
            "observations": {"clearance": {"scan_topic": "/scan_raw"}},
            "tools": [
                {"name": "drive_forward", "description": "forward", **drive},
                {"name": "drive_backward", "description": "backward", **drive},
            ],
        }
    )
    try:
        with spinning_node(ros_context, "graph_hints_test") as node:
            deadline = time.monotonic() + DISCOVERY_S
            pause = threading.Event()
            while node.count_publishers("/scan") == 0:
                assert time.monotonic() < deadline, "the publisher process was not discovered"
                pause.wait(0.05)
            report = check_graph(node, config, timeout_s=0.5)
    finally:
        publisher.send_signal(signal.SIGINT)
        try:
            publisher.wait(timeout=10)
        except subprocess.TimeoutExpired:
            publisher.kill()
            publisher.wait(timeout=5)

    assert report.missing_actions == ("/drive_on_heading",)  # two tools, one server, once
    assert report.checked == 2
    problems = report.problems()
    assert problems == [
        "no publisher on topic '/scan_raw' (similar in the graph: '/scan')",
        "no action server '/drive_on_heading'",
    ]
    # the publisher's node is visible: a name problem, not a discovery one
    assert report.other_nodes is not None and "/fault_sensor_publisher" in report.other_nodes
    assert not report.nothing_visible
    assert "no configured endpoint is present, but " in report.describe()
    assert "/fault_sensor_publisher" in report.describe()
    assert "not even another node" not in report.describe()


def test_nothing_visible_names_the_discovery_variables(
    ros_context: Any, ros_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from harness_ros.ros.graph_check import check_graph

    monkeypatch.setenv("ROS_LOCALHOST_ONLY", "1")  # only read for the message here
    config = HarnessConfig.model_validate(
        {
            "observations": {"views": {"front": {"topic": "/cam/front/image"}}},
            "tools": [
                {"name": "pick", "description": "pick", "action": "/pick", "type": "nav2_msgs/action/Spin"}
            ],
        }
    )
    with spinning_node(ros_context, "graph_nothing_test") as node:
        report = check_graph(node, config, timeout_s=0.3)
    # conftest gives each test a domain the previous ones did not have and frees what a
    # test left in reference cycles; a node seen here was left on this domain by another
    # test (a process not reaped, a node not destroyed): name it
    assert report.other_nodes == (), (
        f"other nodes on ROS_DOMAIN_ID={ros_env['ROS_DOMAIN_ID']}: {report.other_nodes}, "
        "left there by an earlier test?"
    )
    assert report.nothing_visible
    text = report.describe()
    assert "nothing is visible, not even another node: likely this process does not discover" in text
    assert f"ROS_DOMAIN_ID={ros_env['ROS_DOMAIN_ID']}" in text
    assert "ROS_LOCALHOST_ONLY=1" in text
    assert "FASTDDS_BUILTIN_TRANSPORTS=LARGE_DATA" in text
    assert "ROS_STATIC_PEERS unset" in text


# ---------------------------------------------------------------------- the poll itself
def test_poll_graph_reads_until_done_pausing_between_reads() -> None:
    from harness_ros.ros.graph_check import poll_graph

    reads = iter([1, 2, 3, 4])
    pauses: list[float] = []
    got = poll_graph(
        lambda: next(reads),
        lambda value: value == 3,
        deadline=time.monotonic() + 60,
        interval_s=0.2,
        sleep=pauses.append,
    )
    assert got == 3
    assert pauses == [0.2, 0.2]


def test_poll_graph_reads_once_past_the_deadline_and_never_sleeps_beyond_it() -> None:
    from harness_ros.ros.graph_check import poll_graph

    pauses: list[float] = []
    assert poll_graph(lambda: "x", lambda _: False, deadline=time.monotonic() - 1, sleep=pauses.append) == "x"
    assert pauses == []

    reads: list[float] = []
    deadline = time.monotonic() + 0.35

    def timed_sleep(seconds: float) -> None:
        assert seconds <= deadline - time.monotonic() + 1e-3, "paused past the deadline"
        pauses.append(seconds)
        time.sleep(seconds)

    poll_graph(lambda: reads.append(time.monotonic()), lambda _: False, deadline=deadline, sleep=timed_sleep)
    assert len(reads) >= 3 and reads[-1] <= deadline + 0.2
    assert all(pause <= 0.1 for pause in pauses)


def test_the_graph_check_waits_with_the_named_poll_not_an_unset_event() -> None:
    source = (Path(__file__).resolve().parents[1] / "harness_ros" / "ros" / "graph_check.py").read_text()
    assert "Event()" not in source, "an unset threading.Event().wait() stands in for a sleep"
    assert "poll_graph(" in source.split("def check_graph", 1)[1]
