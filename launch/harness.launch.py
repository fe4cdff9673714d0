"""Launch the harness node with a params file, under an optional namespace.

ros2 launch harness_ros harness.launch.py config_file:=/path/robot.yaml namespace:=robot1

autostart:=false leaves the node unconfigured for a lifecycle manager (nav2's
lifecycle_manager with bond_timeout 0.0, or `ros2 lifecycle set /harness configure`).
Memory and run logs that the config puts in this package's share folder go to
$ROS_HOME/harness_ros/<node>/ instead (ROS_HOME defaults to ~/.ros).
"""

from __future__ import annotations

import os

from ament_index_python.packages import get_package_share_directory
from launch.actions import DeclareLaunchArgument
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from launch import LaunchDescription


def generate_launch_description() -> LaunchDescription:
    share = get_package_share_directory("harness_ros")

    config_file = LaunchConfiguration("config_file")
    params_file = LaunchConfiguration("params_file")
    namespace = LaunchConfiguration("namespace")
    use_sim_time = LaunchConfiguration("use_sim_time")
    log_level = LaunchConfiguration("log_level")
    autostart = LaunchConfiguration("autostart")

    declare_config_file = DeclareLaunchArgument(
        "config_file",
        default_value=os.path.join(share, "config", "example.yaml"),
        description="harness YAML config (profile, topics, tools, model, memory)",
    )
    declare_params_file = DeclareLaunchArgument(
        "params_file",
        default_value=os.path.join(share, "config", "harness_overrides.yaml"),
        description="ROS parameters overriding keys of the config (dotted names, e.g. memory.dir)",
    )
    declare_namespace = DeclareLaunchArgument(
        "namespace", default_value="", description="namespace of the harness node"
    )
    declare_use_sim_time = DeclareLaunchArgument(
        "use_sim_time", default_value="false", description="use /clock (Gazebo, bag replay)"
    )
    declare_log_level = DeclareLaunchArgument("log_level", default_value="info", description="log level")
    declare_autostart = DeclareLaunchArgument(
        "autostart",
        default_value="true",
        description="configure and activate at start; false: wait for a lifecycle manager",
    )

    harness_node = Node(
        package="harness_ros",
        executable="harness_node",
        name="harness",
        namespace=namespace,
        output="screen",
        parameters=[
            params_file,
            {"config_file": config_file, "use_sim_time": use_sim_time, "autostart": autostart},
        ],
        arguments=["--ros-args", "--log-level", log_level],
    )

    ld = LaunchDescription()
    ld.add_action(declare_config_file)
    ld.add_action(declare_params_file)
    ld.add_action(declare_namespace)
    ld.add_action(declare_use_sim_time)
    ld.add_action(declare_log_level)
    ld.add_action(declare_autostart)
    ld.add_action(harness_node)
    return ld
