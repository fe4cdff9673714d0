"""The operator channel over ROS: questions, answers and notices on std_msgs/String topics.

- ``~/questions`` (reliable, transient local, depth 10): one JSON object per change of a
  question, ``{"task_id", "question_id", "question", "choices", "deadline", "timeout_s",
  "status"}`` with status ``pending``, then ``answered``, ``expired`` or ``cancelled``.
  Late joiners (``harness-ros answer``) see the recent ones.
- ``~/answers`` (reliable): ``{"question_id", "answer"}``. Only the first answer to a
  question that is still pending counts; late, duplicate, malformed or unknown ones are
  logged and ignored, as with approvals.
- ``~/notices`` (reliable, transient local): ``{"task_id", "level", "text", "time"}``.

``ask()`` runs in the harness worker thread and waits on a threading.Event set by the
answer callback, in short slices so the task's cancel token ends the wait at once.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from std_msgs.msg import String

from harness_ros.operator.contracts import MAX_ANSWER_CHARS, OperatorAnswer, OperatorQuestion
from harness_ros.ros.qos import OPERATOR_LATCHED_QOS, OPERATOR_REPLY_QOS
from harness_ros.task_api import ClientMessageError, MessageLimits, parse_json_object
from harness_ros.tools.contracts import CancelToken

if TYPE_CHECKING:
    from rclpy.callback_groups import CallbackGroup
    from rclpy.node import Node

__all__ = [
    "ANSWERS_TOPIC",
    "ANSWER_QOS",
    "NOTICES_TOPIC",
    "QUESTIONS_QOS",
    "QUESTIONS_TOPIC",
    "RosOperatorChannel",
    "answer_json",
]

QUESTIONS_TOPIC = "questions"
ANSWERS_TOPIC = "answers"
NOTICES_TOPIC = "notices"
QUESTIONS_QOS = OPERATOR_LATCHED_QOS
ANSWER_QOS = OPERATOR_REPLY_QOS
_WAIT_SLICE_S = 0.1


def answer_json(question_id: str, answer: str) -> str:
    return json.dumps({"question_id": question_id, "answer": answer}, ensure_ascii=False)


@dataclass
class _Pending:
    question: OperatorQuestion
    deadline: float
    answered: threading.Event = field(default_factory=threading.Event)
    answer: str | None = None


class RosOperatorChannel:
    """OperatorChannel answered by a person over ROS (see the module docstring)."""

    def __init__(
        self, node: Node, *, callback_group: CallbackGroup | None = None, limits: MessageLimits | None = None
    ) -> None:
        self._node = node
        self._limits = limits or MessageLimits()
        self._lock = threading.Lock()
        self._pending: dict[str, _Pending] = {}
        self._questions = node.create_publisher(String, f"~/{QUESTIONS_TOPIC}", QUESTIONS_QOS)
        self._notices = node.create_publisher(String, f"~/{NOTICES_TOPIC}", QUESTIONS_QOS)
        self._answers = node.create_subscription(
            String, f"~/{ANSWERS_TOPIC}", self._on_answer, ANSWER_QOS, callback_group=callback_group
        )
        self._node_name = node.get_fully_qualified_name()

    def ask(self, question: OperatorQuestion, cancel: CancelToken) -> OperatorAnswer | None:
        pending = _Pending(question, deadline=time.time() + question.timeout_s)
        with self._lock:
            self._pending[question.question_id] = pending
        try:
            self._publish(pending, "pending")
            self._node.get_logger().warning(
                f"question for the operator ({question.question_id}, {question.timeout_s:g} s): "
                f"{question.text!r}; answer: harness-ros answer --id {question.question_id} "
                f"--text ... --node {self._node_name}"
            )
            end = time.monotonic() + max(0.0, question.timeout_s)
            while not pending.answered.is_set() and not cancel.cancelled:
                remaining = end - time.monotonic()
                if remaining <= 0:
                    break
                pending.answered.wait(min(_WAIT_SLICE_S, remaining))
        finally:
            with self._lock:
                self._pending.pop(question.question_id, None)
        if pending.answered.is_set() and pending.answer is not None:
            self._publish(pending, "answered")
            return OperatorAnswer(question.question_id, pending.answer)
        self._publish(pending, "cancelled" if cancel.cancelled else "expired")
        return None

    def notify(self, task_id: str, text: str, level: str) -> None:
        body = {"task_id": task_id, "level": level, "text": text, "time": time.time()}
        self._notices.publish(String(data=json.dumps(body, ensure_ascii=False)))
        log = self._node.get_logger()
        (log.warning if level == "warning" else log.info)(f"notice for the operator ({task_id}): {text}")

    def destroy(self) -> None:
        self._node.destroy_subscription(self._answers)
        self._node.destroy_publisher(self._questions)
        self._node.destroy_publisher(self._notices)

    def _publish(self, pending: _Pending, status: str) -> None:
        question = pending.question
        body: dict[str, Any] = {
            "task_id": question.task_id,
            "question_id": question.question_id,
            "question": question.text,
            "choices": list(question.choices),
            "timeout_s": question.timeout_s,
            "deadline": pending.deadline,
            "status": status,
        }
        if status == "answered":
            body["answer"] = pending.answer
        self._questions.publish(String(data=json.dumps(body, ensure_ascii=False)))

    def _on_answer(self, msg: String) -> None:
        try:
            self._take_answer(msg)
        except Exception as err:  # noqa: BLE001  a client message must never stop the executor
            self._node.get_logger().error(f"operator answer refused: {type(err).__name__}: {err}")

    def _take_answer(self, msg: String) -> None:
        log = self._node.get_logger()
        try:
            body = parse_json_object(msg.data, self._limits, what="operator answer")
        except ClientMessageError as err:
            log.warning(f"ignoring operator answer: {err}")
            return
        question_id, answer = body.get("question_id"), body.get("answer")
        if not isinstance(question_id, str) or not isinstance(answer, str) or not answer.strip():
            log.warning("ignoring operator answer: it needs a string question_id and a non-empty answer")
            return
        with self._lock:
            pending = self._pending.get(question_id)
            if pending is None or pending.answered.is_set():
                log.warning(f"ignoring answer for {question_id!r}: no such question is waiting")
                return
            task_id = body.get("task_id")
            if task_id is not None and task_id != pending.question.task_id:
                log.warning(f"ignoring answer for {question_id!r}: it names task {task_id!r}")
                return
            pending.answer = answer.strip()[:MAX_ANSWER_CHARS]
            pending.answered.set()
