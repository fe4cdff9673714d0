"""The one reducer from harness events to a trajectory.

The live harness feeds every event it emits to a ``TrajectoryFold`` and writes
``trajectory.json`` (and feeds memory's Task Notes) from it; replay folds the recorded
events with the same class. So ``trajectory.json`` is the fold of ``events.jsonl`` by
construction. The rules:

- a ``tool_result`` of a known tool (one ``task_started`` lists, ``finish_task`` never:
  it is the harness's own end call) is one step, unless it is the refusal of an extra
  call in the same turn (``refused``);
- its arguments are the ``tool_call`` arguments after any safety-hook rewrite
  (``safety`` events with ``action: rewrite``); a malformed call has no ``tool_call``
  event, so its arguments come from the turn's ``model_response`` (``{}`` when they did
  not parse);
- its prerequisites are the ``prerequisite`` events of that call (service calls the
  harness made before it, a mode switch), in order;
- its verdict is the ``verdict`` event of that call, else the verdict embedded in the
  result; the goal check at the end (``scope: task``) is no step's verdict;
- a call refused before it ran keeps its ``refusal`` kind; revisions come from the
  ``revision`` events; status and outcome from ``done``: a task whose ``done`` has an
  outcome ended in phase ``finishing`` (an older recording, without outcomes, keeps the
  phase it was written with, ``started``).

Tolerant of recordings: unknown event types are ignored, a task whose ``task_started``
was not recorded counts every tool as known, an older harness without call ids pairs a
result with the last call, and a task without ``done`` is ``running``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from harness_ros.events import (
    DonePayload,
    EventPayload,
    EventType,
    HarnessEvent,
    MemoryConsolidationPayload,
    ModelResponsePayload,
    PrerequisitePayload,
    RevisionPayload,
    SafetyPayload,
    TaskStartedPayload,
    ToolCallPayload,
    ToolResultPayload,
    VerdictPayload,
    payload_for,
)
from harness_ros.tools.finish_task import FINISH_TASK
from harness_ros.trajectory.contracts import Trajectory, TrajectoryStep, trajectory_status

__all__ = ["FoldedTask", "TrajectoryFold", "fold_events"]


@dataclass
class _PendingCall:
    tool: str
    arguments: dict[str, Any]
    verdict: Mapping[str, Any] | None = None
    prerequisites: list[dict[str, Any]] = field(default_factory=list)


class TrajectoryFold:
    """Folds one task's events, in order, into its ``Trajectory``: the one owner of it."""

    def __init__(self, task_id: str) -> None:
        self.task_id = task_id
        self.instruction = ""
        self.tools: tuple[str, ...] | None = None
        """The known tools (``task_started``); None: not recorded, every tool counts."""
        self.status: str | None = None
        """The ``done`` status (completed|failed|aborted|cancelled); None before it."""
        self.consolidation: MemoryConsolidationPayload | None = None
        """The ``memory_consolidation`` event's payload, once emitted."""
        self.trajectory = Trajectory.start("", task_id=task_id)
        self._calls: dict[str, _PendingCall] = {}
        self._last_call: str | None = None
        self._reply_calls: list[Mapping[str, Any]] = []

    def known(self, tool: str) -> bool:
        return self.tools is None or tool in self.tools

    def feed_event(self, event: HarnessEvent) -> TrajectoryStep | None:
        """Fold one event of this task; returns the step it added, if any."""
        return self.feed_payload(event.payload)

    def feed(self, kind: str, data: Mapping[str, Any]) -> TrajectoryStep | None:
        """Fold one recorded event (its type's name and JSON ``data``); unknown types are ignored."""
        try:
            event_type = EventType(kind)
        except ValueError:
            return None
        return self.feed_payload(payload_for(event_type, data if isinstance(data, Mapping) else {}))

    def feed_payload(self, payload: EventPayload) -> TrajectoryStep | None:
        if isinstance(payload, ToolResultPayload):
            return self._on_tool_result(payload)
        if isinstance(payload, TaskStartedPayload):
            self._on_task_started(payload)
        elif isinstance(payload, ModelResponsePayload):
            self._reply_calls = list(payload.tool_calls)
        elif isinstance(payload, ToolCallPayload):
            call_id = payload.call_id or f"#{len(self.trajectory.steps)}"
            self._calls[call_id] = _PendingCall(payload.tool, dict(payload.arguments))
            self._last_call = call_id
        elif isinstance(payload, SafetyPayload):
            # Hooks run right after the tool_call event of the one executed call of the turn.
            if (
                payload.action == "rewrite"
                and self._last_call in self._calls
                and payload.arguments is not None
            ):
                self._calls[self._last_call].arguments = dict(payload.arguments)
        elif isinstance(payload, PrerequisitePayload):
            self._on_prerequisite(payload)
        elif isinstance(payload, RevisionPayload):
            if payload.instruction.strip():
                self.trajectory = self.trajectory.with_revision(payload.instruction)
        elif isinstance(payload, VerdictPayload):
            self._on_verdict(payload)
        elif isinstance(payload, MemoryConsolidationPayload):
            self.consolidation = payload
        elif isinstance(payload, DonePayload):
            self._on_done(payload)
        return None

    # ------------------------------------------------------------------ per event type
    def _on_task_started(self, payload: TaskStartedPayload) -> None:
        self.instruction = payload.instruction.strip()
        tools = payload.tools
        self.tools = tuple(t for t in tools if t != FINISH_TASK) if tools is not None else None
        self.trajectory = Trajectory.start(self.instruction, task_id=self.task_id)

    def _on_prerequisite(self, payload: PrerequisitePayload) -> None:
        call = self._calls.get(payload.call_id or self._last_call or "")
        if call is not None:
            data = payload.to_data()
            keys = ("service", "success", "message", "reason")
            call.prerequisites.append({key: data[key] for key in keys if key in data})

    def _on_verdict(self, payload: VerdictPayload) -> None:
        if payload.of_task:
            return  # the goal check at the end is no tool's verdict
        verdict = payload.verdict if payload.verdict is not None else payload.to_data()
        if self._last_call in self._calls:
            self._calls[self._last_call].verdict = dict(verdict)

    def _on_tool_result(self, payload: ToolResultPayload) -> TrajectoryStep | None:
        tool = payload.tool
        if payload.refused or not self.known(tool):
            return None
        call = self._calls.pop(payload.call_id or self._last_call or "", None)
        if call is None and not payload.malformed and self._last_call in self._calls:
            call = self._calls.pop(self._last_call)  # an older harness without call ids
        result = payload.result
        prerequisites: list[dict[str, Any]] = []
        arguments: Mapping[str, Any]
        if call is not None:
            arguments, verdict, prerequisites = call.arguments, call.verdict, call.prerequisites
        else:
            # A malformed call never reached tool_call: its arguments are the model's own
            # (the first call of the reply; unparseable arguments are recorded as {}).
            first = self._reply_calls[0] if self._reply_calls else {}
            given = first.get("arguments")
            arguments = given if isinstance(given, Mapping) else {}
            verdict = None
        if verdict is None and isinstance(result, Mapping) and isinstance(result.get("verdict"), Mapping):
            verdict = dict(result["verdict"])
        self.trajectory = self.trajectory.with_step(
            tool, arguments, result, verdict, refusal=payload.refusal, prerequisites=prerequisites
        )
        self._last_call = None
        return self.trajectory.last_step

    def _on_done(self, payload: DonePayload) -> None:
        self.status = payload.status or "failed"
        changes: dict[str, Any] = {"status": trajectory_status(self.status)}
        if payload.outcome:
            changes |= {"outcome": payload.outcome, "phase": "finishing"}
        self.trajectory = replace(self.trajectory, **changes)


