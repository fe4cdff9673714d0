"""A colcon-style install prefix of this package, for tests of what an install may write."""

from __future__ import annotations

import shutil
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def make_install(prefix: Path) -> Path:
    """``<prefix>/share/harness_ros`` with the shipped config, profiles, skills, memory
    template and package.xml (what setup.py's data_files install), plus the ament index
    marker; returns the share folder."""
    share = prefix / "share" / "harness_ros"
    for folder in ("config", "profiles", "skills", "memory"):
        shutil.copytree(REPO / folder, share / folder)
    shutil.copy2(REPO / "package.xml", share / "package.xml")
    marker = prefix / "share" / "ament_index" / "resource_index" / "packages" / "harness_ros"
    marker.parent.mkdir(parents=True)
    marker.write_text("", encoding="utf-8")
    return share
