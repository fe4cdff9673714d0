"""The scripted demo policy's decisions: a small deterministic fetch policy (pure Python).

It reads only what a model would get: the instruction, the earlier tool calls and
their results, and the tool definitions (whose descriptions carry the
``Experience from earlier tasks:`` summaries). It never sees the simulator's
ground truth. Order of work for "fetch OBJECT from SOURCE and put it on TARGET":

1. navigate_to SOURCE, or straight to OBJECT when pick_object's experience says to
   approach the object itself first (the visible effect of learning);
2. pick_object OBJECT; on "out of reach" navigate_to OBJECT and pick again; on a slip
   (or a pick the evaluator did not confirm) pick once more;
3. navigate_to TARGET, place_object TARGET;
4. ``finish_task`` with the final report as its summary, stating only what results and
   verdicts showed; outcome ``succeeded`` only after a place the tool reported done
   (the harness then checks the goal itself), else ``failed``.

When the instruction names no object but a kind that fits several ("a cup": the red
cup and the blue mug), it asks the operator first (``ask_operator``, when the tool is
offered) and fetches what the answer names; no answer means it does nothing.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from harness_ros.context.history import REVISION_HEADER, TASK_HEADER
from harness_ros.operator.contracts import ASK_OPERATOR
from harness_ros.tools.finish_task import FINISH_TASK
from harness_ros.tools.registry import EXPERIENCE_HEADING
from harness_ros_sim.demo.scenarios import (
    FetchGoal,
    Vocabulary,
    apartment_vocabulary,
    matching_objects,
    parse_fetch_goal,
)
from harness_ros_sim.names import POLICY_LABEL

__all__ = [
    "FINISH",
    "NAVIGATE",
    "PICK",
    "PLACE",
    "POLICY_LABEL",
    "Decision",
    "Step",
    "decide",
    "experience_summary",
    "instruction_of",
    "steps_of",
    "suggests_object_approach",
]

NAVIGATE = "navigate_to"
PICK = "pick_object"
PLACE = "place_object"
FINISH = FINISH_TASK

MAX_STEPS = 14
"""Tool calls after which the policy stops and reports (a bound, like max_turns)."""
_RETRIES_PER_POSE = 2
"""Extra pick attempts from one parking pose after a slip or an unconfirmed grasp."""

_APPROACH_OBJECT = re.compile(
    r"object itself|approach(?:es|ing)? the object|directly to the object|"
    r"navigate_to (?:with )?the object|navigate(?:_to)? to the object",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Step:
    """One executed tool call and the result envelope the harness returned for it."""

    tool: str
    arguments: dict[str, Any]
    result: dict[str, Any]

    @property
    def ok(self) -> bool:
        return self.result.get("success") is True

    @property
    def reason(self) -> str:
        return str(self.result.get("reason") or "")

    @property
    def verdict(self) -> str | None:
        verdict = self.result.get("verdict")
        return str(verdict.get("status")) if isinstance(verdict, dict) else None

    @property
    def target(self) -> str:
        return str(self.arguments.get("target") or "")


@dataclass(frozen=True)
class Decision:
    """A tool call; ``text`` says why. The last one is ``finish_task`` with the report as its
    summary (``report`` and ``outcome`` read it back); ``tool`` None is a plain reply."""

    text: str
    tool: str | None = None
    arguments: dict[str, Any] = field(default_factory=dict)

    @property
    def final(self) -> bool:
        return self.tool in (None, FINISH)

    @property
    def outcome(self) -> str | None:
        """The claim of a ``finish_task`` decision."""
        return str(self.arguments.get("outcome")) if self.tool == FINISH else None

    @property
    def report(self) -> str:
        """The final report: the summary of ``finish_task``, or the text of a plain reply."""
        return str(self.arguments.get("summary") or self.text) if self.tool == FINISH else self.text


# ---------------------------------------------------------------------- reading the request
def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


_TAG_LINE = re.compile(r"^<(/?)([A-Za-z_][\w.-]*)[^<>]*>$")


def _instruction_block(text: str, header: str) -> str | None:
    """The text under the last ``header`` line of a message, up to the next block, or None.

    The harness puts other blocks beside the instruction in the same message (the session's
    earlier tasks, before it or after it, as a ``# ...`` section or a ``<tag>`` block); their
    text is data about other tasks, never this task's instruction, so it is skipped."""
    lines = text.split("\n")
    depth = 0
    start: int | None = None
    for index, line in enumerate(lines):
        tag = _TAG_LINE.match(line.strip())
        if tag is not None:
            depth = max(0, depth + (-1 if tag.group(1) else 1))
        elif depth == 0 and line.strip() == header:
            start = index + 1
    if start is None:
        return None
    body: list[str] = []
    for line in lines[start:]:
        stripped = line.strip()
        if stripped.startswith("# ") or _TAG_LINE.match(stripped) or stripped.startswith("(It refines"):
            break
        body.append(line)
    return "\n".join(body).strip()


def instruction_of(messages: Sequence[dict[str, Any]]) -> str:
    """The task instruction; a later operator revision replaces it."""
    instruction = ""
    for message in messages:
        if message.get("role") != "user":
            continue
        text = _text(message.get("content"))
        for header in (TASK_HEADER, REVISION_HEADER):
            block = _instruction_block(text, header)
            if block:
                instruction = block
    return instruction


def _parse_json(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except (json.JSONDecodeError, TypeError):
        return {"success": False, "reason": f"unreadable tool result: {text[:100]!r}"}
    return value if isinstance(value, dict) else {"success": False, "reason": "tool result is not an object"}


def steps_of(messages: Sequence[dict[str, Any]]) -> list[Step]:
    """Executed tool calls in order, each paired with its tool message by call id."""
    calls: dict[str, tuple[str, dict[str, Any]]] = {}
    steps: list[Step] = []
    for message in messages:
        if message.get("role") == "assistant":
            for call in message.get("tool_calls") or []:
                function = call.get("function") or {}
                raw = function.get("arguments")
                arguments = raw if isinstance(raw, dict) else _parse_json(raw or "{}")
                calls[str(call.get("id"))] = (str(function.get("name", "")), arguments)
        elif message.get("role") == "tool":
            call_id = str(message.get("tool_call_id"))
            if call_id in calls:
                name, arguments = calls.pop(call_id)
                steps.append(Step(name, arguments, _parse_json(_text(message.get("content")))))
    return steps


def experience_summary(tools: Sequence[dict[str, Any]] | None, tool: str) -> str:
    """The experience summary appended to ``tool``'s description, or ''."""
    for definition in tools or ():
        function = definition.get("function") or {}
        if function.get("name") == tool:
            description = str(function.get("description") or "")
            _, found, summary = description.partition(EXPERIENCE_HEADING)
            return " ".join(summary.split()) if found else ""
    return ""


def suggests_object_approach(summary: str) -> bool:
    """Whether an experience summary says to approach the object itself before picking."""
    return bool(_APPROACH_OBJECT.search(summary))


# ---------------------------------------------------------------------- the policy
def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _call(tool: str, arguments: dict[str, Any], why: str) -> Decision:
    return Decision(f"[{POLICY_LABEL}] {why}", tool, arguments)


def _last(steps: Sequence[Step], tool: str) -> Step | None:
    return next((s for s in reversed(steps) if s.tool == tool), None)


def _holding(steps: Sequence[Step], object_id: str) -> bool:
    """Picked (and not put down since), according to the results the harness returned."""
    holding = False
    for step in steps:
        if step.tool == PICK and step.ok and step.arguments.get("object_id") == object_id:
            holding = True
        elif step.tool == PLACE and step.ok:
            holding = False
    return holding


def _picks_since_last_move(steps: Sequence[Step]) -> int:
    count = 0
    for step in reversed(steps):
        if step.tool == NAVIGATE:
            break
        count += step.tool == PICK
    return count


def _describe(step: Step) -> str:
    args = ", ".join(f"{v}" for v in step.arguments.values() if v not in (None, "", 0, 0.0))
    return f"{step.tool}({args})"


def _outcome(step: Step) -> str:
    if step.ok:
        return "evaluator confirmed" if step.verdict == "success" else "tool reported success, not evaluated"
    return f"failed: {step.reason}"


def _report(steps: Sequence[Step], headline: str, *, succeeded: bool = False) -> Decision:
    """finish_task with the report; ``succeeded`` only where the results show the goal done."""
    lines = [f"Final report ({POLICY_LABEL}): {headline}"]
    if steps:
        lines.append("Steps:")
        lines.extend(f"{n}. {_describe(s)}: {_outcome(s)}" for n, s in enumerate(steps, start=1))
    recovered = [s for i, s in enumerate(steps) if not s.ok and any(t.ok for t in steps[i + 1 :])]
    if recovered:
        lines.append(f"Recovered from {len(recovered)} failure(s) and carried on.")
    report = "\n".join(lines)
    outcome = "succeeded" if succeeded else "failed"
    return Decision(report, FINISH, {"outcome": outcome, "summary": report})


def _offers(tools: Sequence[dict[str, Any]] | None, name: str) -> bool:
    return any((definition.get("function") or {}).get("name") == name for definition in tools or ())


def _ask_which(
    instruction: str,
    steps: Sequence[Step],
    tools: Sequence[dict[str, Any]] | None,
    vocabulary: Vocabulary | None,
) -> Decision | FetchGoal | None:
    """For an instruction that fits several objects: the question, the goal the answer
    names, a report that nobody answered, or None (not ambiguous, or no way to ask)."""
    vocabulary = vocabulary or apartment_vocabulary()
    candidates = matching_objects(instruction, vocabulary)
    if len(candidates) < 2 or not _offers(tools, ASK_OPERATOR):
        return None
    asked = _last(steps, ASK_OPERATOR)
    if asked is None:
        places = dict(vocabulary.places)
        choices = [
            f"{obj.replace('_', ' ')} from the {places[obj].replace('_', ' ')}" if obj in places else obj
            for obj in candidates
        ]
        question = (
            f"The instruction fits {len(candidates)} objects. Which one do you mean: {' or '.join(choices)}?"
        )
        why = f"'{instruction}' could mean {', '.join(candidates)}: asking instead of guessing."
        return _call(ASK_OPERATOR, {"question": question, "choices": choices}, why)
    if not asked.ok:
        return _report(
            [], f"I asked which object to fetch but got no answer ({asked.reason}), so I did nothing."
        )
    answer = str(asked.result.get("answer") or "")
    chosen = parse_fetch_goal(answer, vocabulary)
    if chosen is None or chosen.object_id not in candidates:
        return _report([], f"The answer {answer!r} names none of {', '.join(candidates)}, so I did nothing.")
    wanted = parse_fetch_goal(f"{chosen.object_id} {instruction}", vocabulary)
    target = wanted.target if wanted is not None else None
    return FetchGoal(chosen.object_id, chosen.source, target or chosen.target)


def decide(
    instruction: str,
    steps: Sequence[Step],
    tools: Sequence[dict[str, Any]] | None,
    vocabulary: Vocabulary | None = None,
) -> Decision:
    """The next decision for a fetch instruction, from the steps taken so far."""
    goal = parse_fetch_goal(instruction, vocabulary)
    if goal is None:
        resolved = _ask_which(instruction, steps, tools, vocabulary)
        if isinstance(resolved, Decision):
            return resolved
        goal = resolved
    # The question is settled: the fetch below works on the robot's own steps.
    steps = [step for step in steps if step.tool != ASK_OPERATOR]
    if goal is None:
        return _report(steps, "I did not find an object I know in the instruction, so I did nothing.")
    obj = goal.object_id
    if len(steps) >= MAX_STEPS:
        return _report(steps, f"I stopped after {len(steps)} tool calls without finishing.")
    lesson = experience_summary(tools, PICK)
    approach_first = suggests_object_approach(lesson)
    if not steps:
        if approach_first:
            return _call(
                NAVIGATE,
                {"target": obj},
                f"Experience from earlier tasks for {PICK} says: <<{_clip(lesson, 240)}>> "
                f"So I approach {obj} itself first.",
            )
        if goal.source is not None:
            return _call(NAVIGATE, {"target": goal.source}, f"{obj} is on {goal.source}: going there first.")
        return _call(NAVIGATE, {"target": obj}, f"Going to {obj}.")

    last = steps[-1]
    if _holding(steps, obj):
        if goal.target is None:
            return _report(steps, f"I am holding {obj}; no destination was given.", succeeded=True)
        if last.tool == PICK:
            return _call(NAVIGATE, {"target": goal.target}, f"Holding {obj}: taking it to {goal.target}.")
        if last.tool == NAVIGATE and last.ok and last.target == goal.target:
            return _call(PLACE, {"surface_id": goal.target}, f"At {goal.target}: placing {obj}.")
        if last.tool == NAVIGATE and not last.ok:
            return _report(steps, f"I hold {obj} but could not reach {goal.target}: {last.reason}")
        return _report(steps, f"I hold {obj} but could not put it on {goal.target}: {last.reason}")

    if last.tool == PLACE and last.ok:
        confirmed = last.verdict == "success"
        where = goal.target or str(last.arguments.get("surface_id"))
        headline = f"{obj} is on {where}" + (
            " (the evaluator confirmed it)." if confirmed else " (reported by the tool; not evaluated)."
        )
        return _report(steps, headline, succeeded=True)
    if last.tool == NAVIGATE:
        if last.ok:
            return _call(PICK, {"object_id": obj}, f"Arrived at {last.target}: picking {obj}.")
        return _report(steps, f"I could not get to {last.target}: {last.reason}")
    if last.tool == PICK and not last.ok:
        reason = last.reason
        nav = _last(steps, NAVIGATE)
        at_object = nav is not None and nav.target == obj
        if ("out of reach" in reason or "not visible" in reason) and not at_object:
            return _call(
                NAVIGATE,
                {"target": obj},
                f"{PICK} failed ({reason}). Approaching {obj} itself so it is within arm reach.",
            )
        retryable = "slip" in reason or "post-condition not met" in reason
        if retryable and _picks_since_last_move(steps) <= _RETRIES_PER_POSE:
            return _call(PICK, {"object_id": obj}, f"{PICK} failed ({reason}). Trying the grasp again.")
        return _report(steps, f"I could not pick {obj}: {reason}")
    return _report(steps, f"I stopped: the last step was {_describe(last)}, {_outcome(last)}.")
