"""The trajectory of one task, typed: what each tool call did and how the task ended.

``Trajectory`` holds the task's ``TrajectoryStep`` s, one per call of a known tool, each
with its ``ToolResult`` (the envelope the model got back), the evaluator's
``StepVerdict`` when one judged the call, and the ``refusal`` kind of a call refused
before it ran. The types are frozen; JSON exists only at the file and model boundaries
(``to_json``/``from_json``), in the shared format consolidation reads::

    {"task_id", "goal", "phase", "status", "events": [{"index", "tool", "arguments",
     "result", "verdict", "refusal"?, "prerequisites"?}], "revisions"?, "outcome"?,
     "dropped_events"?}

A step's ``prerequisites`` are the service calls the harness made before it (a robot
mode switch, ``ToolBinding.prerequisites``): ``{"service", "success", "message"?,
"reason"?}`` each, in order.

Steps are built bounded (``harness_ros.trajectory.bounds``) by ``Trajectory.with_step``,
the one constructor the live harness, Task Notes and replay share. ``from_json`` is
faithful (it neither caps nor compacts) and reads every trajectory file the harness has
written: the older ones without ``outcome``, ``revisions`` or ``refusal``, with a raw
evaluator verdict, indices from 0 (a run without memory), and hand-written ones with an
``instruction`` instead of a ``goal``, revisions as ``{"instruction"|"text"}`` objects or
as events of ``type`` ``revision``. Anything else malformed raises
``TrajectoryFormatError`` naming the file and the field.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from harness_ros.errors import TrajectoryFormatError
from harness_ros.trajectory.bounds import MAX_REVISIONS, MAX_STEPS, cap, compact_value

NOTE_OUTCOME_CHARS = 240
"""Bound on one timeline line's outcome in the Task Notes (the full result is in the trajectory)."""
_NOTE_NOISE = frozenset({"run_id", "refusal", "verdict", "blocked_by", "success"})
"""Bookkeeping the timeline leaves out: the verdict has its own clause, the rest is for
the harness and memory (a small model copied run ids and raw envelopes back as text)."""


def _clip(text: str) -> str:
    # One line: a result's text comes from a server (or a hostile one); a newline in it must
    # not start a line that reads as another timeline step.
    flat = " ".join(text.split())
    return flat if len(flat) <= NOTE_OUTCOME_CHARS else flat[: NOTE_OUTCOME_CHARS - 3] + "..."


def _note_value(value: Any) -> Any:
    """``value`` without bookkeeping keys and empty fields, floats to three decimals."""
    if isinstance(value, float):
        return round(value, 3)
    if isinstance(value, Mapping):
        kept = {str(k): _note_value(v) for k, v in value.items() if k not in _NOTE_NOISE}
        return {k: v for k, v in kept.items() if v not in (None, "", [], {})}
    if isinstance(value, list | tuple):
        return [_note_value(item) for item in value]
    return value


def _note_text(value: Any, separator: str = "; ") -> str:
    if isinstance(value, Mapping):
        inner = ", " if separator == "; " else separator
        text = separator.join(f"{key}: {_note_text(item, inner)}" for key, item in value.items())
        return text if separator == "; " else f"({text})"
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def note_outcome(result: ToolResult) -> str:
    """A result as one compact clause of the Task Notes timeline: ``succeeded: ...`` with
    the result's own message (or its values), ``failed: <reason>``. Run ids, refusal kinds,
    nested success flags and empty values are left out; the full envelope stays in the
    step, the events and trajectory.json."""
    if not result.is_object:
        return _clip(f"returned {json.dumps(result.raw, ensure_ascii=False)}")
    if result.success is False:
        return _clip(f"failed: {result.reason or 'no reason given'}")
    values = _note_value(dict(result.data))
    nested = values.get("result") if isinstance(values.get("result"), Mapping) else None
    message = values.get("message") or (nested or {}).get("message")
    status = "succeeded" if result.success else "returned"
    if isinstance(message, str) and message.strip():
        return _clip(f"{status}: {message.strip()}")
    return _clip(f"{status}: {_note_text(values)}" if values else status)


__all__ = [
    "ASK_OPERATOR",
    "PHASES",
    "StepVerdict",
    "ToolResult",
    "Trajectory",
    "TrajectoryFormatError",
    "TrajectoryStep",
    "as_step",
    "load_trajectory",
    "note_outcome",
    "steps_from",
    "trajectory_status",
]

