"""The ROS 2 layer: adapts topics to Observations and actions/services to Tools.

Everything that imports rclpy or message packages lives in this package; the
core never imports it. Submodules are imported directly (``harness_ros.ros.observations``)
so importing this package stays free of rclpy.
"""
