"""Start-up says where things are and what it assumed: the node's log names the run and
memory folders, and a ``move_arm_to`` preset that keeps the UR joint names says so."""

from __future__ import annotations

import logging
import subprocess
import sys
import threading
from pathlib import Path

import pytest

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


@pytest.mark.ros
def test_node_start_up_log_names_the_run_and_memory_folders(tmp_path: Path, ros_env: dict[str, str]) -> None:
    pytest.importorskip("rclpy")
    runs, memory = tmp_path / "runs", tmp_path / "memory"
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness_ros.cli", "node", "--config", str(EXAMPLE), "--ros-args",
         "-p", f"memory.dir:={memory}", "-p", f"harness.runs_dir:={runs}",
         "-p", "graph_check_timeout_s:=0.0"],
        env=ros_env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    lines: list[str] = []
    changed = threading.Condition()

    def read() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            with changed:
                lines.append(line.rstrip())
                changed.notify_all()

    threading.Thread(target=read, daemon=True).start()
    try:
        with changed:
            changed.wait_for(
                lambda: any("]: configured: model" in line for line in lines) or proc.poll() is not None, 60
            )
        configured = [line for line in lines if "]: configured: model" in line]
        assert configured, "\n".join(lines)
        assert f"run folders in {runs}, memory in {memory}" in configured[0]
    finally:
        if proc.poll() is None:
            proc.send_signal(subprocess.signal.SIGINT)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
