"""VGA best-effort frames between two processes while the subscriber is starved of CPU:
plain ``LARGE_DATA`` (the baseline, measured in the same run) against the harness's
``LARGE_DATA_TRANSPORTS`` (a 1 MB maximum message, 4 MB socket buffers).

Each pair: a publisher process sends 640x480 rgb8 frames (921 KB) at 10 Hz; a subscriber
process at ``nice 19`` counts what arrives in 3 s while busy loops take every core. The
number that matters is how many pairs received nothing at all: that is a camera that
looks dead to the harness although its topic is there.

    .venv/bin/python bench/bench_large_frames.py [--quick]
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import base_parser, headline, machine_line, print_table, private_ros_env

from harness_ros.dds import LARGE_DATA_TRANSPORTS

WINDOW_S = 3.0
RATE_HZ = 10.0

PUBLISHER = """
import sys, time, rclpy, numpy as np
from rclpy.qos import qos_profile_sensor_data
from sensor_msgs.msg import Image
rclpy.init()
node = rclpy.create_node("bench_large_frames_publisher")
publisher = node.create_publisher(Image, "/bench/large_frames", qos_profile_sensor_data)
frame = Image(height=480, width=640, encoding="rgb8", step=1920)
frame.data = np.full(480 * 640 * 3, 90, np.uint8).tobytes()
end = time.monotonic() + float(sys.argv[1])
while time.monotonic() < end:
    frame.header.stamp = node.get_clock().now().to_msg()
    publisher.publish(frame)
    time.sleep(1.0 / float(sys.argv[2]))  # the publisher's own rate, not a wait for ROS
"""

SUBSCRIBER = """
import sys, time, rclpy
from rclpy.qos import qos_profile_sensor_data
from sensor_msgs.msg import Image
rclpy.init()
node = rclpy.create_node("bench_large_frames_subscriber")
received = [0]
node.create_subscription(Image, "/bench/large_frames", lambda _: received.__setitem__(0, received[0] + 1),
                         qos_profile_sensor_data)
deadline = time.monotonic() + 15.0
while node.count_publishers("/bench/large_frames") == 0 and time.monotonic() < deadline:
    rclpy.spin_once(node, timeout_sec=0.05)
end = time.monotonic() + float(sys.argv[1])
while time.monotonic() < end:
    rclpy.spin_once(node, timeout_sec=0.05)
print(received[0])
"""


def one_pair(env: dict[str, str]) -> int:
    publisher = subprocess.Popen(
        [sys.executable, "-c", PUBLISHER, str(WINDOW_S + 4.0), str(RATE_HZ)], env=env
    )
    try:
        out = subprocess.run(
            ["nice", "-n", "19", sys.executable, "-c", SUBSCRIBER, str(WINDOW_S)],
            env=env,
            capture_output=True,
            text=True,
            timeout=180,
            check=True,
        ).stdout
        return int(out.split()[-1])
    finally:
        publisher.kill()
        publisher.wait()


def main() -> int:
    args = base_parser(__doc__.splitlines()[0]).parse_args()
    pairs = 4 if args.quick else 8
    print(machine_line())
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(os.cpu_count() or 2)]
    results: dict[str, list[int]] = {}
    try:
        with private_ros_env() as env:
            for label, transports in (
                ("LARGE_DATA", "LARGE_DATA"),
                (LARGE_DATA_TRANSPORTS, LARGE_DATA_TRANSPORTS),
            ):
                results[label] = [
                    one_pair({**env, "FASTDDS_BUILTIN_TRANSPORTS": transports}) for _ in range(pairs)
                ]
    finally:
        for process in busy:
            process.kill()
            process.wait()
    expected = int(WINDOW_S * RATE_HZ)
    rows = [
        [
            label,
            " ".join(str(n) for n in counts),
            sum(1 for n in counts if n == 0),
            f"{sum(counts)}/{expected * pairs}",
        ]
        for label, counts in results.items()
    ]
    print_table(["FASTDDS_BUILTIN_TRANSPORTS", "frames per pair", "pairs with 0", "total"], rows)
    baseline_dead = sum(1 for n in results["LARGE_DATA"] if n == 0)
    ours_dead = sum(1 for n in results[LARGE_DATA_TRANSPORTS] if n == 0)
    headline(
        "pairs that received no frame",
        f"{ours_dead}/{pairs} with {LARGE_DATA_TRANSPORTS} vs {baseline_dead}/{pairs} with plain LARGE_DATA",
        "no pair without a frame",
        ours_dead == 0,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
