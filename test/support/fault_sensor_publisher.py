"""Publish a subset of frame_publisher's scene, so a test can stop one sensor at a time.

    python test/support/fault_sensor_publisher.py --topics /cam/front/image /scan [--rate 20]

Same messages, QoS and stamping as frame_publisher.py (stamps are the publisher's
clock), restricted to ``--topics``. Prints ``publishing`` once the publishers exist;
runs until killed.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import frame_publisher


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--topics", nargs="+", required=True, help="topics of frame_publisher to publish")
    parser.add_argument("--rate", type=float, default=20.0, help="messages per second per topic")
    args = parser.parse_args(argv)

    import rclpy
    from rclpy.executors import ExternalShutdownException
    from rclpy.qos import qos_profile_sensor_data

    try:
        with rclpy.init():
            node = rclpy.create_node("fault_sensor_publisher")
            chosen = [
                (msg, topic) for msg, topic in frame_publisher._build_messages() if topic in args.topics
            ]
            unknown = set(args.topics) - {topic for _, topic in chosen}
            if unknown:
                print(f"unknown topics {sorted(unknown)}", file=sys.stderr)
                return 2
            outgoing = [
                (msg, node.create_publisher(type(msg), topic, qos_profile_sensor_data))
                for msg, topic in chosen
            ]

            def publish() -> None:
                stamp = node.get_clock().now().to_msg()
                for msg, publisher in outgoing:
                    msg.header.stamp = stamp
                    publisher.publish(msg)

            node.create_timer(1.0 / args.rate, publish)
            print("publishing", flush=True)
            rclpy.spin(node)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
