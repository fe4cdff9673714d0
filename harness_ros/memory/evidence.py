"""Failure lessons the trajectory itself proves: a call failed, what ran next, and then the
same tool succeeded, confirmed by the evaluator.

The consolidating model may miss them: the local 1.5B answered every consolidation of the
learning eval with empty lists, so the memory-on arm never learnt anything. A recovery is
exactly what the failure-lesson rule asks for (a failure of the tool later followed by an
evaluator-confirmed success of it), so the harness can write it down itself, in words that
carry to the next task: argument values the recovery reused from the failed call are named
by that call's argument (``target = the failed call's object_id``), not by this run's ids.
Each lesson is still judged by the same rules as a model's entry (``consolidation.decide``).
A lesson is data (``lessons.RecoveryLesson``); its sentence is rendered from it, and what
the harness does with it is decided from the data, never by reading the sentence back.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from harness_ros.memory.contracts import MemoryConsolidation, ToolExperienceEntry
from harness_ros.memory.lessons import LessonArgument, LessonCall, RecoveryLesson
from harness_ros.trajectory import TrajectoryStep
from harness_ros.trajectory.reasons import failure_phrases, failure_reason

__all__ = ["READ_ONLY_TOOLS", "recovery_lessons", "with_recovery_lessons"]

READ_ONLY_TOOLS = frozenset({"load_skill", "load_skill_resource", "ask_operator", "notify_operator"})
"""Built-in calls that change nothing on the robot: not part of what fixed a failure."""
_MAX_STEPS_BETWEEN = 3
"""A longer way from the failure to the success is a plan, not a fix of one failure."""


def _reused(value: Any, failed: Mapping[str, Any]) -> str | None:
    """The failed call's argument whose value ``value`` is, or None."""
    return next((name for name, used in failed.items() if isinstance(value, str) and used == value), None)


def _call(step: TrajectoryStep, failed: Mapping[str, Any]) -> LessonCall:
    """A call of the fix, each argument named by the failed call's argument it reuses."""
    arguments = []
    for key, value in step.arguments.items():
        same = _reused(value, failed)
        arguments.append(
            LessonArgument(key, reuses=same) if same is not None else LessonArgument(key, value=value)
        )
    return LessonCall(step.tool, tuple(arguments))


def recovery_lessons(
    trajectory: Sequence[TrajectoryStep], allowed: Iterable[str]
) -> list[ToolExperienceEntry]:
    """One failure lesson per tool (the first recovery of it) for the allowed tools."""
    steps = [step for step in trajectory if not step.refused]
    tools = set(allowed)
    lessons: dict[str, ToolExperienceEntry] = {}
    for at, success in enumerate(steps):
        tool = success.tool
        if tool in lessons or tool not in tools or not success.confirmed:
            continue
        before = next((i for i in range(at - 1, -1, -1) if steps[i].tool == tool), None)
        if before is None or not steps[before].failed:
            continue
        failed = steps[before]
        if dict(success.arguments) != dict(failed.arguments):
            # Another call of the same tool is no recovery of this one (eval run Q: a blocked
            # drive to the office shelf, then a drive to the doorway, was written as
            # "After "path blocked": navigate_to again, unchanged, succeeded.").
            continue
        phrases = failure_phrases(failure_reason(failed))
        between = [step for step in steps[before + 1 : at] if step.tool not in READ_ONLY_TOOLS]
        if not phrases or len(between) > _MAX_STEPS_BETWEEN or any(step.failed for step in between):
            continue
        fix = tuple(_call(step, failed.arguments) for step in between)
        # The fix is also the step to take before the tool's next call when each of its
        # calls is tied to that call's arguments (driving to the pick's own object_id). The
        # recovery alone teaches what to do after the failure: the 1.5B still drove to the
        # surface first, and failed the same pick once per task (BENCHMARKS.md section 9).
        ahead = bool(fix) and all(call.reuses_a_value for call in fix)
        lesson = RecoveryLesson(phrases[0], tool, fix, ahead)
        lessons[tool] = ToolExperienceEntry(tool, "failure", lesson.text, 1.0, lesson=lesson)
    return list(lessons.values())


def with_recovery_lessons(
    proposal: MemoryConsolidation, steps: Sequence[TrajectoryStep], allowed: Iterable[str]
) -> MemoryConsolidation:
    """``proposal`` with the recovery lessons of the tools it proposes no failure lesson for."""
    covered = {
        getattr(entry, "tool", None)
        for entry in proposal.tool_experience_entries
        if getattr(entry, "outcome", None) == "failure"
    }
    added = [lesson for lesson in recovery_lessons(steps, allowed) if lesson.tool not in covered]
    if not added:
        return proposal
    return dataclasses.replace(proposal, tool_experience_entries=(*proposal.tool_experience_entries, *added))