ASK_OPERATOR = "ask_operator"
"""The harness's own question tool: its successful result carries the operator's answer."""
PHASES = ("started", "acting", "evaluating", "finishing")
"""``started`` at the reset, ``acting`` once the model calls its first tool, ``evaluating``
while the harness checks the goal, ``finishing`` when the task has ended."""


def trajectory_status(done_status: str | None) -> str:
    """The trajectory's status for a ``done`` status: completed, aborted, or running."""
    if done_status is None:
        return "running"
    return "completed" if done_status == "completed" else "aborted"


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__


@dataclass(frozen=True)
class ToolResult:
    """The result envelope of one call (``harness_ros.tools.contracts``): ``success`` and
    ``reason`` typed, every other field in ``data``."""

    success: bool | None
    """The envelope's ``success``; None when the recorded result carries no boolean one."""
    reason: str | None = None
    """Why a call failed (``success: false``)."""
    data: Mapping[str, Any] = field(default_factory=dict)
    """The other fields: the values of a success, ``run_id``, ``verdict``, ``blocked_by``,
    ``refusal``, ``answer``..."""
    raw: Any = None
    """The recorded value when it was not a JSON object at all (kept as it was)."""
    is_object: bool = True
    """False when the recorded result was no JSON object (``raw`` holds it)."""

    @classmethod
    def from_json(cls, value: Any) -> ToolResult:
        if not isinstance(value, Mapping):
            return cls(None, raw=value, is_object=False)
        ok, reason = value.get("success"), value.get("reason")
        # A non-boolean success or a non-text reason is no envelope field: it stays in data,
        # so the result is written back exactly as recorded.
        typed = {
            "success": isinstance(ok, bool),
            "reason": isinstance(reason, str),
        }
        data = {key: item for key, item in value.items() if not typed.get(key, False)}
        return cls(
            ok if isinstance(ok, bool) else None,
            reason if isinstance(reason, str) else None,
            data,
        )

    def to_json(self) -> Any:
        if not self.is_object:
            return self.raw
        out: dict[str, Any] = {}
        if self.success is not None:
            out["success"] = self.success
        if self.reason is not None:
            out["reason"] = self.reason
        out.update(self.data)
        return out

    @property
    def succeeded(self) -> bool:
        return self.success is True

    @property
    def failed(self) -> bool:
        """The envelope says ``success: false`` (which alone is no evidence the call ran)."""
        return self.success is False

    @property
    def refused_by_tool(self) -> bool:
        """A hook (``blocked_by``) or the tool itself (``refusal``) refused the call before it ran."""
        return bool(self.data.get("blocked_by") or self.data.get("refusal"))

    @property
    def embedded_verdict(self) -> Mapping[str, Any] | None:
        """The evaluator verdict the harness put into the result the model saw."""
        verdict = self.data.get("verdict")
        return verdict if isinstance(verdict, Mapping) else None


@dataclass(frozen=True)
class StepVerdict:
    """An evaluator's verdict on one call (``evaluation.Verdict``), bounded."""

    status: str | None
    """``success`` / ``failure`` / ...: lower case."""
    run_id: Any = None
    failure_reason: Any = None
    evidence: Any = ""

    @classmethod
    def of(cls, verdict: Any) -> StepVerdict | None:
        """A verdict mapping, or anything with ``to_dict()``, bounded; None stays None."""
        if verdict is None:
            return None
        if isinstance(verdict, StepVerdict):
            return verdict
        raw = verdict.to_dict() if hasattr(verdict, "to_dict") else verdict
        if not isinstance(raw, Mapping):
            msg = f"verdict must be a mapping or have to_dict(), got {type(verdict).__name__}"
            raise TypeError(msg)
        status = raw.get("status")
        status = getattr(status, "value", status)
        return cls(
            status=str(status).strip().lower() if status is not None else None,
            run_id=compact_value(raw.get("run_id")),
            failure_reason=compact_value(raw.get("failure_reason")),
            evidence=compact_value(raw.get("evidence") or ""),
        )

    @property
    def confirmed(self) -> bool:
        return self.status == "success"

    @property
    def refuted(self) -> bool:
        return self.status == "failure"

    def to_json(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "run_id": self.run_id,
            "failure_reason": self.failure_reason,
            "evidence": self.evidence,
        }


