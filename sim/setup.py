"""ament_python package setup for harness_ros_sim (colcon on a ROS install, pip in a venv).

The simulated robots of harness_ros, as a package that depends on it: every capability
it adds reaches the harness through an entry point, as a user's own package would.
"""

from __future__ import annotations

from glob import glob

from setuptools import find_packages, setup

PACKAGE = "harness_ros_sim"

setup(
    name=PACKAGE,
    version="0.1.0",
    packages=find_packages(exclude=["test", "test.*"]),
    package_data={PACKAGE: ["py.typed"]},
    data_files=[
        ("share/ament_index/resource_index/packages", [f"resource/{PACKAGE}"]),
        (f"share/{PACKAGE}", ["package.xml"]),
        # Gazebo: the launch file, the generated world, robot model and bridge file.
        (f"share/{PACKAGE}/launch", glob("launch/*.py")),
        (f"share/{PACKAGE}/config", glob("config/*.yaml")),
        (f"share/{PACKAGE}/worlds", glob("worlds/*.sdf")),
        (f"share/{PACKAGE}/models/harness_robot", glob("models/harness_robot/*")),
    ],
    install_requires=["setuptools"],
    zip_safe=False,
    maintainer="harness_ros developers",
    maintainer_email="dev@harness-ros.local",
    description="harness_ros simulated robots: the kinematic sim, Gazebo, the demo and the learning eval.",
    license="Apache-2.0",
    entry_points={
        "console_scripts": [
            "sim_robot = harness_ros_sim.ros.sim.node:main",
            "gz_manipulation = harness_ros_sim.ros.gz.node:main",
            "stretch3_physics = harness_ros_sim.ros.physics_node:main",
        ],
        "harness_ros.plugins": [
            "demo = harness_ros_sim.demo.plugin:register",
            "sim = harness_ros_sim.ros.sim.plugin:register",
        ],
        # Sub-commands of `harness-ros`: each module has register(subparsers).
        "harness_ros.commands": [
            "demo = harness_ros_sim.commands.demo",
            "eval = harness_ros_sim.commands.eval",
            "sim = harness_ros_sim.commands.sim",
        ],
    },
)
