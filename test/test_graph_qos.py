"""The start-up graph check compares QoS: a reliable subscription never matches a
best-effort publisher, so the check names the topic, the publisher and the config key.

The publisher is test/support/fault_sensor_publisher.py in its own process (best effort,
like most sensor drivers).
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


def config(scan_qos: str) -> HarnessConfig:
    return HarnessConfig.model_validate(
        {
            "observations": {
                "views": {"front": {"topic": "/cam/front/image"}},
                "clearance": {"scan_topic": "/scan", "qos": scan_qos},
            }
        }
    )


def test_reliable_subscription_against_a_best_effort_publisher_is_reported(
    ros_context: Any, ros_env: dict[str, str]
) -> None:
    from harness_ros.ros.graph_check import QosMismatch, check_graph

    publisher = subprocess.Popen(
        [sys.executable, str(PUBLISHER), "--topics", "/scan", "/cam/front/image", "--rate", "5"],
        env=ros_env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
    )
    try:
        with spinning_node(ros_context, "graph_qos_test") as node:
            # wait for discovery of both publishers, then check
            deadline = time.monotonic() + DISCOVERY_S
            pause = threading.Event()
            while node.count_publishers("/scan") == 0 or node.count_publishers("/cam/front/image") == 0:
                assert time.monotonic() < deadline, "the publisher process was not discovered"
                pause.wait(0.05)

            matching = check_graph(node, config("sensor_data"), timeout_s=DISCOVERY_S)
            assert matching.ok, matching.describe()

            report = check_graph(node, config("reliable"), timeout_s=0.5)
            assert not report.ok
            assert report.incompatible_qos == (
                QosMismatch("/scan", "observations.clearance.qos", ("/fault_sensor_publisher",)),
            )
            assert report.missing_topics == () and report.wrong_type_topics == ()
            assert (
                "topic '/scan' is published best effort by /fault_sensor_publisher: "
                "observations.clearance.qos is 'reliable'"
            ) in report.describe()
    finally:
        publisher.send_signal(signal.SIGINT)
        try:
            publisher.wait(timeout=10)
        except subprocess.TimeoutExpired:
            publisher.kill()
            publisher.wait(timeout=5)
