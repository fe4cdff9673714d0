"""sim_robot parameters: an int for a float is accepted, a bad value is one clear line,
and a node whose __init__ failed half-way shuts down without hiding that error."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("harness_sim_msgs", reason="build it first: scripts/build_interfaces.sh .venv")

pytestmark = pytest.mark.ros

WAIT_S = 20.0
SMALL = ["-p", "image_width:=64", "-p", "image_height:=48"]


def _sim(ros_env: dict[str, str], *params: str) -> subprocess.Popen[str]:
    command = [sys.executable, "-m", "harness_ros_sim.ros.sim.node", "--ros-args", *SMALL, *params]
    return subprocess.Popen(command, env=ros_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.fixture
def default_context(ros_env: dict[str, str]) -> Iterator[Any]:
    """rclpy's default context on the reserved domain (SimRobotNode takes no context)."""
    import rclpy

    rclpy.init(domain_id=int(ros_env["ROS_DOMAIN_ID"]))
    try:
        yield rclpy.get_default_context()
    finally:
        rclpy.try_shutdown()


def test_integer_for_a_float_parameter_starts_the_node(ros_env: dict[str, str]) -> None:
    process = _sim(ros_env, "-p", "time_scale:=2", "-p", "rate_hz:=5")
    ready = threading.Event()
    lines: list[str] = []

    def read() -> None:
        assert process.stderr is not None
        for line in process.stderr:
            lines.append(line)
            if "sim_robot ready" in line:
                ready.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        assert ready.wait(WAIT_S), "".join(lines)
    finally:
        process.terminate()
        process.communicate(timeout=10)
    reader.join(5)
    # Up to "ready" (a stop during executor start-up is a separate race, not checked here).
    started = lines[: next(i for i, line in enumerate(lines) if "sim_robot ready" in line) + 1]
    assert not any("Traceback" in line or "error" in line for line in started), "".join(lines)


def test_bad_parameters_are_one_clear_line(ros_env: dict[str, str]) -> None:
    process = _sim(ros_env, "-p", "seed:=2.5", "-p", "rate_hz:=fast")
    _, stderr = process.communicate(timeout=WAIT_S)
    assert process.returncode == 1
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    assert lines[0].startswith("error: Invalid sim_robot parameters: ")
    assert "seed:=2.5" in lines[0]
    assert "rate_hz:='fast'" in lines[0]


def test_int_becomes_float_in_process(default_context: Any) -> None:
    from rclpy.parameter import Parameter

    from harness_ros_sim.ros.sim.node import SimRobotNode

    overrides = [Parameter("time_scale", value=2), Parameter("image_width", value=64)]
    node = SimRobotNode(parameter_overrides=[*overrides, Parameter("image_height", value=48)])
    try:
        assert node.config.time_scale == 2.0
        assert isinstance(node.config.time_scale, float)
    finally:
        node.destroy_node()


@pytest.mark.parametrize(
    ("parameter", "match"),
    [
        (("seed", 2.5), r"seed:=2\.5: Input should be a valid integer"),
        (("world", "nowhere"), r"Unknown world 'nowhere'"),
    ],
)
def test_half_built_node_shuts_down_cleanly(
    default_context: Any, parameter: tuple[str, object], match: str
) -> None:
    from rclpy.parameter import Parameter

    from harness_ros.errors import ConfigError
    from harness_ros_sim.ros.sim.node import SimRobotNode

    with pytest.raises(ConfigError, match=match) as caught:
        SimRobotNode(parameter_overrides=[Parameter(parameter[0], value=parameter[1])])
    # The traceback keeps the half-built node alive, so the context destroys it now:
    # before the fix this raised AttributeError('_stopping') and hid the ConfigError.
    assert caught.traceback
    default_context.try_shutdown()
    assert not default_context.ok()
