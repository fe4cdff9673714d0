"""A recovery lesson as data, and the English the model reads, rendered from it.

The harness writes a recovery it saw (``memory.evidence.recovery_lessons``) into the
tool's ledger as a sentence the model reads ("After "object out of reach": navigate_to
with target = the failed call's object_id, then pick_object again succeeded. Before a
pick_object, first ...") and, on the same line, as data (``RecoveryLesson.to_json`` in an
HTML comment, ``document.LESSON_DATA``). What the harness does with a lesson (hold a
robot call for its step, the step as the last words before a decision, the lesson bound
to a failed call's values) is decided from the data only: an operator may reword the
sentence, and a sentence without data (a model's, an operator's, or a lesson written
before the data existed) is shown as written and decides nothing.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from harness_ros.errors import LessonDataError
from harness_ros.trajectory import TrajectoryStep
from harness_ros.validators import valid_tool_name

__all__ = [
    "LessonArgument",
    "LessonCall",
    "LessonDataError",
    "RecoveryLesson",
    "StepAhead",
]

_VERSION = 1
_FAILED_CALLS = "the failed call's"


def _scalar(value: Any) -> bool:
    return isinstance(value, str | int | float) and not isinstance(value, bool)


@dataclass(frozen=True)
class LessonArgument:
    """One argument of a fix's call: the value of the failed call's argument ``reuses``
    (``target`` = its ``object_id``), or a value of its own (``standoff_m`` = 0)."""

    name: str
    reuses: str | None = None
    value: Any = None

    def worded(self, reused: str) -> str:
        """``name = <reused>`` for a reused value, ``name = <JSON>`` for its own."""
        if self.reuses is not None:
            return f"{self.name} = {reused}"
        return f"{self.name} = {json.dumps(self.value, ensure_ascii=False, default=str)}"


@dataclass(frozen=True)
class LessonCall:
    """One call of a fix, its arguments in the order the call had them."""

    tool: str
    arguments: tuple[LessonArgument, ...] = ()

    @property
    def reuses_a_value(self) -> bool:
        return any(argument.reuses is not None for argument in self.arguments)

    def worded(self, reused: Any) -> str:
        """``tool with a = ..., b = ...``; ``reused(argument)`` words a reused value."""
        if not self.arguments:
            return self.tool
        return f"{self.tool} with " + ", ".join(
            argument.worded(reused(argument)) for argument in self.arguments
        )

    def bound(self, arguments: Mapping[str, Any]) -> dict[str, Any] | None:
        """Its arguments for a coming call with ``arguments``; None when one it reuses is missing."""
        values: dict[str, Any] = {}
        for argument in self.arguments:
            if argument.reuses is None:
                values[argument.name] = argument.value
            elif _scalar(arguments.get(argument.reuses)):
                values[argument.name] = arguments[argument.reuses]
            else:
                return None
        return values

    def taken_by(self, step: TrajectoryStep, arguments: Mapping[str, Any]) -> bool:
        """Whether ``step`` was this call for a coming call with ``arguments``: the same tool,
        the reused values equal, and a value of its own equal where the step gave one."""
        if step.tool != self.tool:
            return False
        given = step.arguments
        for argument in self.arguments:
            if argument.reuses is not None:
                if given.get(argument.name) != arguments.get(argument.reuses):
                    return False
            elif argument.name in given and not _same_value(given[argument.name], argument.value):
                return False
        return True


def _same_value(given: Any, wanted: Any) -> bool:
    numbers = (int, float)
    if isinstance(given, numbers) and isinstance(wanted, numbers) and not isinstance(given, bool):
        return abs(float(given) - float(wanted)) < 1e-9
    return bool(given == wanted)


@dataclass(frozen=True)
class StepAhead:
    """A lesson's step to take before a tool's first call in a task: the fix's calls, each
    tied to an argument of the call it comes before."""

    tool: str
    """The tool the step comes before."""
    calls: tuple[LessonCall, ...]

    @property
    def first_call(self) -> str:
        """The tool the step starts with."""
        return self.calls[0].tool

    @property
    def text(self) -> str:
        """Worded for a task that has not called the tool yet: "Before a pick_object, first
        navigate_to with target = the object_id you will give pick_object." In a tool's
        description the step never changed a first call: all ten first calls of run G's
        memory-on arm drove to a surface (BENCHMARKS.md section 9)."""
        fix = ", then ".join(
            call.worded(lambda a: f"the {a.reuses} you will give {self.tool}") for call in self.calls
        )
        return f"Before a {self.tool}, first {fix}."

    def bound(self, arguments: Mapping[str, Any]) -> list[tuple[LessonCall, dict[str, Any]]] | None:
        """The step's calls with their values for a coming call with ``arguments``, or None."""
        bound = [(call, call.bound(arguments)) for call in self.calls]
        if not bound or any(values is None for _, values in bound):
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
        fix = ", then ".join(call.worded(lambda a: _value_of(a, arguments, "its")) for call in self.calls)
        return f"Before a {self.tool}, first {fix}."


def _value_of(argument: LessonArgument, arguments: Mapping[str, Any], owner: str) -> str:
    """A reused value as the call that failed (or will come) has it, else named by its owner."""
    value = arguments.get(argument.reuses or "")
    if isinstance(value, str | int | float):
        return json.dumps(value, ensure_ascii=False)
    return f"{owner} {argument.reuses}"


