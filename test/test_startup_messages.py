"""Start-up says where things are and what it assumed: the node's log names the run and
memory folders, and a ``move_arm_to`` preset that keeps the UR joint names says so."""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path

import pytest
from support.waiting import ProcessLines

from harness_ros.config import config_from_dict

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "config" / "example.yaml"
UR_JOINTS = (
    "shoulder_pan_joint, shoulder_lift_joint, elbow_joint, wrist_1_joint, wrist_2_joint, wrist_3_joint"
)


def test_move_arm_to_with_the_default_joint_names_warns_naming_them(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="harness_ros.config"):
        config_from_dict({"tools": [{"preset": "move_arm_to"}]}, base_dir=REPO / "config", origin="test")
    (record,) = [r for r in caplog.records if "move_arm_to" in r.getMessage()]
    message = record.getMessage()
    assert "tools.0 (preset move_arm_to): goal trajectory.joint_names is not set" in message
    assert "Universal Robots (UR)" in message and UR_JOINTS in message

    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="harness_ros.config"):
        config_from_dict(
            {
                "tools": [
                    {"preset": "move_arm_to", "goal": {"trajectory.joint_names": [f"j{i}" for i in range(6)]}}
                ]
            },
            base_dir=REPO / "config",
            origin="test",
        )
    assert not [r for r in caplog.records if "move_arm_to" in r.getMessage()]


class NodeLog:
    """``harness-ros node ARGS`` in its own process, its stderr (the ROS log) collected."""

    def __init__(self, args: list[str], env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "harness_ros.cli", "node", *args],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        self.output = ProcessLines(self.proc, self.proc.stderr)
        self.lines = self.output.lines

    def wait_for(self, text: str, timeout_s: float) -> list[str]:
        """The lines containing ``text`` once one arrived (or the process ended, or timeout)."""
        return self.output.wait_for(text, timeout_s)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(subprocess.signal.SIGINT)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@pytest.mark.ros
def test_node_start_up_log_names_the_run_and_memory_folders(tmp_path: Path, ros_env: dict[str, str]) -> None:
    pytest.importorskip("rclpy")
    runs, memory = tmp_path / "runs", tmp_path / "memory"
    node = NodeLog(
        ["--config", str(EXAMPLE), "--ros-args", "-p", f"memory.dir:={memory}",
         "-p", f"harness.runs_dir:={runs}", "-p", "graph_check_timeout_s:=0.0"],
        ros_env,
    )  # fmt: skip
    try:
        configured = node.wait_for("]: configured: model", 60)
        assert configured, "\n".join(node.lines)
        assert f"run folders in {runs}, memory in {memory}" in configured[0]
        assert "(model profile: " in configured[0], "the node says which model profile applies"
    finally:
        node.stop()


@pytest.mark.ros
def test_node_logs_a_sensor_whose_publisher_is_visible_but_silent(
    tmp_path: Path, ros_env: dict[str, str]
) -> None:
    pytest.importorskip("rclpy")
    config = tmp_path / "robot.yaml"
    config.write_text(
        f"memory: {{dir: {tmp_path / 'memory'}}}\nharness: {{runs_dir: {tmp_path / 'runs'}}}\n"
        "graph_check_timeout_s: 1.0\nobservations:\n  clearance: {scan_topic: /scan}\n",
        encoding="utf-8",
    )
    # discovered at once, first scan after 100 s
    silent = subprocess.Popen(
        [sys.executable, str(REPO / "test" / "support" / "scan_publisher.py"),
         "--mount-x", "0", "--wall-behind", "1", "--rate", "0.01"],
        env=ros_env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    node = None
    try:
        assert silent.stdout is not None and "publishing" in silent.stdout.readline()
        node = NodeLog(["--config", str(config)], ros_env)
        hints = node.wait_for("sensor check: ", 60)
        assert hints, "\n".join(node.lines)
        assert "1 publisher(s) visible on '/scan' but nothing received in 3.0 s" in hints[0]
        assert "FASTDDS_BUILTIN_TRANSPORTS=LARGE_DATA" in hints[0]
    finally:
        if node is not None:
            node.stop()
        silent.send_signal(subprocess.signal.SIGINT)
        try:
            silent.wait(timeout=10)
        except subprocess.TimeoutExpired:
            silent.kill()
            silent.wait()
