"""Typed harness events: what a task reports, one JSON object per event.

The same objects go to the run log (``events.jsonl``), to the ROS ``~/events``
topic and into rosbag recordings, so replay can rebuild a trajectory from them.

Each event carries a frozen payload, one class per ``EventType`` (``TaskStartedPayload``,
``ToolResultPayload``, ...; ``PAYLOADS``). Inside the process the payload is read by its
fields; JSON exists only where an event leaves it (``to_json``/``from_json``: the run log,
``~/events``, bags), in the shape the harness has always written (``{"type", "task_id",
"turn", "time", "data"}``, ``data`` the payload's fields). A recording is read faithfully:
a key the payload does not declare, or one whose value has another type, is kept in
``extra`` and written back as it was; a declared key the recording lacks stays absent.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from enum import Enum
from typing import Any, ClassVar, TypeVar, Union, get_args, get_origin, get_type_hints

__all__ = [
    "PAYLOADS",
    "CompactionPayload",
    "DonePayload",
    "EventPayload",
    "EventType",
    "HarnessEvent",
    "MemoryConsolidationPayload",
    "MemoryNoticePayload",
    "ModelResponsePayload",
    "NotesPayload",
    "ObservationPayload",
    "Outcome",
    "PrerequisitePayload",
    "ReminderPayload",
    "RequestRefusedPayload",
    "RevisionPayload",
    "SafetyPayload",
    "TaskRejectedPayload",
    "TaskStartedPayload",
    "TaskStatus",
    "ToolCallPayload",
    "ToolFeedbackPayload",
    "ToolResultPayload",
    "TurnPayload",
    "VerdictPayload",
    "event_type_of",
    "outcome_for_status",
    "payload_for",
]


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


# ---------------------------------------------------------------------- payloads
_MISSING = object()
_P = TypeVar("_P", bound="EventPayload")


def _convert(annotation: Any, value: Any) -> Any:
    """``value`` (from JSON) as a field of type ``annotation``, or ``_MISSING`` when it is not one."""
    if annotation is Any:
        return value
    origin = get_origin(annotation)
    if origin is Union or (origin is not None and type(None) in get_args(annotation)):
        for arm in get_args(annotation):
            if arm is type(None):
                if value is None:
                    return None
                continue
            converted = _convert(arm, value)
            if converted is not _MISSING:
                return converted
        return _MISSING
    if annotation is bool:
        return value if isinstance(value, bool) else _MISSING
    if annotation is int:
        return value if isinstance(value, int) and not isinstance(value, bool) else _MISSING
    if annotation is float:
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        return float(value) if ok else _MISSING
    if annotation is str:
        return value if isinstance(value, str) else _MISSING
    if origin in (Mapping, dict):
        return dict(value) if isinstance(value, Mapping) else _MISSING
    if origin is tuple:
        if not isinstance(value, list | tuple):
            return _MISSING
        (item_type, _ellipsis) = get_args(annotation)
        items = [_convert(item_type, item) for item in value]
        return _MISSING if any(item is _MISSING for item in items) else tuple(items)
    msg = f"unsupported payload field type {annotation!r}"
    raise TypeError(msg)


def _plain(value: Any) -> Any:
    """A field's JSON value: tuples as lists, mappings as dicts (recursively)."""
    if isinstance(value, tuple | list):
        return [_plain(item) for item in value]
    if isinstance(value, Mapping):
        return {str(key): _plain(item) for key, item in value.items()}
    return value


