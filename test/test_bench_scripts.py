"""The benchmark scripts run: a harness change that breaks one is caught here, not at
the next measurement (bench_turn_overhead once ended its task with a text reply after
finish_task became the only way to end one, and failed its own assertion).

Only that each script completes and prints its headline is checked: the numbers are
measured on a quiet machine (BENCHMARKS.md), never asserted by a timed test. The quick
runs are marked ``bench``: `make bench` runs them, `make test` does not."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.bench  # `make bench` runs it (with the scripts' full runs), `make test` does not
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


def test_the_prefix_cache_benchmark_builds_a_local_models_requests() -> None:
    # No model is served here: the requests and the parts of each decision's new text.
    path = ROOT / "bench" / "bench_prefix_cache.py"
    spec = importlib.util.spec_from_file_location("bench_prefix_cache", path)
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)

    requests, tools = bench.conversation(7)
    assert len(requests) == 8 and tools
    parts = bench.new_text(requests, lambda text: len(text.split()))
    # After the failed pick (the second call) the harness's failure note ends the request,
    # as for a model served on this machine; it is gone once the pick succeeded (the fifth).
    assert "failure note" not in parts[0] and all("failure note" in parts[n] for n in (1, 2, 3))
    assert "failure note" not in parts[4]
    # The skill loaded by the third call joins the history; the system message stays.
    assert "loaded skill" in parts[2] and all(requests[n][0] == requests[0][0] for n in range(8))
    in_system = bench.conversation(7, skill_in_history=False)[0]
    assert in_system[2] == requests[2] and "<loaded_skill>" in in_system[3][0]["content"]
    assert all({"call", "result", "task notes", "observation"} <= set(tally) for tally in parts)
    # Later Task Notes snapshots hold only what changed: they do not grow with the task.
    assert parts[-1]["task notes"] <= parts[0]["task notes"] + 5
