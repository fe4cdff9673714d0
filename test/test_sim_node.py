"""The sim_robot node in its own process, driven by a real action client over DDS."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from support.processes import stop_process
from support.waiting import wait_on

pytest.importorskip("harness_sim_msgs", reason="build it first: scripts/build_interfaces.sh .venv")

pytestmark = pytest.mark.ros

WAIT_S = 20.0


@pytest.fixture
def sim_process(request: pytest.FixtureRequest, ros_env: dict[str, str]) -> Iterator[subprocess.Popen[str]]:
    """sim_robot in its own process; ``time_scale`` (indirect param) defaults to 10x real time."""
    time_scale = float(getattr(request, "param", 10.0))
    command = [
        sys.executable,
        "-m",
        "harness_ros_sim.ros.sim.node",
        "--ros-args",
        "-p", f"time_scale:={time_scale}",
        "-p", "image_width:=320",
        "-p", "image_height:=240",
        "-p", "rate_hz:=5.0",
        "-p", "seed:=1",
    ]  # fmt: skip
    process = subprocess.Popen(
        command, env=ros_env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    try:
        yield process
    finally:
        stop_process(process)


class _Client:
    """Action clients and subscriptions on one node, spun by a background executor."""

    def __init__(self, context: Any) -> None:
        from harness_sim_msgs.action import NavigateTo, PickObject
        from rclpy.action import ActionClient
        from rclpy.executors import MultiThreadedExecutor
        from rclpy.node import Node
        from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
        from sensor_msgs.msg import Image, LaserScan
        from std_msgs.msg import String

        self.node = Node("sim_test_client", context=context)
        self.navigate = ActionClient(self.node, NavigateTo, "/sim/navigate_to")
        self.pick = ActionClient(self.node, PickObject, "/sim/pick_object")
        self.NavigateTo, self.PickObject = NavigateTo, PickObject
        self.images: dict[str, Any] = {}
        self.got_sensors = threading.Event()
        self.truth: dict[str, Any] = {}
        self.truth_changed = threading.Condition()
        for topic in ("/sim/front/image_raw", "/sim/depth/image_raw"):
            self.node.create_subscription(Image, topic, lambda m, t=topic: self._sensor(t, m), 1)
        self.node.create_subscription(LaserScan, "/sim/scan", lambda m: self._sensor("/sim/scan", m), 1)
        state_qos = QoSProfile(
            depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL
        )
        self.node.create_subscription(String, "/sim/ground_truth", self._state, state_qos)
        self.executor = MultiThreadedExecutor(num_threads=2, context=context)
        self.executor.add_node(self.node)
        self.thread = threading.Thread(target=self.executor.spin, daemon=True)
        self.thread.start()

    def _sensor(self, topic: str, message: Any) -> None:
        self.images.setdefault(topic, message)
        if len(self.images) == 3:
            self.got_sensors.set()

    def _state(self, message: Any) -> None:
        with self.truth_changed:
            self.truth = json.loads(message.data)
            self.truth_changed.notify_all()

    def wait_truth(self, predicate: Any, timeout: float = WAIT_S) -> dict[str, Any]:
        assert wait_on(self.truth_changed, lambda: bool(self.truth) and predicate(self.truth), timeout)
        with self.truth_changed:
            return self.truth

    def run_goal(self, client: Any, goal: Any, feedback: list[Any] | None = None) -> tuple[int, Any]:
        accepted = threading.Event()
        send = client.send_goal_async(
            goal, feedback_callback=feedback.append if feedback is not None else None
        )
        send.add_done_callback(lambda _f: accepted.set())
        assert accepted.wait(WAIT_S), "goal was not answered"
        handle = send.result()
        assert handle.accepted
        done = threading.Event()
        result = handle.get_result_async()
        result.add_done_callback(lambda _f: done.set())
        assert done.wait(WAIT_S), "no result"
        return result.result().status, result.result().result

    def close(self) -> None:
        self.executor.shutdown(timeout_sec=5)
        self.navigate.destroy()
        self.pick.destroy()
        self.node.destroy_node()


@pytest.fixture
def client(ros_context: Any, sim_process: subprocess.Popen[str]) -> Iterator[_Client]:
    c = _Client(ros_context)
    try:
        yield c
    finally:
        c.close()


def test_pick_fails_out_of_reach_then_approach_and_pick_succeed(
    client: _Client, sim_process: subprocess.Popen[str]
) -> None:
    from action_msgs.msg import GoalStatus

    for action in (client.navigate, client.pick):
        if not action.wait_for_server(timeout_sec=WAIT_S):
            sim_process.terminate()
            pytest.fail(f"{action._action_name} did not appear; sim output:\n{sim_process.communicate()[0]}")
    assert client.got_sensors.wait(WAIT_S), f"sensor topics missing: got {sorted(client.images)}"
    front = client.images["/sim/front/image_raw"]
    assert (front.width, front.height, front.encoding) == (320, 240, "rgb8")
    assert front.header.frame_id == "front_camera_optical_frame"
    assert front.header.stamp.sec > 0 and len(front.data) == 320 * 240 * 3
    depth = client.images["/sim/depth/image_raw"]
    assert (depth.encoding, depth.step) == ("16UC1", 640)
    scan = client.images["/sim/scan"]
    assert scan.header.frame_id == "base_link" and len(scan.ranges) == 360
    assert client.wait_truth(lambda t: t["gripper"]["holding"] is None)["world"] == "apartment"

    status, result = client.run_goal(client.pick, client.PickObject.Goal(object_id="red_cup"))
    assert status == GoalStatus.STATUS_ABORTED
    assert not result.success
    assert "out of reach" in result.message and "> 0.75 m" in result.message

    feedback: list[Any] = []
    status, result = client.run_goal(
        client.navigate, client.NavigateTo.Goal(target="red_cup"), feedback=feedback
    )
    assert status == GoalStatus.STATUS_SUCCEEDED, result.message
    assert result.success and result.distance_to_target_m <= 0.75
    assert len(feedback) >= 2
    progress = [f.feedback.progress for f in feedback]
    assert progress == sorted(progress) and 0.0 <= progress[0] < 1.0

    status, result = client.run_goal(client.pick, client.PickObject.Goal(object_id="red_cup"))
    assert status == GoalStatus.STATUS_SUCCEEDED, result.message
    assert result.success and result.held_object_id == "red_cup"
    truth = client.wait_truth(lambda t: t["gripper"]["holding"] == "red_cup")
    assert truth["objects"]["red_cup"]["on"] == "gripper"
    assert truth["last_action"]["action"] == "pick_object"


@pytest.mark.parametrize("sim_process", [1.0], indirect=True)  # real time: ~9 s to the doorway
def test_navigation_can_be_cancelled(client: _Client) -> None:
    from action_msgs.msg import GoalStatus

    assert client.navigate.wait_for_server(timeout_sec=WAIT_S)
    first_feedback = threading.Event()
    send = client.navigate.send_goal_async(
        client.NavigateTo.Goal(target="doorway"), feedback_callback=lambda _f: first_feedback.set()
    )
    accepted = threading.Event()
    send.add_done_callback(lambda _f: accepted.set())
    assert accepted.wait(WAIT_S)
    handle = send.result()
    assert first_feedback.wait(WAIT_S)
    cancelled = threading.Event()
    handle.cancel_goal_async().add_done_callback(lambda _f: cancelled.set())
    assert cancelled.wait(WAIT_S)
    done = threading.Event()
    result_future = handle.get_result_async()
    result_future.add_done_callback(lambda _f: done.set())
    assert done.wait(WAIT_S)
    response = result_future.result()
    assert response.status == GoalStatus.STATUS_CANCELED
    assert not response.result.success and response.result.message.startswith("cancelled")
    truth = client.wait_truth(lambda t: t["last_action"] is not None)
    robot = truth["robot"]
    assert math.hypot(robot["x"] - 8.0, robot["y"] - 3.4) > 0.1  # stopped before the doorway
    assert truth["robot"]["busy"] is None
