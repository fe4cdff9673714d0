"""Freshness of the sim's camera frames as the harness node sees them (the demo's setup).

    .venv/bin/python bench/bench_sim_freshness.py [--quick] [--duration S] [--qos reliable|sensor_data]

Starts ``harness-ros sim`` at 320x240 exactly as ``harness-ros demo`` does (same command,
private ROS_DOMAIN_ID, localhost discovery, Fast DDS LARGE_DATA transport) and subscribes
to its four image topics the way the harness node does: ``qos_for`` of the configured
QoS name (config/sim.yaml says ``reliable``), one reentrant callback group, a
MultiThreadedExecutor with 4 threads. Each callback stores only the newest message.

Reported per topic: receive rate (the sim publishes every camera at ``rate_hz``, 5 Hz),
and the age of the newest stored frame (now - header.stamp), sampled every 20 ms as the
harness would find it when it builds an observation: p50, p95, max. Goal: the front
camera's rate and p95 age match the other cameras (a dropped front frame shows up as
a lower rate and an age near 2 periods).
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from typing import Any

from _common import REPO_ROOT, base_parser, headline, machine_line, print_table, private_ros_env

TOPICS: dict[str, str] = {
    "front": "/sim/front/image_raw",
    "torso": "/sim/torso/image_raw",
    "wrist": "/sim/wrist/image_raw",
    "depth": "/sim/depth/image_raw",
}
SAMPLE_PERIOD_S = 0.02


class Freshness:
    """Newest stamp and a receive count per topic, filled from executor threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.stamps: dict[str, float] = {}
        self.counts: dict[str, int] = dict.fromkeys(TOPICS, 0)

    def storer(self, name: str) -> Any:
        def store(msg: Any) -> None:
            stamp = msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9
            with self._lock:
                self.stamps[name] = stamp
                self.counts[name] += 1

        return store

    def snapshot(self) -> tuple[dict[str, float], dict[str, int]]:
        with self._lock:
            return dict(self.stamps), dict(self.counts)


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def measure(duration_s: float, qos_name: str, env: dict[str, str]) -> dict[str, Any]:
    import rclpy
    from rclpy.callback_groups import ReentrantCallbackGroup
    from rclpy.executors import MultiThreadedExecutor
    from sensor_msgs.msg import Image

    from harness_ros.ros.qos import qos_for
    from harness_ros_sim.demo.runner import sim_command

    sim = subprocess.Popen(
        sim_command(2.0), cwd=REPO_ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    context = rclpy.Context()
    rclpy.init(context=context)
    try:
        node = rclpy.create_node("bench_sim_freshness", context=context)
        fresh = Freshness()
        group = ReentrantCallbackGroup()
        for name, topic in TOPICS.items():
            node.create_subscription(
                Image, topic, fresh.storer(name), qos_for(qos_name), callback_group=group
            )
        executor = MultiThreadedExecutor(num_threads=4, context=context)
        executor.add_node(node)
        spinner = threading.Thread(target=executor.spin, daemon=True)
        spinner.start()
        tick = threading.Event()
        deadline = time.monotonic() + 60.0
        while len(fresh.snapshot()[0]) < len(TOPICS):
            if time.monotonic() > deadline or sim.poll() is not None:
                raise SystemExit(f"no frames on every topic after 60 s: {fresh.snapshot()[1]}")
            tick.wait(0.1)
        tick.wait(2.0)  # warm-up: discovery and the first renders
        ages: dict[str, list[float]] = {name: [] for name in TOPICS}
        _, counts_start = fresh.snapshot()
        start = time.monotonic()
        while time.monotonic() - start < duration_s:
            stamps, _ = fresh.snapshot()
            now = time.time()
            for name, stamp in stamps.items():
                ages[name].append(now - stamp)
            tick.wait(SAMPLE_PERIOD_S)
        wall = time.monotonic() - start
        _, counts_end = fresh.snapshot()
        executor.remove_node(node)
        executor.shutdown(timeout_sec=2.0)
        spinner.join(timeout=5.0)
        node.destroy_node()
    finally:
        rclpy.try_shutdown(context=context)
        sim.terminate()
        try:
            sim.wait(timeout=10.0)
        except subprocess.TimeoutExpired:
            sim.kill()
            sim.wait()
    rates = {name: (counts_end[name] - counts_start[name]) / wall for name in TOPICS}
    return {"rates": rates, "ages": ages, "wall": wall}


def main(argv: list[str] | None = None) -> int:
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, help="seconds measured (default 20, quick 8)")
    parser.add_argument("--qos", default="reliable", help="subscriber QoS name (config/sim.yaml: reliable)")
    args = parser.parse_args(argv)
    duration = args.duration or (8.0 if args.quick else 20.0)
    print(machine_line())
    with private_ros_env() as env:
        print(f"ROS_DOMAIN_ID={env['ROS_DOMAIN_ID']}, subscriber qos {args.qos!r}, {duration:.0f} s")
        result = measure(duration, args.qos, env)
    rows = []
    for name in TOPICS:
        ages = result["ages"][name]
        rows.append(
            [
                name,
                f"{result['rates'][name]:.2f}",
                f"{_percentile(ages, 0.5):.3f}",
                f"{_percentile(ages, 0.95):.3f}",
                f"{max(ages):.3f}",
            ]
        )
    print_table(["topic", "rate /s", "age p50 s", "age p95 s", "age max s"], rows)
    rates, ages = result["rates"], result["ages"]
    others = [name for name in TOPICS if name != "front"]
    worst_other_p95 = max(_percentile(ages[name], 0.95) for name in others)
    front_p95 = _percentile(ages["front"], 0.95)
    headline(
        "front p95 age",
        f"{front_p95:.3f} s (others <= {worst_other_p95:.3f} s; front rate {rates['front']:.2f}/s, "
        f"others >= {min(rates[n] for n in others):.2f}/s)",
        "front rate >= 95% of the others' and p95 age within 0.05 s of theirs",
        rates["front"] >= 0.95 * min(rates[n] for n in others) and front_p95 <= worst_other_p95 + 0.05,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
