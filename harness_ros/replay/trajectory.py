"""Rebuild each task's trajectory from its harness events.

The result must equal the ``trajectory.json`` the harness wrote, because a
consolidation replay (and a recorded model reply's digest) depends on every byte
of it. So the rebuild follows the harness exactly:

- a ``tool_result`` of a known tool is one trajectory event, unless it is the
  refusal of an extra call in the same turn (``refused``);
- its arguments are the ``tool_call`` arguments after any safety-hook rewrite
  (``safety`` events with ``action: rewrite``); a malformed call has no
  ``tool_call`` event, so its arguments come from the turn's ``model_response``;
- its verdict is the ``verdict`` event of that call (or the verdict embedded in
  the result);
- compaction, bounds and verdict normalisation are FileMemory's own
  (``harness_ros.memory.task_notes``), not a copy of them;
- a call refused before it ran keeps its ``refusal`` kind, revisions come from the
  ``revision`` events and the outcome from ``done``; a task whose ``done`` has an
  outcome ended in phase ``finishing`` (an older recording, without outcomes, keeps
  the phase it was written with, ``started``); ``finish_task`` is the harness's own
  end call and never an allowed tool for consolidation.

Tolerant: unknown event types are ignored, a task whose ``task_started`` was not
recorded is rebuilt from what is there, and a task without ``done`` has status None.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from harness_ros.memory.task_notes import TaskNotes, normalize_verdict
from harness_ros.replay.contracts import RecordedTask
from harness_ros.tools.finish_task import FINISH_TASK

__all__ = ["rebuild_tasks", "trajectory_status"]

logger = logging.getLogger(__name__)


def trajectory_status(done_status: str | None) -> str:
    """The trajectory's status for a ``done`` status: completed, aborted, or running."""
    if done_status is None:
        return "running"
    return "completed" if done_status == "completed" else "aborted"


@dataclass
class _PendingCall:
    tool: str
    arguments: dict[str, Any]
    verdict: dict[str, Any] | None = None


@dataclass
class _TaskState:
    task_id: str
    instruction: str = ""
    tools: tuple[str, ...] | None = None
    status: str | None = None
    outcome: str | None = None
    revisions: list[str] = field(default_factory=list)
    refusals: dict[int, str] = field(default_factory=dict)
    """Record index -> refusal kind."""
    records: list[tuple[str, Any, Any, dict[str, Any] | None]] = field(default_factory=list)
    calls: dict[str, _PendingCall] = field(default_factory=dict)
    last_call: str | None = None
    reply_calls: list[dict[str, Any]] = field(default_factory=list)
    consolidation: dict[str, Any] | None = None

    def known(self, tool: str) -> bool:
        # Without task_started (recording began mid-task) every tool counts as known.
        return self.tools is None or tool in self.tools


def _as_dict(value: Any) -> dict[str, Any]:
    return dict(value) if isinstance(value, dict) else {}


