"""ROS nodes for Gazebo: ``gz_manipulation``."""
