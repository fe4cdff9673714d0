"""Each guidance part through the point it runs at (``TaskGuidance``), with its eval story;
the declared order decides between parts, and the model's profile decides whether the
small-model parts run at all (``model.profile``)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from support.ledgers import drive_first

from harness_ros.harness.guidance import (
    GUIDANCE,
    AheadFocus,
    FailureFocus,
    GuidancePoint,
    HeldByExperience,
    HeldFinish,
    HeldFocus,
    HeldRepeat,
    Hold,
    LastFailureNote,
    RefusedFocus,
    TaskGuidance,
    TaskView,
)
from harness_ros.memory.contracts import LedgerLesson
from harness_ros.memory.lessons import RecoveryLesson
from harness_ros.model.contracts import ModelProfile, ToolCall
from harness_ros.tools import ToolRegistry, failure, tool
from harness_ros.trajectory import TrajectoryStep
from harness_ros.trajectory.contracts import ToolResult

SMALL = ModelProfile.small("model.profile: small")
HOSTED = ModelProfile.hosted("model.profile: hosted")
STEP_FIRST = drive_first("grasp", "x")
"""A recovery lesson whose step to take first is a drive to the grasp's object."""
OUT_OF_REACH = "object out of reach: 0.96 m > 0.75 m"
OK = {"success": True, "message": "done"}


@tool(description="Drive to a target.", physical=True)
def drive(target: str) -> dict[str, Any]:
    return dict(OK)


@tool(description="Grasp an object.", physical=True)
def grasp(object_id: str) -> dict[str, Any]:
    return dict(OK)


@tool(description="Put the held object on a surface.", physical=True)
def put(surface_id: str) -> dict[str, Any]:
    return dict(OK)


@tool(description="Say what the camera sees.")
def look() -> dict[str, Any]:
    return dict(OK)


REGISTRY = ToolRegistry([drive, grasp, put, look])


def step(
    index: int, name: str, result: dict[str, Any], refusal: str | None = None, **arguments: Any
) -> TrajectoryStep:
    return TrajectoryStep(index, name, arguments, ToolResult.from_json(result), refusal=refusal)


def call(name: str, **arguments: Any) -> ToolCall:
    return ToolCall(f"c_{name}", name, json.dumps(arguments), arguments)


def view(
    *steps: TrajectoryStep,
    profile: ModelProfile = SMALL,
    lessons: dict[str, list[RecoveryLesson | str]] | None = None,
) -> TaskView:
    """A lesson as the ledger reader gives it: a recovery lesson with its words and its
    data, a string as words alone (a model's or an operator's)."""
    ledgers = {
        tool: [
            LedgerLesson(found.text, found) if isinstance(found, RecoveryLesson) else LedgerLesson(found)
            for found in found_lessons
        ]
        for tool, found_lessons in (lessons or {}).items()
    }
    return TaskView(
        profile=profile,
        steps=steps,
        registry=REGISTRY,
        check=lambda c: REGISTRY.validate(c.name, c.arguments or {}),
        ledger=(lambda name: list(ledgers.get(name, []))) if lessons is not None else None,
        skills=None,
    )


def only(part: Any) -> TaskGuidance:
    return TaskGuidance((part,))


# ---------------------------------------------------------------------- the order
def test_the_declared_order_is_one_tuple_with_each_part_at_its_point() -> None:
    assert [(p.name, p.point.value) for p in GUIDANCE] == [
        ("held_by_experience", "before_call"),
        ("held_repeat", "before_call"),
        ("held_finish", "before_finish"),
        ("held_focus", "before_decision"),
        ("refused_focus", "before_decision"),
        ("failure_focus", "before_decision"),
        ("ahead_focus", "before_decision"),
        ("last_failure_note", "on_note"),
    ]
    assert [p.name for p in GUIDANCE if not p.small_models_only] == ["last_failure_note"]


def test_the_first_part_that_answers_at_a_point_decides() -> None:
    # A refused put (extra argument) and, since, a failed grasp: both notes could speak; the
    # refused call's note comes first in the order, and it yields to the failure since.
    refused = step(0, "put", failure("unexpected argument held_object_id"), "invalid_arguments",
                   surface_id="table", held_object_id="red_cup")  # fmt: skip
    only_refused = TaskGuidance().before_decision(view(refused))
    assert only_refused is not None and only_refused.part == "refused_focus"
    failed = step(1, "grasp", failure(OUT_OF_REACH), object_id="red_cup")
    focus = TaskGuidance().before_decision(view(refused, failed))
    assert focus is not None and focus.part == "failure_focus"


