"""Parsing of what clients send to the harness node: hostile until parsed.

Every message on ``~/instruction``, ``~/revise``, ``~/cancel_task`` and the approval
decision topic goes through here before the node acts on it. Nothing in this module
raises on bad input except ``ClientMessageError`` (a clear, one-line reason), so a
subscription callback can refuse the message and keep serving:

- the payload is capped in bytes before it is parsed;
- JSON is parsed with ``RecursionError`` contained and its nesting bounded, so a
  ``[[[[...]]]]`` bomb is a refusal, not a dead executor;
- task ids are matched in full against the same pattern the harness uses for run
  folders (no trailing newline, no path separators).

Pure Python: the ROS node and the CLI clients both use it.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness_ros.errors import ClientMessageError

__all__ = [
    "TASK_ID_PATTERN",
    "CancelRequest",
    "ClientMessageError",
    "InstructionRequest",
    "MessageLimits",
    "RevisionRequest",
    "TaskResult",
    "cancel_message",
    "instruction_message",
    "new_request_task_id",
    "parse_cancel",
    "parse_instruction",
    "parse_json_object",
    "parse_revision",
]

TASK_ID_PATTERN = re.compile(r"[A-Za-z0-9_.-]{1,128}")
"""A task id, matched with ``fullmatch`` (it names a run folder)."""


@dataclass(frozen=True)
class MessageLimits:
    """Bounds on one client message (``task_api`` in the config)."""

    max_bytes: int = 16_384
    max_json_depth: int = 8


@dataclass(frozen=True)
class InstructionRequest:
    instruction: str
    task_id: str
    task_id_given: bool
    session_id: str | None = None
    """The client's session; a different one than the node's current starts a fresh session."""
    new_session: bool = False


@dataclass(frozen=True)
class RevisionRequest:
    text: str
    task_id: str | None
    """None for a bare-string revision: it may only apply to the current task."""


@dataclass(frozen=True)
class CancelRequest:
    task_id: str
    reason: str


def new_request_task_id() -> str:
    return f"task-{uuid.uuid4().hex[:12]}"


def _check_size(text: Any, limits: MessageLimits, what: str) -> str:
    if not isinstance(text, str):
        raise ClientMessageError(f"{what} must be text, got {type(text).__name__}")
    size = len(text.encode("utf-8", errors="surrogatepass"))
    if size > limits.max_bytes:
        raise ClientMessageError(
            f"{what} is {size} bytes, more than task_api.max_message_bytes ({limits.max_bytes})"
        )
    return text


def _depth(value: Any) -> int:
    """Nesting depth of parsed JSON, iteratively (the value may be deep)."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, depth)
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
    return deepest


def parse_json_object(
    text: Any, limits: MessageLimits | None = None, *, what: str = "message"
) -> dict[str, Any]:
    """A bounded JSON object, or ``ClientMessageError`` saying why not."""
    limits = limits or MessageLimits()
    text = _check_size(text, limits, what)
    try:
        value = json.loads(text)
    except RecursionError:
        raise ClientMessageError(f"{what} nests too deeply to parse") from None
    except ValueError as err:  # JSONDecodeError, and ValueError for lone surrogates
        raise ClientMessageError(f"{what} is not valid JSON: {err}") from None
    if not isinstance(value, dict):
        raise ClientMessageError(f"{what} must be a JSON object, got {type(value).__name__}")
    depth = _depth(value)
    if depth > limits.max_json_depth:
        raise ClientMessageError(
            f"{what} nests {depth} levels deep, more than task_api.max_json_depth ({limits.max_json_depth})"
        )
    return value


def _task_id(value: Any, what: str) -> str:
    if not isinstance(value, str) or not TASK_ID_PATTERN.fullmatch(value) or value in {".", ".."}:
        raise ClientMessageError(f"{what}: task_id {value!r} must match {TASK_ID_PATTERN.pattern}")
    return value


def _text(value: Any, field: str, what: str) -> str:
    if not isinstance(value, str):
        raise ClientMessageError(f"{what}: {field!r} must be a string, got {type(value).__name__}")
    if "\x00" in value:
        raise ClientMessageError(f"{what}: {field!r} contains a NUL character")
    stripped = value.strip()
    if not stripped:
        raise ClientMessageError(f"{what}: {field!r} is empty")
    return stripped


def _read(text: Any, limits: MessageLimits | None, what: str) -> tuple[str, dict[str, Any] | None]:
    """(stripped text, its JSON object or None for a bare string), size checked first."""
    stripped = _check_size(text, limits or MessageLimits(), what).strip()
    if stripped.startswith("{"):
        return stripped, parse_json_object(stripped, limits, what=what)
    return stripped, None


