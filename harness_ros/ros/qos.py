"""Named QoS profiles for sensor subscriptions (the ``qos:`` key of the config).

``sensor_data``: best effort, keep last 1, volatile. It matches both best-effort
and reliable publishers and never queues old frames: only the newest one
matters. Between processes, VGA frames then need Fast DDS's ``LARGE_DATA``
transport (``FASTDDS_BUILTIN_TRANSPORTS=LARGE_DATA``), or they are dropped.

``reliable``: reliable, keep last 1, volatile. Only matches reliable
publishers; use it when ``LARGE_DATA`` is not an option.

Joint states are the exception to "only the newest matters": robots publish
``/joint_states`` split over several messages per cycle (one per driver: base, arm,
head, gripper), so keep-last-1 keeps whichever came last and loses the others'
joints whenever the executor falls behind. Their subscriptions keep
``JOINT_STATES_DEPTH`` messages and merge them joint by joint.
"""

from __future__ import annotations

from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy

from harness_ros.errors import ConfigError

__all__ = ["JOINT_STATES_DEPTH", "OPERATOR_LATCHED_QOS", "OPERATOR_REPLY_QOS", "QOS_NAMES", "qos_for"]

OPERATOR_LATCHED_QOS = QoSProfile(
    history=HistoryPolicy.KEEP_LAST,
    depth=10,
    reliability=ReliabilityPolicy.RELIABLE,
    durability=DurabilityPolicy.TRANSIENT_LOCAL,
)
"""Requests to the operator (approvals, questions, notices): late joiners see the recent ones."""
OPERATOR_REPLY_QOS = QoSProfile(
    history=HistoryPolicy.KEEP_LAST,
    depth=10,
    reliability=ReliabilityPolicy.RELIABLE,
    durability=DurabilityPolicy.VOLATILE,
)
"""Replies from the operator (decisions, answers): never replayed to a later node."""

_RELIABILITY: dict[str, ReliabilityPolicy] = {
    "sensor_data": ReliabilityPolicy.BEST_EFFORT,
    "reliable": ReliabilityPolicy.RELIABLE,
}

QOS_NAMES: tuple[str, ...] = tuple(_RELIABILITY)

JOINT_STATES_DEPTH = 50
"""Queued JointState messages: a cycle's split messages (a few dozen bytes each) all survive
an executor that is busy with camera frames for a second or more."""


def qos_for(name: str, *, depth: int = 1) -> QoSProfile:
    """A fresh QoSProfile for a configured QoS name (``depth``: messages kept, 1 but for
    joint states)."""
    reliability = _RELIABILITY.get(name)
    if reliability is None:
        raise ConfigError(f"unknown QoS profile {name!r}; expected one of {list(QOS_NAMES)!r}")
    return QoSProfile(
        reliability=reliability,
        history=HistoryPolicy.KEEP_LAST,
        depth=depth,
        durability=DurabilityPolicy.VOLATILE,
    )
