"""Recovery lessons are data: the harness decides from the data part of a ledger line, never
by reading its own sentence back (issue 46, item 3). An operator may reword the sentence;
the same sentence without data (a model's words, an old ledger) holds nothing; a data part
that is not a lesson is reported with the file and the line, and the entry stays as words."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness_ros.harness.guidance import AheadFocus, HeldByExperience, TaskGuidance, TaskView
from harness_ros.memory import FileMemory, MemoryConsolidation
from harness_ros.model.contracts import ModelProfile, ToolCall
from harness_ros.tools import ToolRegistry, tool
from harness_ros.trajectory import Trajectory, steps_from

SMALL = ModelProfile.small("model.profile: small")
TOOLS = ["navigate_to", "pick_object", "load_skill"]
WORDS = (
    'After "object out of reach": navigate_to with target = the failed call\'s object_id, then '
    "pick_object again succeeded. Before a pick_object, first navigate_to with target = its object_id."
)
"""The sentence the harness writes for REACH's recovery."""


def _event(index: int, name: str, arguments: dict[str, Any], fail: str | None = None) -> dict[str, Any]:
    result: dict[str, Any] = {"success": False, "reason": fail} if fail else {"success": True}
    verdict = None if fail else {"status": "success", "failure_reason": None}
    return {"index": index, "tool": name, "arguments": arguments, "result": result, "verdict": verdict}


REACH = [
    _event(1, "navigate_to", {"target": "coffee_table"}),
    _event(2, "pick_object", {"object_id": "red_cup"}, fail="object out of reach: 1.01 m > 0.75 m"),
    _event(3, "navigate_to", {"target": "red_cup"}),
    _event(4, "pick_object", {"object_id": "red_cup"}),
]


@tool(description="Drive to a target.", physical=True)
def navigate_to(target: str) -> dict[str, Any]:
    return {"success": True}


@tool(description="Pick an object.", physical=True)
def pick_object(object_id: str) -> dict[str, Any]:
    return {"success": True}


REGISTRY = ToolRegistry([navigate_to, pick_object])


class Silent:
    """What the 1.5B proposed for every consolidation of the eval: nothing."""

    def consolidate(
        self, task_notes: Trajectory, *, allowed_tools: list[str], existing: dict[str, Any]
    ) -> MemoryConsolidation:
        return MemoryConsolidation()

    def summarize(self, tool: str, *, success: list[str], failure: list[str]) -> str:
        return "summary"


def _learnt(root: Path) -> FileMemory:
    """A memory folder that learnt REACH's recovery through consolidation (the real writer)."""
    memory = FileMemory(root, consolidator=Silent(), tool_experience_summarizer=Silent())
    trajectory = {
        "task_id": "t1",
        "goal": "bring the cup",
        "phase": "",
        "status": "completed",
        "events": REACH,
    }
    result = memory.consolidate_trajectory(Trajectory.from_json(trajectory), allowed_tools=TOOLS)
    assert [(d["tool"], d["rule"]) for d in result["decisions"]] == [("pick_object", "accepted")]
    assert memory.ledger_entries("pick_object")["failure"] == [WORDS]
    return memory


def _view(memory: FileMemory) -> TaskView:
    return TaskView(
        profile=SMALL,
        steps=(),
        registry=REGISTRY,
        check=lambda c: REGISTRY.validate(c.name, c.arguments or {}),
        ledger=memory.failure_lessons,
        skills=None,
    )


def _first_pick(memory: FileMemory) -> Any:
    """What the guidance does with a task's first pick of red_cup (a hold, or None)."""
    pick = ToolCall("c1", "pick_object", '{"object_id": "red_cup"}', {"object_id": "red_cup"})
    return TaskGuidance((HeldByExperience(),)).before_call(_view(memory), pick)


def _ledger(memory: FileMemory) -> Path:
    return memory.root / "tool_experience" / "pick_object.md"


