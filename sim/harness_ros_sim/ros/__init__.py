"""The simulated robots on ROS 2: the ``sim_robot`` and ``gz_manipulation`` nodes, and the
demo's and eval's child processes. The only part of this package that imports rclpy
besides ``commands``."""
