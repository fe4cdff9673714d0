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

After Ctrl-C every wait is bounded: the node's confirmation of the cancel is awaited for
``INTERRUPT_CANCEL_WAIT_S`` (if it does not come, the command says so: the task may still
run), and the command ends within ``INTERRUPT_EXIT_S`` whatever it waits on then; a
second Ctrl-C ends it at once (the default action of SIGINT: no clean-up, no waiting).

Only events from the harness node's own publisher endpoint count (the publisher GID of
each message against the ROS graph, ``harness_ros.ros.publisher_trust``): a ``done``
another participant publishes under the task's id neither ends the command nor sets
its exit status.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

EXIT_SUCCEEDED = 0
EXIT_NO_OUTCOME = 1
EXIT_REJECTED = 3
"""The node refused the task (2 is argparse's usage error)."""
EXIT_FAILED = 4
EXIT_UNVERIFIED = 5
EXIT_INTERRUPTED = 130
_OUTCOME_EXIT = {"succeeded": EXIT_SUCCEEDED, "failed": EXIT_FAILED, "unverified": EXIT_UNVERIFIED}

INTERRUPT_CANCEL_WAIT_S = 5.0
"""After Ctrl-C: how long the node has to confirm that it cancelled the running task."""
INTERRUPT_EXIT_S = 15.0
"""After Ctrl-C: the command has ended by then, whatever it still waits on (the cancel's
confirmation, closing its ROS node and DDS participant)."""


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
        on_interrupt=lambda: bound_the_exit(INTERRUPT_EXIT_S),
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
    on_interrupt: Callable[[], None] | None = None,
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
            if on_interrupt is not None:
                on_interrupt()
            if client.is_task_started() and not client.get_result().data:
                # Ctrl-C stops what this command started: the robot does not go on unattended.
                warn(f"interrupted: cancelling task {client.task_id} (Ctrl-C again to quit at once)")
                reason = "harness-ros task interrupted (Ctrl-C)"
                if not client.cancel_task(reason, wait_s=INTERRUPT_CANCEL_WAIT_S):
                    warn(
                        f"interrupted: {client.harness_node} did not confirm within "
                        f"{INTERRUPT_CANCEL_WAIT_S:g} s that it cancelled task {client.task_id}; "
                        "the task may still be running"
                    )
            raise
    return dict(result.data)


def bound_the_exit(limit_s: float) -> None:
    """After a Ctrl-C, in the command's process: a second Ctrl-C ends the process at once
    (SIGINT's default action, taken by the kernel: it works while the main thread is
    blocked in the middleware too), and the process ends ``limit_s`` from now if it has
    not by then: a daemon timer says so and exits with 130, and should the main thread
    hold the interpreter in native code, SIGALRM's default action ends it 5 s later. Call
    it from the main thread."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)

    def expire() -> None:
        note = (
            f"interrupted: not done {limit_s:g} s after Ctrl-C ({_main_thread_at()}); exiting without waiting"
        )
        os.write(2, f"{note}\n".encode())
        os._exit(EXIT_INTERRUPTED)

    timer = threading.Timer(limit_s, expire)
    timer.daemon = True
    timer.start()
    signal.alarm(int(limit_s) + 5)


def _main_thread_at() -> str:
    """Where the main thread is, innermost call first (``executors.py:796 wait < ...``):
    what the command was still waiting on when its bound ran out."""
    frame = sys._current_frames().get(threading.main_thread().ident or 0)
    if frame is None:
        return "main thread not found"
    calls = traceback.extract_stack(frame)[-3:]
    return "in " + " < ".join(f"{Path(c.filename).name}:{c.lineno} {c.name}" for c in reversed(calls))
