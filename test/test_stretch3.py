"""The Stretch 3 worked example (issue 42, item 11): config/robots/stretch3.yaml and
profiles/stretch3.md pass ``harness-ros check`` as a user runs it, and its tools drive a
stand-in of stretch_driver in another process (test/support/stretch_driver_stand_in.py)
with the mode switches the driver needs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness_ros.config import load_config

REPO_ROOT = Path(__file__).resolve().parents[1]
CONFIG = REPO_ROOT / "config" / "robots" / "stretch3.yaml"
ENTRY_POINT = REPO_ROOT / ".venv" / "bin" / "harness-ros"
TRAJECTORY = "/stretch_controller/follow_joint_trajectory"
MODEL_ENV = {"HARNESS_MODEL": "openai/gpt-4o-mini", "OPENAI_API_KEY": "sk-not-a-real-key"}


def test_the_stretch3_example_passes_check(tmp_path: Path) -> None:
    command = [str(ENTRY_POINT)] if ENTRY_POINT.exists() else [sys.executable, "-m", "harness_ros.cli"]
    env = dict(os.environ, **MODEL_ENV, HOME=str(tmp_path))  # its memory folder: a fresh one
    result = subprocess.run(
        [*command, "check", "--config", str(CONFIG)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert out.rstrip().endswith("check: OK")
    assert "profiles/stretch3.md (views: head, gripper)" in out
    assert (
        "tools:   navigate_to_pose, spin, drive_forward, move_lift_to, move_arm_to, point_head, "
        "open_gripper, close_gripper, stow_the_robot\n"
    ) in out
    assert "WARNING" not in result.stderr  # no preset default left that fits another robot


def test_the_stretch3_example_uses_modes_a_joint_gripper_and_a_sideways_head() -> None:
    config = load_config(CONFIG)
    tools = {tool.name: tool for tool in config.tools}
    navigation = {"navigate_to_pose", "spin", "drive_forward"}
    for name, tool in tools.items():
        services = [p.service for p in tool.prerequisites]
        if name in navigation:
            assert services == ["/switch_to_navigation_mode"], name
        elif tool.action == TRAJECTORY:
            assert services == ["/switch_to_position_mode"], name
    assert (
        tools["close_gripper"].grasp is not None and tools["close_gripper"].grasp.joint == "gripper_aperture"
    )
    head = config.observations.views["head"]
    assert head.topic == "/camera/color/image_raw" and head.rotate == 90
    assert head.pan is not None and head.pan.joint == "joint_head_pan" and head.pan.positive == "left"
    assert config.observations.clearance.scan_topic == "/scan"
    assert config.observations.clearance.scan_mount.yaw_rad == pytest.approx(3.14159)


@pytest.fixture
def stand_in(ros_env: dict[str, str]) -> Iterator[Any]:
    pytest.importorskip("control_msgs")
    pytest.importorskip("nav2_msgs")
    from support.processes import ServerProcess

    server = ServerProcess(
        "object",
        {**ros_env, "ROS_DISTRO": "kilted"},
        script=REPO_ROOT / "test/support/stretch_driver_stand_in.py",
    )
    yield server
    server.stop()


@pytest.mark.ros
def test_the_stretch3_tools_drive_a_stretch_driver_in_its_modes(ros_context: Any, stand_in: Any) -> None:
    from support.spinning_node import spinning_node

    from harness_ros.ros.ros_tools import build_ros_tools
    from harness_ros.tools.contracts import CancelToken

    config = load_config(CONFIG)
    with spinning_node(ros_context, "stretch3_test_client") as node:
        tools = {tool.spec.name: tool for tool in build_ros_tools(node, config.tools)}
        for name in ("move_lift_to", "close_gripper"):
            assert tools[name]._client.wait_for_server(timeout_sec=10.0), stand_in.output
            for prerequisite in tools[name].prerequisites:
                assert prerequisite.run(CancelToken())["success"] is True, stand_in.output
        lift = tools["move_lift_to"].execute({"height": 0.75}, cancel=CancelToken())
        assert lift["success"] is True, lift
        closed = tools["close_gripper"].execute({}, cancel=CancelToken())
        assert closed["success"] is True and closed["result"]["holding"] is True, closed
    goals = [line for line in stand_in.lines if line.startswith(f"goal {TRAJECTORY} ")]
    first = json.loads(goals[0].split(" ", 3)[3])
    assert first["trajectory"]["joint_names"] == ["joint_lift"]
    assert first["trajectory"]["points"][0]["positions"] == [0.75]
    assert all(" mode=position " in line for line in goals)
