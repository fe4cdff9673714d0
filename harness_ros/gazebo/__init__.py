"""Gazebo (Harmonic) support without Gazebo: the world generator and the manipulation logic.

Pure Python (no rclpy, no Gazebo): ``world_sdf`` writes ``worlds/apartment.sdf`` from the
Python sim's ``WorldSpec``; ``manipulation`` decides navigate/pick/place against poses
reported by Gazebo, with the sim's failure messages. The ROS node is
``harness_ros.ros.gz.node``.
"""
