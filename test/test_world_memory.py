"""World memory (issue 48): WORLD.md written only from evidence, kept readable and
operator-editable, briefed to the model, answered by recall_object, and replayed."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from harness_ros.evaluation import Verdict, VerdictStatus
from harness_ros.events import EventType, HarnessEvent
from harness_ros.harness import Harness
from harness_ros.local_model.tokenizer import LocalTokenizer, installed_tokenizer_model
from harness_ros.memory import FileMemory, MemoryConsolidation
from harness_ros.memory.world import WorldDocument, render_brief
from harness_ros.model.contracts import ModelReply, ToolCall, Usage
from harness_ros.observation.contracts import Observation
from harness_ros.replay.consolidate import replay_consolidation
from harness_ros.replay.trajectory import rebuild_tasks
from harness_ros.tools import success, tool
from harness_ros.tools.contracts import failure
from harness_ros.trajectory import Trajectory

DATA = Path(__file__).resolve().parent / "data"
HARNESS_ROS = str(Path(sys.executable).with_name("harness-ros"))

OPERATOR_TEXT = """# World

My notes: the cleaner moves things on Tuesdays.

## Objects
- keys | kind: keys | where: hall_drawer | state: confirmed | evidence: the operator said so
- broken | state: gone
Not a bullet: my own remark inside the section.
- red_cup | kind: cup | where: kitchen_table | state: confirmed | confirmed: 2026-01-01T10:00:00Z

