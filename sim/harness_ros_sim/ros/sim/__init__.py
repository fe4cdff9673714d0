"""ROS 2 front of the simulated robot: the ``sim_robot`` node (``harness_ros_sim.ros.sim.node``)."""
