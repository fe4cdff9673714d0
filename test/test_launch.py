"""Launch files follow the standard launch API; checked where ``launch_ros`` is installed.

The ROS launch packages have no pip wheels, so in the venv these tests skip; on a ROS
install (colcon) they build each LaunchDescription and check its declared arguments.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
LAUNCH_DIRS = {"harness.launch.py": REPO / "launch", "gazebo.launch.py": REPO / "sim" / "launch"}
"""harness_ros's launch file, and harness_ros_sim's."""

launch = pytest.importorskip("launch", reason="the ROS 'launch' package is not installed (pip-only venv)")
pytest.importorskip("launch_ros", reason="the ROS 'launch_ros' package is not installed (pip-only venv)")


def load(name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name.replace(".", "_"), LAUNCH_DIRS[name] / name)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.generate_launch_description()


@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        (
            "harness.launch.py",
            {"config_file", "params_file", "namespace", "use_sim_time", "log_level", "autostart"},
        ),
        (
            "gazebo.launch.py",
            {
                "bridge_config",
                "config_file",
                "namespace",
                "world",
                "world_name",
                "robot",
                "robot_name",
                "x",
                "y",
                "yaw",
                "gui",
                "manipulation",
            },
        ),
    ],
)
def test_launch_description_declares_its_arguments(name: str, arguments: set[str]) -> None:
    description = load(name)
    declared = {arg.name for arg in description.get_launch_arguments()}
    assert arguments <= declared


def test_gazebo_launch_defaults_are_the_generated_world_and_robot() -> None:
    from harness_ros_sim.sim.spec import apartment_spec

    description = load("gazebo.launch.py")
    defaults = {arg.name: arg.default_value for arg in description.get_launch_arguments()}
    context = launch.LaunchContext()

    def value(name: str) -> str:
        return "".join(part.perform(context) for part in defaults[name])

    assert value("world").endswith(os.path.join("worlds", "apartment.sdf"))
    assert value("robot").endswith(os.path.join("models", "harness_robot", "model.sdf"))
    assert value("world_name") == apartment_spec().name
    robot = apartment_spec().robot
    assert (float(value("x")), float(value("y")), float(value("yaw"))) == pytest.approx(
        (robot.x, robot.y, robot.yaw)
    )
    assert value("gui") == "false"