@dataclass(frozen=True)
class TrajectoryStep:
    """One call of a known tool: what was asked, what came back, what the evaluator said."""

    index: int
    tool: str
    arguments: Mapping[str, Any] = field(default_factory=dict)
    """The arguments that ran: after any safety-hook rewrite."""
    result: ToolResult = field(default_factory=lambda: ToolResult(None))
    verdict: StepVerdict | None = None
    refusal: str | None = None
    """The kind of refusal (``harness.calls.REFUSAL_KINDS``) of a call refused before it ran."""
    prerequisites: tuple[Mapping[str, Any], ...] = ()
    """The service calls the harness made before this call (a mode switch), in order."""

    @property
    def refused(self) -> bool:
        """Refused before it ran (by the harness, a hook or the tool): never failure evidence."""
        return bool(self.refusal) or self.result.refused_by_tool

    @property
    def confirmed(self) -> bool:
        """An evaluator confirmed the call succeeded (the tool's own report never counts)."""
        return self.verdict is not None and self.verdict.confirmed

    @property
    def failed(self) -> bool:
        """Evidence the call failed on the robot: a failure verdict, or an executed call
        (not refused) whose result says ``success: false``."""
        if self.verdict is not None and self.verdict.refuted:
            return True
        return not self.refused and self.result.failed

    @property
    def operator_answer(self) -> str | None:
        """The operator's own words answering an ``ask_operator`` question, else None.

        Only the harness's own tool produces this result (tool names are unique, so a robot
        tool cannot take its name), and only a successful call answered by the operator."""
        if self.tool != ASK_OPERATOR or not self.result.succeeded:
            return None
        if self.result.data.get("answered_by") != "operator":
            return None
        answer = self.result.data.get("answer")
        return answer if isinstance(answer, str) and answer.strip() else None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "index": self.index,
            "tool": self.tool,
            "arguments": dict(self.arguments),
            "result": self.result.to_json(),
            "verdict": self.verdict.to_json() if self.verdict is not None else None,
        }
        if self.refusal:
            out["refusal"] = self.refusal
        if self.prerequisites:
            out["prerequisites"] = [dict(item) for item in self.prerequisites]
        return out

    @classmethod
    def from_json(cls, raw: Mapping[str, Any], *, position: int, where: str) -> TrajectoryStep:
        tool = raw.get("tool")
        if not isinstance(tool, str):
            raise TrajectoryFormatError(f"{where}.tool: expected a tool name (string), got {_kind(tool)}")
        index = raw.get("index", position + 1)
        if not isinstance(index, int) or isinstance(index, bool):
            raise TrajectoryFormatError(f"{where}.index: expected an integer, got {_kind(index)}")
        arguments = raw.get("arguments")
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, Mapping):
            raise TrajectoryFormatError(f"{where}.arguments: expected an object, got {_kind(arguments)}")
        verdict = raw.get("verdict")
        if verdict is not None and not isinstance(verdict, Mapping):
            raise TrajectoryFormatError(f"{where}.verdict: expected an object or null, got {_kind(verdict)}")
        refusal = raw.get("refusal")
        if refusal is not None and not isinstance(refusal, str):
            raise TrajectoryFormatError(f"{where}.refusal: expected a string, got {_kind(refusal)}")
        prerequisites = raw.get("prerequisites") or []
        if not isinstance(prerequisites, list) or not all(isinstance(p, Mapping) for p in prerequisites):
            raise TrajectoryFormatError(f"{where}.prerequisites: expected a list of objects")
        return cls(
            index=index,
            tool=tool,
            arguments=dict(arguments),
            result=ToolResult.from_json(raw.get("result")),
            verdict=_faithful_verdict(verdict),
            refusal=refusal or None,
            prerequisites=tuple(dict(p) for p in prerequisites),
        )


def _faithful_verdict(raw: Mapping[str, Any] | None) -> StepVerdict | None:
    if raw is None:
        return None
    status = raw.get("status")
    return StepVerdict(
        status=str(status).strip().lower() if status is not None else None,
        run_id=raw.get("run_id"),
        failure_reason=raw.get("failure_reason"),
        evidence=raw.get("evidence") or "",
    )


