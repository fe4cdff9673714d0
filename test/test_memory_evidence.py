"""Recovery lessons: a failed call, what ran next and the confirmed success of the same tool,
written as that tool's failure lesson when the consolidator proposed none (memory.evidence)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from harness_ros.config import MemoryConfig
from harness_ros.memory import FileMemory
from harness_ros.memory.contracts import MemoryConsolidation, ToolExperienceEntry
from harness_ros.memory.evidence import recovery_lessons, with_recovery_lessons
from harness_ros.memory.lessons import LessonArgument, LessonCall, RecoveryLesson
from harness_ros.trajectory import Trajectory, TrajectoryStep, steps_from

OK = {"status": "success", "failure_reason": None}


def _steps(events: list[Any]) -> list[TrajectoryStep]:
    """The typed steps of a trajectory's JSON events (the evidence rules take nothing else)."""
    return steps_from(events)


def event(
    index: int, tool: str, arguments: dict[str, Any], *, fail: str | None = None, **extra: Any
) -> dict[str, Any]:
    result: dict[str, Any] = {"success": False, "reason": fail} if fail else {"success": True}
    verdict = None if fail else OK
    return {
        "index": index,
        "tool": tool,
        "arguments": arguments,
        "result": result,
        "verdict": verdict,
        **extra,
    }


REACH = [
    event(1, "navigate_to", {"target": "coffee_table", "standoff_m": 0.5}),
    event(
        2,
        "pick_object",
        {"object_id": "red_cup"},
        fail="action server '/sim/pick_object' aborted the goal: object out of reach: 1.01 m > 0.75 m",
    ),
    event(3, "load_skill", {"name": "recover-failed-grasp"}),
    event(4, "navigate_to", {"target": "red_cup"}),
    event(5, "pick_object", {"object_id": "red_cup"}),
    event(6, "navigate_to", {"target": "kitchen_table"}),
]
TOOLS = ["navigate_to", "pick_object", "place_object", "load_skill"]


def test_a_recovery_becomes_a_lesson_in_words_that_carry_to_the_next_task() -> None:
    [lesson] = recovery_lessons(_steps(REACH), TOOLS)
    assert (lesson.tool, lesson.outcome, lesson.confidence) == ("pick_object", "failure", 1.0)
    # The reused id is named by the failed call's argument; the skill load is no part of the fix.
    # And the fix as a step to take first next time (its calls are tied to the pick's own
    # arguments): the recovery alone left the 1.5B failing the same first pick every task.
    assert lesson.text == (
        'After "object out of reach": navigate_to with target = the failed call\'s object_id, '
        "then pick_object again succeeded. Before a pick_object, first navigate_to with "
        "target = its object_id."
    )
    assert "red_cup" not in lesson.text


def test_a_lesson_bound_to_a_failed_call_names_its_values() -> None:
    [entry] = recovery_lessons(_steps(REACH), TOOLS)
    assert entry.lesson is not None
    assert entry.lesson.bound_text({"object_id": "blue_mug"}) == (
        'After "object out of reach": navigate_to with target = "blue_mug", then pick_object again succeeded.'
    )
    # An argument the call did not have stays as written.
    assert "the failed call's object_id" in entry.lesson.bound_text({"surface_id": "shelf"})


def test_the_step_to_take_first_is_worded_for_a_task_that_has_not_called_the_tool() -> None:
    [entry] = recovery_lessons(_steps(REACH), TOOLS)
    assert entry.lesson is not None
    ahead = entry.lesson.step
    assert ahead is not None
    assert ahead.text == (
        "Before a pick_object, first navigate_to with target = the object_id you will give pick_object."
    )
    assert ahead.first_call == "navigate_to"
    # A value of its own is written as JSON, a decimal point too, and the lesson bound to a
    # failed call leaves the step out.
    decimal = RecoveryLesson(
        "x",
        "grasp",
        (
            LessonCall(
                "drive",
                (LessonArgument("target", reuses="object_id"), LessonArgument("standoff_m", value=0.5)),
            ),
        ),
        ahead=True,
    )
    assert decimal.step is not None
    assert decimal.step.text == (
        "Before a grasp, first drive with target = the object_id you will give grasp, standoff_m = 0.5."
    )
    assert decimal.bound_text({}) == (
        'After "x": drive with target = the failed call\'s object_id, standoff_m = 0.5, '
        "then grasp again succeeded."
    )
    # A recovery without a fix tied to the call gives no step.
    assert dataclasses.replace(decimal, ahead=False).step is None


