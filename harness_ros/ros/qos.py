"""Named QoS profiles for sensor subscriptions (the ``qos:`` key of the config).

``sensor_data``: best effort, keep last 1, volatile. It matches both best-effort
and reliable publishers and never queues old frames: only the newest one
matters. Between processes, VGA frames then need Fast DDS's ``LARGE_DATA``
transport (``FASTDDS_BUILTIN_TRANSPORTS=LARGE_DATA``), or they are dropped.

``reliable``: reliable, keep last 1, volatile. Only matches reliable
publishers; use it when ``LARGE_DATA`` is not an option.
"""

from __future__ import annotations

from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy

from harness_ros.errors import ConfigError

__all__ = ["OPERATOR_LATCHED_QOS", "OPERATOR_REPLY_QOS", "QOS_NAMES", "qos_for"]

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


def qos_for(name: str) -> QoSProfile:
    """A fresh QoSProfile for a configured QoS name."""
    reliability = _RELIABILITY.get(name)
    if reliability is None:
        raise ConfigError(f"unknown QoS profile {name!r}; expected one of {list(QOS_NAMES)!r}")
    return QoSProfile(
        reliability=reliability,
        history=HistoryPolicy.KEEP_LAST,
        depth=1,
        durability=DurabilityPolicy.VOLATILE,
    )
