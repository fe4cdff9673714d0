"""Replay throughput of the recorded test bag (test/data/replay_pick).

    .venv/bin/python bench/bench_replay.py [--quick] [--bag DIR --replies FILE]

consolidate  ``harness-ros replay BAG --model-replies REPLIES --memory DIR``: the bag's
             events rebuilt into trajectories and consolidated into a fresh memory
             folder with recorded model replies. Timed in-process (median of N runs,
             the baseline for the CLI figure) and as one CLI subprocess (interpreter
             start and imports included). Reported as messages/s and recorded/wall time.
live         LiveReplayer publishing the bag's sensor topics (and /clock) at --rate 1
             and 4 to a subscriber in the same process, private ROS domain: wall time /
             recorded span (ideal: 1/rate) and the messages received.
"""

from __future__ import annotations

import contextlib
import io
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from _common import REPO_ROOT, base_parser, machine_line, print_table, private_ros_env

DATA = REPO_ROOT / "test" / "data"


def consolidate_once(bag: Path, replies: Path) -> float:
    from harness_ros.cli import main as cli_main

    with tempfile.TemporaryDirectory(prefix="harness_bench_mem_") as memory:
        sink = io.StringIO()
        start = time.perf_counter()
        with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
            code = cli_main(["replay", str(bag), "--model-replies", str(replies), "--memory", memory])
        elapsed = time.perf_counter() - start
    if code != 0:
        raise SystemExit(f"replay failed ({code}):\n{sink.getvalue()}")
    return elapsed


def consolidate_cli(bag: Path, replies: Path) -> float:
    with tempfile.TemporaryDirectory(prefix="harness_bench_mem_") as memory:
        command = [
            sys.executable,
            "-m",
            "harness_ros.cli",
            "replay",
            str(bag),
            "--model-replies",
            str(replies),
        ]
        start = time.perf_counter()
        done = subprocess.run([*command, "--memory", memory], capture_output=True, text=True, check=False)
        elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"replay CLI failed ({done.returncode}):\n{done.stderr}")
    return elapsed


def live_runs(bag_path: Path, rates: list[float]) -> list[dict[str, Any]]:
    import rclpy
    from rclpy.context import Context
    from rclpy.executors import SingleThreadedExecutor

    from harness_ros.ros.bag import iter_messages, open_bag
    from harness_ros.ros.bag.live_replay import LiveReplayer, default_replay_topics
    from harness_ros.ros.bag.live_replay import _instruction_topics as instruction_topics
    from harness_ros.ros.bag.recorder import import_message_type

    bag = open_bag(bag_path)
    sensors = default_replay_topics(bag)
    topics = [*sensors, *instruction_topics(bag)]  # what the CLI replays by default
    stamps = [m.timestamp_ns for m in iter_messages(bag, topics)]
    span_s = (max(stamps) - min(stamps)) / 1e9
    results = []
    context = Context()
    rclpy.init(context=context)
    try:
        for rate in rates:
            sender = rclpy.create_node("bench_replay", context=context)
            receiver = rclpy.create_node("bench_receiver", context=context)
            received = {"count": 0}
            lock = threading.Lock()

            def count(_msg: Any, lock: threading.Lock = lock, received: dict[str, int] = received) -> None:
                with lock:
                    received["count"] += 1

            from rclpy.qos import qos_profile_sensor_data

            for topic in topics:
                receiver.create_subscription(
                    import_message_type(bag.topics[topic].msgtype), topic, count, qos_profile_sensor_data
                )
            executor = SingleThreadedExecutor(context=context)
            executor.add_node(receiver)
            spinner = threading.Thread(target=executor.spin, daemon=True)
            spinner.start()
            replayer = LiveReplayer(sender, bag, rate=rate)
            unmatched = replayer.wait_for_subscribers(10.0)
            start = time.perf_counter()
            stats = replayer.run()
            wall = time.perf_counter() - start
            sent = sum(stats.published.values()) + stats.instructions
            deadline = time.monotonic() + 2.0  # bounded wait for the last deliveries
            while received["count"] < sent and time.monotonic() < deadline:
                threading.Event().wait(0.01)
            replayer.destroy()
            executor.shutdown(timeout_sec=1.0)
            sender.destroy_node()
            receiver.destroy_node()
            results.append(
                {
                    "rate": rate,
                    "span_s": span_s,
                    "wall_s": wall,
                    "sent": sent,
                    "received": received["count"],
                    "unmatched": unmatched,
                }
            )
    finally:
        context.try_shutdown()
    return results


def main(argv: list[str] | None = None) -> int:
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument("--bag", type=Path, default=DATA / "replay_pick")
    parser.add_argument("--replies", type=Path, default=DATA / "replay_pick.replies.jsonl")
    parser.add_argument("--repeat", type=int, help="in-process consolidate runs (default 10, quick 4)")
    args = parser.parse_args(argv)
    repeat = args.repeat or (4 if args.quick else 10)

    from harness_ros.ros.bag import open_bag

    bag = open_bag(args.bag)
    count, duration = bag.message_count, bag.duration_s
    print(__doc__.splitlines()[0])
    print(machine_line())
    print(f"bag {args.bag.relative_to(REPO_ROOT) if args.bag.is_relative_to(REPO_ROOT) else args.bag}: "
          f"{count} messages, {duration:.2f} s recorded\n")  # fmt: skip

    consolidate_once(args.bag, args.replies)  # warm-up: imports, typestore
    inproc = statistics.median(consolidate_once(args.bag, args.replies) for _ in range(repeat))
    cli = consolidate_cli(args.bag, args.replies)
    rows = [
        (label, f"{wall * 1000:.1f}", f"{count / wall:.0f}", f"{duration / wall:.1f}x")
        for label, wall in (("consolidate, in-process", inproc), ("consolidate, CLI process", cli))
    ]
    print_table(("consolidate mode", "wall ms", "messages/s", "recorded/wall"), rows)
    print()

    with private_ros_env():
        live = live_runs(args.bag, [1.0, 4.0])
    rows = [
        (
            f"live --rate {r['rate']:g}",
            f"{r['span_s']:.2f}",
            f"{r['wall_s']:.3f}",
            f"{r['wall_s'] / r['span_s']:.3f}",
            f"{1 / r['rate']:.3f}",
            f"{r['received']}/{r['sent']}",
        )
        for r in live
    ]
    print_table(("live mode", "recorded span s", "wall s", "wall/recorded", "ideal", "received/sent"), rows)
    print()
    print(f"consolidate recorded/wall: {duration / inproc:.1f}x ({count / inproc:.0f} messages/s in-process)")
    for r in live:
        print(
            f"live rate {r['rate']:g} wall/recorded: {r['wall_s'] / r['span_s']:.3f} "
            f"(ideal {1 / r['rate']:.3f})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
