"""``finish_task``: the model's structured way to end a task, and how its claim becomes an outcome.

The model calls ``finish_task(outcome, summary)`` with ``outcome`` ``succeeded`` (it
believes the goal is met) or ``failed`` (it could not do it). The harness, not this
tool, ends the task: it takes the call as the model's *claim* and settles the task's
*outcome* (``harness_ros.events.Outcome``) with ``settle_outcome``:

    claim failed                             -> failed
    the evaluator refutes the goal           -> failed     (whatever the claim)
    claim succeeded, the evaluator confirms  -> succeeded
    anything else (no evaluator can judge
    the goal, or no claim was made)          -> unverified

A plain-text reply is no claim and never ends a task as done: the harness reminds the
model to call a tool or ``finish_task`` (``harness.text_reply_reminders``), and only a
question for the operator ends the task without ``finish_task`` (no claim, so never
``succeeded``).
"""

from __future__ import annotations

import json
import re
from typing import Any

from harness_ros.events import Outcome
from harness_ros.tools.contracts import CancelToken, FeedbackSink, ToolSpec, success

__all__ = [
    "CLAIMS",
    "FINISH_TASK",
    "FinishTaskTool",
    "settle_outcome",
]

FINISH_TASK = "finish_task"
CLAIMS = ("succeeded", "failed")
"""What the model may claim; ``unverified`` is the harness's word, never the model's."""

FINISH_TASK_DESCRIPTION = (
    "End the task, as your last call: 'succeeded' only when results and verdicts show the goal "
    "met, else 'failed'."
)
FINISH_TASK_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "outcome": {"type": "string", "enum": list(CLAIMS)},
        "summary": {
            "type": "string",
            "minLength": 1,
            "description": "what was done, verified, failed",
        },
    },
    "required": ["outcome", "summary"],
    "additionalProperties": False,
}

_SUCCESS_WORDS = {"succeeded": "succeeded", "success": "succeeded", "failed": "failed", "failure": "failed"}
_OUTCOME_LINE = re.compile(
    r"^[\s>#*_-]*outcome[\s*_]*:[\s*_]*(?P<word>[a-z]+)[\s*_.!]*$", re.IGNORECASE | re.MULTILINE
)


class FinishTaskTool:
    """The ``finish_task`` definition. The harness intercepts the call and ends the task;
    ``execute`` only echoes the claim (for a registry used outside the harness)."""

    def __init__(self) -> None:
        self.spec = ToolSpec(
            name=FINISH_TASK,
            description=FINISH_TASK_DESCRIPTION,
            input_schema=json.loads(json.dumps(FINISH_TASK_SCHEMA)),
        )

    def execute(
        self,
        arguments: dict[str, Any],
        *,
        cancel: CancelToken,
        feedback: FeedbackSink | None = None,
    ) -> dict[str, Any]:
        return success(outcome=arguments.get("outcome"), summary=arguments.get("summary"))


def settle_outcome(claim: str | None, goal_verdict: str | None) -> Outcome:
    """The task's outcome from the model's claim and the evaluator's goal verdict status
    (``success``/``failure``, or None when nothing judged the goal)."""
    if claim == "failed" or goal_verdict == "failure":
        return Outcome.FAILED
    if claim == "succeeded" and goal_verdict == "success":
        return Outcome.SUCCEEDED
    return Outcome.UNVERIFIED
