"""The task's state stays typed inside the process (issue 46, item 1).

Memory, its consolidator, world memory and replay take the fold's ``Trajectory`` itself,
and an event is read by its payload: JSON exists only where the state is written to a file
or a topic, or read back from one. A dict handed to memory is refused with a clear error,
and no memory, harness or replay signature takes a trajectory as a mapping again.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

import pytest

from harness_ros.events import DonePayload, EventType, HarnessEvent
from harness_ros.memory import FileMemory, MemoryConsolidation
from harness_ros.replay.consolidate import trajectory_for_replay
from harness_ros.replay.contracts import RecordedTask
from harness_ros.trajectory import Trajectory

PACKAGE = Path(__file__).resolve().parents[1] / "harness_ros"
TYPED_PACKAGES = ("memory", "harness", "replay")
"""Where a trajectory is in-process state: no signature there takes it as a mapping."""
TRAJECTORY_NAMES = frozenset({"trajectory", "task_notes"})


class Keeping:
    """A consolidator that keeps what it was given and proposes nothing (or fails)."""

    def __init__(self, fail: bool = False) -> None:
        self.fail = fail
        self.seen: list[Any] = []

    def consolidate(
        self, task_notes: Trajectory, *, allowed_tools: list[str], existing: dict[str, Any]
    ) -> MemoryConsolidation:
        self.seen.append(task_notes)
        if self.fail:
            raise RuntimeError("the model timed out")
        return MemoryConsolidation()


def _completed() -> Trajectory:
    started = Trajectory.start("bring the cup", task_id="t1")
    trajectory = started.with_step("pick", {"object_id": "cup"}, {"success": True, "run_id": "r1"}, None)
    return Trajectory(
        task_id=trajectory.task_id,
        goal=trajectory.goal,
        phase="finishing",
        status="completed",
        steps=trajectory.steps,
        outcome="succeeded",
    )


def test_memory_hands_the_typed_trajectory_itself_to_the_consolidator(tmp_path: Path) -> None:
    keeping = Keeping()
    memory = FileMemory(tmp_path, consolidator=keeping)
    trajectory = _completed()
    memory.consolidate_trajectory(trajectory, allowed_tools=["pick"])
    assert keeping.seen == [trajectory] and keeping.seen[0] is trajectory  # no JSON in between


def test_a_dict_trajectory_is_refused_with_what_to_do(tmp_path: Path) -> None:
    memory = FileMemory(tmp_path, consolidator=Keeping(), world=True)
    raw: Any = _completed().to_json()
    before = sorted(tmp_path.rglob("*"))
    with pytest.raises(
        TypeError, match=r"consolidate_trajectory takes a typed Trajectory, got dict.*load_trajectory"
    ):
        memory.consolidate_trajectory(raw, allowed_tools=["pick"])
    with pytest.raises(TypeError, match=r"commit_world takes a typed Trajectory, got dict"):
        memory.commit_world(raw, 0.0)
    assert sorted(tmp_path.rglob("*")) == before  # refused before anything was written


def test_a_finished_task_consolidates_its_notes_trajectory_and_keeps_a_failed_one_as_json(
    tmp_path: Path,
) -> None:
    failing = Keeping(fail=True)
    memory = FileMemory(tmp_path, consolidator=failing)
    memory.start_task("bring the cup", task_id="t1")
    memory.record_tool_result("pick", {"object_id": "cup"}, {"success": True, "run_id": "r1"})
    result = memory.finish_task("completed", allowed_tools=["pick"], outcome="succeeded")
    (given,) = failing.seen
    assert isinstance(given, Trajectory) and result["trajectory"] is given
    assert (given.status, given.outcome, [step.tool for step in given.steps]) == (
        "completed",
        "succeeded",
        ["pick"],
    )
    # pending/ is a file: the trajectory's JSON, as it has always been written there.
    (kept,) = memory.pending_files()
    record = json.loads(kept.read_text(encoding="utf-8"))
    assert record["trajectory"] == given.to_json()
    # The retry reads it back typed, equal to what was kept.
    retrying = Keeping()
    memory = FileMemory(tmp_path, consolidator=retrying)
    memory.start_task("next", task_id="t2")
    memory.finish_task("completed", allowed_tools=[])
    assert [type(seen) for seen in retrying.seen] == [Trajectory, Trajectory]
    assert retrying.seen[1] == given and not memory.pending_files()


def test_replay_consolidates_the_rebuilt_trajectory_or_the_recorded_one_typed() -> None:
    rebuilt = _completed()
    task = RecordedTask("t1", "bring the cup", "completed", ("pick",), rebuilt)
    assert trajectory_for_replay(task) is rebuilt
    same = {"trajectory": {**rebuilt.to_json(), "status": "running"}}
    assert trajectory_for_replay(RecordedTask("t1", "", "completed", ("pick",), rebuilt, same)) is rebuilt
    drifted = {**rebuilt.to_json(), "events": []}
    recorded = RecordedTask("t1", "", "completed", ("pick",), rebuilt, {"trajectory": drifted})
    chosen = trajectory_for_replay(recorded)
    assert isinstance(chosen, Trajectory) and chosen.steps == () and chosen.status == "completed"


def test_an_event_is_read_by_its_payload_only() -> None:
    event = HarnessEvent(EventType.DONE, "t1", payload=DonePayload(status="completed", outcome="succeeded"))
    assert not hasattr(event, "data")  # no dict view of an event inside the process
    assert event.to_dict()["data"]["status"] == "completed"  # JSON where it leaves


def _annotation(node: ast.expr | None) -> str:
    return ast.unparse(node) if node is not None else ""


def _signatures(package: str) -> list[tuple[str, str, str]]:
    """(where, parameter or ``return``, annotation) of every function in ``package``."""
    found: list[tuple[str, str, str]] = []
    for path in sorted((PACKAGE / package).rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node in ast.walk(tree):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            where = f"{path.relative_to(PACKAGE.parent)}:{node.lineno} {node.name}"
            arguments = [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]
            found += [(where, arg.arg, _annotation(arg.annotation)) for arg in arguments]
            found.append((where, "return", _annotation(node.returns)))
    return found


@pytest.mark.parametrize("package", TYPED_PACKAGES)
def test_no_signature_takes_a_trajectory_as_a_mapping(package: str) -> None:
    untyped = [
        f"{where}: {name}: {annotation}"
        for where, name, annotation in _signatures(package)
        if name in TRAJECTORY_NAMES and ("Trajectory" not in annotation or "Mapping" in annotation)
    ]
    unions = [
        f"{where}: {name}: {annotation}"
        for where, name, annotation in _signatures(package)
        if "Trajectory" in annotation and ("Mapping" in annotation or "dict[" in annotation)
    ]
    assert not untyped, "a trajectory parameter that is not the typed Trajectory:\n" + "\n".join(untyped)
    assert not unions, "a trajectory union with a mapping:\n" + "\n".join(unions)