def test_a_hosted_profile_gets_only_the_parts_for_every_model() -> None:
    failed = step(0, "grasp", failure(OUT_OF_REACH), object_id="red_cup")
    guidance = TaskGuidance()
    assert guidance.before_decision(view(failed, profile=HOSTED)) is None
    assert (
        guidance.before_call(
            view(profile=HOSTED, lessons={"grasp": [STEP_FIRST]}), call("grasp", object_id="x")
        )
        is None
    )
    # The note on the last failure is for every model.
    assert guidance.on_note(view(failed, profile=HOSTED), "Call a tool.") == (
        f"Call a tool. Your last call, grasp, failed: {OUT_OF_REACH}. Decide what to do about it."
    )


def test_a_part_that_answers_with_the_wrong_kind_is_an_error() -> None:
    class Wrong:
        name = "wrong"
        point = GuidancePoint.BEFORE_DECISION
        small_models_only = False

        def run(self, view: TaskView) -> Hold:
            return Hold(self.name, "no", "grasp", {})

    with pytest.raises(TypeError, match="guidance part 'wrong' returned Hold at before_decision"):
        TaskGuidance((Wrong(),)).before_decision(view())


# ---------------------------------------------------------------------- before_call
def test_held_by_experience_holds_a_tools_first_call_once_for_its_ledgers_step() -> None:
    # Run H: the 1.5B picked from the surface, out of reach, with the step in its prompt.
    guidance = only(HeldByExperience())
    lessons = {"grasp": [STEP_FIRST]}
    cup = call("grasp", object_id="red_cup")
    hold = guidance.before_call(view(lessons=lessons), cup)
    assert hold is not None and hold.refusal == "held_by_experience"
    assert hold.answer == (
        'not run (the robot did nothing): your experience with grasp says to call drive {"target": '
        '"red_cup"} first, then grasp {"object_id": "red_cup"} again; made again as it is, the call runs'
    )
    assert guidance.before_call(view(lessons=lessons), cup) is None  # made again: it runs
    taken = step(0, "drive", dict(OK), target="mug")
    assert (
        only(HeldByExperience()).before_call(view(taken, lessons=lessons), call("grasp", object_id="mug"))
        is None
    )


def test_held_repeat_holds_the_last_call_made_again_while_a_held_call_waits() -> None:
    # Eval run M, episode 1: held, the 1.5B drove again where it already was.
    guidance = TaskGuidance((HeldByExperience(), HeldRepeat()))
    lessons = {"grasp": [STEP_FIRST]}
    there = step(0, "drive", dict(OK), target="kitchen_counter")
    assert guidance.before_call(view(there, lessons=lessons), call("grasp", object_id="red_cup")) is not None
    held = step(1, "grasp", failure("held"), "held_by_experience", object_id="red_cup")
    again = call("drive", target="kitchen_counter")
    repeat = guidance.before_call(view(there, held, lessons=lessons), again)
    assert repeat is not None and repeat.part == "held_repeat"
    assert repeat.answer.startswith(
        'not run (the robot did nothing): drive {"target": "kitchen_counter"} is the call that ran last, '
        'and it succeeded; your experience with grasp says to call drive {"target": "red_cup"} first'
    )
    assert guidance.before_call(view(there, held, lessons=lessons), again) is None  # once


# ---------------------------------------------------------------------- before_finish
def test_held_finish_holds_giving_up_right_after_a_call_that_did_nothing_once() -> None:
    # Eval run M, episode 0: refused for the pick's held_object_id, the 1.5B gave up.
    guidance = only(HeldFinish())
    refused = step(0, "put", failure("put takes no held_object_id"), "invalid_arguments",
                   surface_id="table", held_object_id="red_cup")  # fmt: skip
    give_up = call("finish_task", outcome="failed", summary="too far")
    hold = guidance.before_finish(view(refused), give_up)
    assert hold is not None and hold.refusal == "held_finish"
    assert hold.answer == (
        "not ended: your last call, put, was refused for its arguments before it ran, so the robot did "
        "nothing and nothing failed (put takes no held_object_id). Make the call with valid arguments; "
        "call finish_task again to end the task anyway"
    )
    assert guidance.before_finish(view(refused), give_up) is None  # held once a task
    # Eval run N: giving up right after a drive that succeeded.
    drove = step(0, "drive", dict(OK), target="kitchen_table")
    held = only(HeldFinish()).before_finish(view(drove), give_up)
    assert held is not None and "so nothing failed just now" in held.answer
    done = call("finish_task", outcome="succeeded", summary="done")
    assert only(HeldFinish()).before_finish(view(drove), done) is None