def parse_instruction(text: Any, limits: MessageLimits | None = None) -> InstructionRequest:
    """``~/instruction``: plain text (a fresh task id), or ``{"instruction", "task_id"?}``."""
    what = "instruction"
    stripped, payload = _read(text, limits, what)
    if payload is not None:
        if "instruction" not in payload:
            raise ClientMessageError("instruction: JSON payload has no 'instruction' field")
        instruction = _text(payload["instruction"], "instruction", what)
        session_id = payload.get("session_id")
        if session_id is not None:
            session_id = _task_id(session_id, f"{what} session_id")
        new_session = payload.get("new_session", False)
        if not isinstance(new_session, bool):
            raise ClientMessageError(f"{what}: 'new_session' must be true or false")
        raw_id = payload.get("task_id")
        if raw_id is None or raw_id == "":
            task_id, given = new_request_task_id(), False
        else:
            task_id, given = _task_id(raw_id, what), True
        return InstructionRequest(instruction, task_id, given, session_id=session_id, new_session=new_session)
    return InstructionRequest(
        _text(stripped, "instruction", what), new_request_task_id(), task_id_given=False
    )


def parse_revision(text: Any, limits: MessageLimits | None = None) -> RevisionRequest:
    """``~/revise``: ``{"task_id", "instruction"}`` (``"text"`` also accepted), or bare text
    that only ever applies to the task running when it arrives."""
    what = "revision"
    stripped, payload = _read(text, limits, what)
    if payload is not None:
        field = "instruction" if "instruction" in payload else "text"
        if field not in payload:
            raise ClientMessageError("revision: JSON payload has no 'instruction' (or 'text') field")
        revised = _text(payload[field], field, what)
        if "task_id" not in payload:
            raise ClientMessageError("revision: JSON payload has no 'task_id' (name the task it is for)")
        return RevisionRequest(revised, _task_id(payload["task_id"], what))
    return RevisionRequest(_text(stripped, "revision", what), None)


def parse_cancel(text: Any, limits: MessageLimits | None = None) -> CancelRequest:
    """``~/cancel_task``: ``{"task_id", "reason"?}`` or a bare task id."""
    what = "cancel request"
    stripped, payload = _read(text, limits, what)
    if payload is not None:
        if "task_id" not in payload:
            raise ClientMessageError("cancel request: JSON payload has no 'task_id'")
        task_id = _task_id(payload["task_id"], what)
        reason = payload.get("reason", "cancelled by operator")
        if not isinstance(reason, str) or not reason.strip():
            reason = "cancelled by operator"
        return CancelRequest(task_id, reason.strip()[:200])
    return CancelRequest(_task_id(stripped, what), "cancelled by operator")


# ---------------------------------------------------------------------- the client side
def instruction_message(instruction: str, task_id: str, *, new_session: bool = False) -> str:
    """What a client publishes on ``~/instruction`` to start task ``task_id``."""
    request: dict[str, Any] = {"instruction": instruction, "task_id": task_id}
    if new_session:
        request["new_session"] = True
    return json.dumps(request)


def cancel_message(task_id: str, reason: str) -> str:
    """What a client publishes on ``~/cancel_task``: addressed by id, so it never cancels a
    task another client started since."""
    return json.dumps({"task_id": task_id, "reason": reason})


@dataclass(frozen=True)
class TaskResult:
    """How one task ended, as a task client saw it from the harness node's own events.

    ``data`` is the ``done`` event's data; for a refused request ``{"status": "rejected",
    "reason": ...}``; ``{"status": "timeout"}`` when no ``done`` came in time.
    """

    task_id: str
    data: Mapping[str, Any] = field(default_factory=dict)
    events: tuple[Mapping[str, Any], ...] = ()
    """The node's events for this task, in order (``task_started`` first when it started)."""

    @property
    def status(self) -> str:
        return str(self.data.get("status") or "unknown")

    @property
    def outcome(self) -> str:
        """succeeded, failed or unverified (the ``done`` event's outcome), or ``none``."""
        return str(self.data.get("outcome") or "none")

    @property
    def run_dir(self) -> Path | None:
        """The task's run folder, as its ``task_started`` event names it."""
        for event in self.events:
            if event.get("type") == "task_started":
                data = event.get("data")
                folder = data.get("run_dir") if isinstance(data, Mapping) else None
                return Path(folder) if isinstance(folder, str) and folder else None
        return None
