"""Ingest: 3 x 30 Hz VGA + 30 Hz depth + 10 Hz scan into RosObservationSource, from another process.

Callback cost per message and RSS over time.

    .venv/bin/python bench/bench_ingest.py [--quick] [--duration S] [--receiver bare] [--malloc-trim]
                                           [--raw] [--executor multi] [--rss-csv FILE]

A publisher process (bench/_ingest_publisher.py) sends the load over DDS (private
ROS_DOMAIN_ID, localhost, Fast DDS LARGE_DATA transport). This process runs the
node side as the harness node does by default (``observations.sensor_executor:
dedicated``: the subscriptions on a node spun by a SingleThreadedExecutor):

ours   RosObservationSource: each callback only stores the newest message. Its
       callbacks are wrapped with a timer (the wrapper's own cost is included).
naive  the same subscriptions with callbacks that decode every frame (cv_bridge-style
       frombuffer + cvtColor; depth normalised to 8 bits), what surveyed projects do.
bare   (``--receiver bare``, in place of ours) the same subscriptions with callbacks that
       do nothing: what rclpy and Fast DDS alone do with the load, for the RSS split.

``--raw`` sets ``observations.raw_subscriptions`` (ours keeps serialized bytes and
deserializes nothing during ingest). ``--executor multi`` spins the receiving node with a
4-thread MultiThreadedExecutor and a reentrant group instead, as the harness node does with
``observations.sensor_executor: shared`` (and did for every sensor before issue #18).

``--malloc-trim`` calls glibc ``malloc_trim(0)`` before every RSS sample: memory that is
freed but kept by the allocator is then returned, so what still grows is really held.
``MALLOC_ARENA_MAX`` and ``MALLOC_MMAP_THRESHOLD_`` (environment) are printed.
``--rss-csv FILE`` writes the RSS samples (seconds, MB) as they are taken, so a soak
stopped early keeps its curve. ``--no-baseline`` skips the naive phase (soaks, the CI
long-run test).

Per phase: messages received per topic, callback time per message (median, p99),
callback time as a share of one core, and process CPU (executor, deserialisation and
callbacks). RSS is sampled every second during the ours phase: start, end, max and the
least-squares slope (goal: flat).
"""

from __future__ import annotations

import array
import collections
import contextlib
import ctypes
import functools
import gc
import json
import os
import random
import resource
import signal
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from _common import REPO_ROOT, base_parser, headline, machine_line, print_table, private_ros_env

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _ingest_publisher import DEPTH_TOPIC, SCAN_TOPIC, VIEW_TOPICS

PUBLISHER = Path(__file__).resolve().parent / "_ingest_publisher.py"


class CallbackTimes:
    """Nanoseconds spent in callbacks, per topic kind (image, depth, scan): count, total and a
    uniform reservoir of at most ``RESERVOIR`` samples for the percentiles.

    Bounded on purpose: the first soaks kept every sample in a list, one int object per
    message, and that list was the 0.14 MB/min that was left after the warm-up. The
    reservoirs are int64 arrays, so taking a sample creates no Python object at all."""

    RESERVOIR = 4096

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._random = random.Random(0)
        self.samples = {kind: array.array("q") for kind in ("image", "depth", "scan")}
        self.count = dict.fromkeys(self.samples, 0)
        self.total_ns = dict.fromkeys(self.samples, 0)

    def record(self, kind: str, elapsed_ns: int) -> None:
        with self._lock:
            self.count[kind] += 1
            self.total_ns[kind] += elapsed_ns
            samples = self.samples[kind]
            if len(samples) < self.RESERVOIR:
                samples.append(elapsed_ns)
            elif (slot := self._random.randrange(self.count[kind])) < self.RESERVOIR:
                samples[slot] = elapsed_ns  # reservoir sampling: every message equally likely kept

    def reset(self) -> None:
        with self._lock:
            for kind in self.samples:
                del self.samples[kind][:]
                self.count[kind] = self.total_ns[kind] = 0

    def snapshot(self) -> tuple[dict[str, list[int]], int]:
        """The reservoirs (copies) and the total callback time in nanoseconds."""
        with self._lock:
            return {kind: list(values) for kind, values in self.samples.items()}, sum(self.total_ns.values())

    def wrap(self, kind: str, callback: Callable[[Any], None]) -> Callable[[Any], None]:
        def timed(msg: Any) -> None:
            start = time.perf_counter_ns()
            callback(msg)
            self.record(kind, time.perf_counter_ns() - start)

        return timed


