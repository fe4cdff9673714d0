"""Sensor load for bench_ingest.py (its own process): 3 x VGA rgb8 + VGA 16UC1 depth at
``--camera-hz`` and a 360-beam LaserScan at ``--scan-hz``, sensor-data QoS.

    python bench/_ingest_publisher.py [--camera-hz 30] [--scan-hz 10]

Prints ``publishing`` once the publishers exist, then runs until SIGINT/SIGTERM and
prints one JSON line with the number of messages published per topic.
"""

from __future__ import annotations

import argparse
import json
import math
import signal
import sys
from typing import Any

import numpy as np

VIEW_TOPICS = {
    "front": "/bench/front/image_raw",
    "torso": "/bench/torso/image_raw",
    "wrist": "/bench/wrist/image_raw",
}
DEPTH_TOPIC = "/bench/depth/image_raw"
SCAN_TOPIC = "/bench/scan"
WIDTH, HEIGHT = 640, 480


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--camera-hz", type=float, default=30.0)
    parser.add_argument("--scan-hz", type=float, default=10.0)
    args = parser.parse_args(argv)

    import rclpy
    from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
    from rclpy.qos import qos_profile_sensor_data
    from sensor_msgs.msg import Image, LaserScan

    rng = np.random.default_rng(3)
    counts: dict[str, int] = {}
    rclpy.init()
    node = rclpy.create_node("bench_ingest_publisher")
    camera: list[tuple[Any, Any, str]] = []
    for name, topic in VIEW_TOPICS.items():
        msg = Image(height=HEIGHT, width=WIDTH, encoding="rgb8", step=WIDTH * 3)
        msg.header.frame_id = f"{name}_camera"
        msg.data = rng.integers(0, 255, (HEIGHT, WIDTH, 3), dtype=np.uint8).tobytes()
        camera.append((msg, node.create_publisher(Image, topic, qos_profile_sensor_data), topic))
    depth = Image(height=HEIGHT, width=WIDTH, encoding="16UC1", step=WIDTH * 2)
    depth.data = rng.integers(300, 5000, (HEIGHT, WIDTH), dtype=np.uint16).tobytes()
    camera.append((depth, node.create_publisher(Image, DEPTH_TOPIC, qos_profile_sensor_data), DEPTH_TOPIC))
    increment = 2 * math.pi / 360
    scan = LaserScan(
        angle_min=-math.pi,
        angle_max=-math.pi + 359 * increment,
        angle_increment=increment,
        range_min=0.1,
        range_max=10.0,
        ranges=[2.0] * 360,
    )
    scan_pub = node.create_publisher(LaserScan, SCAN_TOPIC, qos_profile_sensor_data)

    def publish_camera() -> None:
        stamp = node.get_clock().now().to_msg()
        for msg, publisher, topic in camera:
            msg.header.stamp = stamp
            publisher.publish(msg)
            counts[topic] = counts.get(topic, 0) + 1

    def publish_scan() -> None:
        scan.header.stamp = node.get_clock().now().to_msg()
        scan_pub.publish(scan)
        counts[SCAN_TOPIC] = counts.get(SCAN_TOPIC, 0) + 1

    node.create_timer(1.0 / args.camera_hz, publish_camera)
    node.create_timer(1.0 / args.scan_hz, publish_scan)
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    print("publishing", flush=True)
    try:
        executor.spin()
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        print(json.dumps(counts), flush=True)
        node.destroy_node()
        rclpy.try_shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
