"""The world memory learns where a robot that navigates by pose is (issues 45 and 48).

A confirmed ``navigate_to_pose`` (Nav2's NavigateToPose: the real and the physics Stretch 3)
records the robot with the pose it stopped at and, as its place, the operator's place
nearest to that pose within 0.5 m; so a failed pick at the place memory said the object is
marks the object stale on those robots too. Unit tests on the fold, then through FileMemory
and the harness, then the replay of the recorded events."""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from harness_ros.evaluation import Verdict, VerdictStatus
from harness_ros.events import EventType, HarnessEvent
from harness_ros.harness import Harness
from harness_ros.memory import FileMemory, MemoryConsolidation
from harness_ros.memory.world import WorldDocument, fold_steps, render_brief
from harness_ros.memory.world_contracts import PLACE_RADIUS_M, WorldTools
from harness_ros.model.contracts import ModelReply, ToolCall, Usage
from harness_ros.observation.contracts import Observation
from harness_ros.replay.consolidate import replay_consolidation
from harness_ros.replay.trajectory import rebuild_tasks
from harness_ros.tools import success, tool
from harness_ros.tools.contracts import failure
from harness_ros.trajectory import StepVerdict, ToolResult, Trajectory, TrajectoryStep, load_trajectory

NOW = 1767265200.0  # 2026-01-01T11:00:00Z
# The operator's map, as the physics eval seeds it (yaw in radians in the file).
MAP = """# World

## Places
- dining_table | kind: surface | pose: 0.20 0.00 0.00 map | state: confirmed | evidence: operator's map
- kitchen_counter | kind: surface | pose: 1.60 0.00 0.00 map | state: confirmed | evidence: operator's map
- hall | kind: area | pose: 0.30 0.10 0.00 odom | state: confirmed | evidence: operator's map
## Objects
- red_cup | kind: cup | where: dining_table | state: confirmed | confirmed: 2026-01-01T10:00:00Z
"""
TOOLS = ["navigate_to_pose", "pick_object", "place_object"]


