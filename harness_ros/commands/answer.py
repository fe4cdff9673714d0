"""``harness-ros answer``: answer the robot's questions (the ``ask_operator`` tool).

    harness-ros answer                       wait for a question, show it, read the answer
    harness-ros answer --list                pending questions with their ids
    harness-ros answer --id Q --text TEXT    answer question Q (for scripts)

Questions come from the node's latched ``~/questions`` topic; the answer is confirmed
by the node's status update for that question ("answered"). A question that already
expired or was answered is refused here, and the node ignores late answers anyway.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any

from harness_ros.errors import HarnessError

__all__ = ["register"]

_QUIET_S = 0.3


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "answer",
        help="answer a question the robot asked (ask_operator)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--id", dest="question_id", help="question id (shown by --list and in the node log)")
    parser.add_argument("--text", help="the answer (without it, read one line from the terminal)")
    parser.add_argument("--list", dest="list_pending", action="store_true", help="list pending questions")
    parser.add_argument("--node", default="/harness", help="fully qualified harness node name")
    parser.add_argument(
        "--timeout",
        type=float,
        default=10.0,
        help="seconds to wait for the node (and, interactive, a question)",
    )
    parser.set_defaults(handler=_handle)


def _handle(args: argparse.Namespace) -> int:
    if args.list_pending and (args.question_id or args.text):
        print("error: --list takes no --id or --text", file=sys.stderr)
        return 2
    if args.text is not None and not args.text.strip():
        print("error: --text is empty", file=sys.stderr)
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
            return session.answer(args.question_id, args.text)
        finally:
            session.close()
    finally:
        context.try_shutdown()


class _Session:
    """One short-lived node talking to the harness node's question topics."""

    def __init__(self, context: Any, harness_node: str, timeout_s: float) -> None:
        from rclpy.executors import SingleThreadedExecutor
        from rclpy.node import Node
        from std_msgs.msg import String

        from harness_ros.ros.operator import QUESTIONS_QOS, QUESTIONS_TOPIC

        self._timeout_s = timeout_s
        self._deadline = time.monotonic() + timeout_s
        self._harness = harness_node
        self._node = Node(f"harness_answer_{os.getpid()}", context=context)
        self._executor = SingleThreadedExecutor(context=context)
        self._executor.add_node(self._node)
        self._questions: dict[str, dict[str, Any]] = {}
        self._last_message = 0.0
        self._topic = f"{harness_node}/{QUESTIONS_TOPIC}"
        self._node.create_subscription(String, self._topic, self._on_question, QUESTIONS_QOS)

    def close(self) -> None:
        self._executor.shutdown(timeout_sec=1.0)
        self._node.destroy_node()

    def _on_question(self, msg: Any) -> None:
        try:
            body = json.loads(msg.data)
        except (ValueError, RecursionError):
            return
        if isinstance(body, dict) and isinstance(body.get("question_id"), str):
            self._questions[body["question_id"]] = body
            self._last_message = time.monotonic()

    def _spin_until(self, done: Any, deadline: float | None = None) -> bool:
        end = self._deadline if deadline is None else deadline
        while not done():
            if time.monotonic() >= end:
                return False
            self._executor.spin_once(timeout_sec=0.05)
        return True

    def _collect(self) -> None:
        if not self._spin_until(lambda: self._node.count_publishers(self._topic) > 0):
            raise HarnessError(
                f"no harness node publishes {self._topic!r} within {self._timeout_s:g} s "
                "(is it running with operator.enabled, and is --node right?)"
            )
        start = time.monotonic()
        self._spin_until(lambda: time.monotonic() - max(start, self._last_message) > _QUIET_S)

    def _pending(self) -> list[dict[str, Any]]:
        return [body for body in self._questions.values() if body.get("status") == "pending"]

    def list_pending(self) -> int:
        self._collect()
        pending = self._pending()
        if not pending:
            print(f"no pending questions on {self._harness}")
            return 0
        for body in pending:
            print(_describe(body))
        return 0

    def answer(self, question_id: str | None, text: str | None) -> int:
        from std_msgs.msg import String

        from harness_ros.ros.operator import ANSWER_QOS, ANSWERS_TOPIC, answer_json

        self._collect()
        if question_id is None:
            # Interactive: the newest pending question (waiting for one within --timeout).
            self._spin_until(lambda: bool(self._pending()))
            pending = self._pending()
            if not pending:
                raise HarnessError(f"no question is pending on {self._harness}")
            question_id = str(pending[-1]["question_id"])
        body = self._questions.get(question_id)
        if body is None or body.get("status") != "pending":
            state = "unknown" if body is None else f"already {body.get('status')}"
            others = ", ".join(b["question_id"] for b in self._pending()) or "none"
            raise HarnessError(f"question {question_id!r} is {state} on {self._harness} (pending: {others})")
        if text is None:
            print(_describe(body), flush=True)
            text = input("answer> ").strip()
            if not text:
                raise HarnessError("empty answer: nothing sent")
        publisher = self._node.create_publisher(String, f"{self._harness}/{ANSWERS_TOPIC}", ANSWER_QOS)
        if not self._spin_until(
            lambda: publisher.get_subscription_count() > 0, time.monotonic() + self._timeout_s
        ):
            raise HarnessError(f"{self._harness} does not listen for answers (timed out)")
        publisher.publish(String(data=answer_json(question_id, text)))
        confirmed = self._spin_until(
            lambda: self._questions[question_id].get("status") != "pending",
            time.monotonic() + self._timeout_s,
        )
        status = self._questions[question_id].get("status")
        if not confirmed:
            raise HarnessError(f"answer sent, but {self._harness} did not confirm it in time")
        if status != "answered":
            raise HarnessError(f"question {question_id!r} ended {status!r} before the answer arrived")
        print(f"answered {question_id}: {text}")
        return 0


def _describe(body: dict[str, Any]) -> str:
    choices = body.get("choices") or []
    remaining = float(body.get("deadline") or 0) - time.time()
    left = f"{max(0.0, remaining):.0f} s left"
    line = f"{body['question_id']}  (task {body.get('task_id')}, {left})  {body.get('question')}"
    if choices:
        line += "  choices: " + " | ".join(str(choice) for choice in choices)
    return line