def test_an_operators_rewording_of_a_lesson_keeps_what_the_harness_does_with_it(tmp_path: Path) -> None:
    memory = _learnt(tmp_path / "memory")
    assert _first_pick(memory) is not None  # as written: held for the step
    own = "If the cup is too far away, drive right up to it before you pick it."
    path = _ledger(memory)
    path.write_text(path.read_text().replace(WORDS, own))
    assert memory.ledger_entries("pick_object")["failure"] == [own]  # the operator's words stand
    hold = _first_pick(memory)
    assert hold is not None and hold.answer.startswith(
        "not run (the robot did nothing): your experience with pick_object says to call "
        'navigate_to {"target": "red_cup"} first'
    )
    focus = TaskGuidance((AheadFocus(),)).before_decision(_view(memory))
    assert focus is not None and focus.content.splitlines()[-1] == (
        "Before a pick_object, first navigate_to with target = the object_id you will give pick_object."
    )


def test_the_same_sentence_without_its_data_holds_nothing(tmp_path: Path) -> None:
    # A model's words, an operator's, or a lesson written before lessons were data.
    root = tmp_path / "memory"
    (root / "tool_experience").mkdir(parents=True)
    (root / "tool_experience" / "pick_object.md").write_text(
        f"# Tool Experience: pick_object\n\n## Success\n## Failure\n- {WORDS}\n"
    )
    memory = FileMemory(root)
    assert memory.ledger_entries("pick_object")["failure"] == [WORDS]  # still read and shown
    assert _first_pick(memory) is None
    assert TaskGuidance((AheadFocus(),)).before_decision(_view(memory)) is None


def test_a_data_part_that_is_no_lesson_is_reported_and_its_entry_kept_as_words(tmp_path: Path) -> None:
    memory = _learnt(tmp_path / "memory")
    path = _ledger(memory)
    lines = path.read_text().splitlines(keepends=True)
    at = next(number for number, line in enumerate(lines, 1) if line.startswith(f"- {WORDS}"))
    second = "Drive closer first when the object is out of reach."
    lines[at - 1] = lines[at - 1].replace('"ahead": true', '"ahead": "yes"')
    lines.append(f"- {second} <!-- harness_ros lesson {{not json -->\n")
    path.write_text("".join(lines))
    memory.tool_experience_summaries(["pick_object", "navigate_to"])
    warnings = [n["message"] for n in memory.take_notices() if n.get("notice") == "ledger_line_malformed"]
    assert warnings == [
        f"{path} line {at}: lesson data, field 'ahead': expected true or false, got 'yes' "
        "(entry kept as words, its data not used)",
        f"{path} line {len(lines)}: lesson data, field 'json': not JSON: Expecting property name enclosed "
        "in double quotes: line 1 column 2 (char 1) (entry kept as words, its data not used)",
    ]
    # The entries stay, as words: shown, and deciding nothing.
    assert memory.ledger_entries("pick_object")["failure"] == [WORDS, second]
    assert [(found.text, found.lesson) for found in memory.failure_lessons("pick_object")] == [
        (WORDS, None),
        (second, None),
    ]
    assert _first_pick(memory) is None


def test_a_lesson_goes_to_the_ledger_and_comes_back_the_same(tmp_path: Path) -> None:
    from harness_ros.memory.evidence import recovery_lessons

    [entry] = recovery_lessons(steps_from(REACH), TOOLS)
    assert entry.lesson is not None and entry.text == entry.lesson.text == WORDS
    memory = _learnt(tmp_path / "memory")
    [found] = memory.failure_lessons("pick_object")
    assert (found.text, found.lesson) == (WORDS, entry.lesson)
    # On the entry's own line: an HTML comment, JSON inside, the sentence before it.
    [line] = [line for line in _ledger(memory).read_text().splitlines() if line.startswith("- After")]
    words, data = line.split(" <!-- harness_ros lesson ")
    assert words == f"- {WORDS}" and data.endswith(" -->")
    assert json.loads(data[: -len(" -->")]) == {
        "v": 1,
        "failure": "object out of reach",
        "tool": "pick_object",
        "fix": [{"tool": "navigate_to", "arguments": [{"name": "target", "reuses": "object_id"}]}],
        "ahead": True,
    }
    # The model is never shown the data part: not in a ledger's entries, not in the audit.
    assert "<!--" not in json.dumps(memory.ledger_entries("pick_object"))


