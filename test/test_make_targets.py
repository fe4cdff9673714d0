"""What `make demo` and `make test` build, read from make's dry run (`make -n -B`: every
target out of date, as on a fresh clone), so CI checks the demo's prerequisites."""

from __future__ import annotations

import os
import shutil
import subprocess
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
