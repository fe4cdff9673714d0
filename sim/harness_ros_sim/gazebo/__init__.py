"""Gazebo (Harmonic) support that needs neither Gazebo nor ROS.

- ``world_sdf``: ``sim/worlds/apartment.sdf`` from the Python sim's ``WorldSpec``;
- ``robot_sdf``: ``sim/models/harness_robot`` (the mobile manipulator and its topic names);
- ``bridge``: ``sim/config/gazebo_bridge.yaml`` from those names;
- ``manipulation``: what ``gz_manipulation`` decides (the sim's checks on Gazebo's poses,
  the drive controller). The ROS node is ``harness_ros_sim.ros.gz.node``.

``python -m harness_ros_sim.gazebo [--check]`` regenerates (or checks) the three files.
"""
