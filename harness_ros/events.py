"""Typed harness events: what a task reports, one JSON object per event.

The same objects go to the run log (``events.jsonl``), to the ROS ``~/events``
topic and into rosbag recordings, so replay can rebuild a trajectory from them.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

__all__ = ["EventType", "HarnessEvent", "Outcome", "TaskStatus", "outcome_for_status"]


class EventType(str, Enum):
    TASK_STARTED = "task_started"
    TASK_REJECTED = "task_rejected"
    REQUEST_REFUSED = "request_refused"
    REVISION = "revision"
    TURN = "turn"
    OBSERVATION = "observation"
    MODEL_RESPONSE = "model_response"
    TOOL_CALL = "tool_call"
    TOOL_FEEDBACK = "tool_feedback"
    TOOL_RESULT = "tool_result"
    VERDICT = "verdict"
    SAFETY = "safety"
    PREREQUISITE = "prerequisite"
    """A service call the harness made before a tool (its ``prerequisites``: a mode switch):
    ``data.tool``, ``call_id``, ``service``, ``success``, ``message`` or ``reason``, ``elapsed_s``."""
    NOTES = "notes"
    COMPACTION = "compaction"
    MEMORY_CONSOLIDATION = "memory_consolidation"
    REMINDER = "reminder"
    """A plain-text reply did not end the task: the model was told to call a tool or
    ``finish_task`` (``data.reminder`` of ``data.limit``)."""
    MEMORY_NOTICE = "memory_notice"
    """Memory the model does not get in full: a ledger summary fallback, a ledger left
    out, the Resident memory budget exceeded (``data.notice`` says which)."""
    DONE = "done"


class TaskStatus(str, Enum):
    COMPLETED = "completed"
    FAILED = "failed"
    ABORTED = "aborted"
    CANCELLED = "cancelled"


class Outcome(str, Enum):
    """What the task achieved, next to how it ended (``TaskStatus``): a ``completed`` task is
    not a successful one until its outcome says so.

    ``succeeded``: the model reported success and an evaluator confirmed the goal;
    ``failed``: the model reported it could not, an evaluator refuted the goal, or the task
    did not complete (failed, aborted, cancelled); ``unverified``: a completed task whose
    success nothing could check (or that made no claim).
    """

    SUCCEEDED = "succeeded"
    FAILED = "failed"
    UNVERIFIED = "unverified"


def outcome_for_status(status: TaskStatus) -> Outcome | None:
    """The outcome a non-completed status implies (``failed``); None for ``completed``."""
    return None if status is TaskStatus.COMPLETED else Outcome.FAILED


@dataclass(frozen=True)
class HarnessEvent:
    """One event of one task. ``data`` holds JSON-serialisable values only."""

    type: EventType
    task_id: str
    turn: int | None = None
    data: dict[str, Any] = field(default_factory=dict)
    time: float = field(default_factory=time.time)

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": self.type.value,
            "task_id": self.task_id,
            "turn": self.turn,
            "time": self.time,
            "data": self.data,
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False, sort_keys=True)

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> HarnessEvent:
        return cls(
            type=EventType(raw["type"]),
            task_id=str(raw["task_id"]),
            turn=raw.get("turn"),
            data=dict(raw.get("data") or {}),
            time=float(raw.get("time", 0.0)),
        )
