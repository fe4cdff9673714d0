"""Task Notes: the bounded, compact timeline of one task.

The notes are the trajectory consolidation reads, in the shared format
``{"task_id", "goal", "phase", "status", "events": [{"index", "tool", "arguments",
"result", "verdict"}]}``, plus, when there are any, ``revisions`` (the operator's
instruction revisions, in order: the newest is the goal the task ended with) and
``outcome`` (``succeeded``/``failed``/``unverified``, set at the task's end). An event
of a call refused before it ran (argument validation, a safety block or a denied
approval, a missing server) carries ``refusal`` with its kind: it is a refusal, not
evidence of what the tool does on the robot.

The phase follows the task (``PHASES``): ``started`` at the reset, ``acting`` once the
model calls its first tool, ``evaluating`` while the harness checks the goal at the
end, ``finishing`` when the task has ended and is being consolidated.

They are bounded: the newest ``MAX_EVENTS`` events, the newest ``MAX_REVISIONS``
revisions, every string capped at ``MAX_STRING_CHARS``, image payloads replaced by a
marker, so the notes stay small enough to send to the model before every decision.
"""

from __future__ import annotations

import json
import math
import re
import time
import uuid
from collections.abc import Mapping
from typing import Any

__all__ = [
    "MAX_EVENTS",
    "MAX_REVISIONS",
    "MAX_STRING_CHARS",
    "PHASES",
    "TaskNotes",
    "compact_value",
    "normalize_verdict",
]

MAX_EVENTS = 40
MAX_REVISIONS = 10
PHASES = ("started", "acting", "evaluating", "finishing")
MAX_STRING_CHARS = 500
_MAX_ITEMS = 20
_MAX_DEPTH = 6
_IMAGE_MARKER = "<image omitted>"
_BASE64_RUN = re.compile(r"^[A-Za-z0-9+/]{256,}={0,2}$")


def _cap(text: str) -> str:
    return text if len(text) <= MAX_STRING_CHARS else text[: MAX_STRING_CHARS - 3] + "..."


def compact_value(value: Any, depth: int = 0) -> Any:
    """A JSON-safe, bounded copy: strings capped, images dropped, containers trimmed."""
    if isinstance(value, str):
        if value.startswith("data:") and ";base64," in value[:100]:
            return _IMAGE_MARKER
        if _BASE64_RUN.match(value) and len(set(value)) > 16:  # long, varied: encoded bytes
            return _IMAGE_MARKER
        return _cap(value)
    if value is None or isinstance(value, bool | int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return _IMAGE_MARKER
    if depth >= _MAX_DEPTH:
        return _cap(str(value))
    if isinstance(value, Mapping):
        items = list(value.items())
        compact = {_cap(str(key)): compact_value(item, depth + 1) for key, item in items[:_MAX_ITEMS]}
        if len(items) > _MAX_ITEMS:
            compact["..."] = f"{len(items) - _MAX_ITEMS} more keys"
        return compact
    if isinstance(value, list | tuple):
        compact_list = [compact_value(item, depth + 1) for item in value[:_MAX_ITEMS]]
        if len(value) > _MAX_ITEMS:
            compact_list.append(f"... {len(value) - _MAX_ITEMS} more items")
        return compact_list
    return _cap(str(value))


def normalize_verdict(verdict: Any) -> dict[str, Any] | None:
    """A verdict dict, or anything with ``to_dict()`` (``evaluation.Verdict``), as a compact dict."""
    if verdict is None:
        return None
    raw = verdict.to_dict() if hasattr(verdict, "to_dict") else verdict
    if not isinstance(raw, Mapping):
        msg = f"verdict must be a mapping or have to_dict(), got {type(verdict).__name__}"
        raise TypeError(msg)
    status = raw.get("status")
    status = getattr(status, "value", status)
    return {
        "status": str(status).strip().lower() if status is not None else None,
        "run_id": compact_value(raw.get("run_id")),
        "failure_reason": compact_value(raw.get("failure_reason")),
        "evidence": compact_value(raw.get("evidence") or ""),
    }


def new_task_id() -> str:
    return f"{time.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:6]}"


class TaskNotes:
    """The notes of the running task (not thread-safe: one task at a time)."""

    def __init__(self, goal: str, *, task_id: str | None = None, phase: str = "started") -> None:
        self.task_id = task_id or new_task_id()
        self.goal = _cap(str(goal))
        self.phase = _cap(str(phase))
        self.status = "running"
        self.events: list[dict[str, Any]] = []
        self.dropped_events = 0
        self.revisions: list[str] = []
        self.outcome: str | None = None
        self._next_index = 1

    def add_revision(self, text: str) -> None:
        """An operator's instruction revision: from now on the goal is judged against it."""
        self.revisions.append(_cap(" ".join(str(text).split())))
        del self.revisions[:-MAX_REVISIONS]

    def record(
        self,
        tool: str,
        arguments: Any,
        result: Any,
        verdict: dict[str, Any] | None,
        refusal: str | None = None,
    ) -> dict[str, Any]:
        event: dict[str, Any] = {
            "index": self._next_index,
            "tool": _cap(str(tool)),
            "arguments": compact_value(arguments if arguments is not None else {}),
            "result": compact_value(result),
            "verdict": verdict,
        }
        if refusal:
            event["refusal"] = _cap(str(refusal))
        self._next_index += 1
        self.events.append(event)
        if len(self.events) > MAX_EVENTS:
            overflow = len(self.events) - MAX_EVENTS
            del self.events[:overflow]
            self.dropped_events += overflow
        return event

    def to_dict(self) -> dict[str, Any]:
        trajectory: dict[str, Any] = {
            "task_id": self.task_id,
            "goal": self.goal,
            "phase": self.phase,
            "status": self.status,
            "events": [dict(event) for event in self.events],
        }
        if self.revisions:
            trajectory["revisions"] = list(self.revisions)
        if self.outcome is not None:
            trajectory["outcome"] = self.outcome
        if self.dropped_events:
            trajectory["dropped_events"] = self.dropped_events
        return trajectory

    def render(self) -> str:
        """The Markdown text of TASK_NOTES.md and of the snapshot the model sees."""
        lines = [
            "# Task Notes",
            "",
            f"- Task: {self.task_id}",
            f"- Goal: {self.goal}",
            *(f"- Revised goal ({n}): {text}" for n, text in enumerate(self.revisions, start=1)),
            f"- Phase: {self.phase}",
            *([f"- Outcome: {self.outcome}"] if self.outcome is not None else []),
            "",
            "## Timeline",
        ]
        if self.dropped_events:
            lines.append(f"({self.dropped_events} earlier events omitted)")
        if not self.events:
            lines.append("(no tool calls yet)")
        for event in self.events:
            arguments = json.dumps(event["arguments"], ensure_ascii=False, sort_keys=True)
            result = json.dumps(event["result"], ensure_ascii=False, sort_keys=True)
            refused = f"REFUSED before it ran ({event['refusal']}): " if event.get("refusal") else ""
            line = f"{event['index']}. {event['tool']} {arguments} -> {refused}{result}"
            verdict = event.get("verdict")
            if verdict:
                line += f"; verdict: {verdict.get('status')}"
                if verdict.get("failure_reason"):
                    line += f" ({verdict['failure_reason']})"
            lines.append(line)
        return "\n".join(lines) + "\n"
