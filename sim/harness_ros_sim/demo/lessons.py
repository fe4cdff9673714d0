"""The scripted demo policy's memory replies: lessons derived from a trajectory (pure Python).

``consolidate`` proposes entries by the same evidence rules FileMemory enforces, so
it never asks memory to accept something the trajectory does not show:

- a Failure lesson for a tool only when a failure of that tool is later followed by
  an evaluator-confirmed success of the same tool, naming what fixed it;
- a Success lesson only from an evaluator-confirmed success;
- a General Lesson only when some failure was recovered that way.

Lessons are generic (no object ids, no one-run state), confidence 0.9, and entries
already in memory are not proposed again. ``summarize`` shortens a ledger for the
tool description.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from harness_ros_sim.demo.decide import NAVIGATE, PICK, PLACE

__all__ = [
    "CONFIDENCE",
    "GENERAL_RECOVERY",
    "NAVIGATE_TO_OBJECT_SUCCESS",
    "PICK_AFTER_APPROACH_SUCCESS",
    "PICK_OUT_OF_REACH_FAILURE",
    "PICK_SLIP_FAILURE",
    "PICK_SUCCESS",
    "PLACE_SUCCESS",
    "consolidate",
    "summarize",
]

CONFIDENCE = 0.9

PICK_OUT_OF_REACH_FAILURE = (
    "When pick_object fails with 'object out of reach', call navigate_to with the object itself "
    "as the target instead of its surface: the base then parks within arm reach and the next pick succeeds."
)
PICK_SLIP_FAILURE = (
    "A grasp of a slippery object can slip; calling pick_object again from the same pose succeeded."
)
PICK_AFTER_APPROACH_SUCCESS = (
    "pick_object succeeds right after navigate_to has parked the base next to the object itself, "
    "which puts the object within arm reach."
)
PICK_SUCCESS = "pick_object succeeds when the object is visible and within arm reach of the base centre."
PLACE_SUCCESS = (
    "place_object succeeds right after navigate_to the same surface: the default standoff keeps "
    "the surface within arm reach."
)
NAVIGATE_TO_OBJECT_SUCCESS = (
    "navigate_to accepts an object id as its target and parks the base facing that object, "
    "close enough to grasp it."
)
GENERAL_RECOVERY = (
    "After a physical failure, act on the reason the tool gives (reposition or retry) and rely on "
    "the evaluator's verdict, not the tool's own report, to know that the fix worked."
)
SUMMARY_MAX_CHARS = 700


def _verdict(event: Mapping[str, Any]) -> str | None:
    verdict = event.get("verdict")
    return str(verdict.get("status")) if isinstance(verdict, Mapping) else None


def _failed(event: Mapping[str, Any]) -> bool:
    result = event.get("result")
    return (isinstance(result, Mapping) and result.get("success") is False) or _verdict(event) == "failure"


def _confirmed(event: Mapping[str, Any]) -> bool:
    return _verdict(event) == "success"


def _reason(event: Mapping[str, Any]) -> str:
    result = event.get("result")
    return str(result.get("reason") or "") if isinstance(result, Mapping) else ""


def _arg(event: Mapping[str, Any], key: str) -> str:
    arguments = event.get("arguments")
    return str(arguments.get(key) or "") if isinstance(arguments, Mapping) else ""


def _previous(events: Sequence[Mapping[str, Any]], index: int, tool: str) -> Mapping[str, Any] | None:
    return next((e for e in reversed(events[:index]) if e.get("tool") == tool), None)


def _recovered(events: Sequence[Mapping[str, Any]], index: int) -> int | None:
    """Index of the first confirmed success of the same tool after failure ``index``."""
    tool = events[index].get("tool")
    return next(
        (j for j in range(index + 1, len(events)) if events[j].get("tool") == tool and _confirmed(events[j])),
        None,
    )


def _tool_lessons(events: Sequence[Mapping[str, Any]]) -> list[tuple[str, str, str]]:
    """(tool, outcome, text) the trajectory supports, in order, without repeats."""
    lessons: list[tuple[str, str, str]] = []

    def add(tool: str, outcome: str, text: str) -> None:
        if (tool, outcome, text) not in lessons:
            lessons.append((tool, outcome, text))

    for index, event in enumerate(events):
        tool = str(event.get("tool") or "")
        if tool == PICK and _failed(event):
            fixed_at = _recovered(events, index)
            if fixed_at is None:
                continue
            reason = _reason(event)
            nav = _previous(events, fixed_at, NAVIGATE)
            approached = nav is not None and _arg(nav, "target") == _arg(events[fixed_at], "object_id")
            if "out of reach" in reason and approached:
                add(PICK, "failure", PICK_OUT_OF_REACH_FAILURE)
            elif "slip" in reason:
                add(PICK, "failure", PICK_SLIP_FAILURE)
        elif tool == PICK and _confirmed(event):
            nav = _previous(events, index, NAVIGATE)
            approached = nav is not None and _arg(nav, "target") == _arg(event, "object_id")
            add(PICK, "success", PICK_AFTER_APPROACH_SUCCESS if approached else PICK_SUCCESS)
        elif tool == PLACE and _confirmed(event):
            nav = _previous(events, index, NAVIGATE)
            if nav is not None and _confirmed(nav) and _arg(nav, "target") == _arg(event, "surface_id"):
                add(PLACE, "success", PLACE_SUCCESS)
        elif tool == NAVIGATE and _confirmed(event):
            following = events[index + 1] if index + 1 < len(events) else None
            target = _arg(event, "target")
            if (
                following is not None
                and following.get("tool") == PICK
                and _arg(following, "object_id") == target
                and _confirmed(following)
            ):
                add(NAVIGATE, "success", NAVIGATE_TO_OBJECT_SUCCESS)
    return lessons


def _known(existing: Mapping[str, Any]) -> set[str]:
    """Case-folded texts already in memory and in the ledgers."""
    texts: list[str] = []
    for section in (existing.get("memory") or {}).values():
        texts.extend(section or [])
    for ledger in (existing.get("tool_experience") or {}).values():
        for lines in (ledger or {}).values():
            texts.extend(lines or [])
    return {_key(text) for text in texts if isinstance(text, str)}


def _key(text: str) -> str:
    return " ".join(text.split()).casefold().rstrip(" .!")


def consolidate(payload: Mapping[str, Any]) -> dict[str, Any]:
    """The consolidation JSON for the request payload {allowed_tools, existing, task_notes}."""
    notes = payload.get("task_notes") or {}
    events = [e for e in notes.get("events") or [] if isinstance(e, Mapping)]
    allowed = set(payload.get("allowed_tools") or [])
    known = _known(payload.get("existing") or {})
    tool_entries = [
        {"tool": tool, "outcome": outcome, "text": text, "confidence": CONFIDENCE}
        for tool, outcome, text in _tool_lessons(events)
        if tool in allowed and _key(text) not in known
    ]
    memory_entries = []
    recovered_any = any(_failed(e) and _recovered(events, i) is not None for i, e in enumerate(events))
    if recovered_any and _key(GENERAL_RECOVERY) not in known:
        memory_entries.append(
            {"section": "General Lessons", "text": GENERAL_RECOVERY, "confidence": CONFIDENCE}
        )
    return {"memory_entries": memory_entries, "tool_experience_entries": tool_entries}


def summarize(payload: Mapping[str, Any]) -> dict[str, Any]:
    """A short summary of one tool's ledger: what failed and what fixed it first."""
    failure = [" ".join(str(t).split()) for t in payload.get("failure") or [] if str(t).strip()]
    success = [" ".join(str(t).split()) for t in payload.get("success") or [] if str(t).strip()]
    parts = []
    if failure:
        parts.append("Known failures and their fixes: " + " ".join(failure))
    if success:
        parts.append("What worked: " + " ".join(success))
    summary = " ".join(parts) or "No lessons recorded yet."
    if len(summary) > SUMMARY_MAX_CHARS:
        summary = summary[: SUMMARY_MAX_CHARS - 3].rstrip() + "..."
    return {"summary": summary}
