"""Failure lessons the trajectory itself proves: a call failed, what ran next, and then the
same tool succeeded, confirmed by the evaluator.

The consolidating model may miss them: the local 1.5B answered every consolidation of the
learning eval with empty lists, so the memory-on arm never learnt anything. A recovery is
exactly what the failure-lesson rule asks for (a failure of the tool later followed by an
evaluator-confirmed success of it), so the harness can write it down itself, in words that
carry to the next task: argument values the recovery reused from the failed call are named
by that call's argument (``target = the failed call's object_id``), not by this run's ids.
Each lesson is still judged by the same rules as a model's entry (``consolidation.decide``).
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from harness_ros.memory.contracts import MemoryConsolidation, ToolExperienceEntry
from harness_ros.trajectory import TrajectoryStep
from harness_ros.trajectory.reasons import failure_phrases, failure_reason

__all__ = [
    "READ_ONLY_TOOLS",
    "StepAhead",
    "StepCall",
    "bound_to_call",
    "recovery_lessons",
    "step_ahead",
    "with_recovery_lessons",
]

READ_ONLY_TOOLS = frozenset({"load_skill", "load_skill_resource", "ask_operator", "notify_operator"})
"""Built-in calls that change nothing on the robot: not part of what fixed a failure."""
_MAX_STEPS_BETWEEN = 3
"""A longer way from the failure to the success is a plan, not a fix of one failure."""


def _reused(value: Any, failed: Mapping[str, Any]) -> str | None:
    """The failed call's argument whose value ``value`` is, or None."""
    return next((name for name, used in failed.items() if isinstance(value, str) and used == value), None)


def _value(key: str, value: Any, failed: Mapping[str, Any], owner: str) -> str:
    same = _reused(value, failed)
    if same is not None:
        return f"{key} = {owner} {same}"
    return f"{key} = {json.dumps(value, ensure_ascii=False, default=str)}"


def _call(step: TrajectoryStep, failed: Mapping[str, Any], owner: str = "the failed call's") -> str:
    if not step.arguments:
        return step.tool
    return f"{step.tool} with " + ", ".join(_value(k, v, failed, owner) for k, v in step.arguments.items())


def _ahead(between: Sequence[TrajectoryStep], failed: TrajectoryStep) -> str:
    """The fix as a step to take before the tool's next call, when each of its calls is
    tied to that call's arguments (driving to the pick's own object_id); else "".
    The recovery alone teaches what to do after the failure: the 1.5B still drove to the
    surface first, and failed the same pick once per task (BENCHMARKS.md section 9)."""
    if not all(any(_reused(v, failed.arguments) for v in step.arguments.values()) for step in between):
        return ""
    fix = ", then ".join(_call(step, failed.arguments, owner="its") for step in between)
    return f" Before a {failed.tool}, first {fix}."


# A sentence ends at a full stop that is not a decimal point ("standoff_m = 0.5").
_AHEAD = re.compile(r"\s*Before an? [\w.-]+, first (?:[^.]|\.\d)*\.")
_REUSED = re.compile(r"\b(?:the failed call's|its) ([A-Za-z_][\w-]*)")


def bound_to_call(lesson: str, arguments: Mapping[str, Any]) -> str:
    """A recovery lesson as it applies to one failed call: the failed call's arguments by
    their values, and without the step to take first (it is too late for that).

    In a note about a failed pick of blue_mug, "navigate_to with target = the failed call's
    object_id" left the 1.5B driving to the surface again, six times; the value it needs is
    the one that call had."""

    def value(found: re.Match[str]) -> str:
        name = found.group(1)
        if name in arguments and isinstance(arguments[name], str | int | float):
            return json.dumps(arguments[name], ensure_ascii=False)
        return found.group(0)

    return _REUSED.sub(value, _AHEAD.sub("", lesson))


@dataclasses.dataclass(frozen=True)
class StepCall:
    """One call of a step to take first: its tool, the arguments it takes from the coming
    call (``target`` from ``object_id``), and those with a value of their own."""

    tool: str
    reused: tuple[tuple[str, str], ...] = ()
    fixed: tuple[tuple[str, Any], ...] = ()

    def bound(self, arguments: Mapping[str, Any]) -> dict[str, Any] | None:
        """Its arguments for a coming call with ``arguments``; None when one it reuses is missing."""
        values: dict[str, Any] = {}
        for key, name in self.reused:
            if not isinstance(arguments.get(name), str | int | float) or isinstance(arguments[name], bool):
                return None
            values[key] = arguments[name]
        return values | dict(self.fixed)

    def taken_by(self, step: TrajectoryStep, arguments: Mapping[str, Any]) -> bool:
        """Whether ``step`` was this call for a coming call with ``arguments``: the same tool,
        the reused values equal, and a value of its own equal where the step gave one."""
        if step.tool != self.tool:
            return False
        if any(step.arguments.get(key) != arguments.get(name) for key, name in self.reused):
            return False
        given = step.arguments
        return all(_same_value(given[key], value) for key, value in self.fixed if key in given)