def _revision_text(item: Any) -> str | None:
    """A revision as written: a string, or an object with ``instruction``/``text`` (or
    a ``data`` object holding one, as a harness event does)."""
    if isinstance(item, str):
        return item
    if isinstance(item, Mapping):
        for key in ("instruction", "text"):
            value = item.get(key)
            if isinstance(value, str):
                return value
        data = item.get("data")
        if isinstance(data, Mapping):
            return _revision_text(data)
    return None


def _is_revision_event(raw: Mapping[str, Any]) -> bool:
    return "revision" in {raw.get("type"), raw.get("kind"), raw.get("event")}


@dataclass(frozen=True)
class Trajectory:
    """One task's trajectory: its steps (newest ``MAX_STEPS``), revisions and ending."""

    task_id: str
    goal: str
    phase: str = "started"
    status: str = "running"
    """``running``, ``completed`` or ``aborted`` (``trajectory_status``)."""
    steps: tuple[TrajectoryStep, ...] = ()
    revisions: tuple[str, ...] = ()
    """The operator's instruction revisions, oldest first: the newest is the goal the task
    ended with."""
    outcome: str | None = None
    """``succeeded``/``failed``/``unverified``, set at the task's end."""
    dropped_steps: int = 0
    """Older steps left out to keep the trajectory bounded."""

    @classmethod
    def start(cls, goal: str, *, task_id: str, phase: str = "started") -> Trajectory:
        return cls(task_id=task_id, goal=cap(str(goal)), phase=cap(str(phase)))

    # ------------------------------------------------------------------ building (bounded)
    def with_step(
        self,
        tool: str,
        arguments: Mapping[str, Any] | None,
        result: Any,
        verdict: Any,
        refusal: str | None = None,
        *,
        prerequisites: Sequence[Mapping[str, Any]] = (),
    ) -> Trajectory:
        """This trajectory with one more step, bounded like every other."""
        if arguments is not None and not isinstance(arguments, Mapping):
            # untyped callers (a recording's JSON) can pass anything
            msg = f"arguments of {tool!r} must be an object, got {type(arguments).__name__}"  # type: ignore[unreachable]
            raise TypeError(msg)
        index = self.steps[-1].index + 1 if self.steps else self.dropped_steps + 1
        step = TrajectoryStep(
            index=index,
            tool=cap(str(tool)),
            arguments=compact_value(arguments if arguments is not None else {}),
            result=ToolResult.from_json(compact_value(result)),
            verdict=StepVerdict.of(verdict),
            refusal=cap(str(refusal)) if refusal else None,
            prerequisites=tuple(compact_value(dict(item)) for item in prerequisites),
        )
        steps = (*self.steps, step)
        overflow = max(0, len(steps) - MAX_STEPS)
        return replace(self, steps=steps[overflow:], dropped_steps=self.dropped_steps + overflow)

    def with_built_step(self, step: TrajectoryStep) -> Trajectory:
        """This trajectory with a step another trajectory built (``with_step``: bounded
        already), the object itself, renumbered only when this one counts differently."""
        index = self.steps[-1].index + 1 if self.steps else self.dropped_steps + 1
        built = step if step.index == index else replace(step, index=index)
        steps = (*self.steps, built)
        overflow = max(0, len(steps) - MAX_STEPS)
        return replace(self, steps=steps[overflow:], dropped_steps=self.dropped_steps + overflow)

    def with_revision(self, text: str) -> Trajectory:
        revisions = (*self.revisions, cap(" ".join(str(text).split())))
        return replace(self, revisions=revisions[-MAX_REVISIONS:])

    # ------------------------------------------------------------------ reading
    @property
    def last_step(self) -> TrajectoryStep | None:
        return self.steps[-1] if self.steps else None

    def operator_answers(self) -> list[str]:
        """The operator's answers to ``ask_operator`` questions, oldest first."""
        return [answer for step in self.steps if (answer := step.operator_answer) is not None]

    def operator_texts(self) -> list[str]:
        """What the operator wrote for this task: the goal, every revision, every answer."""
        texts = [self.goal] if self.goal.strip() else []
        return [*texts, *self.revisions, *self.operator_answers()]

    def steps_of(self, tool: str) -> list[TrajectoryStep]:
        return [step for step in self.steps if step.tool == tool]

    # ------------------------------------------------------------------ JSON
    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "task_id": self.task_id,
            "goal": self.goal,
            "phase": self.phase,
            "status": self.status,
            "events": [step.to_json() for step in self.steps],
        }
        if self.revisions:
            out["revisions"] = list(self.revisions)
        if self.outcome is not None:
            out["outcome"] = self.outcome
        if self.dropped_steps:
            out["dropped_events"] = self.dropped_steps
        return out

    def to_text(self) -> str:
        """The JSON text of ``trajectory.json``."""
        return json.dumps(self.to_json(), ensure_ascii=False, indent=2, sort_keys=True, default=str) + "\n"

    @classmethod
    def from_json(cls, raw: Any, *, source: str = "trajectory") -> Trajectory:
        """A trajectory object as written (see the module docstring); ``source`` names it in errors."""
        if isinstance(raw, Trajectory):
            return raw
        if not isinstance(raw, Mapping):
            raise TrajectoryFormatError(f"{source}: expected a trajectory object, got {_kind(raw)}")

        def text(key: str, default: str) -> str:
            value = raw.get(key)
            if value is None:
                return default
            if not isinstance(value, str):
                raise TrajectoryFormatError(f"{source}: {key}: expected a string, got {_kind(value)}")
            return value

        goal = text("goal", "") or text("instruction", "")
        revisions: list[str] = []
        listed = raw.get("revisions")
        if listed is not None and not isinstance(listed, list):
            raise TrajectoryFormatError(f"{source}: revisions: expected a list, got {_kind(listed)}")
        for number, item in enumerate(listed or []):
            revision = _revision_text(item)
            if revision is None:
                msg = (
                    f"{source}: revisions[{number}]: expected a string or an object with "
                    "'instruction' or 'text'"
                )
                raise TrajectoryFormatError(msg)
            revisions.append(revision)
        events = raw.get("events")
        if events is None:
            events = []
        if not isinstance(events, list):
            raise TrajectoryFormatError(f"{source}: events: expected a list, got {_kind(events)}")
        steps: list[TrajectoryStep] = []
        for position, event in enumerate(events):
            where = f"{source}: events[{position}]"
            if not isinstance(event, Mapping):
                raise TrajectoryFormatError(f"{where}: expected an object, got {_kind(event)}")
            if _is_revision_event(event):
                revision = _revision_text(event)
                if revision:
                    revisions.append(revision)
                continue
            steps.append(TrajectoryStep.from_json(event, position=position, where=where))
        dropped = raw.get("dropped_events", 0)
        if not isinstance(dropped, int) or isinstance(dropped, bool) or dropped < 0:
            raise TrajectoryFormatError(f"{source}: dropped_events: expected a count, got {dropped!r}")
        outcome = raw.get("outcome")
        if outcome is not None and not isinstance(outcome, str):
            raise TrajectoryFormatError(f"{source}: outcome: expected a string, got {_kind(outcome)}")
        return cls(
            task_id=text("task_id", ""),
            goal=goal,
            phase=text("phase", "started"),
            status=text("status", "running"),
            steps=tuple(steps),
            revisions=tuple(revisions),
            outcome=outcome,
            dropped_steps=dropped,
        )

    # ------------------------------------------------------------------ Markdown
    def render(self) -> str:
        """The Markdown timeline of TASK_NOTES.md."""
        header = ["# Task Notes", "", f"- Task: {self.task_id}", f"- Goal: {self.goal}"]
        return "\n".join([*header, *self._state_lines(), *self._timeline_lines()]) + "\n"

    def render_for_model(self) -> str:
        """The snapshot the model sees: TASK_NOTES.md without its title, the task id and
        the goal, which the model already has (the instruction is the first message of
        its history and stays there through compaction). Every snapshot is new text in
        the decision it joins: those lines cost a local model about 35 tokens each time."""
        return "\n".join([*self._state_lines(), *self._timeline_lines()]) + "\n"

    def extends(self, shown: Trajectory) -> bool:
        """Whether this is ``shown`` with things added: the same task, its revisions and
        steps still there. Not so once the bounded window dropped a step ``shown`` had."""
        return (
            self.task_id == shown.task_id
            and self.dropped_steps == shown.dropped_steps
            and self.revisions[: len(shown.revisions)] == shown.revisions
            and len(self.steps) >= len(shown.steps)
            and all(a is b or a == b for a, b in zip(self.steps, shown.steps, strict=False))
        )

    def render_changes_for_model(self, shown: Trajectory) -> str:
        """What the model has not been shown since the snapshot of ``shown`` (which this
        trajectory ``extends``): new revisions, a changed phase or outcome, the new steps;
        empty when nothing changed. The whole timeline again in every snapshot was new
        text of every decision, about 40 tokens a step and growing: a local model read
        that before each reply (BENCHMARKS.md section 8)."""
        lines = [
            f"- Revised goal ({n}): {text}"
            for n, text in enumerate(self.revisions, start=1)
            if n > len(shown.revisions)
        ]
        if self.phase != shown.phase:
            lines.append(f"- Phase: {self.phase}")
        if self.outcome is not None and self.outcome != shown.outcome:
            lines.append(f"- Outcome: {self.outcome}")
        lines += [_step_line(step) for step in self.steps[len(shown.steps) :]]
        return "\n".join(lines) + "\n" if lines else ""

    @property
    def has_news(self) -> bool:
        """Whether the notes say anything the instruction does not: a step or a revision."""
        return bool(self.steps or self.revisions or self.dropped_steps)

    def _state_lines(self) -> list[str]:
        return [
            *(f"- Revised goal ({n}): {text}" for n, text in enumerate(self.revisions, start=1)),
            f"- Phase: {self.phase}",
            *([f"- Outcome: {self.outcome}"] if self.outcome is not None else []),
            "",
            "## Timeline",
        ]

    def _timeline_lines(self) -> list[str]:
        lines: list[str] = []
        if self.dropped_steps:
            lines.append(f"({self.dropped_steps} earlier events omitted)")
        if not self.steps:
            lines.append("(no tool calls yet)")
        lines += [_step_line(step) for step in self.steps]
        return lines


