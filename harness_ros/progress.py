"""One readable line per harness event, for ``harness-ros task`` and the demo.

Works on event dicts (as published on ``~/events`` and written to events.jsonl) so
it serves live topics and recorded runs alike.
"""

from __future__ import annotations

import json
from typing import Any

from harness_ros.terminal import terminal_safe
from harness_ros.trajectory import ToolResult, TrajectoryStep

__all__ = ["format_event"]


def _short(value: Any, limit: int = 140) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _clearance(data: dict[str, Any]) -> str:
    clearance = data.get("clearance")
    if not isinstance(clearance, dict):
        return "clearance: none"
    parts = []
    for direction in ("forward", "left", "backward", "right"):
        value = clearance.get(direction)
        parts.append(f"{direction[0]} {value:.2f}" if isinstance(value, int | float) else f"{direction[0]} ?")
    stale = " STALE" if clearance.get("stale") else ""
    return "clearance m: " + " ".join(parts) + stale


def _tokens(tokens: Any) -> str:
    """`` | tokens: 12,000 in (10,000 cached), 300 out, 8 images`` from the done event's totals."""
    if not isinstance(tokens, dict):
        return ""
    count = {key: value if isinstance(value, int) else 0 for key, value in tokens.items()}
    if not any(count.values()):
        return ""
    cached = count.get("cached_prompt_tokens", 0)
    text = f" | tokens: {count.get('prompt_tokens', 0):,} in"
    text += f" ({cached:,} cached)" if cached else ""
    text += f", {count.get('completion_tokens', 0):,} out"
    images = count.get("images", 0)
    return text + (f", {images} image{'s' if images != 1 else ''}" if images else "")


def format_event(event: dict[str, Any]) -> str | None:
    """A display line for one event dict, or None for events not worth a line.

    The line is terminal-safe: whatever the model, a server or another client put in the
    event, its control characters are printed as escapes (``harness_ros.terminal``).
    """
    line = _event_line(event)
    return None if line is None else terminal_safe(line)


