"""Summarise RSS curves written by ``bench_ingest.py --rss-csv``: one row per file.

    .venv/bin/python bench/rss_summary.py ours.csv arena2.csv raw.csv [--windows 300,900,1800]

Per curve: RSS at the start and at each window edge, the maximum, and the least-squares
slope inside each window (MB/min). Window edges are seconds; the first window starts at
the second sample's time, after the first frames arrived. A curve that levels off shows
a falling slope from window to window; a leak keeps its slope.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import print_table


def read_rows(path: Path) -> list[list[float]]:
    """The CSV's rows: seconds, RSS MB and, from newer runs, RssAnon, malloc in use, malloc
    free (MB) and Python blocks."""
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rows.append([float(field) for field in line.split(",")])
        except ValueError:
            raise SystemExit(f"{path}:{number}: expected 'seconds,MB[,...]', got {line!r}") from None
        if len(rows[-1]) < 2:
            raise SystemExit(f"{path}:{number}: expected 'seconds,MB[,...]', got {line!r}")
    if len(rows) < 2:
        raise SystemExit(f"{path}: fewer than two samples")
    return rows


def read_curve(path: Path) -> list[tuple[float, float]]:
    return [(row[0], row[1]) for row in read_rows(path)]


def slope_mb_per_min(samples: list[tuple[float, float]]) -> float | None:
    if len(samples) < 2:
        return None
    n = len(samples)
    mean_t = sum(t for t, _ in samples) / n
    mean_r = sum(r for _, r in samples) / n
    denominator = sum((t - mean_t) ** 2 for t, _ in samples)
    if not denominator:
        return None
    return 60.0 * sum((t - mean_t) * (r - mean_r) for t, r in samples) / denominator


def rss_at(samples: list[tuple[float, float]], seconds: float) -> float | None:
    """The last sample at or before ``seconds``, or None when the curve ends earlier."""
    if samples[-1][0] < seconds - 2.0:
        return None
    return [r for t, r in samples if t <= seconds][-1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("csv", type=Path, nargs="+")
    parser.add_argument("--windows", default="300,900,1800", help="window edges in seconds")
    args = parser.parse_args(argv)
    edges = [float(edge) for edge in args.windows.split(",")]
    rows, breakdown = [], []
    for path in args.csv:
        table = read_rows(path)
        if len(table[0]) >= 6:
            for edge in edges:
                at_edge = [row for row in table if row[0] <= edge]
                if table[-1][0] >= edge - 2.0:
                    _, rss, anon, used, free, blocks = at_edge[-1][:6]
                    breakdown.append(
                        (path.stem, f"{edge:.0f}", f"{rss:.1f}", f"{anon:.1f}", f"{used:.1f}", f"{free:.1f}",
                         f"{blocks:.0f}")
                    )  # fmt: skip
        curve = read_curve(path)
        start = curve[1][0]
        bounds = list(zip([start, *edges[:-1]], edges, strict=True))
        at = [rss_at(curve, edge) for edge in edges]
        slopes = [slope_mb_per_min([(t, r) for t, r in curve if low <= t <= high]) for low, high in bounds]
        rows.append(
            (
                path.stem,
                f"{curve[0][1]:.1f}",
                *("-" if value is None else f"{value:.1f}" for value in at),
                f"{max(r for _, r in curve):.1f}",
                *("-" if value is None else f"{value:+.2f}" for value in slopes),
            )
        )
    windows = [f"{low:.0f}-{high:.0f} s" for low, high in zip([0.0, *edges[:-1]], edges, strict=True)]
    print_table(
        (
            "curve",
            "RSS start MB",
            *(f"at {edge:.0f} s" for edge in edges),
            "max",
            *(f"slope {window} MB/min" for window in windows),
        ),
        rows,
    )
    if breakdown:
        print()
        print_table(
            ("curve", "at s", "RSS MB", "RssAnon MB", "malloc in use MB", "malloc free MB", "Python blocks"),
            breakdown,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
