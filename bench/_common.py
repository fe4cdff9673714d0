"""Shared helpers of the benchmark scripts: timing, tables, ratios, machine facts.

Every benchmark measures its baseline in the same run and reports ratios, because
the machines are shared and noisy; absolute milliseconds are printed for reference.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from harness_ros.dds import LARGE_DATA_TRANSPORTS

__all__ = [
    "REPO_ROOT",
    "base_parser",
    "fmt_ratio",
    "headline",
    "machine_line",
    "median_ms",
    "print_table",
    "private_ros_env",
]

REPO_ROOT = Path(__file__).resolve().parents[1]


def base_parser(description: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--quick", action="store_true", help="fewer repetitions / a shorter run")
    return parser


def machine_line() -> str:
    """One line saying where the numbers come from (they only compare within a run)."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            names = [line.split(":", 1)[1].strip() for line in info if line.startswith("model name")]
        cpu = names[0] if names else cpu
    except OSError:
        pass
    load = ", ".join(f"{value:.2f}" for value in os.getloadavg())
    return f"machine: {os.cpu_count()} cores ({cpu}), Python {platform.python_version()}, load average {load}"


def median_ms(fn: Callable[[], object], *, repeat: int, warmup: int = 3) -> tuple[float, float]:
    """(median, p90) wall time of ``fn`` in milliseconds after ``warmup`` untimed calls."""
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1000.0)
    samples.sort()
    p90 = samples[min(len(samples) - 1, int(0.9 * len(samples)))]
    return statistics.median(samples), p90


def print_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> None:
    """A plain aligned text table (first column left, the rest right-aligned)."""
    cells = [[str(h) for h in headers], *[[str(c) for c in row] for row in rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]

    def line(row: Sequence[str]) -> str:
        parts = [
            row[0].ljust(widths[0]),
            *(cell.rjust(w) for cell, w in zip(row[1:], widths[1:], strict=True)),
        ]
        return "  ".join(parts).rstrip()

    print(line(cells[0]))
    print("  ".join("-" * w for w in widths))
    for row in cells[1:]:
        print(line(row))


def fmt_ratio(numerator: float, denominator: float) -> str:
    return "inf" if denominator <= 0 else f"{numerator / denominator:.1f}x"


def headline(name: str, value: str, goal: str, met: bool) -> None:
    """The grep-able result line, then whether the goal was met (said plainly when not)."""
    print(f"{name}: {value}")
    print(f"  goal {goal}: {'met' if met else 'NOT MET'}")


@contextmanager
def private_ros_env() -> Iterator[dict[str, str]]:
    """An environment with a reserved ROS_DOMAIN_ID, localhost discovery and LARGE_DATA
    transport (VGA frames between processes need it), exported to this process too."""
    from domain_coordinator import domain_id

    saved = dict(os.environ)
    with domain_id() as reserved:
        os.environ.update(
            ROS_DOMAIN_ID=str(reserved),
            ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST",
            FASTDDS_BUILTIN_TRANSPORTS=LARGE_DATA_TRANSPORTS,
            PYTHONUNBUFFERED="1",
        )
        os.environ.setdefault(
            "ROS_LOG_DIR", str(Path(os.environ.get("TMPDIR", "/tmp")) / "harness_bench_log")
        )
        try:
            yield dict(os.environ)
        finally:
            os.environ.clear()
            os.environ.update(saved)
