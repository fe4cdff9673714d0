"""Minimal reproduction for upstream: RSS of an rclpy process whose subscriptions do nothing.

Needs only rclpy and sensor_msgs (no harness_ros code), so it can be attached to an
rclpy or Fast DDS report as is:

    ROS_DOMAIN_ID=57 FASTDDS_BUILTIN_TRANSPORTS=LARGE_DATA \\
        python repro_rclpy_rss.py --duration 1800 [--topics 4] [--rate 30] [--single] [--raw]

The script starts itself a second time as the publisher (``--publish``): ``--topics``
topics of 640x480 rgb8 sensor_msgs/Image at ``--rate`` Hz, best-effort (sensor data QoS).
This process subscribes to all of them with callbacks that return at once, spins a
MultiThreadedExecutor (``--single``: SingleThreadedExecutor) and prints its RSS every
10 s, then the least-squares slope of each third of the run. ``--raw`` subscribes with
``raw=True`` (serialized bytes, no Python message). Nothing is kept between callbacks,
so a slope that stays above zero third after third is memory that rclpy, rmw or the
middleware holds.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import threading
import time

WIDTH, HEIGHT = 640, 480


def rss_mb() -> float:
    with open("/proc/self/status", encoding="utf-8") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return float("nan")


def slope_mb_per_min(samples: list[tuple[float, float]]) -> float:
    n = len(samples)
    if n < 2:
        return 0.0
    mean_t = sum(t for t, _ in samples) / n
    mean_r = sum(r for _, r in samples) / n
    denominator = sum((t - mean_t) ** 2 for t, _ in samples) or 1.0
    return 60.0 * sum((t - mean_t) * (r - mean_r) for t, r in samples) / denominator


def publish(topics: int, rate_hz: float) -> None:
    import rclpy
    from rclpy.qos import qos_profile_sensor_data
    from sensor_msgs.msg import Image

    rclpy.init()
    node = rclpy.create_node("rss_repro_publisher")
    publishers = [
        node.create_publisher(Image, f"/rss_repro/image_{i}", qos_profile_sensor_data) for i in range(topics)
    ]
    frame = Image(height=HEIGHT, width=WIDTH, encoding="rgb8", step=WIDTH * 3)
    frame.data = bytes(WIDTH * HEIGHT * 3)

    def tick() -> None:
        frame.header.stamp = node.get_clock().now().to_msg()
        for publisher in publishers:
            publisher.publish(frame)

    node.create_timer(1.0 / rate_hz, tick)
    print("publishing", flush=True)
    try:
        rclpy.spin(node)
    except KeyboardInterrupt:
        pass
    finally:
        rclpy.try_shutdown()


def subscribe(args: argparse.Namespace) -> int:
    import rclpy
    from rclpy.callback_groups import ReentrantCallbackGroup
    from rclpy.executors import MultiThreadedExecutor, SingleThreadedExecutor
    from rclpy.qos import qos_profile_sensor_data
    from sensor_msgs.msg import Image

    command = [sys.executable, __file__, "--publish", "--topics", str(args.topics), "--rate", str(args.rate)]
    publisher = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    assert publisher.stdout is not None
    if publisher.stdout.readline().strip() != "publishing":
        raise SystemExit("the publisher did not start")
    rclpy.init()
    node = rclpy.create_node("rss_repro_subscriber")
    group = ReentrantCallbackGroup()
    received = [0]

    def ignore(_msg: object) -> None:
        received[0] += 1  # the GIL makes this good enough for a rate

    for i in range(args.topics):
        topic = f"/rss_repro/image_{i}"
        node.create_subscription(
            Image, topic, ignore, qos_profile_sensor_data, callback_group=group, raw=args.raw
        )
    executor = SingleThreadedExecutor() if args.single else MultiThreadedExecutor(num_threads=4)
    executor.add_node(node)
    threading.Thread(target=executor.spin, daemon=True).start()
    print(
        f"rmw {os.environ.get('RMW_IMPLEMENTATION', 'default')}, "
        f"FASTDDS_BUILTIN_TRANSPORTS {os.environ.get('FASTDDS_BUILTIN_TRANSPORTS', 'unset')}, "
        f"MALLOC_ARENA_MAX {os.environ.get('MALLOC_ARENA_MAX', 'unset')}, "
        f"{'single' if args.single else 'multi'}-threaded executor, raw={args.raw}"
    )
    samples: list[tuple[float, float]] = []
    start = time.monotonic()
    try:
        while (elapsed := time.monotonic() - start) < args.duration:
            samples.append((elapsed, rss_mb()))
            rate = received[0] / max(elapsed, 1.0)
            print(f"{elapsed:7.0f} s  RSS {samples[-1][1]:7.1f} MB  frames/s {rate:6.1f}")
            time.sleep(min(10.0, max(0.0, args.duration - elapsed)))
    finally:
        executor.shutdown(timeout_sec=2.0)
        node.destroy_node()
        rclpy.try_shutdown()
        publisher.send_signal(signal.SIGINT)
        publisher.wait(timeout=10)
    third = args.duration / 3
    for index in range(3):
        window = [(t, r) for t, r in samples if index * third <= t <= (index + 1) * third]
        print(
            f"slope {index * third:.0f}-{(index + 1) * third:.0f} s: {slope_mb_per_min(window):+.2f} MB/min"
        )
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=600.0, help="seconds (default 600)")
    parser.add_argument("--topics", type=int, default=4)
    parser.add_argument("--rate", type=float, default=30.0, help="frames per second per topic")
    parser.add_argument("--single", action="store_true", help="SingleThreadedExecutor")
    parser.add_argument("--raw", action="store_true", help="subscribe with raw=True")
    parser.add_argument("--publish", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.publish:
        publish(args.topics, args.rate)
        return 0
    return subscribe(args)


if __name__ == "__main__":
    sys.exit(main())
