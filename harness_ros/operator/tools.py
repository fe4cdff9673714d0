"""``ask_operator`` and ``notify_operator``: the model's two ways to talk to the operator.

A question waits for the operator's answer, bounded by the configured timeout and the
task's cancel token (so the wait counts toward the task's time limit and an operator
cancel ends it at once). No answer is a failure result that says so; the harness
never invents one.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from harness_ros.operator.contracts import (
    ASK_OPERATOR,
    MAX_ANSWER_CHARS,
    MAX_CHOICE_CHARS,
    MAX_CHOICES,
    MAX_NOTICE_CHARS,
    MAX_QUESTION_CHARS,
    NOTIFY_OPERATOR,
    OperatorChannel,
    OperatorQuestion,
)
from harness_ros.tools.contracts import CancelToken, FeedbackSink, Tool, ToolSpec, failure, success

__all__ = ["AskOperatorTool", "NotifyOperatorTool", "operator_tools"]

ASK_DESCRIPTION = (
    "Ask the operator when the instruction is ambiguous; waits up to {timeout:g} s. "
    "Offer short choices if there are few."
)
NOTIFY_DESCRIPTION = "Tell the operator something; does not wait."


class AskOperatorTool:
    def __init__(self, channel: OperatorChannel, task_id: Callable[[], str | None], timeout_s: float) -> None:
        self._channel = channel
        self._task_id = task_id
        self._timeout_s = timeout_s
        self.spec = ToolSpec(
            name=ASK_OPERATOR,
            description=ASK_DESCRIPTION.format(timeout=timeout_s),
            input_schema={
                "type": "object",
                "properties": {
                    "question": {"type": "string", "minLength": 1, "maxLength": MAX_QUESTION_CHARS},
                    "choices": {
                        "type": "array",
                        "items": {"type": "string", "minLength": 1, "maxLength": MAX_CHOICE_CHARS},
                        "maxItems": MAX_CHOICES,
                    },
                },
                "required": ["question"],
                "additionalProperties": False,
            },
            physical=False,
            timeout_s=timeout_s,
        )

    def execute(
        self, arguments: dict[str, Any], *, cancel: CancelToken, feedback: FeedbackSink | None = None
    ) -> dict[str, Any]:
        task_id = self._task_id()
        if task_id is None:
            return failure("no task is running")
        question = OperatorQuestion(
            task_id=task_id,
            question_id=f"q-{uuid.uuid4().hex[:8]}",
            text=str(arguments["question"]).strip(),
            choices=tuple(str(choice).strip() for choice in arguments.get("choices") or ()),
            timeout_s=self._timeout_s,
        )
        answer = self._channel.ask(question, cancel)
        if cancel.cancelled:
            return failure(f"question {question.question_id} abandoned: {cancel.reason or 'cancelled'}")
        if answer is None:
            return failure(
                f"no answer from the operator within {self._timeout_s:g} s "
                f"(question {question.question_id}); decide without it or stop and report"
            )
        return success(
            question_id=question.question_id,
            question=question.text,
            answer=answer.text[:MAX_ANSWER_CHARS],
            answered_by="operator",
        )


class NotifyOperatorTool:
    def __init__(self, channel: OperatorChannel, task_id: Callable[[], str | None]) -> None:
        self._channel = channel
        self._task_id = task_id
        self.spec = ToolSpec(
            name=NOTIFY_OPERATOR,
            description=NOTIFY_DESCRIPTION,
            input_schema={
                "type": "object",
                "properties": {
                    "text": {"type": "string", "minLength": 1, "maxLength": MAX_NOTICE_CHARS},
                    "level": {"type": "string", "enum": ["info", "warning"]},
                },
                "required": ["text"],
                "additionalProperties": False,
            },
            physical=False,
        )

    def execute(
        self, arguments: dict[str, Any], *, cancel: CancelToken, feedback: FeedbackSink | None = None
    ) -> dict[str, Any]:
        task_id = self._task_id()
        if task_id is None:
            return failure("no task is running")
        level = str(arguments.get("level") or "info")
        self._channel.notify(task_id, str(arguments["text"]).strip(), level)
        return success(notified=True, level=level)


def operator_tools(
    channel: OperatorChannel | None, task_id: Callable[[], str | None], timeout_s: float
) -> list[Tool]:
    """The operator tools, when there is a channel to the operator."""
    if channel is None:
        return []
    return [AskOperatorTool(channel, task_id, timeout_s), NotifyOperatorTool(channel, task_id)]