def _same_value(given: Any, wanted: Any) -> bool:
    numbers = (int, float)
    if isinstance(given, numbers) and isinstance(wanted, numbers) and not isinstance(given, bool):
        return abs(float(given) - float(wanted)) < 1e-9
    return bool(given == wanted)


@dataclasses.dataclass(frozen=True)
class StepAhead:
    """A lesson's step to take before a tool's first call, worded for a task that has not
    called the tool yet: ``first_call`` is the tool the step starts with, ``calls`` the
    step's calls as read from the lesson (empty when its wording is not the harness's own)."""

    text: str
    first_call: str
    tool: str = dataclasses.field(default="", compare=False)
    """The tool the step comes before."""
    calls: tuple[StepCall, ...] = dataclasses.field(default=(), compare=False)
    fix: str = dataclasses.field(default="", compare=False)
    """The lesson's own words for the step (``target = its object_id``)."""

    def bound(self, arguments: Mapping[str, Any]) -> list[tuple[StepCall, dict[str, Any]]] | None:
        """The step's calls with their values for a coming call with ``arguments``, or None."""
        if not self.calls:
            return None
        bound = [(call, call.bound(arguments)) for call in self.calls]
        if any(values is None for _, values in bound):
            return None
        return [(call, values) for call, values in bound if values is not None]

    def taken(self, steps: Sequence[TrajectoryStep], arguments: Mapping[str, Any]) -> bool:
        """Whether the last robot calls, ``steps``, are this step for a call with ``arguments``."""
        recent = list(steps[-len(self.calls) :]) if self.calls else []
        return len(recent) == len(self.calls) and all(
            call.taken_by(step, arguments) for call, step in zip(self.calls, recent, strict=True)
        )

    def calls_for(self, arguments: Mapping[str, Any]) -> list[str]:
        """The step's calls as calls for a coming call with ``arguments``: ``navigate_to
        {"target": "red_cup", "standoff_m": 0}`` (the form a small model copies); [] without."""
        bound = self.bound(arguments) or []
        return [
            f"{call.tool} {json.dumps(values, ensure_ascii=False, default=str)}" for call, values in bound
        ]

    def text_for(self, arguments: Mapping[str, Any]) -> str:
        """The step for one coming call, with that call's values (``target = "red_cup"``)."""
        return f"Before a {self.tool}, first {bound_to_call(self.fix, arguments)}."


_AHEAD_PARTS = re.compile(r"Before an? ([\w.-]+), first (([\w.-]+)(?:[^.]|\.\d)*)\.")
_STEP_CALL = re.compile(r"([\w.-]+)(?: with (.+))?")
_STEP_ARGUMENT = re.compile(
    r'([A-Za-z_][\w-]*) = (?:its ([A-Za-z_][\w-]*)|("(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?|true|false|null))'
)


def _step_calls(fix: str) -> tuple[StepCall, ...]:
    """The calls of a step as ``_ahead`` words them; () when any part reads otherwise."""
    calls = []
    for part in fix.split(", then "):
        whole = _STEP_CALL.fullmatch(part.strip())
        if whole is None:
            return ()
        reused: list[tuple[str, str]] = []
        fixed: list[tuple[str, Any]] = []
        rest = whole.group(2) or ""
        while rest:
            argument = _STEP_ARGUMENT.match(rest)
            if argument is None:
                return ()
            key, name, literal = argument.groups()
            if name is not None:
                reused.append((key, name))
            else:
                fixed.append((key, json.loads(literal)))
            rest = rest[argument.end() :]
            if rest and not rest.startswith(", "):
                return ()
            rest = rest[2:]
        calls.append(StepCall(whole.group(1), tuple(reused), tuple(fixed)))
    return tuple(calls)


def step_ahead(lesson: str) -> StepAhead | None:
    """The lesson's "Before a <tool>, first <fix>." with the arguments it reuses named as
    those the coming call will get: "target = the object_id you will give pick_object".

    In a tool's description the step never changed a first call: all ten first calls of
    run G's memory-on arm drove to a surface (BENCHMARKS.md section 9)."""
    found = _AHEAD_PARTS.search(lesson)
    if found is None:
        return None
    tool, fix, first = found.group(1), found.group(2), found.group(3)
    worded = _REUSED.sub(lambda m: f"the {m.group(1)} you will give {tool}", fix)
    return StepAhead(f"Before a {tool}, first {worded}.", first, tool, _step_calls(fix), fix)


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
        if between:
            fix = ", then ".join(_call(step, failed.arguments) for step in between)
            text = f'After "{phrases[0]}": {fix}, then {tool} again succeeded.{_ahead(between, failed)}'
        else:
            text = f'After "{phrases[0]}": {tool} again, unchanged, succeeded.'
        lessons[tool] = ToolExperienceEntry(tool, "failure", text, 1.0)
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
