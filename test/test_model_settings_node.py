"""The node and the model settings, as a user meets them: real processes on a private domain.

``config/example.yaml`` sets no model: the node comes up (sensors, tools) and refuses
every task with the no-model message, and ``harness-ros task`` exits 3, not 1. A model
that cannot run (the scripted demo policy on a robot config, a missing key) stops the
node at configure, before any task, with a message naming the setting.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.waiting import ProcessLines

pytest.importorskip("rclpy")

from harness_ros.commands.task import EXIT_REJECTED
from harness_ros.model import NO_MODEL_MESSAGE

pytestmark = pytest.mark.ros

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "config" / "example.yaml"
CLI = [sys.executable, "-m", "harness_ros.cli"]


def node_argv(tmp_path: Path) -> list[str]:
    # Memory and runs in the test's folder; no publishers exist, so skip the graph wait.
    return [
        *CLI, "node", "--config", str(EXAMPLE), "--ros-args",
        "-p", f"memory.dir:={tmp_path / 'memory'}",
        "-p", f"harness.runs_dir:={tmp_path / 'runs'}",
        "-p", "graph_check_timeout_s:=0.0",
    ]  # fmt: skip


class NodeProcess:
    """``harness-ros node`` with its stderr (the ROS log) collected line by line."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
        )
        self.output = ProcessLines(self.proc, self.proc.stderr)
        self.lines = self.output.lines

    def wait_for(self, text: str, timeout_s: float) -> bool:
        return bool(self.output.wait_for(text, timeout_s))

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(subprocess.signal.SIGINT)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@pytest.fixture
def example_node(tmp_path: Path, ros_env: dict[str, str]) -> Iterator[NodeProcess]:
    node = NodeProcess(node_argv(tmp_path), ros_env)
    try:
        yield node
    finally:
        node.stop()


def test_example_config_node_starts_and_refuses_tasks_without_a_model(
    example_node: NodeProcess, ros_env: dict[str, str], tmp_path: Path
) -> None:
    assert example_node.wait_for("active: send a task", 60.0), "\n".join(example_node.lines)
    assert any(NO_MODEL_MESSAGE in line for line in example_node.lines), "configure warns at start-up"

    task = subprocess.run(
        [*CLI, "task", "Bring me the red cup from the kitchen.",
         "--connect-timeout", "30", "--timeout", "30"],
        env=ros_env, capture_output=True, text=True, timeout=90, check=False,
    )  # fmt: skip

    assert task.returncode == EXIT_REJECTED == 3, task.stdout + task.stderr
    assert task.stdout.strip() == f"task rejected: {NO_MODEL_MESSAGE}"
    assert "Traceback" not in task.stderr
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir()), "no task ran"
    assert example_node.proc.poll() is None, "the node keeps running"


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        ("harness_demo/scripted", "HARNESS_MODEL 'harness_demo/scripted' is the scripted demo policy"),
        ("openai/gpt-4o-mini", "needs the environment variable OPENAI_API_KEY, which is not set"),
    ],
)
def test_a_model_that_cannot_run_stops_the_node_at_configure(
    tmp_path: Path, ros_env: dict[str, str], model: str, expected: str
) -> None:
    done = subprocess.run(
        node_argv(tmp_path),
        env={**ros_env, "HARNESS_MODEL": model},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    assert expected in done.stderr
    assert "active: send a task" not in done.stderr
    assert "Traceback" not in done.stderr
