"""``harness-ros approve``: answer (or list) approval requests of a running harness node.

    harness-ros approve --list [--node /harness]
    harness-ros approve REQUEST_ID [--deny] [--node /harness]

The request must be pending on the node's latched ``approval_requests`` topic; the
decision is confirmed by the node's status update for that request.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any

from harness_ros.errors import HarnessError

__all__ = ["register"]

_QUIET_S = 0.3
"""After the last latched request arrives, how long to wait for more before listing."""


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "approve",
        help="approve or deny a pending tool call of a running harness node",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("request_id", nargs="?", help="id printed by the node and shown by --list")
    parser.add_argument("--deny", action="store_true", help="deny instead of approve")
    parser.add_argument("--list", dest="list_pending", action="store_true", help="list pending requests")
    parser.add_argument("--node", default="/harness", help="fully qualified harness node name")
    parser.add_argument("--timeout", type=float, default=5.0, help="seconds to wait for the node")
    parser.set_defaults(handler=_handle)


def _handle(args: argparse.Namespace) -> int:
    if args.list_pending == bool(args.request_id):
        print("error: give a REQUEST_ID or --list (not both)", file=sys.stderr)
        return 2
    import rclpy
    from rclpy.context import Context

    context = Context()
    rclpy.init(context=context, args=["harness-ros", *args.ros_args])
    try:
        session = _Session(context, args.node.rstrip("/"), args.timeout)
        try:
            if args.list_pending:
                return session.list_pending()
            return session.decide(args.request_id, approved=not args.deny)
        finally:
            session.close()
    finally:
        context.try_shutdown()


class _Session:
    """One short-lived node talking to the harness node's approval topics."""

    def __init__(self, context: Any, harness_node: str, timeout_s: float) -> None:
        from rclpy.executors import SingleThreadedExecutor
        from rclpy.node import Node
        from std_msgs.msg import String

        from harness_ros.ros.approval import REQUESTS_QOS, REQUESTS_TOPIC, parse_json_object

        self._parse = parse_json_object
        self._deadline = time.monotonic() + timeout_s
        self._timeout_s = timeout_s
        self._harness = harness_node
        self._node = Node(f"harness_approve_{os.getpid()}", context=context)
        self._executor = SingleThreadedExecutor(context=context)
        self._executor.add_node(self._node)
        self._requests: dict[str, dict[str, Any]] = {}
        self._last_message = 0.0
        self._requests_topic = f"{harness_node}/{REQUESTS_TOPIC}"
        self._node.create_subscription(String, self._requests_topic, self._on_request, REQUESTS_QOS)

    def close(self) -> None:
        self._executor.shutdown(timeout_sec=1.0)
        self._node.destroy_node()

    def _on_request(self, msg: Any) -> None:
        body = self._parse(msg.data)
        if body is not None and isinstance(body.get("request_id"), str):
            self._requests[body["request_id"]] = body
            self._last_message = time.monotonic()

    def _spin_until(self, done: Any) -> bool:
        while not done():
            if time.monotonic() >= self._deadline:
                return False
            self._executor.spin_once(timeout_sec=0.05)
        return True

    def _collect(self) -> None:
        """Wait for the harness node's latched requests (bounded by --timeout)."""
        if not self._spin_until(lambda: self._node.count_publishers(self._requests_topic) > 0):
            msg = (
                f"no harness node publishes {self._requests_topic!r} within {self._timeout_s:g} s "
                "(is it running with an approval-gated tool, and is --node right?)"
            )
            raise HarnessError(msg)
        start = time.monotonic()
        self._spin_until(lambda: time.monotonic() - max(start, self._last_message) > _QUIET_S)

    def _pending(self) -> list[dict[str, Any]]:
        return [body for body in self._requests.values() if body.get("status") == "pending"]

    def list_pending(self) -> int:
        self._collect()
        pending = self._pending()
        if not pending:
            print(f"no pending approval requests on {self._harness}")
            return 0
        for body in pending:
            arguments = json_text(body.get("arguments"))
            print(f"{body['request_id']}  {body.get('tool')}  {arguments}")
        return 0

    def decide(self, request_id: str, *, approved: bool) -> int:
        from std_msgs.msg import String

        from harness_ros.ros.approval import DECISION_QOS, DECISIONS_TOPIC, decision_json

        self._collect()
        body = self._requests.get(request_id)
        if body is None or body.get("status") != "pending":
            state = "unknown" if body is None else f"already {body.get('status')}"
            others = ", ".join(b["request_id"] for b in self._pending()) or "none"
            raise HarnessError(f"request {request_id!r} is {state} on {self._harness} (pending: {others})")
        publisher = self._node.create_publisher(String, f"{self._harness}/{DECISIONS_TOPIC}", DECISION_QOS)
        if not self._spin_until(lambda: publisher.get_subscription_count() > 0):
            raise HarnessError(f"{self._harness} does not listen for decisions (timed out)")
        publisher.publish(String(data=decision_json(request_id, approved)))
        wanted = "approved" if approved else "denied"
        confirmed = self._spin_until(lambda: self._requests[request_id].get("status") != "pending")
        status = self._requests[request_id].get("status")
        if not confirmed:
            raise HarnessError(f"decision sent, but {self._harness} did not confirm it in time")
        if status != wanted:
            raise HarnessError(f"request {request_id!r} ended {status!r}, not {wanted!r}")
        print(f"{wanted} {request_id} ({body.get('tool')})")
        return 0


def json_text(value: Any, limit: int = 200) -> str:
    import json

    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 3] + "..."
