"""Gazebo (Harmonic) support that needs neither Gazebo nor ROS.

- ``world_sdf``: ``worlds/apartment.sdf`` from the Python sim's ``WorldSpec``;
- ``robot_sdf``: ``models/harness_robot`` (the mobile manipulator and its topic names);
- ``bridge``: ``config/gazebo_bridge.yaml`` from those names;
- ``manipulation``: what ``gz_manipulation`` decides (the sim's checks on Gazebo's poses,
  the drive controller). The ROS node is ``harness_ros.ros.gz.node``.

``python -m harness_ros.gazebo [--check]`` regenerates (or checks) the three files.
"""
