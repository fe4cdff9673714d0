"""What `make demo` and `make test` build, read from make's dry run (`make -n -B`: every
target out of date, as on a fresh clone), so CI checks the demo's prerequisites."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]


def dry_run(target: str) -> list[str]:
    if shutil.which("make") is None:
        pytest.fail("make is not installed: the README's two commands need it")
    # Run from `make test`, make is a sub-make: it prints "make[1]: Entering directory" lines
    # and inherits the parent's flags. Read the target as a top-level make would.
    inherited = {"MAKELEVEL", "MAKEFLAGS", "MFLAGS", "MAKEOVERRIDES"}
    env = {k: v for k, v in os.environ.items() if k not in inherited}
    proc = subprocess.run(
        ["make", "--no-print-directory", "-n", "-B", target],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.splitlines()


def test_make_demo_builds_only_the_interfaces_the_demo_runs() -> None:
    lines = dry_run("demo")
    builds = [line for line in lines if "build_interfaces.sh" in line]
    # harness_sim_msgs only: the nav2_msgs / control_msgs stand-ins are for the tests.
    assert builds == ["scripts/build_interfaces.sh .venv"], lines
    assert lines[-1] == ".venv/bin/harness-ros demo"


def test_the_first_install_shows_progress() -> None:
    installs = [line for line in dry_run("demo") if "pip install" in line and "requirements.txt" in line]
    assert len(installs) == 1 and "--quiet" not in installs[0], installs


def test_make_test_builds_the_stand_ins_of_every_distro() -> None:
    builds = [line for line in dry_run("test") if "build_interfaces.sh" in line]
    assert builds == [
        "scripts/build_interfaces.sh .venv",
        "scripts/build_interfaces.sh .venv --test-stand-ins",
    ]


def test_make_test_lints_and_type_checks_before_the_suite() -> None:
    lines = dry_run("test")
    suite = next(i for i, line in enumerate(lines) if "-m pytest" in line)
    mypy = [i for i, line in enumerate(lines) if line == ".venv/bin/mypy"]
    ruff = [i for i, line in enumerate(lines) if line.startswith(".venv/bin/ruff check")]
    assert mypy and mypy[0] < suite, lines
    assert ruff and ruff[0] < suite, lines


def test_make_test_runs_the_tests_without_dds_on_every_core_then_the_dds_ones_then_the_serial_ones() -> None:
    runs = [line for line in dry_run("test") if "-m pytest" in line]
    assert len(runs) == 3, runs
    parallel, dds, serial = runs
    assert '-n auto -m "not dds and not bench" test' in parallel, parallel
    assert '-n 3 -m "dds and not serial and not bench" test' in dds, dds
    assert '-m "dds and serial and not bench" test' in serial and " -n " not in serial, serial
    # The real-model test runs in make test: every phase requires the local model.
    assert all(run.startswith("HARNESS_REQUIRE_LOCAL_MODEL=0.5b ") for run in runs), runs


def test_make_bench_runs_the_soaks_and_benchmark_runs_that_make_test_leaves_out() -> None:
    runs = [line for line in dry_run("bench") if "-m pytest" in line]
    assert runs == [".venv/bin/python -m pytest -q -m bench test"], runs


@pytest.mark.parametrize(
    ("first", "second", "third", "fails"),
    [
        (0, 0, 0, False),
        (1, 0, 0, True),
        (0, 1, 0, True),
        (0, 0, 1, True),
        (5, 0, 0, True),
        (0, 5, 0, True),
        (0, 0, 5, True),
    ],
)
def test_make_test_runs_every_phase_and_fails_when_any_does(
    tmp_path: Path, first: int, second: int, third: int, fails: bool
) -> None:
    """pytest stood in by a script that records its arguments and exits as told (5: it
    collected no test); the prerequisites (lint, mypy, the model) are taken as done."""
    calls = tmp_path / "calls.txt"
    stub = tmp_path / "pytest.sh"
    stub.write_text(
        f'echo "$*" >> {calls}\n'
        f'case "$*" in *"not dds"*) exit {first};; *"not serial"*) exit {second};; *) exit {third};; esac\n',
        encoding="utf-8",
    )
    done = [
        "-o",
        "lint",
        "-o",
        "typecheck",
        "-o",
        "test-model",
        "-o",
        ".venv/.harness_ros-test-interfaces-built",
    ]
    inherited = {"MAKELEVEL", "MAKEFLAGS", "MFLAGS", "MAKEOVERRIDES"}
    env = {k: v for k, v in os.environ.items() if k not in inherited}
    proc = subprocess.run(
        ["make", "--no-print-directory", *done, "test", f"PYTEST=sh {stub}"],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (proc.returncode != 0) == fails, proc.stdout + proc.stderr
    phases = calls.read_text(encoding="utf-8").splitlines()
    assert len(phases) == 3, phases
    assert "not dds" in phases[0] and "dds and not serial" in phases[1] and "dds and serial" in phases[2], (
        phases
    )


def collected(marker: str, *files: str) -> list[str]:
    """The test ids pytest selects with ``-m marker`` from ``files`` (collected, not run)."""
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-m", marker, *files],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode in (0, 5), proc.stdout + proc.stderr
    return [line for line in proc.stdout.splitlines() if "::" in line]


def test_a_test_on_a_dds_domain_is_in_a_dds_phase_and_every_other_in_the_first_one() -> None:
    serial = collected("dds and not bench", "test/test_docs.py")
    parallel = collected("not dds and not bench", "test/test_docs.py")
    # The one test of test_docs.py that takes ros_env (through no marker of its own).
    assert serial == ["test/test_docs.py::test_rcl_reads_the_params_file_into_the_same_config"], serial
    assert len(parallel) > 50 and not set(serial) & set(parallel)


def test_the_soak_and_the_benchmark_quick_runs_are_left_to_make_bench() -> None:
    files = ("test/test_ingest_long_run.py", "test/test_bench_scripts.py")
    in_make_test = collected("not bench", *files)
    # The prefix-cache check asserts what the requests hold: it stays in make test.
    assert in_make_test == [
        "test/test_bench_scripts.py::test_the_prefix_cache_benchmark_builds_a_local_models_requests"
    ], in_make_test
    assert len(collected("bench", *files)) == 3


def test_the_tests_that_run_a_model_a_physics_engine_or_an_eval_run_one_at_a_time() -> None:
    files = (
        "test/test_local_model_sim.py",
        "test/test_eval.py",
        "test/test_physics_node.py",
        "test/test_demo.py",
    )
    serial = collected("dds and serial and not bench", *files)
    assert {test.split("::")[0] for test in serial} == set(files[:3]), serial
    assert collected("dds and not serial and not bench", "test/test_demo.py")  # three at a time