def _event_line(event: dict[str, Any]) -> str | None:
    kind = event.get("type")
    data = event.get("data") or {}
    turn = event.get("turn")
    prefix = f"[turn {turn}] " if turn else ""
    if kind == "task_started":
        model = data.get("model", "")
        note = f" (model: {model})" if model else ""
        line = f"task {event.get('task_id')} started{note}: {_short(data.get('instruction', ''))}"
        # Where to look afterwards: the run log and the memory this task reads and updates.
        folders = [
            f"{label} {data[key]}"
            for label, key in (("run folder", "run_dir"), ("memory", "memory_dir"))
            if data.get(key)
        ]
        return line + (f" ({', '.join(folders)})" if folders else "")
    if kind == "task_rejected":
        return f"task rejected: {data.get('reason', '')}"
    if kind == "request_refused":
        return f"{data.get('request', 'request')} refused: {data.get('reason', '')}"
    if kind == "observation":
        views = data.get("views") or []
        labels = ", ".join(
            f"{v.get('name')} {v.get('freshness', '')}".strip() for v in views if isinstance(v, dict)
        )
        return f"{prefix}observe: {labels or 'no views'} | {_clearance(data)}"
    if kind == "model_response":
        calls = data.get("tool_calls") or []
        if calls:
            first = calls[0] if isinstance(calls[0], dict) else {}
            arguments = first.get("arguments")
            if first.get("name") == "finish_task" and isinstance(arguments, dict):
                recovered = " (recovered from text)" if data.get("recovered_from_text") else ""
                return f"{prefix}decide: finish_task, claiming {arguments.get('outcome')}{recovered}"
            names = ", ".join(str(c.get("name")) for c in calls if isinstance(c, dict))
            recovered = " (recovered from text)" if data.get("recovered_from_text") else ""
            return f"{prefix}decide: call {names}{recovered}"
        return f"{prefix}decide: plain text"
    if kind == "reminder":
        return (
            f"{prefix}reminder {data.get('reminder')}/{data.get('limit')}: a plain-text reply did not "
            f"end the task: {_short(data.get('reply', ''), 100)}"
        )
    if kind == "tool_call":
        arguments = raw if isinstance(raw := data.get("arguments"), dict) else {}
        if data.get("tool") == "ask_operator":
            choices = arguments.get("choices") or []
            options = f" [{' | '.join(str(c) for c in choices)}]" if choices else ""
            return (
                f"{prefix}QUESTION for the operator: {_short(arguments.get('question', ''), 200)}{options}"
                " (answer with: harness-ros answer)"
            )
        if data.get("tool") == "notify_operator":
            level = "WARNING" if arguments.get("level") == "warning" else "notice"
            return f"{prefix}{level} from the robot: {_short(arguments.get('text', ''), 200)}"
        return f"{prefix}tool {data.get('tool')}({_short(data.get('arguments', {}), 100)})"
    if kind == "safety":
        if data.get("action") == "pass" and not data.get("reason"):
            return None  # a silent pass is the normal case; show only what a hook changed
        return f"{prefix}safety {data.get('hook', '')}: {data.get('action')} - {data.get('reason', '')}"
    if kind == "prerequisite":  # a service call the harness made before the tool (a mode switch)
        if data.get("success") is True:
            return (
                f"{prefix}  first {data.get('service')}: ok {_short(data.get('message') or '', 80)}".rstrip()
            )
        return f"{prefix}  first {data.get('service')}: FAILED: {_short(data.get('reason') or '', 160)}"
    if kind == "tool_result":
        step = TrajectoryStep(0, str(data.get("tool") or ""), result=ToolResult.from_json(data.get("result")))
        if step.operator_answer is not None:
            return f"{prefix}  -> operator answered: {_short(step.operator_answer, 200)}"
        if step.tool == "notify_operator" and step.result.succeeded:
            return None
        if step.result.succeeded:
            values = {k: v for k, v in step.result.to_json().items() if k != "success"}
            return f"{prefix}  -> ok {_short(values, 120)}"
        if data.get("refusal") == "held_by_experience":  # the robot did nothing: no failure
            return f"{prefix}  -> HELD by experience: {_short(step.result.reason or '', 200)}"
        if data.get("refusal") == "held_finish":  # the task goes on: no failure
            return f"{prefix}  -> HELD, the task goes on: {_short(step.result.reason or '', 200)}"
        return f"{prefix}  -> FAILED: {_short(step.result.reason or '', 160)}"
    if kind == "verdict":
        verdict = data.get("verdict", data)
        reason = verdict.get("failure_reason") or verdict.get("evidence") or ""
        if data.get("scope") == "task":
            return f"{prefix}goal check by the evaluator: {verdict.get('status')} {_short(reason, 120)}"
        return f"{prefix}  evaluator: {verdict.get('status')} {_short(reason, 120)}"
    if kind == "memory_consolidation":
        if data.get("skipped"):
            return f"memory: consolidation skipped ({data.get('reason', 'no consolidator')})"
        if data.get("error"):
            return f"memory: consolidation failed, trajectory kept for retry: {data.get('error')}"
        held = data.get("held") or 0
        return (
            f"memory: {data.get('memory_written', 0)} memory entries, "
            f"{data.get('tool_experience_written', 0)} tool-experience lessons written"
        ) + (f"; {held} held for review (harness-ros memory pending)" if held else "")
    if kind == "memory_notice":
        return f"memory WARNING: {_short(data.get('message') or data.get('notice', ''), 240)}"
    if kind == "compaction":
        return f"{prefix}context compacted" + (f" (failed: {data['error']})" if data.get("error") else "")
    if kind == "done":
        reason = data.get("reason")
        tail = f" ({reason})" if reason else ""
        outcome = data.get("outcome")
        # The outcome leads: "completed" alone would read as success for a failed fetch.
        head = (
            f"done: {str(outcome).upper()}, status {data.get('status')}"
            if outcome
            else f"done: {data.get('status')}"
        )
        claim = data.get("claim")
        basis = ""
        if outcome:
            said = f"model claimed {claim}" if claim else "no claim by the model"
            verdict = data.get("goal_verdict")
            judged = (
                f"evaluator: {verdict.get('status')}" if isinstance(verdict, dict) else "goal not checked"
            )
            basis = f" [{said}; {judged}]" if data.get("status") == "completed" else ""
        return f"{head}{basis}{tail}{_tokens(data.get('tokens'))}"
    return None
