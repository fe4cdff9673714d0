"""``harness-ros approve``: answer (or list) approval requests of a running harness node.

    harness-ros approve --list [--node /harness]
    harness-ros approve REQUEST_ID [--deny] [--node /harness]

The request must be pending on the node's latched ``approval_requests`` topic; the
decision is confirmed by the node's status update for that request.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from harness_ros.commands._latched import LatchedTopicClient, latched_session
from harness_ros.errors import HarnessError
from harness_ros.terminal import terminal_safe

__all__ = ["register"]

_HINT = "is it running with an approval-gated tool, and is --node right?"


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
    with latched_session(
        args.ros_args, lambda c: _Session(c, args.node.rstrip("/"), args.timeout)
    ) as session:
        if args.list_pending:
            return session.print_pending(_HINT, "approval requests", _describe)
        return session.decide(args.request_id, approved=not args.deny)


class _Session(LatchedTopicClient):
    """One short-lived node talking to the harness node's approval topics."""

    def __init__(self, context: Any, harness_node: str, timeout_s: float) -> None:
        from harness_ros.ros.approval import REQUESTS_TOPIC

        super().__init__(
            context, harness_node, timeout_s, topic=REQUESTS_TOPIC, key="request_id", name="harness_approve"
        )

    def decide(self, request_id: str, *, approved: bool) -> int:
        from harness_ros.ros.approval import DECISIONS_TOPIC, decision_json

        self.collect(_HINT)
        body = self.messages.get(request_id)
        if body is None or body.get("status") != "pending":
            state = "unknown" if body is None else f"already {body.get('status')}"
            others = ", ".join(b["request_id"] for b in self.pending()) or "none"
            raise HarnessError(f"request {request_id!r} is {state} on {self.harness} (pending: {others})")
        wanted = "approved" if approved else "denied"
        status = self.reply(DECISIONS_TOPIC, decision_json(request_id, approved), request_id)
        if status != wanted:
            raise HarnessError(f"request {request_id!r} ended {status!r}, not {wanted!r}")
        print(terminal_safe(f"{wanted} {request_id} ({body.get('tool')})"))
        return 0


def _describe(body: dict[str, Any]) -> str:
    return f"{body['request_id']}  {body.get('tool')}  {json_text(body.get('arguments'))}"


def json_text(value: Any, limit: int = 200) -> str:
    import json

    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 3] + "..."
