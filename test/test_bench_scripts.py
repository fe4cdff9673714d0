"""The benchmark scripts run: a harness change that breaks one is caught here, not at
the next measurement (bench_turn_overhead once ended its task with a text reply after
finish_task became the only way to end one, and failed its own assertion).

Only that each script completes and prints its headline is checked: the numbers are
measured on a quiet machine (BENCHMARKS.md), never asserted by a timed test."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    ("script", "headline"),
    [
        ("bench_turn_overhead.py", "per-turn overhead:"),
        ("bench_observation.py", "depth summary + clearance + text:"),
    ],
)
def test_a_benchmark_script_completes_its_quick_run(script: str, headline: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    run = subprocess.run(
        [sys.executable, script, "--quick"],
        cwd=ROOT / "bench",
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert headline in run.stdout, run.stdout[-2000:]