class _Rebuilder:
    def __init__(self) -> None:
        self.tasks: dict[str, _TaskState] = {}

    def feed(self, event: dict[str, Any]) -> None:
        task_id = str(event.get("task_id") or "")
        kind = event.get("type")
        if not task_id or not isinstance(kind, str):
            return
        data = _as_dict(event.get("data"))
        if kind == "task_started":
            # A repeated task id starts afresh (the harness refuses to reuse a run folder).
            state = _TaskState(task_id, instruction=str(data.get("instruction") or "").strip())
            tools = data.get("tools")
            state.tools = (
                tuple(str(t) for t in tools if str(t) != FINISH_TASK) if isinstance(tools, list) else None
            )
            self.tasks.pop(task_id, None)
            self.tasks[task_id] = state
            return
        state = self.tasks.get(task_id)
        if state is None:
            state = self.tasks[task_id] = _TaskState(task_id)
        handler = getattr(self, f"_on_{kind}", None)
        if handler is not None:
            handler(state, data)

    # ------------------------------------------------------------------ per event type
    def _on_model_response(self, state: _TaskState, data: dict[str, Any]) -> None:
        calls = data.get("tool_calls")
        state.reply_calls = [c for c in calls if isinstance(c, dict)] if isinstance(calls, list) else []

    def _on_tool_call(self, state: _TaskState, data: dict[str, Any]) -> None:
        call_id = str(data.get("call_id") or f"#{len(state.records)}")
        state.calls[call_id] = _PendingCall(str(data.get("tool") or ""), _as_dict(data.get("arguments")))
        state.last_call = call_id

    def _on_safety(self, state: _TaskState, data: dict[str, Any]) -> None:
        # Hooks run right after the tool_call event of the one executed call of the turn.
        rewritten = data.get("arguments")
        if data.get("action") == "rewrite" and state.last_call in state.calls and isinstance(rewritten, dict):
            state.calls[state.last_call].arguments = dict(rewritten)

    def _on_revision(self, state: _TaskState, data: dict[str, Any]) -> None:
        text = data.get("instruction")
        if isinstance(text, str) and text.strip():
            state.revisions.append(text)

    def _on_verdict(self, state: _TaskState, data: dict[str, Any]) -> None:
        if data.get("scope") == "task":
            return  # the goal check at the end is no tool's verdict
        verdict = data.get("verdict") if isinstance(data.get("verdict"), dict) else data
        if state.last_call in state.calls:
            state.calls[state.last_call].verdict = dict(verdict)

    def _on_tool_result(self, state: _TaskState, data: dict[str, Any]) -> None:
        tool = str(data.get("tool") or "")
        if data.get("refused") or not state.known(tool):
            return
        call_id = str(data.get("call_id") or state.last_call or "")
        call = state.calls.pop(call_id, None)
        if call is None and not data.get("malformed") and state.last_call in state.calls:
            call = state.calls.pop(state.last_call)  # an older harness without call ids
        result = data.get("result")
        if call is not None:
            arguments: Any = call.arguments
            verdict = call.verdict
        else:
            # A malformed call never reached tool_call: its arguments are the model's own
            # (the first call of the reply; unparseable arguments are recorded as {}).
            first = state.reply_calls[0] if state.reply_calls else {}
            arguments = first.get("arguments") if isinstance(first.get("arguments"), dict) else {}
            verdict = None
        if verdict is None and isinstance(result, dict) and isinstance(result.get("verdict"), dict):
            verdict = dict(result["verdict"])
        if isinstance(data.get("refusal"), str) and data["refusal"]:
            state.refusals[len(state.records)] = data["refusal"]
        state.records.append((tool, arguments, result, verdict))
        state.last_call = None

    def _on_memory_consolidation(self, state: _TaskState, data: dict[str, Any]) -> None:
        state.consolidation = data

    def _on_done(self, state: _TaskState, data: dict[str, Any]) -> None:
        state.status = str(data.get("status") or "failed")
        outcome = data.get("outcome")
        state.outcome = outcome if isinstance(outcome, str) and outcome else None


def _trajectory(state: _TaskState) -> dict[str, Any]:
    notes = TaskNotes(state.instruction, task_id=state.task_id)
    for text in state.revisions:
        notes.add_revision(text)
    for index, (tool, arguments, result, verdict) in enumerate(state.records):
        notes.record(tool, arguments, result, normalize_verdict(verdict), refusal=state.refusals.get(index))
    notes.status = trajectory_status(state.status)
    if state.outcome is not None:
        notes.outcome = state.outcome
        notes.phase = "finishing"
    return notes.to_dict()


def rebuild_tasks(events: Iterable[dict[str, Any]]) -> list[RecordedTask]:
    """Tasks in the order they started, each with its rebuilt trajectory."""
    rebuilder = _Rebuilder()
    count = 0
    for event in events:
        if isinstance(event, dict):
            rebuilder.feed(event)
            count += 1
    logger.debug("rebuilt %d tasks from %d events", len(rebuilder.tasks), count)
    return [
        RecordedTask(
            task_id=state.task_id,
            instruction=state.instruction,
            status=state.status,
            allowed_tools=state.tools or tuple(sorted({record[0] for record in state.records})),
            trajectory=_trajectory(state),
            recorded_consolidation=state.consolidation,
        )
        for state in rebuilder.tasks.values()
    ]