# ---------------------------------------------------------------------- before_decision
def test_held_focus_says_the_step_then_the_call_again_until_the_held_tool_runs() -> None:
    # Run J: with only the held answer, the next call went to the destination in 4 of 5 tasks.
    guidance = TaskGuidance((HeldByExperience(), HeldFocus()))
    lessons = {"grasp": [STEP_FIRST]}
    assert guidance.before_call(view(lessons=lessons), call("grasp", object_id="red_cup")) is not None
    held = step(0, "grasp", failure("held"), "held_by_experience", object_id="red_cup")
    focus = guidance.before_decision(view(held, lessons=lessons))
    assert focus is not None and focus.content == (
        'Your last grasp call, grasp {"object_id": "red_cup"}, did not run (the robot did nothing).\n'
        'Your experience with grasp says to call drive {"target": "red_cup"} first, '
        'then grasp {"object_id": "red_cup"}.'
    )
    drove = step(1, "drive", dict(OK), target="red_cup")
    taken = guidance.before_decision(view(held, drove, lessons=lessons))
    assert taken is not None and taken.content == (
        'The step your experience gives is taken: now call grasp {"object_id": "red_cup"}.'
    )
    grasped = step(2, "grasp", dict(OK), object_id="red_cup")
    assert guidance.before_decision(view(held, drove, grasped, lessons=lessons)) is None


def test_refused_focus_gives_the_refused_call_without_its_extra_arguments() -> None:
    # Eval run M, episode 0 / run N: the 1.5B copies a call written as JSON at the end.
    refused = step(0, "put", failure("put takes no held_object_id"), "invalid_arguments",
                   surface_id="table", held_object_id="red_cup")  # fmt: skip
    focus = only(RefusedFocus()).before_decision(view(refused))
    assert focus is not None and focus.content == (
        "Your last put call did not run (the robot did nothing): put takes no held_object_id.\n"
        "The call without it, not run yet:\n"
        '{"name": "put", "arguments": {"surface_id": "table"}}'
    )
    put_ran = step(1, "put", dict(OK), surface_id="table")
    assert only(RefusedFocus()).before_decision(view(refused, put_ran)) is None


def test_failure_focus_names_the_open_failure_and_what_experience_says_about_it() -> None:
    # The 1.5B drove back to the same surface after a failed pick; with the line on that
    # reason last, to the object. Eval runs Q and R: a step of the fix keeps the note.
    failed = step(0, "grasp", failure(OUT_OF_REACH), object_id="red_cup")
    lessons = {
        "grasp": ["object out of reach from the surface standoff: driving to the object first worked."]
    }
    focus = only(FailureFocus()).before_decision(view(failed, lessons=lessons))
    assert focus is not None and focus.content == (
        f'Your last grasp call, grasp {{"object_id": "red_cup"}}, failed: {OUT_OF_REACH}.\n'
        "Your experience with grasp says about it:\n"
        "- object out of reach from the surface standoff: driving to the object first worked."
    )
    drove = step(1, "drive", dict(OK), target="red_cup")
    since = only(FailureFocus()).before_decision(view(failed, drove, lessons=lessons))
    assert since is not None and 'Since then: drive {"target": "red_cup"} succeeded.' in since.content
    again = step(2, "grasp", dict(OK), object_id="red_cup")
    assert only(FailureFocus()).before_decision(view(failed, drove, again, lessons=lessons)) is None


def test_ahead_focus_gives_a_tools_step_before_its_first_call_until_taken() -> None:
    # Run G: in the tool's description the step changed no first call of the 1.5B.
    lessons = {"grasp": [STEP_FIRST]}
    focus = only(AheadFocus()).before_decision(view(lessons=lessons))
    assert focus is not None and focus.content == (
        "From your experience in earlier tasks:\n"
        "Before a grasp, first drive with target = the object_id you will give grasp."
    )
    drove = step(0, "drive", dict(OK), target="red_cup")
    assert only(AheadFocus()).before_decision(view(drove, lessons=lessons)) is None
    assert only(AheadFocus()).before_decision(view()) is None  # no memory


# ---------------------------------------------------------------------- on_note
def test_last_failure_note_is_not_hidden_by_calls_that_only_read() -> None:
    failed = step(0, "grasp", failure(OUT_OF_REACH), object_id="red_cup")
    read = step(1, "look", dict(OK))
    note = only(LastFailureNote()).on_note(view(failed, read), "Call one tool.")
    assert (
        note == f"Call one tool. Your last call, grasp, failed: {OUT_OF_REACH}. Decide what to do about it."
    )
    worked = step(2, "grasp", dict(OK), object_id="red_cup")
    assert only(LastFailureNote()).on_note(view(failed, read, worked), "Call one tool.") == "Call one tool."
