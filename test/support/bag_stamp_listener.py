"""Test helper process: print what a live replay delivers, one JSON line per message.

    python bag_stamp_listener.py IMAGE_TOPIC INSTRUCTION_TOPIC EXPECTED_FRAMES TIMEOUT_S

Prints ``{"ready": true}`` once subscribed, then ``{"image": [sec, nanosec]}`` per
frame, ``{"instruction": text}`` per instruction and ``{"clock": [sec, nanosec]}`` for
the first /clock message; exits when the frames and one instruction arrived or at
the timeout (exit code 2).
"""

from __future__ import annotations

import json
import sys
import threading

import rclpy
from rclpy.executors import SingleThreadedExecutor
from rclpy.qos import QoSProfile, ReliabilityPolicy
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import Image
from std_msgs.msg import String


def main() -> int:
    image_topic, instruction_topic, expected, timeout_s = (
        sys.argv[1],
        sys.argv[2],
        int(sys.argv[3]),
        float(sys.argv[4]),
    )
    done = threading.Event()
    counts = {"image": 0, "instruction": 0, "clock": 0}

    def emit(record: dict[str, object]) -> None:
        print(json.dumps(record), flush=True)

    def check() -> None:
        if counts["image"] >= expected and counts["instruction"] >= 1:
            done.set()

    def on_image(msg: Image) -> None:
        counts["image"] += 1
        emit({"image": [msg.header.stamp.sec, msg.header.stamp.nanosec]})
        check()

    def on_instruction(msg: String) -> None:
        counts["instruction"] += 1
        emit({"instruction": msg.data})
        check()

    def on_clock(msg: Clock) -> None:
        counts["clock"] += 1
        if counts["clock"] == 1:
            emit({"clock": [msg.clock.sec, msg.clock.nanosec]})

    with rclpy.init():
        node = rclpy.create_node("bag_stamp_listener")
        reliable = QoSProfile(depth=50, reliability=ReliabilityPolicy.RELIABLE)
        node.create_subscription(Image, image_topic, on_image, reliable)
        node.create_subscription(String, instruction_topic, on_instruction, 10)
        node.create_subscription(Clock, "/clock", on_clock, 10)
        executor = SingleThreadedExecutor()
        executor.add_node(node)
        spinner = threading.Thread(target=executor.spin, daemon=True)
        spinner.start()
        emit({"ready": True})
        ok = done.wait(timeout_s)
        executor.shutdown(timeout_sec=5.0)
        spinner.join(5.0)
        node.destroy_node()
    return 0 if ok else 2


if __name__ == "__main__":
    sys.exit(main())