@dataclass(frozen=True)
class FoldedTask:
    """One task of a recording, folded."""

    task_id: str
    instruction: str
    status: str | None
    tools: tuple[str, ...] | None
    trajectory: Trajectory
    consolidation: MemoryConsolidationPayload | None = field(default=None)


def _typed(item: object) -> HarnessEvent | str | None:
    """An event, or a recording's JSON object typed here (at the file boundary); the task
    id alone for an event of a type this harness does not know (its task is still listed)."""
    if isinstance(item, HarnessEvent) or not isinstance(item, Mapping):
        return item if isinstance(item, HarnessEvent) else None
    task_id, kind, data = str(item.get("task_id") or ""), item.get("type"), item.get("data")
    if not isinstance(kind, str):
        return None
    try:
        event_type = EventType(kind)
    except ValueError:
        return task_id
    return HarnessEvent(event_type, task_id, data=data if isinstance(data, Mapping) else {})


def fold_events(events: Iterable[object]) -> list[FoldedTask]:
    """Fold a recording (event objects or their JSON dicts, several tasks interleaved or
    not) into its tasks, in the order they started. Malformed entries are skipped."""
    folds: dict[str, TrajectoryFold] = {}
    for item in events:
        event = _typed(item)
        task_id = event.task_id if isinstance(event, HarnessEvent) else event
        if not task_id:
            continue  # a line of events.jsonl that is not an object
        if isinstance(event, HarnessEvent) and event.type is EventType.TASK_STARTED:
            # A repeated task id starts afresh (the harness refuses to reuse a run folder).
            folds.pop(task_id, None)
        fold = folds.get(task_id)
        if fold is None:
            fold = folds[task_id] = TrajectoryFold(task_id)
        if isinstance(event, HarnessEvent):
            fold.feed_event(event)
    return [
        FoldedTask(
            fold.task_id, fold.instruction, fold.status, fold.tools, fold.trajectory, fold.consolidation
        )
        for fold in folds.values()
    ]
