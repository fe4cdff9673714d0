"""What makes `harness-ros node` refuse to start makes `harness-ros check` fail, with the
same message: both run as processes on the same config file."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
CLI = [sys.executable, "-m", "harness_ros.cli"]
SEVEN_JOINTS = [f"arm_joint_{i}" for i in range(1, 8)]


def _config(tmp_path: Path, **changes: Any) -> Path:
    data = yaml.safe_load((REPO / "config" / "example.yaml").read_text(encoding="utf-8"))
    data["embodiment_profile_file"] = str(REPO / "profiles" / "mobile_manipulator.md")
    data["skills"] = {"dir": str(REPO / "skills")}
    data["memory"] = {"dir": str(tmp_path / "memory")}
    data["harness"] = {**(data.get("harness") or {}), "runs_dir": str(tmp_path / "runs")}
    data["graph_check_timeout_s"] = 0
    data.update(changes)
    path = tmp_path / "robot.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def _error_line(result: subprocess.CompletedProcess[str]) -> str:
    lines = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert len(lines) == 1, result.stdout[-2000:] + result.stderr[-3000:]
    return lines[0]


def _check(config: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, "check", "--config", str(config)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _node(config: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    # The node refuses during configure and exits 1; it never reaches the spin.
    return subprocess.run(
        [*CLI, "node", "--config", str(config)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _without_torso_topic(tmp_path: Path) -> Path:
    views = yaml.safe_load((REPO / "config" / "example.yaml").read_text(encoding="utf-8"))["observations"]
    views["views"].pop("torso")
    return _config(tmp_path, observations=views)


def _seven_joints_six_positions(tmp_path: Path) -> Path:
    arm = {
        "preset": "move_arm_to",
        "action": "/arm_controller/follow_joint_trajectory",
        "goal": {"trajectory.joint_names": SEVEN_JOINTS},
        "lookups": {"arm_poses": {"home": [0.0] * 7, "ready": [0.0, 0.6, -1.2, 0.0, 0.9, 0.0]}},
    }
    return _config(tmp_path, tools=[arm])


CASES = {
    "a profile view without a camera topic": (
        _without_torso_topic,
        "error: Model-Visible View(s) ['torso'] have no camera topic: set observations.views.torso.topic",
    ),
    "arm poses with 6 positions for 7 joints": (
        _seven_joints_six_positions,
        "error: tool 'move_arm_to': ",
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_check_fails_where_the_node_refuses_to_start(
    case: str, tmp_path: Path, ros_env: dict[str, str]
) -> None:
    make, expected = CASES[case]
    config = make(tmp_path)
    env = {**ros_env, "HARNESS_MODEL": "openai/gpt-4o-mini", "OPENAI_API_KEY": "sk-not-a-real-key"}
    checked = _check(config, env)
    assert checked.returncode == 1, checked.stdout + checked.stderr
    assert "check: OK" not in checked.stdout
    message = _error_line(checked)
    assert message.startswith(expected), message
    if case.startswith("arm poses"):
        assert "arm_poses entry 'ready' has 6 positions for 7 joint_names" in message

    started = _node(config, env)
    assert started.returncode == 1, started.stdout[-2000:] + started.stderr[-3000:]
    assert _error_line(started) == message  # the very same message


def test_the_same_config_passes_both_once_fixed(tmp_path: Path, ros_env: dict[str, str]) -> None:
    # The control: without the mistakes, check is OK (the node part is covered elsewhere).
    arm = {
        "preset": "move_arm_to",
        "action": "/arm_controller/follow_joint_trajectory",
        "goal": {"trajectory.joint_names": SEVEN_JOINTS},
        "lookups": {"arm_poses": {"home": [0.0] * 7}},
    }
    env = {**ros_env, "HARNESS_MODEL": "openai/gpt-4o-mini", "OPENAI_API_KEY": "sk-not-a-real-key"}
    checked = _check(_config(tmp_path, tools=[arm]), env)
    assert checked.returncode == 0, checked.stderr
    assert checked.stdout.rstrip().endswith("check: OK")
    assert "tools:   move_arm_to\n" in checked.stdout