_STEP_LINES: dict[int, tuple[TrajectoryStep, str]] = {}
"""Rendered timeline lines by step identity (the step is kept, so its id is not reused):
the Task Notes are rendered whole after every call, and a step never changes once made."""
_STEP_LINES_KEPT = 4 * MAX_STEPS


def _step_line(step: TrajectoryStep) -> str:
    """One timeline line: the call, its compact outcome and the evaluator's verdict."""
    cached = _STEP_LINES.get(id(step))
    if cached is not None and cached[0] is step:
        return cached[1]
    line = _render_step_line(step)
    if len(_STEP_LINES) >= _STEP_LINES_KEPT:
        _STEP_LINES.clear()
    _STEP_LINES[id(step)] = (step, line)
    return line


def _render_step_line(step: TrajectoryStep) -> str:
    arguments = json.dumps(dict(step.arguments), ensure_ascii=False, sort_keys=True)
    refused = f"REFUSED before it ran ({step.refusal}): " if step.refusal else ""
    line = f"{step.index}. {step.tool} {arguments} -> {refused}{note_outcome(step.result)}"
    if step.verdict is not None:
        line += f"; verdict: {step.verdict.status}"
        if step.verdict.failure_reason:
            line += f" ({step.verdict.failure_reason})"
    return line


