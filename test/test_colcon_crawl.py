"""What colcon finds in this repository, with colcon's own crawler (colcon-core with
colcon-recursive-crawl and colcon-ros, from PyPI): only harness_ros, harness_ros_sim
and harness_sim_msgs, never the nav2_msgs / control_msgs test stand-ins, which would overlay
the distribution's real packages.

The repository is cloned into a workspace's src/ (a link here) and crawled with the
base paths docs/robot.md and docs/gazebo.md give, and with its test folder too.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("colcon_core")
pytest.importorskip("colcon_recursive_crawl")
pytest.importorskip("colcon_ros")

REPO_ROOT = Path(__file__).resolve().parents[1]
OURS = ["harness_ros", "harness_ros_sim", "harness_sim_msgs"]
ROBOT = ["harness_ros", "harness_sim_msgs"]
"""What a real robot's workspace crawl finds (docs/robot.md): no simulated robot."""


def colcon_list(workspace: Path, *base_paths: str) -> list[str]:
    command = [sys.executable, "-m", "colcon", "--log-base", str(workspace / "log"), "list", "--names-only"]
    proc = subprocess.run(
        [*command, "--base-paths", *base_paths],
        cwd=workspace,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return sorted(proc.stdout.split())


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "harness_ros").symlink_to(REPO_ROOT, target_is_directory=True)
    return tmp_path


def documented_base_paths() -> list[tuple[str, list[str]]]:
    found = []
    for doc in ("robot.md", "gazebo.md"):
        text = (REPO_ROOT / "docs" / doc).read_text(encoding="utf-8")
        for match in re.finditer(r"colcon build --base-paths ([^\n]*?) --packages-up-to", text):
            found.append((doc, match.group(1).split()))
    return found


def test_the_documented_crawl_finds_only_our_packages(workspace: Path) -> None:
    documented = documented_base_paths()
    assert {doc for doc, _ in documented} == {"robot.md", "gazebo.md"}, documented
    expected = {"robot.md": ROBOT, "gazebo.md": OURS}
    for doc, base_paths in {(doc, tuple(paths)) for doc, paths in documented}:  # one crawl per command
        assert colcon_list(workspace, *base_paths) == expected[doc], (doc, base_paths)


def test_no_stand_in_is_found_even_when_the_test_folder_is_crawled(workspace: Path) -> None:
    # Every folder that holds a package.xml, crawled from the repository and its test folder.
    crawled = ("src", "src/harness_ros/interfaces", "src/harness_ros/sim", "src/harness_ros/test")
    assert colcon_list(workspace, *crawled) == OURS
    stand_ins = sorted(p.parent for p in (REPO_ROOT / "test" / "interfaces").rglob("package.xml"))
    # what the crawl must not find: nav2_msgs x 3, control_msgs x 2, moveit_msgs x 2,
    # octomap_msgs, object_recognition_msgs
    assert len(stand_ins) == 9, stand_ins
    # Each stand-in's own folder as a base path: its COLCON_IGNORE hides it.
    folders = [f"src/harness_ros/{folder.relative_to(REPO_ROOT)}" for folder in stand_ins]
    assert colcon_list(workspace, *folders) == []
