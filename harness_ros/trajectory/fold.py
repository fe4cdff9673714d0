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

from harness_ros.events import HarnessEvent
from harness_ros.tools.finish_task import FINISH_TASK
from harness_ros.trajectory.contracts import Trajectory, TrajectoryStep, trajectory_status

__all__ = ["FoldedTask", "TrajectoryFold", "fold_events"]


def _as_dict(value: Any) -> dict[str, Any]:
    return dict(value) if isinstance(value, Mapping) else {}


@dataclass
class _PendingCall:
    tool: str
    arguments: dict[str, Any]
    verdict: Mapping[str, Any] | None = None
    prerequisites: list[dict[str, Any]] = field(default_factory=list)


class TrajectoryFold:
    """Folds one task's events, in order, into its ``Trajectory``."""

    def __init__(self, task_id: str) -> None:
        self.task_id = task_id
        self.instruction = ""
        self.tools: tuple[str, ...] | None = None
        """The known tools (``task_started``); None: not recorded, every tool counts."""
        self.status: str | None = None
        """The ``done`` status (completed|failed|aborted|cancelled); None before it."""
        self.consolidation: dict[str, Any] | None = None
        """The ``memory_consolidation`` event data, once emitted."""
        self.trajectory = Trajectory.start("", task_id=task_id)
        self._calls: dict[str, _PendingCall] = {}
        self._last_call: str | None = None
        self._reply_calls: list[dict[str, Any]] = []

    def known(self, tool: str) -> bool:
        return self.tools is None or tool in self.tools

    def feed_event(self, event: HarnessEvent) -> TrajectoryStep | None:
        return self.feed(event.type.value, event.data)

    def feed(self, kind: str, data: Mapping[str, Any]) -> TrajectoryStep | None:
        """Fold one event of this task; returns the step it added, if any."""
        handler = getattr(self, f"_on_{kind}", None)
        if handler is None:
            return None
        step: TrajectoryStep | None = handler(_as_dict(data))
        return step

    # ------------------------------------------------------------------ per event type
    def _on_task_started(self, data: dict[str, Any]) -> None:
        self.instruction = str(data.get("instruction") or "").strip()
        tools = data.get("tools")
        self.tools = (
            tuple(str(t) for t in tools if str(t) != FINISH_TASK) if isinstance(tools, list) else None
        )
        self.trajectory = Trajectory.start(self.instruction, task_id=self.task_id)

    def _on_model_response(self, data: dict[str, Any]) -> None:
        calls = data.get("tool_calls")
        self._reply_calls = [c for c in calls if isinstance(c, dict)] if isinstance(calls, list) else []

    def _on_tool_call(self, data: dict[str, Any]) -> None:
        call_id = str(data.get("call_id") or f"#{len(self.trajectory.steps)}")
        self._calls[call_id] = _PendingCall(str(data.get("tool") or ""), _as_dict(data.get("arguments")))
        self._last_call = call_id

    def _on_safety(self, data: dict[str, Any]) -> None:
        # Hooks run right after the tool_call event of the one executed call of the turn.
        rewritten = data.get("arguments")
        if data.get("action") == "rewrite" and self._last_call in self._calls and isinstance(rewritten, dict):
            self._calls[self._last_call].arguments = dict(rewritten)

    def _on_prerequisite(self, data: dict[str, Any]) -> None:
        call_id = str(data.get("call_id") or self._last_call or "")
        call = self._calls.get(call_id)
        if call is not None:
            keys = ("service", "success", "message", "reason")
            record: dict[str, Any] = {key: data[key] for key in keys if key in data}
            call.prerequisites.append(record)

    def _on_revision(self, data: dict[str, Any]) -> None:
        text = data.get("instruction")
        if isinstance(text, str) and text.strip():
            self.trajectory = self.trajectory.with_revision(text)

    def _on_verdict(self, data: dict[str, Any]) -> None:
        if data.get("scope") == "task":
            return  # the goal check at the end is no tool's verdict
        nested = data.get("verdict")
        verdict: dict[str, Any] = nested if isinstance(nested, dict) else data
        if self._last_call in self._calls:
            self._calls[self._last_call].verdict = dict(verdict)

    def _on_tool_result(self, data: dict[str, Any]) -> TrajectoryStep | None:
        tool = str(data.get("tool") or "")
        if data.get("refused") or not self.known(tool):
            return None
        call_id = str(data.get("call_id") or self._last_call or "")
        call = self._calls.pop(call_id, None)
        if call is None and not data.get("malformed") and self._last_call in self._calls:
            call = self._calls.pop(self._last_call)  # an older harness without call ids
        result = data.get("result")
        prerequisites: list[dict[str, Any]] = []
        if call is not None:
            arguments: Any = call.arguments
            verdict = call.verdict
            prerequisites = call.prerequisites
        else:
            # A malformed call never reached tool_call: its arguments are the model's own
            # (the first call of the reply; unparseable arguments are recorded as {}).
            first = self._reply_calls[0] if self._reply_calls else {}
            arguments = first.get("arguments") if isinstance(first.get("arguments"), dict) else {}
            verdict = None
        if verdict is None and isinstance(result, dict) and isinstance(result.get("verdict"), dict):
            verdict = dict(result["verdict"])
        refusal = data.get("refusal") if isinstance(data.get("refusal"), str) else None
        self.trajectory = self.trajectory.with_step(
            tool, arguments, result, verdict, refusal=refusal, prerequisites=prerequisites
        )
        self._last_call = None
        return self.trajectory.last_step

    def _on_memory_consolidation(self, data: dict[str, Any]) -> None:
        self.consolidation = data

    def _on_done(self, data: dict[str, Any]) -> None:
        self.status = str(data.get("status") or "failed")
        outcome = data.get("outcome")
        changes: dict[str, Any] = {"status": trajectory_status(self.status)}
        if isinstance(outcome, str) and outcome:
            changes |= {"outcome": outcome, "phase": "finishing"}
        self.trajectory = replace(self.trajectory, **changes)


@dataclass(frozen=True)
class FoldedTask:
    """One task of a recording, folded."""

    task_id: str
    instruction: str
    status: str | None
    tools: tuple[str, ...] | None
    trajectory: Trajectory
    consolidation: dict[str, Any] | None = field(default=None)


def fold_events(events: Iterable[object]) -> list[FoldedTask]:
    """Fold a recording (event objects or their JSON dicts, several tasks interleaved or
    not) into its tasks, in the order they started. Malformed entries are skipped."""
    folds: dict[str, TrajectoryFold] = {}
    for event in events:
        kind: Any
        data: Any
        if isinstance(event, HarnessEvent):
            task_id, kind, data = event.task_id, event.type.value, event.data
        elif isinstance(event, Mapping):
            task_id, kind, data = str(event.get("task_id") or ""), event.get("type"), event.get("data")
        else:
            continue  # a line of events.jsonl that is not an object
        if not task_id or not isinstance(kind, str):
            continue
        if kind == "task_started":
            # A repeated task id starts afresh (the harness refuses to reuse a run folder).
            folds.pop(task_id, None)
        fold = folds.get(task_id)
        if fold is None:
            fold = folds[task_id] = TrajectoryFold(task_id)
        fold.feed(kind, _as_dict(data))
    return [
        FoldedTask(
            fold.task_id, fold.instruction, fold.status, fold.tools, fold.trajectory, fold.consolidation
        )
        for fold in folds.values()
    ]