def load_trajectory(path: Path) -> Trajectory:
    """Read a ``trajectory.json``; a missing, unparseable or malformed file raises
    ``TrajectoryFormatError`` naming the file (and the field)."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise TrajectoryFormatError(f"{path}: cannot read: {err.strerror or err}") from err
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as err:
        raise TrajectoryFormatError(f"{path}: not JSON: {err}") from err
    return Trajectory.from_json(raw, source=str(path))


def as_step(event: TrajectoryStep | Mapping[str, Any], position: int = 0) -> TrajectoryStep | None:
    """A typed step from a step or its JSON object; None for a revision event (no step)."""
    if isinstance(event, TrajectoryStep):
        return event
    if not isinstance(event, Mapping):
        raise TrajectoryFormatError(f"trajectory: events[{position}]: expected an object, got {_kind(event)}")
    if _is_revision_event(event):
        return None
    return TrajectoryStep.from_json(event, position=position, where=f"trajectory: events[{position}]")


def steps_from(
    events: Sequence[TrajectoryStep | Mapping[str, Any]], *, source: str = "trajectory"
) -> list[TrajectoryStep]:
    """Typed steps from steps or their JSON objects (a revision event is no step)."""
    if all(isinstance(event, TrajectoryStep) for event in events):
        return list(events)  # type: ignore[arg-type]
    raw = [event.to_json() if isinstance(event, TrajectoryStep) else event for event in events]
    return list(Trajectory.from_json({"events": raw}, source=source).steps)