@dataclass(frozen=True)
class RecoveryLesson:
    """A call of ``tool`` failed with ``failure`` (the reason's short worded clause), the
    calls of ``fix`` ran and succeeded, and the same call of ``tool`` then succeeded, with
    the evaluator's confirmation. ``ahead``: the fix is also the step to take before the
    tool's next call (each of its calls reuses a value of the failed call)."""

    failure: str
    tool: str
    fix: tuple[LessonCall, ...] = ()
    ahead: bool = False

    def _fix(self, reused: Any) -> str:
        return ", then ".join(call.worded(reused) for call in self.fix)

    @property
    def text(self) -> str:
        """The lesson in the model's words, as the ledger holds it."""
        return self._worded(lambda a: f"{_FAILED_CALLS} {a.reuses}", ahead=self.ahead)

    def _worded(self, reused: Any, *, ahead: bool) -> str:
        if not self.fix:
            return f'After "{self.failure}": {self.tool} again, unchanged, succeeded.'
        text = f'After "{self.failure}": {self._fix(reused)}, then {self.tool} again succeeded.'
        if ahead:
            text += f" Before a {self.tool}, first {self._fix(lambda a: f'its {a.reuses}')}."
        return text

    def bound_text(self, arguments: Mapping[str, Any]) -> str:
        """The lesson as it applies to one failed call: that call's values in place of the
        arguments it names, and without the step to take first (too late for that now).

        In a note about a failed pick of blue_mug, "navigate_to with target = the failed
        call's object_id" left the 1.5B driving to the surface again, six times; the value
        it needs is the one that call had."""
        return self._worded(lambda a: _value_of(a, arguments, _FAILED_CALLS), ahead=False)

    @property
    def step(self) -> StepAhead | None:
        """The step to take before the tool's next call, when the lesson gives one."""
        return StepAhead(self.tool, self.fix) if self.ahead and self.fix else None

    @property
    def calls(self) -> list[str]:
        """The calls of the recovery in order: the fix's, then the tool again."""
        return [*(call.tool for call in self.fix), self.tool]

    def to_json(self) -> dict[str, Any]:
        return {
            "v": _VERSION,
            "failure": self.failure,
            "tool": self.tool,
            "fix": [
                {
                    "tool": call.tool,
                    "arguments": [
                        {"name": a.name, "reuses": a.reuses}
                        if a.reuses is not None
                        else {"name": a.name, "value": a.value}
                        for a in call.arguments
                    ],
                }
                for call in self.fix
            ],
            "ahead": self.ahead,
        }

    @classmethod
    def from_json(cls, raw: Any) -> RecoveryLesson:
        """The lesson of a data part, read strictly; ``LessonDataError`` names what is wrong."""
        data = _object(raw, "lesson", {"v", "failure", "tool", "fix", "ahead"})
        if data["v"] != _VERSION or isinstance(data["v"], bool):
            raise LessonDataError("v", f"expected {_VERSION}, got {data['v']!r}")
        failure = data["failure"]
        if not isinstance(failure, str) or not failure.strip() or "\n" in failure:
            raise LessonDataError("failure", f"expected the failure's words (one line), got {failure!r}")
        tool = _tool(data["tool"], "tool")
        if not isinstance(data["fix"], list):
            raise LessonDataError("fix", f"expected a list of calls, got {type(data['fix']).__name__}")
        fix = tuple(_call(item, f"fix[{at}]") for at, item in enumerate(data["fix"]))
        ahead = data["ahead"]
        if not isinstance(ahead, bool):
            raise LessonDataError("ahead", f"expected true or false, got {ahead!r}")
        if ahead and (not fix or not all(call.reuses_a_value for call in fix)):
            raise LessonDataError(
                "ahead", "true needs a fix whose every call reuses a value of the failed call"
            )
        return cls(failure.strip(), tool, fix, ahead)


def _object(raw: Any, field: str, keys: set[str]) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise LessonDataError(field, f"expected an object, got {type(raw).__name__}")
    missing, unknown = keys - raw.keys(), raw.keys() - keys
    if missing:
        raise LessonDataError(field, f"missing {', '.join(sorted(missing))}")
    if unknown:
        raise LessonDataError(field, f"unknown {', '.join(sorted(map(str, unknown)))}")
    return raw


def _tool(value: Any, field: str) -> str:
    if not valid_tool_name(value):
        raise LessonDataError(field, f"expected a tool name, got {value!r}")
    return str(value)


def _name(value: Any, field: str) -> str:
    if not isinstance(value, str) or not value.isidentifier():
        raise LessonDataError(field, f"expected an argument name, got {value!r}")
    return value


def _call(raw: Any, field: str) -> LessonCall:
    data = _object(raw, field, {"tool", "arguments"})
    if not isinstance(data["arguments"], list):
        raise LessonDataError(f"{field}.arguments", "expected a list")
    arguments = []
    for at, item in enumerate(data["arguments"]):
        where = f"{field}.arguments[{at}]"
        if not isinstance(item, dict):
            raise LessonDataError(where, f"expected an object, got {type(item).__name__}")
        shape = {"name", "reuses"} if "reuses" in item else {"name", "value"}
        argument = _object(item, where, shape)
        name = _name(argument["name"], f"{where}.name")
        if "reuses" in argument:
            arguments.append(LessonArgument(name, reuses=_name(argument["reuses"], f"{where}.reuses")))
        else:
            value = argument["value"]
            if isinstance(value, float) and not math.isfinite(value):
                raise LessonDataError(f"{where}.value", f"expected a JSON value, got {value!r}")
            arguments.append(LessonArgument(name, value=value))
    return LessonCall(_tool(data["tool"], f"{field}.tool"), tuple(arguments))