@dataclass(frozen=True, kw_only=True)
class EventPayload:
    """The data of one event. Subclasses declare its fields (JSON values, typed);
    ``OPTIONAL`` names those left out of the JSON while they are None."""

    extra: Mapping[str, Any] = field(default_factory=dict)
    """Keys the payload does not declare, or declared keys whose recorded value has another
    type: kept as recorded so a recording is written back unchanged."""
    absent: frozenset[str] | None = None
    """For a payload read from a recording (``from_data``): the declared keys it did not
    have, which stay out of its JSON (every other declared key is written, None included).
    None for a payload the harness built: ``OPTIONAL`` fields are then left out while None."""

    OPTIONAL: ClassVar[frozenset[str]] = frozenset()
    _HINTS: ClassVar[dict[type, dict[str, Any]]] = {}

    @classmethod
    def _declared(cls) -> dict[str, Any]:
        hints = EventPayload._HINTS.get(cls)
        if hints is None:
            every = get_type_hints(cls)
            hints = {f.name: every[f.name] for f in fields(cls) if f.name not in ("extra", "absent")}
            EventPayload._HINTS[cls] = hints
        return hints

    @classmethod
    def from_data(cls: type[_P], data: Mapping[str, Any]) -> _P:
        """The payload of a recorded event's ``data`` (never raises: see ``extra``)."""
        values: dict[str, Any] = {}
        extra: dict[str, Any] = {}
        absent: set[str] = set()
        declared = cls._declared()
        for name, annotation in declared.items():
            if name not in data:
                absent.add(name)
                continue
            converted = _convert(annotation, data[name])
            if converted is _MISSING:
                extra[name] = data[name]
                absent.add(name)
            else:
                values[name] = converted
        extra.update({str(key): value for key, value in data.items() if key not in declared})
        return cls(**values, extra=extra, absent=frozenset(absent))

    def to_data(self) -> dict[str, Any]:
        """The event's ``data`` object, as it goes to JSON."""
        out: dict[str, Any] = {}
        absent = self.absent
        for name in self._declared():
            value = getattr(self, name)
            if name in (absent or ()) or (absent is None and value is None and name in self.OPTIONAL):
                continue
            out[name] = _plain(value)
        if absent is None:
            out.update(self._more())
        out.update(self.extra)
        return out

    def _more(self) -> dict[str, Any]:
        """Keys with None a payload the harness built writes besides its set fields (none by default)."""
        return {}

    def get(self, key: str, default: Any = None) -> Any:
        """A field (or an ``extra`` key) by its JSON name: the dict reading of recordings."""
        return self.to_data().get(key, default)


@dataclass(frozen=True, kw_only=True)
class TaskStartedPayload(EventPayload):
    instruction: str = ""
    model: str = ""
    tools: tuple[str, ...] | None = None
    max_turns: int | None = None
    task_timeout_s: float | None = None
    run_dir: str | None = None
    memory_dir: str | None = None


@dataclass(frozen=True, kw_only=True)
class TaskRejectedPayload(EventPayload):
    reason: str = ""
    requested_task_id: str | None = None
    OPTIONAL: ClassVar[frozenset[str]] = frozenset({"requested_task_id"})


@dataclass(frozen=True, kw_only=True)
class RequestRefusedPayload(EventPayload):
    request: str = ""
    reason: str = ""
    requested_task_id: str | None = None


@dataclass(frozen=True, kw_only=True)
class RevisionPayload(EventPayload):
    instruction: str = ""


@dataclass(frozen=True, kw_only=True)
class TurnPayload(EventPayload):
    elapsed_s: float = 0.0


@dataclass(frozen=True, kw_only=True)
class ObservationPayload(EventPayload):
    """The observation's summary (``context.observation_summary``): its keys are in ``extra``."""

    images_shown: bool | None = None
    images: tuple[str, ...] | None = None
    OPTIONAL: ClassVar[frozenset[str]] = frozenset({"images_shown", "images"})


@dataclass(frozen=True, kw_only=True)
class ModelResponsePayload(EventPayload):
    text: str | None = None
    tool_calls: tuple[Mapping[str, Any], ...] = ()
    usage: Mapping[str, Any] = field(default_factory=dict)
    model: str | None = None
    recovered_from_text: int | None = None
    """How many calls were recovered from the text (absent when none was)."""
    original_text: str | None = None
    text_call_problems: tuple[str, ...] | None = None
    OPTIONAL: ClassVar[frozenset[str]] = frozenset(
        {"recovered_from_text", "original_text", "text_call_problems"}
    )


@dataclass(frozen=True, kw_only=True)
class ToolCallPayload(EventPayload):
    tool: str = ""
    call_id: str | None = None
    arguments: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class ToolFeedbackPayload(EventPayload):
    tool: str = ""
    feedback: Any = None