## Site rules
- Never put cups on the stove.
"""


class NoLessons:
    def consolidate(
        self, task_notes: Trajectory, *, allowed_tools: list[str], existing: dict[str, Any]
    ) -> MemoryConsolidation:
        return MemoryConsolidation()


def _memory(folder: Path) -> FileMemory:
    return FileMemory(folder, consolidator=NoLessons(), tool_experience_summarizer=None)


def _verdict(status: str, run_id: str) -> dict[str, Any]:
    return {"status": status, "run_id": run_id, "failure_reason": None, "evidence": "ground truth"}


# ---------------------------------------------------------------------- the file


def test_a_malformed_line_is_reported_with_file_line_and_field_and_kept(tmp_path: Path) -> None:
    memory = _memory(tmp_path)
    memory.world_path.write_text(OPERATOR_TEXT, encoding="utf-8")
    doc = memory.world_document()
    assert [(p.line, p.field) for p in doc.problems] == [(7, "state")]
    notice = memory.take_notices()[0]
    assert notice["kind"] == "world_line_malformed"
    assert str(memory.world_path) in notice["message"] and "line 7" in notice["message"]
    assert "'gone' is not one of confirmed, stale, unverified" in notice["message"]
    assert doc.get("object", "broken") is None  # never used ...
    memory.start_task("Fetch the red cup.", task_id="t1")
    memory.record_tool_result(
        "pick_object", {"object_id": "red_cup"}, {"success": True}, _verdict("success", "r1")
    )
    memory.finish_task("completed", allowed_tools=["pick_object"])
    text = memory.world_path.read_text(encoding="utf-8")
    # ... and never dropped: every line of the operator's is still there, byte for byte.
    kept = [line for line in OPERATOR_TEXT.splitlines(keepends=True) if not line.startswith("- red_cup")]
    remaining = text.splitlines(keepends=True)
    for line in kept:
        assert line in remaining
    assert text.count("- broken | state: gone\n") == 1
    assert "- red_cup | kind: cup | where: gripper | state: confirmed" in text


def test_only_confirmed_evidence_moves_an_object(tmp_path: Path) -> None:
    memory = _memory(tmp_path)
    memory.start_task("Fetch the red cup and put it on the coffee table.", task_id="t1")
    # The tool's own success without an evaluator's verdict is no evidence.
    memory.record_tool_result("pick_object", {"object_id": "blue_mug"}, {"success": True}, None)
    # A refused call is no evidence either.
    memory.record_tool_result(
        "pick_object",
        {"object_id": "green_bottle"},
        {"success": True},
        _verdict("success", "x"),
        refusal="safety",
    )
    memory.record_tool_result(
        "navigate_to",
        {"target": "kitchen_table"},
        {"success": True, "final_x": 1.5, "final_y": -0.25, "final_yaw": 0.0},
        _verdict("success", "r1"),
    )
    memory.record_tool_result(
        "pick_object", {"object_id": "red_cup"}, {"success": True}, _verdict("success", "r2")
    )
    memory.record_tool_result(
        "place_object",
        {"surface_id": "coffee_table"},
        {"success": True, "placed_object_id": "red_cup"},
        _verdict("success", "r3"),
    )
    result = memory.finish_task("completed", allowed_tools=["navigate_to", "pick_object", "place_object"])
    doc = WorldDocument.parse(memory.world_path.read_text(encoding="utf-8"))
    cup = doc.get("object", "red_cup")
    assert cup is not None
    assert (cup.kind, cup.where, cup.state) == ("cup", "coffee_table", "confirmed")
    assert "place_object" in cup.evidence and "run r3 verdict success" in cup.evidence
    robot = doc.get("place", "robot")
    assert robot is not None and robot.where == "kitchen_table" and robot.pose is not None
    assert (robot.pose.x, robot.pose.y, robot.pose.frame) == (1.5, -0.25, "map")
    assert doc.get("object", "blue_mug") is None
    assert doc.get("object", "green_bottle") is None
    assert [c["change"] for c in result["world"]["changes"]][:2] == ["moved", "moved"]


def test_the_models_own_text_never_becomes_a_world_fact(tmp_path: Path) -> None:
    memory = _memory(tmp_path)
    memory.start_task("Where is the red cup?", task_id="t1")
    memory.record_tool_result(
        "finish_task",
        {"outcome": "succeeded", "summary": "red_cup is on the office_shelf"},
        {"success": True},
        None,
    )
    memory.finish_task("completed", allowed_tools=[])
    assert not memory.world_path.exists()


def test_a_pick_that_fails_where_memory_said_marks_the_entry_stale_and_tells_the_model(
    tmp_path: Path,
) -> None:
    memory = _memory(tmp_path)
    memory.world_path.write_text(OPERATOR_TEXT, encoding="utf-8")
    memory.start_task("Fetch the red cup.", task_id="t2")
    first = memory.task_notes_snapshot_if_changed()
    assert first is not None and "red_cup (cup) on kitchen_table" in first.text
    memory.record_tool_result(
        "navigate_to", {"target": "kitchen_table"}, {"success": True}, _verdict("success", "n1")
    )
    memory.record_tool_result(
        "pick_object",
        {"object_id": "red_cup"},
        {"success": False, "reason": "object out of reach: 2.10 m > 0.75 m", "held_object_id": ""},
        _verdict("failure", "p1"),
    )
    told = memory.task_notes_snapshot_if_changed()
    assert told is not None
    assert "red_cup was not where memory said (kitchen_table): marked STALE" in told.text
    assert memory.recall_object("cup")["found"][0]["state"] == "stale"
    assert memory.recall_object("cup")["found"][0]["navigate_target"] is None
    # Told once.
    again = memory.task_notes_snapshot_if_changed()
    assert again is None or "STALE" not in again.text
    memory.finish_task("completed", allowed_tools=["navigate_to", "pick_object"])
    cup = WorldDocument.parse(memory.world_path.read_text(encoding="utf-8")).get("object", "red_cup")
    assert cup is not None and cup.state == "stale" and cup.where == "kitchen_table"  # kept, not deleted


def test_a_failed_pick_elsewhere_is_no_evidence_the_object_moved(tmp_path: Path) -> None:
    memory = _memory(tmp_path)
    memory.world_path.write_text(OPERATOR_TEXT, encoding="utf-8")
    memory.start_task("Fetch the red cup.", task_id="t3")
    memory.record_tool_result(
        "navigate_to", {"target": "office"}, {"success": True}, _verdict("success", "n1")
    )
    memory.record_tool_result(
        "pick_object", {"object_id": "red_cup"}, {"success": False, "reason": "x"}, _verdict("failure", "p1")
    )
    assert memory.recall_object("red_cup")["found"][0]["state"] == "confirmed"


# ---------------------------------------------------------------------- what the model sees


def _counter() -> Any:
    path = installed_tokenizer_model()
    if path is None:
        return None
    return LocalTokenizer(path)


def test_the_brief_fits_120_tokens_and_names_what_matters_first(tmp_path: Path) -> None:
    lines = ["# World", "", "## Objects"]
    for i in range(40):
        lines.append(
            f"- thing_{i}_mug | kind: mug | where: shelf_{i} | state: confirmed "
            "| confirmed: 2026-01-01T10:00:00Z"
        )
    lines.append(
        "- red_cup | kind: cup | where: kitchen_table | state: stale | confirmed: 2026-01-01T09:00:00Z"
    )
    doc = WorldDocument.parse("\n".join(lines) + "\n")
    now = 1767265200.0  # 2026-01-01T11:00:00Z
    tokenizer = _counter()
    count = tokenizer.count_text if tokenizer is not None else (lambda s: -(-len(s) // 3))
    try:
        brief = render_brief(doc, "Fetch the red cup and a mug.", now, max_tokens=120, count=count)
        assert count(brief) <= 120
        assert brief.index("red_cup (cup) STALE: gone from kitchen_table (2 h ago)") < brief.index("thing_")
        assert brief.count("thing_") < 40  # cut at the budget, not sent whole
    finally:
        if tokenizer is not None:
            tokenizer.close()


# ---------------------------------------------------------------------- the harness


def _call(tool_name: str, call_id: str, **arguments: Any) -> ToolCall:
    return ToolCall(call_id, tool_name, json.dumps(arguments), arguments)


def _reply(*calls: ToolCall) -> ModelReply:
    return ModelReply(text=None, tool_calls=calls, usage=Usage(10, 2), model="scripted")


class Scripted:
    name = "scripted/world"

    def __init__(self, steps: Sequence[ModelReply]) -> None:
        self.steps = list(steps)
        self.requests: list[list[dict[str, Any]]] = []
        self.tools: list[Any] = []

    def complete(
        self, messages: list[dict[str, Any]], *, tools: Any = None, json_mode: bool = False
    ) -> ModelReply:
        self.requests.append(copy.deepcopy(messages))
        self.tools.append(copy.deepcopy(tools))
        if self.steps:
            return self.steps.pop(0)
        finish = {"outcome": "succeeded", "summary": "done"}
        return _reply(_call("finish_task", "f", **finish))


class Judge:
    """An evaluator: confirms a pick/place/navigate unless its run failed."""

    def evaluate(self, *, tool: str, run_id: str, post_condition: str, observation: Observation) -> Verdict:
        ok = not run_id.startswith("fail")
        status = VerdictStatus.SUCCESS if ok else VerdictStatus.FAILURE
        return Verdict(status, run_id, None if ok else "not held", "judge")


def _sim_tools(fail_pick: bool = False) -> list[Any]:
    @tool(description="Drive.", physical=True, evaluated=True, post_condition="there")
    def navigate_to(target: str) -> dict[str, Any]:
        return success(run_id=f"nav-{target}", final_x=1.0, final_y=2.0, final_yaw=0.0)

    @tool(description="Pick.", physical=True, evaluated=True, post_condition="held")
    def pick_object(object_id: str) -> dict[str, Any]:
        if fail_pick:
            return failure("object out of reach", run_id=f"fail-{object_id}", held_object_id="")
        return success(run_id=f"pick-{object_id}", held_object_id=object_id)

    @tool(description="Place.", physical=True, evaluated=True, post_condition="placed")
    def place_object(surface_id: str) -> dict[str, Any]:
        return success(run_id=f"place-{surface_id}", placed_object_id="red_cup")

    return [navigate_to, pick_object, place_object]


def _fetch_script() -> list[ModelReply]:
    return [
        _reply(_call("navigate_to", "c1", target="kitchen_table")),
        _reply(_call("pick_object", "c2", object_id="red_cup")),
        _reply(_call("navigate_to", "c3", target="coffee_table")),
        _reply(_call("place_object", "c4", surface_id="coffee_table")),
    ]


def _run(
    memory: FileMemory, model: Scripted, instruction: str, tools: list[Any], task_id: str
) -> list[HarnessEvent]:
    harness = Harness(model=model, tools=tools, memory=memory, evaluator=Judge())
    return list(harness.run(instruction, task_id=task_id))


def _tool_names(tools: Any) -> list[str]:
    return [definition["function"]["name"] for definition in tools or []]


def test_the_next_task_is_briefed_and_offered_recall_object(tmp_path: Path) -> None:
    memory = _memory(tmp_path / "memory")
    first = Scripted(_fetch_script())
    _run(memory, first, "Fetch the red cup and put it on the coffee table.", _sim_tools(), "task-1")
    assert "recall_object" not in _tool_names(first.tools[0])  # nothing remembered yet
    assert not any("World memory" in str(m.get("content")) for m in first.requests[0])
    second = Scripted([_reply(_call("recall_object", "r1", name="cup"))])
    _run(memory, second, "Bring me the red cup.", _sim_tools(), "task-2")
    assert "recall_object" in _tool_names(second.tools[0])
    brief = [str(m["content"]) for m in second.requests[0] if "World memory" in str(m.get("content"))]
    assert len(brief) == 1 and "red_cup (cup) on coffee_table" in brief[0]
    answer = json.loads(next(str(m["content"]) for m in second.requests[1] if m["role"] == "tool"))
    assert answer["found"][0]["navigate_target"] == "coffee_table"


def test_a_replayed_recording_reproduces_the_world_file(tmp_path: Path) -> None:
    live = _memory(tmp_path / "live")
    events = _run(
        live,
        Scripted(_fetch_script()),
        "Fetch the red cup and put it on the coffee table.",
        _sim_tools(),
        "t1",
    )
    stale_script = [
        _reply(_call("navigate_to", "c1", target="coffee_table")),
        _reply(_call("pick_object", "c2", object_id="red_cup")),
    ]
    events += _run(live, Scripted(stale_script), "Bring the red cup.", _sim_tools(fail_pick=True), "t2")
    recorded = [json.loads(event.to_json()) for event in events]
    consolidation = [e for e in events if e.type is EventType.MEMORY_CONSOLIDATION]
    assert [c["change"] for c in consolidation[1].payload.get("world")["changes"]] == ["moved", "stale"]
    replayed = _memory(tmp_path / "replayed")
    replay_consolidation(rebuild_tasks(recorded), replayed)
    assert replayed.world_path.read_bytes() == live.world_path.read_bytes()
    assert "| state: stale |" in live.world_path.read_text(encoding="utf-8")


def test_the_demo_recording_replays_into_the_same_world_file(tmp_path: Path) -> None:
    texts = []
    for name in ("a", "b"):
        done = subprocess.run(
            [HARNESS_ROS, "replay", str(DATA / "sim_fetch"), "--mode", "consolidate",
             "--model", "harness_demo/scripted", "--memory", str(tmp_path / name)],
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        texts.append((tmp_path / name / "WORLD.md").read_text(encoding="utf-8"))
    assert texts[0] == texts[1]
    doc = WorldDocument.parse(texts[0])
    cup = doc.get("object", "red_cup")
    assert cup is not None and (cup.where, cup.state, cup.kind) == ("coffee_table", "confirmed", "cup")
    # Stamped with the recording's time, not the replay's.
    assert "confirmed: 2026-11-29T18:06:54Z" in texts[0]


@pytest.mark.parametrize("world", [True, False])
def test_world_memory_can_be_switched_off(tmp_path: Path, world: bool) -> None:
    memory = FileMemory(tmp_path, consolidator=NoLessons(), world=world)
    memory.start_task("Fetch the red cup.", task_id="t1")
    memory.record_tool_result(
        "pick_object", {"object_id": "red_cup"}, {"success": True}, _verdict("success", "r")
    )
    memory.finish_task("completed", allowed_tools=["pick_object"])
    assert memory.world_path.exists() is world


def test_memory_show_and_the_report_show_the_world(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from harness_ros.cli import main
    from harness_ros.report.html import render_html
    from harness_ros.report.run import load_run

    memory = _memory(tmp_path / "memory")
    memory.world_path.write_text(OPERATOR_TEXT, encoding="utf-8")
    harness = Harness(
        model=Scripted(
            [
                _reply(_call("navigate_to", "c1", target="kitchen_table")),
                _reply(_call("pick_object", "c2", object_id="red_cup")),
            ]
        ),
        tools=_sim_tools(fail_pick=True),
        memory=memory,
        evaluator=Judge(),
        runs_dir=tmp_path / "runs",
    )
    list(harness.run("Bring the red cup.", task_id="t-report"))
    assert harness.last_run_dir is not None
    html = render_html(load_run(harness.last_run_dir))
    assert "World memory (2 change(s))" in html
    assert "<td>red_cup</td><td>stale</td><td>kitchen_table</td>" in html
    assert main(["memory", "show", "--memory", str(tmp_path / "memory"), "--no-model"]) == 0
    out = capsys.readouterr().out
    assert "red_cup (cup) STALE: gone from kitchen_table" in out
    assert "line 7: field 'state'" in out  # the malformed line, named


@pytest.mark.ros
@pytest.mark.slow
def test_the_demo_over_dds_writes_the_world_and_a_replay_of_its_events_reproduces_it(
    tmp_path: Path, ros_env: dict[str, str]
) -> None:
    """The sim and the node as processes over DDS (``harness-ros demo``): the sim's
    evaluator confirms the fetches, WORLD.md says where the two objects ended up, and the
    recorded events replayed in consolidate mode write the same file."""
    from support.processes import run_orchestrator

    workdir = tmp_path / "demo"
    done = run_orchestrator(
        [sys.executable, "-m", "harness_ros.cli", "demo", "--workdir", str(workdir)], env=ros_env, timeout=150
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    written = (workdir / "memory" / "WORLD.md").read_text(encoding="utf-8")
    doc = WorldDocument.parse(written)
    cup, bottle = doc.get("object", "red_cup"), doc.get("object", "green_bottle")
    assert cup is not None and (cup.where, cup.state) == ("coffee_table", "confirmed"), written
    assert bottle is not None and (bottle.where, bottle.state) == ("kitchen_table", "confirmed"), written
    events: list[dict[str, Any]] = []
    for folder in (workdir / "runs").iterdir():
        events += [json.loads(line) for line in (folder / "events.jsonl").read_text().splitlines()]
    events.sort(key=lambda event: event["time"])
    replayed = _memory(tmp_path / "replayed")
    replay_consolidation(rebuild_tasks(events), replayed)
    assert replayed.world_path.read_text(encoding="utf-8") == written
