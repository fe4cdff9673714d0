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
from typing import Any

EXIT_SUCCEEDED = 0
EXIT_NO_OUTCOME = 1
EXIT_REJECTED = 3
"""The node refused the task (2 is argparse's usage error)."""
EXIT_FAILED = 4
EXIT_UNVERIFIED = 5
_OUTCOME_EXIT = {"succeeded": EXIT_SUCCEEDED, "failed": EXIT_FAILED, "unverified": EXIT_UNVERIFIED}


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
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
    """Send the instruction, print events until ``done``; returns the done event's data.

    The task client (``harness_ros.ros.task_client``) sends a lost first instruction again
    and believes only the harness node's own publisher.
    """
    from harness_ros.ros.task_client import TaskClient

    def warn(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    with TaskClient(node_name, ros_args=ros_args) as client:
        try:
            result = client.run_task(
                instruction,
                timeout_s=timeout_s,
                new_session=new_session,
                on_event=printer,
                connect_timeout_s=connect_timeout_s,
                warn=warn,
            )
            dropped = client.describe_dropped()
            if dropped:
                warn(f"warning: {dropped}")
        except KeyboardInterrupt:
            if client.is_task_started() and not client.get_result().data:
                # Ctrl-C stops what this command started: the robot does not go on unattended.
                warn(f"interrupted: cancelling task {client.task_id}")
                # A second Ctrl-C ends the wait.
                client.cancel_task("harness-ros task interrupted (Ctrl-C)", wait_s=5.0)
            raise
    return dict(result.data)