def _count(text: str) -> int:
    return -(-len(text) // 3)


def _step(
    index: int,
    tool_name: str,
    arguments: dict[str, Any],
    status: str | None,
    result: dict[str, Any] | None = None,
    refusal: str | None = None,
) -> TrajectoryStep:
    verdict = None if status is None else StepVerdict(status, run_id=f"r{index}")
    return TrajectoryStep(
        index,
        tool_name,
        arguments,
        ToolResult.from_json(result if result is not None else {"success": status == "success"}),
        verdict,
        refusal,
    )


def _drive(
    index: int, x: float, y: float, yaw: float | None = 0, status: str | None = "success"
) -> TrajectoryStep:
    arguments: dict[str, Any] = {"x": x, "y": y} | ({} if yaw is None else {"yaw": yaw})
    return _step(index, "navigate_to_pose", arguments, status)


def _fold(*steps: TrajectoryStep, text: str = MAP) -> WorldDocument:
    doc = WorldDocument.parse(text)
    fold_steps(doc, steps, NOW)
    return doc


def _robot(doc: WorldDocument) -> tuple[str, str, tuple[float, float, float | None, str] | None]:
    robot = doc.get("place", "robot")
    assert robot is not None
    pose = None if robot.pose is None else (robot.pose.x, robot.pose.y, robot.pose.yaw, robot.pose.frame)
    return robot.where, robot.state, pose


def _brief(doc: WorldDocument, instruction: str = "Bring the red cup.") -> str:
    return render_brief(doc, instruction, NOW, max_tokens=120, count=_count)


# ---------------------------------------------------------------------- the fold


def test_a_confirmed_pose_navigation_near_a_place_puts_the_robot_at_that_place() -> None:
    doc = _fold(_drive(1, 0.25, -0.1, 90))
    where, state, pose = _robot(doc)
    assert (where, state) == ("dining_table", "confirmed")
    # The pose asked for (Nav2's result has none), yaw from the preset's degrees to radians.
    assert pose is not None and pose[:2] == (0.25, -0.1) and pose[3] == "map"
    assert pose[2] == pytest.approx(math.pi / 2)
    assert "robot at dining_table (now)" in _brief(doc)
    # Written, the pose keeps radians, and reads back as the degrees it was asked in.
    line = next(line for line in doc.text().splitlines() if line.startswith("- robot"))
    assert "| where: dining_table | pose: 0.25 -0.10 1.57 map | state: confirmed |" in line
    assert "evidence: navigate_to_pose step 1 run r1 verdict success" in line
    again = WorldDocument.parse(doc.text())
    assert "robot at dining_table (now)" in _brief(again)
    robot = again.get("place", "robot")
    assert robot is not None and robot.pose is not None and round(math.degrees(robot.pose.yaw or 0)) == 90


def test_the_yaw_is_converted_from_degrees_and_a_result_pose_is_taken_as_radians() -> None:
    for degrees in (-180, -90, -45, 0, 30, 179):
        _, _, pose = _robot(_fold(_drive(1, 0.2, 0.0, degrees)))
        assert pose is not None and pose[2] is not None
        assert math.degrees(pose[2]) == pytest.approx(degrees)
    # A call without yaw: the heading is not known (only x and y place it).
    _, _, pose = _robot(_fold(_drive(1, 0.2, 0.0, None)))
    assert pose is not None and pose[2] is None
    # The server's final pose, where its result gives one, wins; its yaw is radians already.
    measured = _step(
        1,
        "navigate_to_pose",
        {"x": 5.0, "y": 5.0, "yaw": 90},
        "success",
        {"success": True, "final_x": 1.55, "final_y": 0.1, "final_yaw": -1.5},
    )
    where, _, pose = _robot(_fold(measured))
    assert where == "kitchen_counter" and pose == (1.55, 0.1, -1.5, "map")
    # A robot whose yaw argument is in radians says so.
    radians = WorldTools(navigate_pose_yaw_unit="rad")
    doc = WorldDocument.parse(MAP)
    fold_steps(doc, [_drive(1, 0.2, 0.0, 1.0)], NOW, radians)
    _, _, pose = _robot(doc)
    assert pose is not None and pose[2] == pytest.approx(1.0)


def test_the_place_is_the_nearest_within_the_radius_else_the_pose_alone() -> None:
    assert PLACE_RADIUS_M == 0.5 == WorldTools().place_radius_m
    assert _robot(_fold(_drive(1, 0.2 + 0.49, 0.0)))[0] == "dining_table"
    assert _robot(_fold(_drive(1, 1.6 - 0.49, 0.0)))[0] == "kitchen_counter"
    assert _robot(_fold(_drive(1, 0.2, 0.51)))[0] == ""
    # The nearest of two in reach, whatever their order in the file.
    near_both = MAP.replace("1.60 0.00 0.00 map", "0.90 0.00 0.00 map")
    assert _robot(_fold(_drive(1, 0.5, 0.0), text=near_both))[0] == "dining_table"
    assert _robot(_fold(_drive(1, 0.6, 0.0), text=near_both))[0] == "kitchen_counter"
    # A configured radius.
    doc = WorldDocument.parse(MAP)
    fold_steps(doc, [_drive(1, 0.2, 0.51)], NOW, WorldTools(place_radius_m=1.0))
    assert _robot(doc)[0] == "dining_table"


def test_far_from_every_place_the_robot_has_its_pose_and_no_place() -> None:
    # hall is 0.1 m away, but in odom: another frame is no match.
    doc = _fold(_drive(1, 0.3, 0.6, -90))
    where, state, pose = _robot(doc)
    assert (where, state) == ("", "confirmed")
    assert pose is not None and pose[:2] == (0.3, 0.6) and pose[2] == pytest.approx(-math.pi / 2)
    assert "robot at x 0.30 y 0.60 yaw -90 deg map (now)" in _brief(doc)
    assert "where:" not in next(line for line in doc.text().splitlines() if line.startswith("- robot"))
    # The robot's own entry is never a place to be at: a second stop near the first is no place.
    doc = _fold(_drive(1, 3.0, 3.0), _drive(2, 3.1, 3.0))
    assert _robot(doc)[0] == ""


def test_a_pose_navigation_that_was_not_confirmed_makes_the_place_unverified() -> None:
    at_table = _drive(1, 0.2, 0.0)
    for not_confirmed in (
        _drive(2, 1.6, 0.0, status="failure"),
        _drive(2, 1.6, 0.0, status=None),  # the tool's own success is no evidence
        _step(2, "navigate_to_pose", {"x": 1.6}, "success"),  # confirmed, but no pose to read
    ):
        doc = _fold(at_table, not_confirmed)
        where, state, pose = _robot(doc)
        assert (where, state) == ("dining_table", "unverified"), not_confirmed
        assert pose is not None and pose[:2] == (0.2, 0.0)
        assert "robot at dining_table? (now)" in _brief(doc)
    # A refused call never ran: no evidence at all.
    refused = _step(2, "navigate_to_pose", {"x": 1.6, "y": 0.0}, None, refusal="safety")
    assert _robot(_fold(at_table, refused))[:2] == ("dining_table", "confirmed")
    # A later confirmed stop confirms it again.
    assert _robot(_fold(at_table, _drive(2, 1.6, 0.0, status="failure"), _drive(3, 1.6, 0.0)))[:2] == (
        "kitchen_counter",
        "confirmed",
    )


def test_a_failed_pick_at_the_remembered_place_marks_the_object_stale() -> None:
    failed_pick = _step(
        2, "pick_object", {"object_id": "red_cup"}, "failure", {"success": False, "reason": "x"}
    )
    doc = _fold(_drive(1, 0.2, 0.0), failed_pick)
    cup = doc.get("object", "red_cup")
    assert cup is not None and (cup.state, cup.where) == ("stale", "dining_table")
    assert "red_cup (cup) STALE: gone from dining_table" in _brief(doc)
    # Not where the robot stopped away from the table, nor where the stop was not confirmed.
    for elsewhere in (_drive(1, 1.6, 0.0), _drive(1, 0.3, 0.6), _drive(1, 0.2, 0.0, status="failure")):
        cup = _fold(elsewhere, failed_pick).get("object", "red_cup")
        assert cup is not None and cup.state == "confirmed", elsewhere


# ---------------------------------------------------------------------- the harness, memory and replay


class NoLessons:
    def consolidate(
        self, task_notes: Trajectory, *, allowed_tools: list[str], existing: dict[str, Any]
    ) -> MemoryConsolidation:
        return MemoryConsolidation()


class Judge:
    """A pose check: confirms a run unless its id says it failed."""

    def evaluate(self, *, tool: str, run_id: str, post_condition: str, observation: Observation) -> Verdict:
        ok = not run_id.startswith("fail")
        status = VerdictStatus.SUCCESS if ok else VerdictStatus.FAILURE
        return Verdict(status, run_id, None if ok else "not held", "check")


class Scripted:
    name = "scripted/pose"

    def __init__(self, steps: Sequence[ModelReply]) -> None:
        self.steps = list(steps)
        self.requests: list[list[dict[str, Any]]] = []

    def complete(
        self, messages: list[dict[str, Any]], *, tools: Any = None, json_mode: bool = False
    ) -> ModelReply:
        self.requests.append(copy.deepcopy(messages))
        if self.steps:
            return self.steps.pop(0)
        finish = {"outcome": "failed", "summary": "the cup is not there"}
        return _reply(_call("finish_task", "f", **finish))


def _call(tool_name: str, call_id: str, **arguments: Any) -> ToolCall:
    return ToolCall(call_id, tool_name, json.dumps(arguments), arguments)


def _reply(*calls: ToolCall) -> ModelReply:
    return ModelReply(text=None, tool_calls=calls, usage=Usage(10, 2), model="scripted")


def _pose_tools() -> list[Any]:
    @tool(
        description="Drive to a pose (yaw in degrees).", physical=True, evaluated=True, post_condition="there"
    )
    def navigate_to_pose(x: float, y: float, yaw: float = 0.0) -> dict[str, Any]:
        return success(run_id=f"nav-{x}-{y}")  # Nav2's result: no pose

    @tool(description="Pick.", physical=True, evaluated=True, post_condition="held")
    def pick_object(object_id: str) -> dict[str, Any]:
        return failure("nothing to grasp", run_id=f"fail-{object_id}", held_object_id="")

    return [navigate_to_pose, pick_object]


def _world_brief(model: Scripted) -> str:
    briefs = [str(m["content"]) for m in model.requests[0] if "World memory" in str(m.get("content"))]
    assert len(briefs) == 1, model.requests[0]
    return briefs[0]


def _run(memory: FileMemory, model: Scripted, instruction: str, task_id: str) -> list[HarnessEvent]:
    harness = Harness(model=model, tools=_pose_tools(), memory=memory, evaluator=Judge())
    return list(harness.run(instruction, task_id=task_id))


def test_through_the_harness_the_robot_is_at_the_table_the_cup_goes_stale_and_replay_agrees(
    tmp_path: Path,
) -> None:
    memory = FileMemory(tmp_path / "live", consolidator=NoLessons(), tool_experience_summarizer=None)
    memory.world_path.parent.mkdir(parents=True, exist_ok=True)
    memory.world_path.write_text(MAP, encoding="utf-8")
    first = Scripted(
        [
            _reply(_call("navigate_to_pose", "c1", x=0.25, y=0.0, yaw=0)),
            _reply(_call("pick_object", "c2", object_id="red_cup")),
        ]
    )
    events = _run(memory, first, "Bring the red cup to the kitchen counter.", "t1")
    # Told at once that the cup was not where memory said.
    told = [str(m.get("content")) for m in first.requests[2]]
    assert any("red_cup was not where memory said (dining_table): marked STALE" in text for text in told)
    doc = WorldDocument.parse(memory.world_path.read_text(encoding="utf-8"))
    assert _robot(doc)[:2] == ("dining_table", "confirmed")
    cup = doc.get("object", "red_cup")
    assert cup is not None and (cup.state, cup.where) == ("stale", "dining_table")
    consolidation = [e for e in events if e.type is EventType.MEMORY_CONSOLIDATION]
    changes = consolidation[0].payload.get("world")["changes"]
    assert [(c["name"], c["change"], c["where"]) for c in changes] == [
        ("robot", "moved", "dining_table"),
        ("red_cup", "stale", "dining_table"),
    ]
    # The next task's brief says so, and where the robot is.
    second = Scripted([])
    events += _run(memory, second, "Bring the red cup.", "t2")
    brief = _world_brief(second)
    assert "red_cup (cup) STALE: gone from dining_table" in brief
    assert "robot at dining_table" in brief
    # A replay of the recorded events in consolidate mode writes the same file.
    replayed = FileMemory(tmp_path / "replayed", consolidator=NoLessons(), tool_experience_summarizer=None)
    replayed.world_path.parent.mkdir(parents=True, exist_ok=True)
    replayed.world_path.write_text(MAP, encoding="utf-8")
    replay_consolidation(rebuild_tasks([json.loads(event.to_json()) for event in events]), replayed)
    assert replayed.world_path.read_bytes() == memory.world_path.read_bytes()


def test_folding_a_recorded_trajectory_gives_what_the_task_wrote(tmp_path: Path) -> None:
    memory = FileMemory(tmp_path, consolidator=NoLessons(), tool_experience_summarizer=None)
    memory.world_path.write_text(MAP, encoding="utf-8")
    memory.start_task("Bring the red cup.", task_id="t1")
    memory.record_tool_result(
        "navigate_to_pose",
        {"x": 0.2, "y": 0.05, "yaw": 0},
        {"success": True},
        {"status": "success", "run_id": "n1", "failure_reason": None, "evidence": "pose check"},
    )
    memory.record_tool_result(
        "pick_object",
        {"object_id": "red_cup"},
        {"success": False, "reason": "nothing to grasp"},
        {"status": "failure", "run_id": "p1", "failure_reason": "empty", "evidence": "grasp check"},
    )
    recorded = tmp_path / "trajectory.json"  # as the run log writes it
    recorded.write_text(json.dumps(memory.trajectory().to_json()), encoding="utf-8")
    result = memory.finish_task("completed", allowed_tools=TOOLS)
    at = result["world"]["time"]
    doc = WorldDocument.parse(MAP)
    fold_steps(doc, load_trajectory(recorded).steps, at)
    assert doc.text() == memory.world_path.read_text(encoding="utf-8")
    assert "| state: stale |" in doc.text() and "- robot | kind: robot | where: dining_table |" in doc.text()