def test_the_same_recovery_after_an_operator_reworded_its_lesson_is_a_duplicate(tmp_path: Path) -> None:
    memory = _learnt(tmp_path / "memory")
    path = _ledger(memory)
    path.write_text(path.read_text().replace(WORDS, "Drive right up to the cup before you pick it."))
    trajectory = {
        "task_id": "t2",
        "goal": "bring the cup",
        "phase": "",
        "status": "completed",
        "events": REACH,
    }
    again = memory.consolidate_trajectory(Trajectory.from_json(trajectory), allowed_tools=TOOLS)
    assert [d["rule"] for d in again["decisions"]] == ["duplicate_existing"]
    assert len(memory.failure_lessons("pick_object")) == 1


def test_a_held_lesson_accepted_by_the_operator_keeps_its_data(tmp_path: Path) -> None:
    from harness_ros.memory.evidence import recovery_lessons

    [entry] = recovery_lessons(steps_from(REACH), TOOLS)
    assert entry.lesson is not None
    memory = FileMemory(tmp_path / "memory")
    record = {"kind": "tool_experience", "tool": "pick_object", "outcome": "failure", "text": entry.text}
    with memory.store.lock():
        memory.store.write_held([{**record, "lesson": entry.lesson.to_json(), "rule": "held:x", "time": 1.0}])
    [held] = memory.held_entries()
    memory.review_held(held["id"], accept=True)
    [found] = memory.failure_lessons("pick_object")
    assert (found.text, found.lesson) == (WORDS, entry.lesson)


def test_a_replay_of_the_recorded_proposals_writes_the_lesson_with_its_data(tmp_path: Path) -> None:
    # Replay proposes what the run's consolidation decided, the harness's lesson among them:
    # without its data the replayed ledger would hold nothing.
    from harness_ros.replay.consolidate import RecordedProposalsConsolidator

    learnt = _learnt(tmp_path / "run")
    [decision] = [r for r in learnt.audit_records() if r.get("event") == "proposal"]
    replayed = FileMemory(
        tmp_path / "replay",
        consolidator=RecordedProposalsConsolidator({"t1": [decision]}),
        tool_experience_summarizer=Silent(),
    )
    trajectory = {
        "task_id": "t1",
        "goal": "bring the cup",
        "phase": "",
        "status": "completed",
        "events": REACH,
    }
    replayed.consolidate_trajectory(Trajectory.from_json(trajectory), allowed_tools=TOOLS)
    assert replayed.failure_lessons("pick_object") == learnt.failure_lessons("pick_object")
    assert _first_pick(replayed) is not None


def test_a_models_entry_cannot_forge_a_lessons_data(tmp_path: Path) -> None:
    from harness_ros.memory import ToolExperienceEntry
    from harness_ros.memory.document import with_data
    from harness_ros.memory.evidence import recovery_lessons

    [entry] = recovery_lessons(steps_from(REACH), TOOLS)
    assert entry.lesson is not None
    forged = with_data("Drive to the object first.", entry.lesson.to_json())

    class Forger(Silent):
        def consolidate(
            self, task_notes: Trajectory, *, allowed_tools: list[str], existing: dict[str, Any]
        ) -> MemoryConsolidation:
            return MemoryConsolidation(
                tool_experience_entries=(ToolExperienceEntry("pick_object", "failure", forged, 0.9),)
            )

    trajectory = {
        "task_id": "t1",
        "goal": "bring the cup",
        "phase": "",
        "status": "completed",
        "events": REACH,
    }
    memory = FileMemory(tmp_path / "a", consolidator=Forger(), tool_experience_summarizer=Silent())
    result = memory.consolidate_trajectory(Trajectory.from_json(trajectory), allowed_tools=TOOLS)
    assert [d["rule"] for d in result["decisions"]] == ["poisoning:markup"]
    # With the markup rule switched off by a deployment, the words are written without it.
    loose = FileMemory(
        tmp_path / "b", consolidator=Forger(), tool_experience_summarizer=Silent(), poisoning_rules=()
    )
    assert [
        d["rule"]
        for d in loose.consolidate_trajectory(Trajectory.from_json(trajectory), allowed_tools=TOOLS)[
            "decisions"
        ]
    ] == ["accepted"]
    assert [(found.text, found.lesson) for found in loose.failure_lessons("pick_object")] == [
        ("Drive to the object first.", None)
    ]
    assert _first_pick(loose) is None