def test_a_fix_not_tied_to_the_failed_call_is_no_step_to_take_first() -> None:
    events = [
        event(1, "pick_object", {"object_id": "red_cup"}, fail="object out of reach: 0.96 m > 0.75 m"),
        event(2, "navigate_to", {"target": "kitchen"}),
        event(3, "pick_object", {"object_id": "red_cup"}),
    ]
    [lesson] = recovery_lessons(_steps(events), TOOLS)
    assert lesson.text == (
        'After "object out of reach": navigate_to with target = "kitchen", then pick_object again succeeded.'
    )


def test_a_slip_then_a_grasp_is_again_unchanged_and_only_proven_recoveries_count() -> None:
    slip = "grasp slipped: red_cup slid out of the gripper and stayed on kitchen_table; try again"
    events = [
        event(1, "pick_object", {"object_id": "red_cup"}, fail=slip),
        event(2, "pick_object", {"object_id": "red_cup"}),
    ]
    [lesson] = recovery_lessons(_steps(events), TOOLS)
    assert lesson.text == 'After "grasp slipped": pick_object again, unchanged, succeeded.'
    # No lesson without the evaluator's confirmation, for a tool not allowed, for a reason
    # that names no kind of failure, or when a call on the way failed too.
    unconfirmed = [events[0], {**events[1], "verdict": None}]
    assert recovery_lessons(_steps(unconfirmed), TOOLS) == []
    assert recovery_lessons(_steps(events), ["navigate_to"]) == []
    assert (
        recovery_lessons(
            _steps([event(1, "pick_object", {}, fail="timed out after 30 s"), event(2, "pick_object", {})]),
            TOOLS,
        )
        == []
    )
    blocked = [REACH[1], event(4, "navigate_to", {"target": "red_cup"}, fail="path blocked: wall"), REACH[4]]
    assert recovery_lessons(_steps(blocked), TOOLS) == []
    # A refused call never ran: it is neither the failure nor the fix.
    refused = {**REACH[1], "refusal": "hook"}
    assert recovery_lessons(_steps([refused, REACH[4]]), TOOLS) == []
    # Another call of the same tool is no recovery of the failed one (eval run Q: a blocked
    # drive to the shelf, then one to the doorway, was written as "navigate_to again,
    # unchanged, succeeded"); nor is a pick of another object after the fix.
    shelf = "path blocked by office_wall_south_b; areas reachable in a straight line from here: office"
    detour = [
        event(1, "navigate_to", {"target": "office_shelf"}, fail=shelf),
        event(2, "navigate_to", {"target": "doorway"}),
    ]
    assert recovery_lessons(_steps(detour), TOOLS) == []
    other = [REACH[1], REACH[3], event(5, "pick_object", {"object_id": "blue_mug"})]
    assert recovery_lessons(_steps(other), TOOLS) == []


def test_the_model_s_own_failure_lesson_for_the_tool_wins() -> None:
    own = ToolExperienceEntry(
        "pick_object", "failure", "Drive to the object first when it is out of reach.", 0.9
    )
    proposal = MemoryConsolidation(tool_experience_entries=(own,))
    assert with_recovery_lessons(proposal, _steps(REACH), TOOLS) is proposal
    added = with_recovery_lessons(MemoryConsolidation(), _steps(REACH), TOOLS).tool_experience_entries
    assert [entry.tool for entry in added] == ["pick_object"]


class Silent:
    """What the 1.5B proposed for every consolidation of the eval: nothing."""

    def consolidate(
        self, task_notes: Trajectory, *, allowed_tools: list[str], existing: dict[str, Any]
    ) -> MemoryConsolidation:
        return MemoryConsolidation()

    def summarize(self, tool: str, *, success: list[str], failure: list[str]) -> str:
        return "summary"


def _trajectory(events: list[dict[str, Any]]) -> Trajectory:
    raw = {"task_id": "t1", "goal": "bring the cup", "phase": "", "status": "completed", "events": events}
    return Trajectory.from_json(raw)


