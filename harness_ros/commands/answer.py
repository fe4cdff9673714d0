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
import sys
import time
from typing import Any

from harness_ros.commands._latched import LatchedTopicClient, latched_session
from harness_ros.errors import HarnessError
from harness_ros.terminal import terminal_safe

__all__ = ["register"]

_HINT = "is it running with operator.enabled, and is --node right?"


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
    with latched_session(
        args.ros_args, lambda c: _Session(c, args.node.rstrip("/"), args.timeout)
    ) as session:
        if args.list_pending:
            return session.print_pending(_HINT, "questions", _describe)
        return session.answer(args.question_id, args.text)


class _Session(LatchedTopicClient):
    """One short-lived node talking to the harness node's question topics."""

    def __init__(self, context: Any, harness_node: str, timeout_s: float) -> None:
        from harness_ros.ros.operator import QUESTIONS_TOPIC

        super().__init__(
            context, harness_node, timeout_s, topic=QUESTIONS_TOPIC, key="question_id", name="harness_answer"
        )

    def answer(self, question_id: str | None, text: str | None) -> int:
        from harness_ros.ros.operator import ANSWERS_TOPIC, answer_json

        self.collect(_HINT)
        if question_id is None:
            # Interactive: the newest pending question (waiting for one within --timeout).
            self.spin_until(lambda: bool(self.pending()))
            pending = self.pending()
            if not pending:
                raise HarnessError(f"no question is pending on {self.harness}")
            question_id = str(pending[-1]["question_id"])
        body = self.messages.get(question_id)
        if body is None or body.get("status") != "pending":
            state = "unknown" if body is None else f"already {body.get('status')}"
            others = ", ".join(b["question_id"] for b in self.pending()) or "none"
            raise HarnessError(f"question {question_id!r} is {state} on {self.harness} (pending: {others})")
        if text is None:
            print(terminal_safe(_describe(body)), flush=True)
            text = input("answer> ").strip()
            if not text:
                raise HarnessError("empty answer: nothing sent")
        status = self.reply(ANSWERS_TOPIC, answer_json(question_id, text), question_id)
        if status != "answered":
            raise HarnessError(f"question {question_id!r} ended {status!r} before the answer arrived")
        print(terminal_safe(f"answered {question_id}: {text}"))
        return 0


def _describe(body: dict[str, Any]) -> str:
    choices = body.get("choices") or []
    remaining = float(body.get("deadline") or 0) - time.time()
    left = f"{max(0.0, remaining):.0f} s left"
    line = f"{body['question_id']}  (task {body.get('task_id')}, {left})  {body.get('question')}"
    if choices:
        line += "  choices: " + " | ".join(str(choice) for choice in choices)
    return line