def object_census() -> tuple[collections.Counter[str], Any]:
    """Live objects the garbage collector tracks, by type name, and a tracemalloc snapshot
    (every Python allocation still alive, by the line that made it)."""
    import tracemalloc

    gc.collect()
    return collections.Counter(
        type(obj).__qualname__ for obj in gc.get_objects()
    ), tracemalloc.take_snapshot()


def report_object_growth(
    before: tuple[collections.Counter[str], Any], after: tuple[collections.Counter[str], Any]
) -> None:
    (types_before, snapshot_before), (types_after, snapshot_after) = before, after
    grown = [
        (name, types_after[name] - types_before[name])
        for name in types_after
        if types_after[name] > types_before[name]
    ]
    grown.sort(key=lambda item: -item[1])
    listed = ", ".join(f"{name} +{count}" for name, count in grown[:10]) or "none"
    print(f"object growth over the second half of the phase (gc-tracked types): {listed}")
    print("allocations still alive that grew most over the second half (tracemalloc, by line):")
    for stat in snapshot_after.compare_to(snapshot_before, "lineno")[:8]:
        print(f"  {stat}")


def kind_of(topic: str) -> str:
    return "depth" if topic == DEPTH_TOPIC else "scan" if topic == SCAN_TOPIC else "image"


def rss_mb() -> float:
    with open("/proc/self/status", encoding="utf-8") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return float("nan")


class _MallInfo2(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_size_t)
        for name in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
                     "fordblks", "keepcost")
    ]  # fmt: skip


def memory_breakdown() -> tuple[float, float, float, int]:
    """Where the RSS is, to tell a leak from fragmentation: RssAnon (MB); what glibc malloc
    has handed out and not got back (in-use heap chunks plus mmapped chunks, MB); what it
    holds free (MB; fragmentation when it grows); Python's allocated blocks (objects)."""
    anon = float("nan")
    with open("/proc/self/status", encoding="utf-8") as status:
        for line in status:
            if line.startswith("RssAnon:"):
                anon = int(line.split()[1]) / 1024.0
    used = free = float("nan")
    mallinfo2 = _mallinfo2()
    if mallinfo2 is not None:
        info = mallinfo2()
        used, free = (info.uordblks + info.hblkhd) / 2**20, info.fordblks / 2**20
    return anon, used, free, sys.getallocatedblocks()


@functools.cache
def _mallinfo2() -> Callable[[], _MallInfo2] | None:
    """glibc's mallinfo2 (2.33 and later), or None elsewhere."""
    try:
        function = ctypes.CDLL("libc.so.6").mallinfo2
    except (OSError, AttributeError):
        return None
    function.restype = _MallInfo2
    return function  # type: ignore[no-any-return]


class RssSamples:
    """RSS samples (seconds, MB), each also appended to a CSV file when one is given, with
    ``memory_breakdown()``: seconds, RSS, RssAnon, malloc in use, malloc free (MB), Python
    blocks. Kept in float arrays: sampling must not add Python objects to the curve of
    Python objects it records."""

    def __init__(self, csv: Path | None) -> None:
        self._seconds, self._megabytes = array.array("d"), array.array("d")
        self._file = None if csv is None else csv.open("w", encoding="utf-8")

    def __len__(self) -> int:
        return len(self._seconds)

    def __iter__(self) -> Iterator[tuple[float, float]]:
        return zip(self._seconds, self._megabytes, strict=True)

    def append(self, sample: tuple[float, float]) -> None:
        self._seconds.append(sample[0])
        self._megabytes.append(sample[1])
        if self._file is not None:
            anon, used, free, blocks = memory_breakdown()
            self._file.write(f"{sample[0]:.1f},{sample[1]:.2f},{anon:.2f},{used:.2f},{free:.2f},{blocks}\n")
            self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()


