"""The interface cache serves a checkout at any path (issue 46).

scripts/build_interfaces.sh keeps each package it builds in the interface cache, by a key
of what decides the build. CI runs every build in a fresh clone at a new path, so the key
must not hold the checkout's, the venv's or the prefix's path, and a package built in one
checkout and restored into another must name the new paths in its installed files (CMake
export files, setup scripts, package.xml), not the old ones.

Here two copies of the script's checkout at two paths, each with its `.venv` (a symlink to
this venv, so the venv's path differs too), build one small interface package into a prefix
of their own with one cache (a temporary folder, never the user's): the second restores
the first's entry, the first checkout gone, and what it restored imports from the second's
prefix and names only the second's paths.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

pytest.importorskip("rclpy")

from support.ros_distros import prefix_env

REPO_ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "cache_probe_msgs"

# What the script reads from its checkout.
CHECKOUT_FILES = [
    "scripts/build_interfaces.sh",
    "scripts/interface_paths.py",
    "scripts/interfaces_python_only.cmake",
    "test/interfaces/pip_wheel_include_dirs.cmake",
    "constraints.txt",
]


def make_checkout(root: Path) -> Path:
    """A copy of what the script reads, at ``root``, with a .venv (this one, by a symlink)
    and the probe's definitions in it."""
    root.mkdir(parents=True)
    (root / ".venv").symlink_to(sys.prefix, target_is_directory=True)
    for name in CHECKOUT_FILES:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO_ROOT / name, root / name)
    shutil.copytree(REPO_ROOT / "interfaces" / "harness_sim_msgs", root / "interfaces" / "harness_sim_msgs")
    definitions = root / "robot_interfaces" / PACKAGE
    (definitions / "msg").mkdir(parents=True)
    (definitions / "msg" / "Probe.msg").write_text("# a probe\nfloat64 x\nstring name\n", encoding="utf-8")
    return definitions


def build(root: Path, cache: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if key != "HARNESS_INTERFACE_CACHE"}
    env["HARNESS_INTERFACE_CACHE_DIR"] = str(cache)
    return subprocess.run(
        ["bash", str(root / "scripts" / "build_interfaces.sh"), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
        check=False,
    )


def probe_entries(cache: Path) -> list[Path]:
    """The cache entries that hold the probe package."""
    found = []
    for entry in sorted(cache.glob("*.tar")):
        with tarfile.open(entry) as tar:
            if f"share/{PACKAGE}/package.xml" in tar.getnames():
                found.append(entry)
    return found


@pytest.mark.slow
def test_a_checkout_at_another_path_restores_the_package_another_built(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    # What make test builds first: harness_sim_msgs, in this venv at its own path (a no-op
    # after make test-interfaces), so the copies below find it up to date.
    ready = build(REPO_ROOT, cache, sys.prefix)
    assert ready.returncode == 0, ready.stdout + ready.stderr

    first, second = tmp_path / "ci-1" / "harness_ros", tmp_path / "ci-2" / "checkout"
    first_definitions = make_checkout(first)
    built = build(
        first,
        cache,
        str(first / ".venv"),
        "--interfaces",
        str(first_definitions),
        "--prefix",
        str(first / "install"),
    )
    assert built.returncode == 0, built.stdout + built.stderr
    assert re.search(rf"built {PACKAGE} in \d+ s", built.stdout), built.stdout
    [entry] = probe_entries(cache)

    # The first checkout, its prefix and build folder go (its .venv link, not the venv).
    shutil.rmtree(first)
    second_definitions = make_checkout(second)
    args = (
        str(second / ".venv"),
        "--interfaces",
        str(second_definitions),
        "--prefix",
        str(second / "install"),
    )
    restored = build(second, cache, *args)
    assert restored.returncode == 0, restored.stdout + restored.stderr
    assert (
        f"restored {PACKAGE} into {second / 'install'} from the interface cache ({entry})" in restored.stdout
    ), restored.stdout
    assert f"building {PACKAGE}" not in restored.stdout
    assert probe_entries(cache) == [entry]  # one entry for both

    # It imports from the second checkout's prefix.
    prefix = second / "install"
    probe = f"import {PACKAGE}; from {PACKAGE}.msg import Probe; print({PACKAGE}.__file__, Probe(x=1.5).x)"
    out = subprocess.run(
        [sys.executable, "-c", probe],
        env=prefix_env([prefix], dict(os.environ)),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    module, x = out.stdout.split()
    assert module.startswith(f"{prefix}/") and x == "1.5", out.stdout

    # Its CMake files (the venv's numpy headers), setup scripts and package.xml name the
    # second checkout, never the first.
    share = prefix / "share" / PACKAGE
    cmake_text = "".join(
        path.read_text(encoding="utf-8") for path in sorted((share / "cmake").glob("*.cmake"))
    )
    assert f"{second}/.venv/lib/python" in cmake_text
    assert str(first) not in cmake_text
    assert f'AMENT_CURRENT_PREFIX:="{prefix}"' in (share / "local_setup.sh").read_text(encoding="utf-8")
    assert str(second_definitions) in (share / "package.xml").read_text(encoding="utf-8")
    installed = (share / ".harness_ros-installed-files").read_text(encoding="utf-8").split()
    for name in installed:
        data = (prefix / name).read_bytes()
        if b"\0" not in data:  # text (the .so files keep the first build's source paths)
            assert str(first).encode() not in data, name
    assert (share / ".harness_ros-paths").read_text(encoding="utf-8").split("\n")[:3] == [
        str(prefix),
        str(second / ".venv"),
        str(second),
    ]

    # A re-run there finds it up to date.
    again = build(second, cache, *args)
    assert again.returncode == 0 and f"{PACKAGE} is up to date in {prefix}" in again.stdout, (
        again.stdout + again.stderr
    )