@dataclass(frozen=True, kw_only=True)
class ToolResultPayload(EventPayload):
    """A call's result envelope. ``refused``: an extra call of the turn, answered without
    running; ``refusal``: the kind of refusal of a call refused before it ran (written,
    None included, for every call that got as far as the harness's checks)."""

    tool: str = ""
    call_id: str | None = None
    result: Any = None
    malformed: bool | None = None
    elapsed_s: float | None = None
    executed: bool | None = None
    refusal: str | None = None
    refused: bool | None = None
    recovered_from_text: bool | None = None
    OPTIONAL: ClassVar[frozenset[str]] = frozenset(
        {"malformed", "elapsed_s", "executed", "refusal", "refused", "recovered_from_text"}
    )

    def _more(self) -> dict[str, Any]:
        if self.refusal is None and self.executed is not None:
            return {"refusal": None}
        return {}


@dataclass(frozen=True, kw_only=True)
class VerdictPayload(EventPayload):
    """An evaluator's verdict: on one call (``tool``, ``run_id``), or on the task's goal at
    its end (``scope: task``, with the ``goal`` and the model's ``claim``)."""

    verdict: Mapping[str, Any] | None = None
    tool: str | None = None
    run_id: str | None = None
    scope: str | None = None
    goal: str | None = None
    claim: str | None = None
    OPTIONAL: ClassVar[frozenset[str]] = frozenset({"tool", "run_id", "scope", "goal", "claim"})

    @property
    def of_task(self) -> bool:
        return self.scope == "task"

    def _more(self) -> dict[str, Any]:
        if self.of_task:
            return {"claim": None} if self.claim is None else {}
        return {"run_id": None} if self.run_id is None else {}


@dataclass(frozen=True, kw_only=True)
class SafetyPayload(EventPayload):
    tool: str = ""
    hook: str = ""
    action: str = ""
    reason: str | None = None
    arguments: Mapping[str, Any] | None = None
    """The rewritten arguments (``action: rewrite`` only)."""
    OPTIONAL: ClassVar[frozenset[str]] = frozenset({"arguments"})


@dataclass(frozen=True, kw_only=True)
class PrerequisitePayload(EventPayload):
    tool: str = ""
    call_id: str | None = None
    service: str = ""
    success: bool = False
    elapsed_s: float | None = None
    reason: Any = None
    message: Any = None
    OPTIONAL: ClassVar[frozenset[str]] = frozenset({"reason", "message"})


@dataclass(frozen=True, kw_only=True)
class NotesPayload(EventPayload):
    task_notes: str = ""
    chars: int = 0
    update: bool = False


@dataclass(frozen=True, kw_only=True)
class CompactionPayload(EventPayload):
    """``context.CompactionOutcome`` and ``threshold_tokens``: its keys are in ``extra``."""

    threshold_tokens: int | None = None
    OPTIONAL: ClassVar[frozenset[str]] = frozenset({"threshold_tokens"})


@dataclass(frozen=True, kw_only=True)
class MemoryConsolidationPayload(EventPayload):
    """What memory did at the task's end (``FileMemory.finish_task``): the counts and
    decisions are in ``extra``."""

    status: str | None = None
    skipped: bool | None = None
    reason: str | None = None
    error: str | None = None
    OPTIONAL: ClassVar[frozenset[str]] = frozenset({"status", "skipped", "reason", "error"})


@dataclass(frozen=True, kw_only=True)
class ReminderPayload(EventPayload):
    reminder: int = 0
    limit: int = 0
    reply: str = ""
    text_call_problems: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class MemoryNoticePayload(EventPayload):
    """Memory the model does not get in full (``notice`` says which; the rest in ``extra``)."""

    notice: str | None = None
    message: str | None = None
    OPTIONAL: ClassVar[frozenset[str]] = frozenset({"notice", "message"})


@dataclass(frozen=True, kw_only=True)
class DonePayload(EventPayload):
    status: str = "failed"
    outcome: str | None = None
    claim: str | None = None
    goal_verdict: Mapping[str, Any] | None = None
    finished_by: str | None = None
    report: str = ""
    reason: str = ""
    turns: int | None = None
    elapsed_s: float | None = None
    tokens: Mapping[str, Any] | None = None


