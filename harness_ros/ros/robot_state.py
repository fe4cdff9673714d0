"""Robot state for evaluators: the ``evaluator.state`` topics, newest message each.

Types: ``odometry`` (nav_msgs/Odometry: pose in ``header.frame_id`` and the twist),
``pose`` (geometry_msgs/PoseWithCovarianceStamped, a localizer's pose such as
``/amcl_pose`` in the map frame), ``joint_states`` (sensor_msgs/JointState, reduced to
the configured joints) and ``pose_stamped`` (geometry_msgs/PoseStamped, the end
effector's pose for an arm move's check). A robot may split its joint states over
several messages (one per driver), so each joint's newest position is kept and a
joint reading is as old as its oldest joint. Subscriptions are best effort, which
matches reliable publishers too. A reading's age is measured on the node clock (sim
time under ``use_sim_time``) from the message's stamp, or from its arrival when the
stamp is zero.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from geometry_msgs.msg import PoseStamped, PoseWithCovarianceStamped
from nav_msgs.msg import Odometry
from rclpy.callback_groups import CallbackGroup
from rclpy.exceptions import NameValidationException
from rclpy.node import Node
from rclpy.subscription import Subscription
from sensor_msgs.msg import JointState

from harness_ros.config import StateSourceConfig
from harness_ros.errors import ConfigError
from harness_ros.evaluation.arm_pose import ArmPose
from harness_ros.evaluation.evidence import Pose2D, StateReading, yaw_from_quaternion
from harness_ros.ros.qos import JOINT_STATES_DEPTH, qos_for

__all__ = ["RosRobotState"]

_TYPES: dict[str, type] = {
    "odometry": Odometry,
    "pose": PoseWithCovarianceStamped,
    "joint_states": JointState,
    "pose_stamped": PoseStamped,
}


_MAX_JOINTS = 256
"""Joints kept for a joint_states source that names none (a robot has tens)."""


@dataclass
class _Latest:
    topic: str
    msg: Any = None
    stamp: float | None = None
    joints: dict[str, tuple[float, float]] = field(default_factory=dict)
    """joint_states only: joint -> (newest position, its message's stamp)."""


class RosRobotState:
    """``RobotStateSource`` over ROS subscriptions, one per configured source."""

    def __init__(
        self,
        node: Node,
        sources: Mapping[str, StateSourceConfig],
        *,
        callback_group: CallbackGroup | None = None,
    ) -> None:
        self._node = node
        self._sources = dict(sources)
        self._lock = threading.Lock()
        self._latest: dict[str, _Latest] = {}
        self._subscriptions: list[Subscription[Any]] = []  # of generated message classes (no stubs)
        for name, source in self._sources.items():
            key = f"evaluator.state.{name}.topic"
            latest = _Latest(source.topic)
            try:
                subscription = node.create_subscription(
                    _TYPES[source.type],
                    source.topic,
                    self._storer(latest, frozenset(source.joints)),
                    qos_for("sensor_data", depth=JOINT_STATES_DEPTH if source.type == "joint_states" else 1),
                    callback_group=callback_group,
                )
            except NameValidationException as err:
                raise ConfigError(f"{key}: invalid topic name {source.topic!r}: {err}") from None
            latest.topic = subscription.topic_name
            self._latest[name] = latest
            self._subscriptions.append(subscription)

    def _now(self) -> float:
        return self._node.get_clock().now().nanoseconds * 1e-9

    def _storer(self, latest: _Latest, wanted: frozenset[str]) -> Callable[[Any], None]:
        """Stores a source's newest message; for joint states each joint's newest position:
        only the configured ``wanted`` joints, else at most ``_MAX_JOINTS`` names, so a
        publisher that sends ever new joint names cannot grow the node's memory."""

        def store(msg: Any) -> None:
            stamp = float(msg.header.stamp.sec) + float(msg.header.stamp.nanosec) * 1e-9
            with self._lock:
                latest.msg = msg
                latest.stamp = stamp if stamp > 0 else self._now()
                if isinstance(msg, JointState):
                    for joint, position in zip(msg.name, msg.position, strict=False):
                        name = str(joint)
                        if (
                            name in wanted
                            if wanted
                            else name in latest.joints or len(latest.joints) < _MAX_JOINTS
                        ):
                            latest.joints[name] = (float(position), latest.stamp)

        return store

    def state_names(self) -> tuple[str, ...]:
        return tuple(self._sources)

    def read_state(self, names: Sequence[str]) -> tuple[StateReading, ...]:
        now = self._now()
        return tuple(self._reading(name, now) for name in names)

    def _reading(self, name: str, now: float) -> StateReading:
        source = self._sources.get(name)
        if source is None:
            return StateReading(name, "unknown", "", None, None, True, note=f"no state source {name!r}")
        latest = self._latest[name]
        with self._lock:
            msg, stamp, joints = latest.msg, latest.stamp, dict(latest.joints)
        if msg is None or stamp is None:
            return StateReading(
                name,
                source.type,
                latest.topic,
                None,
                None,
                True,
                note=f"nothing received on {latest.topic!r}",
            )
        reading: dict[str, Any] = {}
        if source.type == "joint_states":
            wanted = source.joints or list(joints)
            reading["joints"] = tuple((j, joints[j][0]) for j in wanted if j in joints)
            absent = [j for j in wanted if j not in joints]
            if absent:
                reading["note"] = f"joints not received yet: {', '.join(absent)}"
            stamps = [joints[j][1] for j in wanted if j in joints]
            stamp = min(stamps) if stamps else stamp  # as old as the oldest joint it reports
        age = max(0.0, now - stamp)
        if source.type in ("odometry", "pose"):
            pose = msg.pose.pose
            q = pose.orientation
            reading["pose"] = Pose2D(
                msg.header.frame_id,
                float(pose.position.x),
                float(pose.position.y),
                yaw_from_quaternion(q.x, q.y, q.z, q.w),
            )
        if source.type == "pose_stamped":
            p, q = msg.pose.position, msg.pose.orientation
            norm = math.sqrt(q.x * q.x + q.y * q.y + q.z * q.z + q.w * q.w)
            unit = (
                (q.x / norm, q.y / norm, q.z / norm, q.w / norm)
                if math.isfinite(norm) and norm > 1e-9
                else None
            )
            reading["arm_pose"] = ArmPose(msg.header.frame_id, float(p.x), float(p.y), float(p.z), unit)
        if source.type == "odometry":
            twist = msg.twist.twist
            reading["linear_speed_m_s"] = math.hypot(twist.linear.x, twist.linear.y)
            reading["turn_rate_rad_s"] = abs(float(twist.angular.z))
        return StateReading(name, source.type, latest.topic, stamp, age, age > source.max_age_s, **reading)

    def destroy(self) -> None:
        for subscription in self._subscriptions:
            self._node.destroy_subscription(subscription)
        self._subscriptions.clear()