def malloc_trim() -> None:
    """Give freed heap pages back to the OS (glibc only; a no-op elsewhere)."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)


def slope_mb_per_min(samples: list[tuple[float, float]]) -> float:
    if len(samples) < 2:
        return 0.0
    xs, ys = [t for t, _ in samples], [r for _, r in samples]
    mean_x, mean_y = statistics.fmean(xs), statistics.fmean(ys)
    denominator = sum((x - mean_x) ** 2 for x in xs)
    return (
        60.0 * sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True)) / denominator
        if denominator
        else 0.0
    )


def cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def run_phase(
    context: Any,
    mode: str,
    duration_s: float,
    rss: RssSamples | None,
    *,
    trim: bool = False,
    raw: bool = False,
    single_threaded: bool = False,
    observe_every_s: float | None = None,
    object_growth: bool = False,
) -> dict[str, Any]:
    import rclpy
    from rclpy.callback_groups import ReentrantCallbackGroup
    from rclpy.executors import MultiThreadedExecutor, SingleThreadedExecutor

    from harness_ros.config import ObservationConfig
    from harness_ros.ros.observations import RosObservationSource

    node = rclpy.create_node(f"bench_ingest_{mode}", context=context)
    times = CallbackTimes()
    group = ReentrantCallbackGroup()
    counts: dict[str, int] = {}
    source = None
    if mode == "ours":
        original = RosObservationSource._storer

        def timed_storer(self: RosObservationSource, slot: Any) -> Callable[[Any], None]:
            return times.wrap(kind_of(slot.topic), original(self, slot))

        RosObservationSource._storer = timed_storer  # type: ignore[method-assign]
        try:
            config = ObservationConfig.model_validate(
                {
                    "views": {name: {"topic": topic} for name, topic in VIEW_TOPICS.items()},
                    "depth": {"topic": DEPTH_TOPIC},
                    "clearance": {"scan_topic": SCAN_TOPIC},
                    "raw_subscriptions": raw,
                }
            )
            source = RosObservationSource(node, config, footprint_radius_m=0.3, callback_group=group)
        finally:
            RosObservationSource._storer = original  # type: ignore[method-assign]
    else:
        _plain_subscriptions(node, group, times, counts, decode=mode == "naive")

    executor = (
        SingleThreadedExecutor(context=context)
        if single_threaded
        else MultiThreadedExecutor(num_threads=4, context=context)
    )
    executor.add_node(node)
    stop_spinning = threading.Event()

    def spin() -> None:
        # spin_once in a loop, not spin(): shutting an executor down while spin() runs
        # races with its guard condition (InvalidHandle in the spin thread)
        while not stop_spinning.is_set() and context.ok():
            executor.spin_once(timeout_sec=0.1)

    spinner = threading.Thread(target=spin, daemon=True)
    spinner.start()
    if source is not None and not source.wait_for_messages(30.0):
        raise SystemExit(f"no messages from the publisher after 30 s: {source.stats()}")
    if source is None:
        deadline = time.monotonic() + 30.0
        while len(counts) < 5 and time.monotonic() < deadline:
            threading.Event().wait(0.05)
    times.reset()  # measure from here: discovery and the first frames are warm-up
    before = dict(source.stats()) if source is not None else dict(counts)
    if object_growth:
        import tracemalloc

        tracemalloc.start()
    cpu_start, wall_start = cpu_s(), time.monotonic()
    tick = threading.Event()
    observations, next_observe = 0, 0.0
    census: dict[str, Any] = {}
    while (elapsed := time.monotonic() - wall_start) < duration_s:
        if source is not None and observe_every_s is not None and elapsed >= next_observe:
            source.observe()  # a decision: deserialize (raw), decode, resize and encode the newest frames
            observations += 1
            next_observe = elapsed + observe_every_s
        if rss is not None:
            if trim:
                malloc_trim()
            rss.append((elapsed, rss_mb()))
        if object_growth and "half" not in census and elapsed >= duration_s / 2:
            census["half"] = object_census()
        tick.wait(min(1.0, max(0.0, duration_s - elapsed)))
    wall = time.monotonic() - wall_start
    cpu = cpu_s() - cpu_start
    if object_growth and "half" in census:
        report_object_growth(census["half"], object_census())
    after = dict(source.stats()) if source is not None else dict(counts)
    if rss is not None:
        if trim:
            malloc_trim()
        rss.append((wall, rss_mb()))
    stop_spinning.set()
    spinner.join(timeout=5.0)  # destroying entities under a spinning executor raises InvalidHandle
    executor.remove_node(node)  # no callback may run on a node being destroyed
    executor.shutdown(timeout_sec=2.0)
    if source is not None:
        source.destroy()
    node.destroy_node()
    samples, callback_ns = times.snapshot()
    received = {topic: after.get(topic, 0) - before.get(topic, 0) for topic in after}
    return {
        "mode": mode,
        "wall": wall,
        "cpu": cpu,
        "samples": samples,
        "callback_ns": callback_ns,
        "received": received,
        "observations": observations,
    }


def _plain_subscriptions(
    node: Any, group: Any, times: CallbackTimes, counts: dict[str, int], *, decode: bool
) -> None:
    """Subscriptions like ours; ``decode`` makes them naive, otherwise they only count."""
    import cv2
    import numpy as np
    from rclpy.qos import qos_profile_sensor_data
    from sensor_msgs.msg import Image, LaserScan

    latest: dict[str, Any] = {}
    lock = threading.Lock()

    def count_only(topic: str) -> Callable[[Any], None]:
        def count(_msg: Any) -> None:
            with lock:
                counts[topic] = counts.get(topic, 0) + 1

        return count

    def image_callback(topic: str) -> Callable[[Any], None]:
        def decode(msg: Any) -> None:
            rgb = np.frombuffer(msg.data, dtype=np.uint8).reshape(msg.height, msg.width, 3)
            bgr = cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR)
            with lock:
                latest[topic] = bgr
                counts[topic] = counts.get(topic, 0) + 1

        return decode

    def depth_callback(msg: Any) -> None:
        raw = np.frombuffer(msg.data, dtype=np.uint16).reshape(msg.height, msg.width)
        depth8 = cv2.normalize(raw, None, 0, 255, cv2.NORM_MINMAX, dtype=cv2.CV_8U)
        with lock:
            latest[DEPTH_TOPIC] = depth8
            counts[DEPTH_TOPIC] = counts.get(DEPTH_TOPIC, 0) + 1

    def scan_callback(msg: Any) -> None:
        with lock:
            latest[SCAN_TOPIC] = msg
            counts[SCAN_TOPIC] = counts.get(SCAN_TOPIC, 0) + 1

    qos = qos_profile_sensor_data
    for topic in VIEW_TOPICS.values():
        callback = image_callback(topic) if decode else count_only(topic)
        node.create_subscription(Image, topic, times.wrap("image", callback), qos, callback_group=group)
    callback = depth_callback if decode else count_only(DEPTH_TOPIC)
    node.create_subscription(Image, DEPTH_TOPIC, times.wrap("depth", callback), qos, callback_group=group)
    callback = scan_callback if decode else count_only(SCAN_TOPIC)
    node.create_subscription(LaserScan, SCAN_TOPIC, times.wrap("scan", callback), qos, callback_group=group)


def _us(values: list[int], q: float) -> str:
    if not values:
        return "-"
    ordered = sorted(values)
    return f"{ordered[min(len(ordered) - 1, int(q * len(ordered)))] / 1000:.1f}"


def main(argv: list[str] | None = None) -> int:
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, help="seconds of the ours phase (default 60, quick 10)")
    parser.add_argument(
        "--receiver",
        choices=("ours", "bare"),
        default="ours",
        help="first phase: RosObservationSource (ours) or no-op callbacks (bare, middleware only)",
    )
    parser.add_argument("--malloc-trim", action="store_true", help="malloc_trim(0) before each RSS sample")
    parser.add_argument("--raw", action="store_true", help="ours with observations.raw_subscriptions")
    parser.add_argument(
        "--executor",
        choices=("single", "multi"),
        default="single",
        help="receiving executor: single (the node's dedicated sensor executor) or multi (shared)",
    )
    parser.add_argument("--rss-csv", type=Path, help="write the RSS samples (seconds, MB) to this file")
    parser.add_argument("--no-baseline", action="store_true", help="skip the naive (decode-everything) phase")
    parser.add_argument(
        "--observe-every", type=float, metavar="S", help="ours: build an observation every S seconds"
    )
    parser.add_argument("--summary-json", type=Path, help="write rates and RSS figures of the first phase")
    parser.add_argument(
        "--object-growth",
        action="store_true",
        help=(
            "print the gc-tracked types and the allocation sites (tracemalloc, which slows the process) "
            "that grew over the second half of the first phase"
        ),
    )
    args = parser.parse_args(argv)
    duration = args.duration or (10.0 if args.quick else 60.0)
    naive_duration = min(60.0, max(5.0, duration / 3))  # a soak needs no 10-minute baseline

    print(__doc__.splitlines()[0])
    print(machine_line())
    arenas = os.environ.get("MALLOC_ARENA_MAX", "unset (glibc default: 8 per core)")
    threshold = os.environ.get("MALLOC_MMAP_THRESHOLD_", "dynamic (glibc default)")
    trim = "malloc_trim(0) before each sample" if args.malloc_trim else "no malloc_trim"
    raw = ", raw subscriptions" if args.raw else ""
    executor = "SingleThreadedExecutor" if args.executor == "single" else "MultiThreadedExecutor(4)"
    then = "no naive phase" if args.no_baseline else f"then naive phase {naive_duration:.0f} s"
    print(
        f"{args.receiver}{raw} phase {duration:.0f} s (RSS sampled every second) on a {executor}, "
        f"{then}; MALLOC_ARENA_MAX {arenas}, MALLOC_MMAP_THRESHOLD_ {threshold}, {trim}\n"
    )
    import rclpy
    from rclpy.context import Context

    with private_ros_env() as env:
        publisher = subprocess.Popen(
            [sys.executable, str(PUBLISHER)], env=env, cwd=REPO_ROOT, stdout=subprocess.PIPE, text=True
        )
        context = Context()
        rclpy.init(context=context)
        rss = RssSamples(args.rss_csv)
        try:
            assert publisher.stdout is not None
            if publisher.stdout.readline().strip() != "publishing":
                raise SystemExit("the publisher process did not start")
            phases = [
                run_phase(
                    context,
                    args.receiver,
                    duration,
                    rss,
                    trim=args.malloc_trim,
                    raw=args.raw,
                    single_threaded=args.executor == "single",
                    observe_every_s=args.observe_every,
                    object_growth=args.object_growth,
                ),
            ]
            if not args.no_baseline:
                phases.append(run_phase(context, "naive", naive_duration, None))
        finally:
            rss.close()
            context.try_shutdown()
            publisher.send_signal(signal.SIGINT)
            try:
                out, _ = publisher.communicate(timeout=10)
            except subprocess.TimeoutExpired:
                publisher.kill()
                out, _ = publisher.communicate()
    published = json.loads(out.strip().splitlines()[-1]) if out.strip() else {}

    rows = []
    for phase in phases:
        received = phase["received"]
        image_hz = sum(received.get(t, 0) for t in VIEW_TOPICS.values()) / phase["wall"] / len(VIEW_TOPICS)
        total_cb = phase["callback_ns"] / 1e9
        rows.append(
            (
                phase["mode"],
                f"{image_hz:.1f}",
                f"{received.get(DEPTH_TOPIC, 0) / phase['wall']:.1f}",
                f"{received.get(SCAN_TOPIC, 0) / phase['wall']:.1f}",
                _us(phase["samples"]["image"], 0.5),
                _us(phase["samples"]["image"], 0.99),
                _us(phase["samples"]["depth"], 0.5),
                f"{100 * total_cb / phase['wall']:.2f}",
                f"{100 * phase['cpu'] / phase['wall']:.0f}",
            )
        )
    print_table(
        ("phase", "image Hz/view", "depth Hz", "scan Hz", "image cb us p50", "p99", "depth cb us p50",
         "callbacks % core", "process CPU %"),
        rows,
    )  # fmt: skip
    print(f"\npublished in total (both phases): {published}")
    values = [r for _, r in rss]
    warmup = duration / 3  # allocator and DDS buffers settle first
    steady = [(t, r) for t, r in rss if t >= warmup]
    slope = slope_mb_per_min(steady)
    print(f"RSS ({args.receiver} phase, {len(rss)} samples): start {values[0]:.1f} MB, "
          f"end {values[-1]:.1f} MB, "
          f"max {max(values):.1f} MB, slope {slope:+.2f} MB/min after {warmup:.0f} s")  # fmt: skip
    print()
    headline("RSS slope", f"{slope:+.2f} MB/min", "flat (|slope| < 1 MB/min)", abs(slope) < 1.0)
    if args.summary_json is not None:
        first = phases[0]
        received = first["received"]
        summary = {
            "image_hz_per_view": sum(received.get(t, 0) for t in VIEW_TOPICS.values())
            / first["wall"]
            / len(VIEW_TOPICS),
            "depth_hz": received.get(DEPTH_TOPIC, 0) / first["wall"],
            "scan_hz": received.get(SCAN_TOPIC, 0) / first["wall"],
            "observations": first["observations"],
            "rss_mb": {"start": values[0], "end": values[-1], "max": max(values)},
            "slope_mb_per_min": slope,
        }
        args.summary_json.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    if len(phases) < 2:
        return 0
    ours_cb = statistics.median(phases[0]["samples"]["image"] or [0]) / 1000
    naive_cb = statistics.median(phases[1]["samples"]["image"] or [0]) / 1000
    ratio = naive_cb / ours_cb if ours_cb else float("inf")
    headline(
        "image callback naive/ours",
        f"{ratio:.1f}x",
        "no decoding in callbacks (ours only stores)",
        ratio > 10,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
