"""A session of two tasks against `harness-ros sim` and one `harness-ros node --config
config/sim.yaml` (the scripted demo policy), sent with `harness-ros task`, all as processes.

The second task's prompt carries the summary of the first (a failed task): the policy
must still act on the second task's own instruction.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.spinning_node import spinning_node

from harness_ros_sim.demo.runner import node_command, sim_command

pytestmark = [pytest.mark.ros, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[1]
CLI = [sys.executable, "-m", "harness_ros.cli"]


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=5)


@pytest.fixture
def sim_and_node(tmp_path: Path, ros_env: dict[str, str]) -> Iterator[Path]:
    env = {key: value for key, value in ros_env.items() if key != "HARNESS_MODEL"}
    node = node_command(REPO / "config" / "sim.yaml", memory=tmp_path / "memory", runs=tmp_path / "runs")
    started: list[subprocess.Popen[bytes]] = []
    try:
        for name, command in (("sim", sim_command(4.0)), ("node", node)):
            with (tmp_path / f"{name}.log").open("wb") as log:
                started.append(subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT))
        yield tmp_path
    finally:
        for process in reversed(started):
            _stop(process)


def _task(instruction: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, "task", instruction, "--connect-timeout", "120", "--timeout", "240"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def _wait_for_the_sim(context: Any) -> None:
    from harness_sim_msgs.action import NavigateTo
    from rclpy.action import ActionClient

    with spinning_node(context, "session_test_probe") as probe:
        client = ActionClient(probe, NavigateTo, "/sim/navigate_to")
        try:
            assert client.wait_for_server(timeout_sec=120.0), "the sim did not come up"
        finally:
            client.destroy()


def test_a_doable_task_after_a_failed_one_succeeds(
    sim_and_node: Path, ros_env: dict[str, str], ros_context: Any
) -> None:
    _wait_for_the_sim(ros_context)
    impossible = _task("Bring the purple elephant from the garage to the kitchen table.", ros_env)
    assert impossible.returncode == 4, impossible.stdout[-3000:] + impossible.stderr[-2000:]

    doable = _task("Bring the red cup to the coffee table.", ros_env)
    logs = doable.stdout[-4000:] + doable.stderr[-2000:]
    assert doable.returncode == 0, logs
    assert "SUCCEEDED" in doable.stdout, logs
    assert len(list((sim_and_node / "runs").iterdir())) == 2