def test_file_memory_writes_the_recovery_through_the_same_rules(tmp_path: Path) -> None:
    memory = FileMemory(tmp_path / "on", consolidator=Silent(), tool_experience_summarizer=Silent())
    result = memory.consolidate_trajectory(_trajectory(REACH), allowed_tools=TOOLS)
    assert [(d["tool"], d["accepted"]) for d in result["decisions"]] == [("pick_object", True)]
    assert memory.ledger_entries("pick_object")["failure"] == [recovery_lessons(_steps(REACH), TOOLS)[0].text]
    # The second time it is a duplicate, refused by rule like any entry.
    again = memory.consolidate_trajectory(_trajectory(REACH), allowed_tools=TOOLS)
    assert [d["rule"] for d in again["decisions"]] == ["duplicate_existing"]
    # memory.recovery_lessons false: the model's proposal alone.
    config = MemoryConfig(dir=tmp_path / "off", recovery_lessons=False)
    off = FileMemory.from_config(config, consolidator=Silent(), tool_experience_summarizer=Silent())
    assert off.consolidate_trajectory(_trajectory(REACH), allowed_tools=TOOLS)["decisions"] == []


def test_the_steps_calls_are_the_lessons_data_bound_to_a_coming_call() -> None:
    from harness_ros.trajectory import Trajectory

    [entry] = recovery_lessons(_steps(REACH), TOOLS)
    assert entry.lesson is not None
    ahead = entry.lesson.step
    assert ahead is not None and ahead.tool == "pick_object"
    assert ahead.calls == (LessonCall("navigate_to", (LessonArgument("target", reuses="object_id"),)),)
    assert ahead.bound({"object_id": "red_cup"}) == [(ahead.calls[0], {"target": "red_cup"})]
    assert ahead.bound({"surface_id": "shelf"}) is None  # the value it reuses is not there
    assert ahead.text_for({"object_id": "red_cup"}) == (
        'Before a pick_object, first navigate_to with target = "red_cup".'
    )

    def steps(*calls: tuple[str, dict[str, object]]) -> list[Any]:
        trajectory = Trajectory.start("fetch", task_id="t")
        for tool, arguments in calls:
            trajectory = trajectory.with_step(tool, arguments, {"success": True}, None)
        return list(trajectory.steps)

    coming = {"object_id": "red_cup"}
    assert ahead.taken(steps(("navigate_to", {"target": "red_cup"})), coming)
    assert not ahead.taken(steps(("navigate_to", {"target": "kitchen_table"})), coming)
    assert not ahead.taken(steps(("navigate_to", {"target": "red_cup"}), ("look", {})), coming)
    assert not ahead.taken([], coming)

    # several calls, values of their own (a number, a string with a comma): each is data
    two = RecoveryLesson(
        "x",
        "grasp",
        (
            LessonCall(
                "drive",
                (LessonArgument("target", reuses="object_id"), LessonArgument("standoff_m", value=0.5)),
            ),
            LessonCall(
                "look", (LessonArgument("name", value="left, low"), LessonArgument("of", reuses="object_id"))
            ),
        ),
        ahead=True,
    ).step
    assert two is not None
    cup = {"object_id": "cup"}
    assert two.calls_for(cup) == [
        'drive {"target": "cup", "standoff_m": 0.5}',
        'look {"name": "left, low", "of": "cup"}',
    ]
    assert two.taken(
        steps(("drive", {"target": "cup", "standoff_m": 0.5}), ("look", {"name": "left, low", "of": "cup"})),
        cup,
    )
    assert not two.taken(
        steps(("drive", {"target": "cup", "standoff_m": 0.9}), ("look", {"name": "left, low", "of": "cup"})),
        cup,
    )


def test_a_call_the_evaluator_refuted_is_known_by_the_evaluators_reason_not_the_harness_envelope() -> None:
    """A refuted call's result reason is the harness's own ``post-condition not met: ...``;
    the lesson quotes what failed (the evaluator's reason), never that wording."""
    from harness_ros.trajectory.reasons import failure_reason

    refuted = event(2, "pick_object", {"object_id": "red_cup"})
    refuted["result"] = {"success": False, "reason": "post-condition not met: no cup in the gripper"}
    refuted["verdict"] = {"status": "failure", "failure_reason": "no cup in the gripper"}
    trajectory = _steps(
        [
            event(1, "navigate_to", {"target": "dining_table"}),
            refuted,
            event(3, "navigate_to", {"target": "red_cup"}),
            event(4, "pick_object", {"object_id": "red_cup"}),
        ]
    )
    assert failure_reason(trajectory[1]) == "no cup in the gripper"
    (lesson,) = recovery_lessons(trajectory, ["pick_object", "navigate_to"])
    assert lesson.text.startswith('After "no cup in the gripper": navigate_to')
    assert "post-condition" not in lesson.text

    # a refutation without a reason names no kind of failure: no lesson is keyed on nothing
    refuted["verdict"] = {"status": "failure", "failure_reason": None}
    assert failure_reason(_steps([refuted])[0]) == ""
