"""``harness-ros task "bring the cup"``: send one task to a running harness node and follow it.

Exit codes, by the task's outcome (the ``done`` event's ``outcome``; ``status`` alone
would call a failed fetch "completed"):

    0  succeeded   the model reported success and the evaluator confirmed the goal
    4  failed      the model reported it could not, the evaluator refuted the goal, or
                   the task failed, was aborted or cancelled
    5  unverified  the task completed, but nothing could check its goal
    1  no outcome  no harness node answered, the task timed out here, or more than one
                   publisher claims to be the harness node (no event can be trusted)
    3  rejected    the node refused to start it (no model configured, another task
                   running): nothing ran on the robot
  130  interrupted Ctrl-C: a running task is cancelled first (its id is printed)

Only events from the harness node's own publisher endpoint count (the publisher GID of
each message against the ROS graph, ``harness_ros.ros.publisher_trust``): a ``done``
another participant publishes under the task's id neither ends the command nor sets
its exit status.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
import uuid
from typing import Any

from harness_ros.errors import HarnessError

_SEND_ATTEMPTS = 5
_ANSWER_WAIT_S = 3.0
"""How long to wait for the node to start (or reject) our task before sending it again."""

EXIT_SUCCEEDED = 0
EXIT_NO_OUTCOME = 1
EXIT_REJECTED = 3
"""The node refused the task (2 is argparse's usage error)."""
EXIT_FAILED = 4
EXIT_UNVERIFIED = 5
_OUTCOME_EXIT = {"succeeded": EXIT_SUCCEEDED, "failed": EXIT_FAILED, "unverified": EXIT_UNVERIFIED}


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("task", help="send a task to the harness node and follow its progress")
    parser.add_argument("instruction", help="what the robot should do, in plain words")
    parser.add_argument("--node", default="/harness", help="harness node name (default: /harness)")
    parser.add_argument("--timeout", type=float, default=900.0, help="give up (and cancel) after S seconds")
    parser.add_argument("--connect-timeout", type=float, default=15.0, help="wait this long for the node")
    parser.add_argument("--json", action="store_true", help="print raw JSON events instead of lines")
    parser.add_argument(
        "--new-session",
        action="store_true",
        help="start a fresh session: the task does not see the summaries of earlier tasks",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    result = follow_task(
        args.instruction,
        node_name=args.node,
        timeout_s=args.timeout,
        connect_timeout_s=args.connect_timeout,
        printer=(lambda e: print(json.dumps(e), flush=True)) if args.json else print_event,
        ros_args=args.ros_args,
        new_session=args.new_session,
    )
    return exit_code(result)


def exit_code(done: dict[str, Any]) -> int:
    """The exit status for a ``done`` event's data (see the module docstring)."""
    if done.get("status") == "rejected":
        return EXIT_REJECTED
    outcome = done.get("outcome")
    if outcome in _OUTCOME_EXIT:
        return _OUTCOME_EXIT[outcome]
    if done.get("status") in {"failed", "aborted", "cancelled"}:
        return EXIT_FAILED  # a node without outcomes: a task that did not complete failed
    if done.get("status") == "completed":
        return EXIT_UNVERIFIED
    return EXIT_NO_OUTCOME


def print_event(event: dict[str, Any]) -> None:
    from harness_ros.progress import format_event

    line = format_event(event)
    if line:
        print(line, flush=True)


def follow_task(
    instruction: str,
    *,
    node_name: str = "/harness",
    timeout_s: float = 900.0,
    connect_timeout_s: float = 15.0,
    printer: Any = print_event,
    ros_args: list[str] | None = None,
    new_session: bool = False,
) -> dict[str, Any]:
    """Publish the instruction, print events until ``done``; returns the done event's data."""
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from std_msgs.msg import String

    from harness_ros.ros.node import EVENTS_QOS
    from harness_ros.ros.publisher_trust import NodePublisher

    task_id = f"task-{uuid.uuid4().hex[:12]}"
    done = threading.Event()
    outcome: dict[str, Any] = {}

    started = threading.Event()
    base = node_name.rstrip("/")
    source: NodePublisher | None = None

    def on_event(msg: String, info: Any) -> None:
        try:
            event = json.loads(msg.data)
        except (ValueError, RecursionError):
            return
        if not isinstance(event, dict) or event.get("task_id") != task_id:
            return
        if source is None or not source.accepts(info):
            return  # not the harness node's own publisher: never an outcome, never printed
        kind = event.get("type")
        if kind == "task_rejected" and started.is_set():
            # Our task is running: a rejection under its id is about someone else's request.
            return
        printer(event)
        if kind == "task_started":
            started.set()
        elif kind == "done":
            outcome.update(event.get("data") or {})
            done.set()
        elif kind == "task_rejected":
            outcome.update({"status": "rejected", **(event.get("data") or {})})
            done.set()

    from rclpy.signals import SignalHandlerOptions

    # Python's own SIGINT handling, not rclpy's: rclpy's would shut the context down at
    # Ctrl-C, and the cancel below (and the clean-up) would then fail with RCLError.
    with rclpy.init(args=["harness_task", *(ros_args or [])], signal_handler_options=SignalHandlerOptions.NO):
        node = rclpy.create_node(f"harness_task_{uuid.uuid4().hex[:6]}")
        executor = SingleThreadedExecutor()
        executor.add_node(node)

        def spin_until(condition: Any, deadline: float) -> bool:
            # Spin in this thread: no executor thread outlives the context at exit.
            while not condition():
                if time.monotonic() > deadline:
                    return False
                executor.spin_once(timeout_sec=0.05)
            return True

        try:
            node.create_subscription(String, f"{base}/events", on_event, EVENTS_QOS)
            publisher = node.create_publisher(String, f"{base}/instruction", 10)
            cancel = node.create_publisher(String, f"{base}/cancel_task", 10)
            source = NodePublisher(node, f"{base}/events", base)
            connected = spin_until(
                lambda: (
                    publisher.get_subscription_count() > 0
                    and cancel.get_subscription_count() > 0
                    and source.resolve()  # raises when several publishers claim the node's name
                ),
                time.monotonic() + connect_timeout_s,
            )
            if not connected:
                raise HarnessError(
                    f"no active harness node at {base!r} after {connect_timeout_s:.0f} s "
                    "(is it running and active, on the same ROS_DOMAIN_ID?)"
                )
            request: dict[str, Any] = {"instruction": instruction, "task_id": task_id}
            if new_session:
                request["new_session"] = True
            # Matching is asymmetric in DDS: our side can see the node's subscription before
            # the node has matched us, and a volatile message sent then is lost. Send again
            # until the node answers for our id; a duplicate of a started task is rejected
            # under a fresh id, which this client ignores.
            for _ in range(_SEND_ATTEMPTS):
                publisher.publish(String(data=json.dumps(request)))
                answered = lambda: started.is_set() or done.is_set()  # noqa: E731
                if spin_until(answered, time.monotonic() + _ANSWER_WAIT_S):
                    break
            if not spin_until(done.is_set, time.monotonic() + timeout_s):
                print(f"timed out after {timeout_s:.0f} s; cancelling the task", file=sys.stderr)
                # Addressed by id: this cancels our task, never one another client started since.
                cancel_request = {
                    "task_id": task_id,
                    "reason": f"harness-ros task timed out after {timeout_s:.0f} s",
                }
                cancel.publish(String(data=json.dumps(cancel_request)))
                spin_until(done.is_set, time.monotonic() + 10.0)
                outcome.setdefault("status", "timeout")
            dropped = source.describe_dropped()
            if dropped:
                print(f"warning: {dropped}", file=sys.stderr)
        except KeyboardInterrupt:
            if started.is_set() and not done.is_set():
                # Ctrl-C stops what this command started: the robot does not go on unattended.
                print(f"interrupted: cancelling task {task_id}", file=sys.stderr, flush=True)
                cancel_request = {"task_id": task_id, "reason": "harness-ros task interrupted (Ctrl-C)"}
                cancel.publish(String(data=json.dumps(cancel_request)))
                spin_until(done.is_set, time.monotonic() + 5.0)  # a second Ctrl-C ends the wait
            raise
        finally:
            executor.shutdown(timeout_sec=1.0)
            node.destroy_node()
    return outcome
