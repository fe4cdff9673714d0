"""Helpers for tests: scripts run as separate ROS processes."""
