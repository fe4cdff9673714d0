"""The harness against a Gazebo robot: ros_gz_bridge for cameras, depth and scan, plus the harness.

    ros2 launch harness_ros gazebo.launch.py bridge_config:=/path/gz_bridge.yaml

The bridge mapping (Gazebo topic -> ROS topic and types) lives in
config/gazebo_bridge.yaml; config/gazebo.yaml points the harness at the bridged topics.
"""

from __future__ import annotations

import os

from ament_index_python.packages import get_package_share_directory
from launch.actions import DeclareLaunchArgument, IncludeLaunchDescription
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from launch import LaunchDescription


def generate_launch_description() -> LaunchDescription:
    share = get_package_share_directory("harness_ros")

    bridge_config = LaunchConfiguration("bridge_config")
    config_file = LaunchConfiguration("config_file")
    namespace = LaunchConfiguration("namespace")

    declare_bridge_config = DeclareLaunchArgument(
        "bridge_config",
        default_value=os.path.join(share, "config", "gazebo_bridge.yaml"),
        description="ros_gz_bridge YAML mapping Gazebo topics to ROS topics",
    )
    declare_config_file = DeclareLaunchArgument(
        "config_file",
        default_value=os.path.join(share, "config", "gazebo.yaml"),
        description="harness config using the bridged topics",
    )
    declare_namespace = DeclareLaunchArgument(
        "namespace", default_value="", description="namespace of the harness node"
    )

    bridge = Node(
        package="ros_gz_bridge",
        executable="parameter_bridge",
        name="harness_gz_bridge",
        output="screen",
        parameters=[{"config_file": bridge_config, "use_sim_time": True}],
    )
    harness = IncludeLaunchDescription(
        PythonLaunchDescriptionSource(os.path.join(share, "launch", "harness.launch.py")),
        launch_arguments={
            "config_file": config_file,
            "namespace": namespace,
            "use_sim_time": "true",
        }.items(),
    )

    ld = LaunchDescription()
    ld.add_action(declare_bridge_config)
    ld.add_action(declare_config_file)
    ld.add_action(declare_namespace)
    ld.add_action(bridge)
    ld.add_action(harness)
    return ld
