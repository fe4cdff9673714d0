"""rosbag2 recording and replay of harness runs (``rosbags``; no ros2 CLI needed).

``reader`` is pure rosbags (no rclpy): consolidation replay runs without ROS.
``recorder`` and ``live_replay`` need rclpy; import them directly.
"""

from __future__ import annotations

from harness_ros.ros.bag.reader import (
    EVENTS_TYPE,
    BagContents,
    BagMessage,
    SkippedMessage,
    TopicInfo,
    find_events_topic,
    iter_events,
    iter_messages,
    open_bag,
)

__all__ = [
    "EVENTS_TYPE",
    "BagContents",
    "BagMessage",
    "SkippedMessage",
    "TopicInfo",
    "find_events_topic",
    "iter_events",
    "iter_messages",
    "open_bag",
]
