"""Fault tests: a camera or the scanner stops publishing mid-task (real publisher processes).

The camera's view must turn stale in the next observation (labelled, never passed off
as current); when the scan stops, base motion must be blocked by the safety filter
that reads RosObservationSource.clearance.
"""

from __future__ import annotations

import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.waiting import wait_for

pytest.importorskip("rclpy")

from harness_ros.config import ObservationConfig, SafetyConfig
from harness_ros.context.observation import observation_message
from harness_ros.hooks import BaseMotionSafetyFilter, HookAction
from harness_ros.tools.contracts import ToolSpec

pytestmark = pytest.mark.ros

PUBLISHER = Path(__file__).resolve().parent / "support" / "fault_sensor_publisher.py"
CAMERA_TOPIC, SCAN_TOPIC = "/cam/front/image", "/scan"
MAX_AGE_S = 0.4
NAVIGATE = ToolSpec("navigate_to", "drive to a named place", base_motion=True)
LOOK = ToolSpec("look", "look around")


class Publisher:
    def __init__(self, topic: str, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(PUBLISHER), "--topics", topic, "--rate", "20"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        assert self.proc.stdout.readline().strip() == "publishing", self.proc.stderr

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.communicate(timeout=10)


@pytest.fixture
def sensors(ros_context: Any, ros_env: dict[str, str]) -> Iterator[tuple[Any, dict[str, Publisher]]]:
    from rclpy.executors import MultiThreadedExecutor
    from rclpy.node import Node

    from harness_ros.ros.observations import RosObservationSource

    node = Node("fault_observer", context=ros_context)
    config = ObservationConfig.model_validate(
        {
            "views": {"front": {"topic": CAMERA_TOPIC, "max_age_s": MAX_AGE_S}},
            "clearance": {"scan_topic": SCAN_TOPIC, "max_age_s": MAX_AGE_S},
        }
    )
    source = RosObservationSource(node, config, footprint_radius_m=0.3)
    executor = MultiThreadedExecutor(context=ros_context)
    executor.add_node(node)
    spinner = threading.Thread(target=executor.spin, daemon=True)
    spinner.start()
    publishers = {CAMERA_TOPIC: Publisher(CAMERA_TOPIC, ros_env), SCAN_TOPIC: Publisher(SCAN_TOPIC, ros_env)}
    try:
        assert source.wait_for_messages(20.0), f"no sensor data: {source.stats()}"
        yield source, publishers
    finally:
        for publisher in publishers.values():
            publisher.kill()
        executor.remove_node(node)
        executor.shutdown(timeout_sec=2.0)
        source.destroy()
        node.destroy_node()


def test_camera_stops_mid_task_the_view_turns_stale_in_the_next_observation(sensors: Any) -> None:
    source, publishers = sensors
    assert wait_for(lambda: not source.observe().view("front").stale, 10.0)
    safety = BaseMotionSafetyFilter(SafetyConfig(), source.clearance)

    publishers[CAMERA_TOPIC].kill()
    killed_at = source.now()
    assert wait_for(lambda: source.observe().view("front").stale, MAX_AGE_S + 5.0)

    observation = source.observe()
    front = observation.view("front")
    assert front is not None and front.stale and not front.missing
    assert front.age_s is not None and front.age_s > MAX_AGE_S
    assert front.stamp is not None and front.stamp <= killed_at
    assert front.freshness_label().startswith("STALE (age ")
    text = observation_message(observation)["content"][0]["text"]
    assert f"- front: {front.width}x{front.height}, STALE (age " in text
    # the scanner still publishes: clearance is fresh and base motion is still allowed
    assert observation.clearance is not None and not observation.clearance.stale
    assert safety.before_execution(NAVIGATE, {}, observation).action is HookAction.PASS


def test_scan_stops_mid_task_base_motion_is_blocked(sensors: Any) -> None:
    source, publishers = sensors
    safety = BaseMotionSafetyFilter(SafetyConfig(), source.clearance)
    assert wait_for(lambda: safety.before_execution(NAVIGATE, {}, None).action is HookAction.PASS, 10.0)

    publishers[SCAN_TOPIC].kill()
    assert wait_for(lambda: source.clearance().stale, MAX_AGE_S + 5.0)

    decision = safety.before_execution(NAVIGATE, {}, None)
    assert decision.action is HookAction.BLOCK
    assert "base clearance reading is stale" in decision.reason
    assert safety.before_execution(LOOK, {}, None).action is HookAction.PASS  # only base motion stops
    text = observation_message(source.observe())["content"][0]["text"]
    assert re.search(r"\(STALE, age [0-9.]+ s: base motion will be blocked\)", text)
    # The camera still publishes: its view turns (or stays) fresh while the scan is stale.
    assert wait_for(lambda: not source.observe().view("front").stale, 5.0)
