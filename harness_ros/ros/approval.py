"""Operator approval of flagged tool calls over two std_msgs/String topics.

- ``~/approval_requests`` (reliable, transient local, depth 10): one JSON object per
  change of a request, ``{"request_id", "tool", "arguments", "status", "timeout_s"}``
  with status ``pending``, then ``approved``, ``denied`` or ``expired``. Late joiners
  (``harness-ros approve --list``) see the recent ones.
- ``~/approval_decisions`` (reliable): ``{"request_id", "approved": bool}``.

``request()`` runs in the harness worker thread and waits on a threading.Event set by
the decision callback (executor thread), bounded by ``timeout_s``; no answer is a denial.
Anything malformed on the decision topic is ignored: only an explicit
``"approved": true`` for a pending id approves.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from std_msgs.msg import String

from harness_ros.ros.qos import OPERATOR_LATCHED_QOS, OPERATOR_REPLY_QOS
from harness_ros.task_api import ClientMessageError, MessageLimits
from harness_ros.task_api import parse_json_object as parse_bounded_json_object

if TYPE_CHECKING:
    from rclpy.callback_groups import CallbackGroup
    from rclpy.node import Node

__all__ = [
    "DECISIONS_TOPIC",
    "DECISION_QOS",
    "REQUESTS_QOS",
    "REQUESTS_TOPIC",
    "RosApprovalProvider",
    "decision_json",
    "parse_json_object",
]

REQUESTS_TOPIC = "approval_requests"
DECISIONS_TOPIC = "approval_decisions"
REQUESTS_QOS = OPERATOR_LATCHED_QOS
DECISION_QOS = OPERATOR_REPLY_QOS


def decision_json(request_id: str, approved: bool) -> str:
    return json.dumps({"request_id": request_id, "approved": approved})


def parse_json_object(text: str, limits: MessageLimits | None = None) -> dict[str, Any] | None:
    """A bounded JSON object, or None for anything else (too big, too deep, not JSON)."""
    try:
        return parse_bounded_json_object(text, limits)
    except ClientMessageError:
        return None


@dataclass
class _Pending:
    tool: str
    arguments: dict[str, Any]
    answered: threading.Event = field(default_factory=threading.Event)
    approved: bool = False


class RosApprovalProvider:
    """ApprovalProvider answered by an operator over ROS (see the module docstring)."""

    def __init__(
        self, node: Node, *, callback_group: CallbackGroup | None = None, limits: MessageLimits | None = None
    ) -> None:
        self._node = node
        self._limits = limits or MessageLimits()
        self._lock = threading.Lock()
        self._pending: dict[str, _Pending] = {}
        self._publisher = node.create_publisher(String, f"~/{REQUESTS_TOPIC}", REQUESTS_QOS)
        self._subscription = node.create_subscription(
            String, f"~/{DECISIONS_TOPIC}", self._on_decision, DECISION_QOS, callback_group=callback_group
        )
        self._node_name = node.get_fully_qualified_name()

    def request(self, tool: str, arguments: dict[str, Any], timeout_s: float) -> bool:
        request_id = uuid.uuid4().hex[:8]
        pending = _Pending(tool, dict(arguments))
        with self._lock:
            self._pending[request_id] = pending
        try:
            self._publish(request_id, pending, "pending", timeout_s)
            self._node.get_logger().warning(
                f"approval needed for tool {tool!r} (request {request_id}, {timeout_s:g} s): "
                f"harness-ros approve {request_id} [--deny] --node {self._node_name}"
            )
            answered = pending.answered.wait(max(0.0, timeout_s))
        finally:
            with self._lock:
                self._pending.pop(request_id, None)
        approved = answered and pending.approved
        status = ("approved" if approved else "denied") if answered else "expired"
        self._publish(request_id, pending, status, timeout_s)
        self._node.get_logger().info(f"approval request {request_id} for {tool!r}: {status}")
        return approved

    def destroy(self) -> None:
        self._node.destroy_subscription(self._subscription)
        self._node.destroy_publisher(self._publisher)

    def _publish(self, request_id: str, pending: _Pending, status: str, timeout_s: float) -> None:
        body = {
            "request_id": request_id,
            "tool": pending.tool,
            "arguments": pending.arguments,
            "status": status,
            "timeout_s": timeout_s,
            "time": time.time(),
        }
        self._publisher.publish(String(data=json.dumps(body, default=str, ensure_ascii=False)))

    def _on_decision(self, msg: String) -> None:
        try:
            self._decide(msg)
        except Exception as err:  # noqa: BLE001  a client message must never stop the executor
            self._node.get_logger().error(f"approval decision refused: {type(err).__name__}: {err}")

    def _decide(self, msg: String) -> None:
        decision = parse_json_object(msg.data, self._limits)
        request_id = decision.get("request_id") if decision else None
        approved = decision.get("approved") if decision else None
        if not isinstance(request_id, str) or not isinstance(approved, bool):
            self._node.get_logger().warning(f"ignoring malformed approval decision: {msg.data[:200]!r}")
            return
        with self._lock:
            pending = self._pending.get(request_id)
            if pending is None or pending.answered.is_set():
                self._node.get_logger().warning(f"ignoring decision for unknown request {request_id!r}")
                return
            pending.approved = approved
            pending.answered.set()
