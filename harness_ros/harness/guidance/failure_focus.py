"""``before_decision``: after a failed robot call, its failure and what the skill and the
tool's experience say about that reason."""

from __future__ import annotations

from dataclasses import dataclass

from harness_ros.harness.guidance.common import call_text, failure_clause, open_failure, since_line
from harness_ros.harness.guidance.contracts import Focus, GuidancePoint, TaskView
from harness_ros.skills.guidance import items_about, left_after, named_calls, shortened
from harness_ros.trajectory import TrajectoryStep
from harness_ros.trajectory.reasons import failure_phrases, failure_reason

__all__ = ["FailureFocus"]


@dataclass(frozen=True)
class FailureFocus:
    """After a failed robot call, its failure and what the loaded skill and the tool's
    experience say about that reason, as the last words before a decision (refreshed
    every turn, never stored, so the cached prefix is untouched). It stays until that
    tool runs again on the same ids (the same text arguments: a drive to the doorway after
    a blocked drive to the shelf is a step of the fix, not the drive again), with the robot
    calls made since: a fix takes more than one call.

    After a failed pick the 1.5B, with recover-failed-grasp in its system message, drove
    back to the same surface; with the skill's line on that reason at the end of its
    prompt, to the object. Once there, with the note gone, it asked the operator what next
    and drove off without the cup."""

    name: str = "failure_focus"
    point: GuidancePoint = GuidancePoint.BEFORE_DECISION
    small_models_only: bool = True

    def run(self, view: TaskView) -> Focus | None:
        physical = view.robot_steps()
        at = open_failure(physical)
        if at is None:
            return None
        step, since = physical[at], physical[at + 1 :]
        lines = [f"Your last {step.tool} call, {call_text(step)}, {failure_clause(step)}."]
        reason = failure_reason(step)
        key = (step.tool, step.arguments, reason)
        same = sum(s.failed and (s.tool, s.arguments, failure_reason(s)) == key for s in physical[: at + 1])
        if same > 1:
            # The 1.5B drove to the same surface and made the same failed pick six times. A
            # fact, not advice: a slippery object can take two or three tries unchanged.
            lines.append(f"That same call has now failed {same} times for that reason.")
        if since:
            lines.append(since_line(since))
        session = view.skills
        skill = session.loaded_skill if session is not None else None
        said = items_about(skill.body, reason) if skill is not None else []
        if skill is not None and said:
            # Not named here: a decision started as a call ('{"name": "') right after the
            # skill's name got that name, not a tool (the 1.5B, ten times after a slip).
            lines.append("The loaded skill says about it:")
            lines += [f"- {item}" for item in said]
        tools = [name for name in view.registry.names() if name]
        learnt = _learnt(view, step, reason, tools) if view.ledger is not None else []
        if learnt:
            lines.append(f"Your experience with {step.tool} says about it:")
            lines += [f"- {item}" for item, _ in learnt]
        if not said and not learnt and session is not None:
            # The 1.5B, after a failed pick with no skill loaded and no lesson on it, drove on
            # to the target without the cup; the catalog's description alone did not bring it
            # to load the skill whose items name this failure.
            covering = next(
                (found for found in session.catalog.skills.values() if items_about(found.body, reason)), None
            )
            if covering is not None and (skill is None or covering.name != skill.name):
                lines.append(
                    f"The skill {covering.name} says what to do about it: "
                    f'call load_skill with name "{covering.name}".'
                )
        done = [s.tool for s in since if not s.failed]
        # The calls each item names: a skill's in its words (people wrote them), a lesson's
        # from its data where it has some.
        named = [named_calls(item, tools) for item in said] + [calls for _, calls in learnt]
        left = next((rest for calls in named if (rest := left_after(calls, done))), [])
        if step.tool in left:  # up to the failed tool again: a lesson goes on with "Before a ..."
            left = left[: left.index(step.tool) + 1]
        if left:
            todo = ", then ".join(f"{name} again" if name == step.tool else name for name in left)
            lines.append(f"The {', '.join(dict.fromkeys(done))} step is done; what is left of it: {todo}.")
        else:
            # Last, the tool that starts the fix: what a decision started as a call reads last.
            first = next((calls[0] for calls in named if calls), None)
            if first is not None:
                lines.append(f"Its first call: {first}.")
        return Focus(self.name, "\n".join(lines))


def _learnt(
    view: TaskView, step: TrajectoryStep, reason: str, tools: list[str]
) -> list[tuple[str, list[str]]]:
    """Up to two of the failed tool's ledger lessons on ``reason``, each as the note shows it
    and with the calls it names, in the ledger's order.

    A lesson the harness wrote is chosen by the failure its data holds and shown bound to
    the failed call (``RecoveryLesson.bound_text``: in a note about a failed pick of
    blue_mug, "navigate_to with target = the failed call's object_id" left the 1.5B driving
    to the surface again, six times). Words without data (a model's, an operator's, a
    lesson written before lessons were data) are chosen by ``items_about``, which matches
    the robot's reason against those words, and shown as written."""
    phrases = failure_phrases(reason)
    learnt: list[tuple[str, list[str]]] = []
    for found in view.failure_lessons(step.tool):
        lesson = found.lesson
        if lesson is not None:
            if lesson.failure.casefold() in phrases:
                calls = [name for name in lesson.calls if name in tools]
                learnt.append((shortened(lesson.bound_text(step.arguments)), calls))
        else:
            learnt += [(item, named_calls(item, tools)) for item in items_about(f"- {found.text}", reason)]
        if len(learnt) >= 2:
            break
    return learnt[:2]