PAYLOADS: dict[EventType, type[EventPayload]] = {
    EventType.TASK_STARTED: TaskStartedPayload,
    EventType.TASK_REJECTED: TaskRejectedPayload,
    EventType.REQUEST_REFUSED: RequestRefusedPayload,
    EventType.REVISION: RevisionPayload,
    EventType.TURN: TurnPayload,
    EventType.OBSERVATION: ObservationPayload,
    EventType.MODEL_RESPONSE: ModelResponsePayload,
    EventType.TOOL_CALL: ToolCallPayload,
    EventType.TOOL_FEEDBACK: ToolFeedbackPayload,
    EventType.TOOL_RESULT: ToolResultPayload,
    EventType.VERDICT: VerdictPayload,
    EventType.SAFETY: SafetyPayload,
    EventType.PREREQUISITE: PrerequisitePayload,
    EventType.NOTES: NotesPayload,
    EventType.COMPACTION: CompactionPayload,
    EventType.MEMORY_CONSOLIDATION: MemoryConsolidationPayload,
    EventType.REMINDER: ReminderPayload,
    EventType.MEMORY_NOTICE: MemoryNoticePayload,
    EventType.DONE: DonePayload,
}
"""The payload class of each event type."""


_TYPES: dict[type[EventPayload], EventType] = {cls: kind for kind, cls in PAYLOADS.items()}


def event_type_of(payload: EventPayload) -> EventType:
    """The event type whose payload ``payload`` is."""
    return _TYPES[type(payload)]


def payload_for(kind: EventType, data: Mapping[str, Any] | None) -> EventPayload:
    """The typed payload of a ``kind`` event's recorded ``data``."""
    return PAYLOADS[kind].from_data(data or {})


class HarnessEvent:
    """One event of one task: its type, task, turn, time and typed ``payload``.

    Built with ``payload=`` (the harness) or, at the edges that still hold a dict (a
    recording, the ROS node's own events), ``data=``, read into the type's payload. It is
    read by its payload's fields only: the JSON object exists where the event leaves the
    process (``to_dict``/``to_json``)."""

    __slots__ = ("payload", "task_id", "time", "turn", "type")

    type: EventType
    task_id: str
    turn: int | None
    payload: EventPayload
    time: float

    def __init__(
        self,
        type: EventType,
        task_id: str,
        turn: int | None = None,
        data: Mapping[str, Any] | None = None,
        time: float | None = None,
        *,
        payload: EventPayload | None = None,
    ) -> None:
        if payload is None:
            payload = payload_for(type, data)
        elif data is not None:
            raise TypeError("HarnessEvent takes data or payload, not both")
        elif not isinstance(payload, PAYLOADS[type]):
            msg = f"a {type.value} event takes a {PAYLOADS[type].__name__}, got {type_name(payload)}"
            raise TypeError(msg)
        object.__setattr__(self, "type", type)
        object.__setattr__(self, "task_id", task_id)
        object.__setattr__(self, "turn", turn)
        object.__setattr__(self, "payload", payload)
        object.__setattr__(self, "time", _now() if time is None else time)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"HarnessEvent is frozen: cannot set {name}")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, HarnessEvent):
            return NotImplemented
        return (self.type, self.task_id, self.turn, self.payload, self.time) == (
            other.type,
            other.task_id,
            other.turn,
            other.payload,
            other.time,
        )

    def __hash__(self) -> int:
        return hash((self.type, self.task_id, self.turn, self.time))

    def __repr__(self) -> str:
        return (
            f"HarnessEvent({self.type.value}, {self.task_id!r}, turn={self.turn}, payload={self.payload!r})"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": self.type.value,
            "task_id": self.task_id,
            "turn": self.turn,
            "time": self.time,
            "data": self.payload.to_data(),
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False, sort_keys=True)

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> HarnessEvent:
        return cls(
            type=EventType(raw["type"]),
            task_id=str(raw["task_id"]),
            turn=raw.get("turn"),
            data=dict(raw.get("data") or {}),
            time=float(raw.get("time", 0.0)),
        )

    @classmethod
    def from_json(cls, text: str) -> HarnessEvent:
        """An event from one line of ``events.jsonl`` or one ``~/events`` message."""
        raw = json.loads(text)
        if not isinstance(raw, Mapping):
            raise ValueError(f"a harness event is a JSON object, got {type_name(raw)}")
        return cls.from_dict(raw)


def type_name(value: object) -> str:
    return type(value).__name__


def _now() -> float:
    return time.time()
