"""Nothing disappears silently: ledger summary fallback, the Resident memory budget,
audit rotation, run-folder and recording retention (issue 16)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from harness_ros.config import HarnessConfig, HarnessLimits
from harness_ros.errors import LLMError
from harness_ros.events import EventType
from harness_ros.harness import Harness, build_harness
from harness_ros.memory import FileMemory
from harness_ros.model.contracts import ModelReply, ToolCall, Usage
from harness_ros.progress import format_event
from harness_ros.report import render_html
from harness_ros.report.run import load_run
from harness_ros.retention import RUN_MARKER, mark_recording, prune_recordings, prune_run_folders
from harness_ros.tools import success, tool

LEDGER = "# Tool Experience: pick_object\n\n## Success\n- Grasp mugs by the handle.\n## Failure\n"


class Final:
    """A model that ends every task at once, and keeps what it was shown."""

    name = "test/final"

    def __init__(self) -> None:
        self.requests: list[tuple[list[dict[str, Any]], Any]] = []

    def complete(
        self, messages: list[dict[str, Any]], *, tools: Any = None, json_mode: bool = False
    ) -> ModelReply:
        self.requests.append((messages, tools))
        finish = ToolCall("c1", "finish_task", '{"outcome": "succeeded", "summary": "done"}', None)
        finish = ToolCall(finish.id, finish.name, finish.arguments_json, json.loads(finish.arguments_json))
        return ModelReply(text=None, tool_calls=(finish,), usage=Usage())


@tool(description="Pick an object.")
def pick_object(target: str) -> dict[str, Any]:
    return success(picked=target)


def summarised_then_changed(root: Path) -> None:
    """A ledger with a cached summary, then changed (so the cache no longer matches)."""

    class Summarizer:
        def summarize(self, tool: str, *, success: list[str], failure: list[str]) -> str:
            return "Grasp mugs by the handle."

    (root / "tool_experience").mkdir(parents=True)
    (root / "tool_experience" / "pick_object.md").write_text(LEDGER)
    assert FileMemory(root, tool_experience_summarizer=Summarizer()).tool_experience_summaries(
        ["pick_object"]
    )
    (root / "tool_experience" / "pick_object.md").write_text(LEDGER + "- Re-centre before closing.\n")


# ---------------------------------------------------------------- ledger summary fallback


def test_consolidator_none_falls_back_to_the_cached_summary_with_an_event(tmp_path: Path) -> None:
    memory_dir = tmp_path / "memory"
    summarised_then_changed(memory_dir)
    config = HarnessConfig.model_validate(
        {
            "memory": {"dir": str(memory_dir), "consolidator": "none"},
            "harness": {"runs_dir": str(tmp_path / "runs")},
        }
    )
    model = Final()
    harness = build_harness(config, tools=[pick_object], model=model)
    events = list(harness.run("bring the mug", task_id="t1"))
    [notice] = [e for e in events if e.type is EventType.MEMORY_NOTICE]
    assert (
        notice.payload.get("notice") == "ledger_summary_fallback"
        and notice.payload.get("tool") == "pick_object"
    )
    assert [e.type for e in events[:2]] == [EventType.TASK_STARTED, EventType.MEMORY_NOTICE]
    # The tool definition still carries the (last cached) experience.
    tools = json.dumps(model.requests[0][1])
    assert "Grasp mugs by the handle." in tools
    line = format_event(notice.to_dict())
    assert line is not None and line.startswith("memory WARNING: ledger of pick_object changed")
    page = render_html(load_run(tmp_path / "runs" / "t1"))
    assert "Memory warnings at task start" in page and "ledger_summary_fallback" in page


def test_summariser_failure_without_a_cache_carries_the_lessons_as_written(tmp_path: Path) -> None:
    class Broken:
        def summarize(self, tool: str, *, success: list[str], failure: list[str]) -> str:
            raise LLMError("summary reply has no non-empty 'summary'")

    (tmp_path / "tool_experience").mkdir()
    (tmp_path / "tool_experience" / "pick_object.md").write_text(LEDGER)
    memory = FileMemory(tmp_path, tool_experience_summarizer=Broken())
    memory.start_task("bring the mug")
    summaries = memory.tool_experience_summaries(["pick_object"])
    assert summaries == {"pick_object": "What worked: Grasp mugs by the handle."}
    [notice] = memory.take_notices()
    assert notice["notice"] == "ledger_lessons_as_written" and "no non-empty" in notice["reason"]
    assert memory.take_notices() == []


def test_no_summariser_leaves_a_changed_ledger_out_and_says_so(tmp_path: Path) -> None:
    # Without a summariser configured, ledger lines are never pasted in place of a summary.
    (tmp_path / "tool_experience").mkdir()
    (tmp_path / "tool_experience" / "pick_object.md").write_text(LEDGER)
    memory = FileMemory(tmp_path)
    memory.start_task("bring the mug")
    assert memory.tool_experience_summaries(["pick_object"]) == {}
    [notice] = memory.take_notices()
    assert notice["notice"] == "ledger_omitted"


def test_summariser_failure_uses_the_last_cached_summary(tmp_path: Path) -> None:
    class Broken:
        def summarize(self, tool: str, *, success: list[str], failure: list[str]) -> str:
            raise LLMError("provider down")

    summarised_then_changed(tmp_path)
    memory = FileMemory(tmp_path, tool_experience_summarizer=Broken())
    assert memory.tool_experience_summaries(["pick_object"]) == {"pick_object": "Grasp mugs by the handle."}
    assert [n["notice"] for n in memory.take_notices()] == ["ledger_summary_fallback"]


# ---------------------------------------------------------------- Resident memory budget


def memory_file(root: Path, lessons: int) -> None:
    lines = [
        "# Memory",
        "",
        "## Preferences",
        "- [user-preference] Cups go on the left shelf.",
        "## Conventions",
    ]
    lines += ["- Knock before entering a bedroom.", "## General Lessons", "- Operator pinned: look twice."]
    lines += [f"- [general-lesson] Lesson number {'x' * 10} {i:03d} about grasping." for i in range(lessons)]
    root.mkdir(parents=True, exist_ok=True)
    (root / "MEMORY.md").write_text("\n".join(lines) + "\n")


def test_budget_leaves_out_oldest_model_lessons_never_operator_text(tmp_path: Path) -> None:
    memory_file(tmp_path, 40)
    unbounded = FileMemory(tmp_path).resident_memory()
    memory = FileMemory(tmp_path, resident_budget_chars=800)
    text = memory.resident_memory()
    assert len(text) <= 800 < len(unbounded)
    for kept in (
        "Cups go on the left shelf.",
        "Knock before entering a bedroom.",
        "Operator pinned: look twice.",
    ):
        assert kept in text
    assert "039 about" in text and "000 about" not in text  # newest kept, oldest left out
    [notice] = memory.take_notices()
    assert notice["notice"] == "resident_budget_exceeded" and notice["left_out"] > 0
    assert f"({notice['left_out']} older general lesson(s) not shown: memory budget)" in text
    assert "Lesson number xxxxxxxxxx 000" in (tmp_path / "MEMORY.md").read_text()  # file untouched


def test_operator_text_over_budget_is_all_kept_and_warned(tmp_path: Path) -> None:
    memory_file(tmp_path, 3)
    memory = FileMemory(tmp_path, resident_budget_chars=60)
    text = memory.resident_memory()
    assert "Cups go on the left shelf." in text and "Operator pinned: look twice." in text
    [notice] = memory.take_notices()
    assert "the operator's own entries alone take" in notice["message"]


def test_within_budget_nothing_changes(tmp_path: Path) -> None:
    memory_file(tmp_path, 3)
    assert (
        FileMemory(tmp_path, resident_budget_chars=8000).resident_memory()
        == FileMemory(tmp_path).resident_memory()
    )


# ---------------------------------------------------------------- retention


def test_audit_is_rotated_by_size_and_read_across_generations(tmp_path: Path) -> None:
    memory = FileMemory(tmp_path, audit_max_bytes=2000, audit_keep=2)
    for index in range(60):
        memory._audit([{"event": "test", "n": index, "pad": "p" * 40}])
    files = sorted(path.name for path in tmp_path.glob("audit.jsonl*"))
    assert files == ["audit.jsonl", "audit.jsonl.1", "audit.jsonl.2"]
    assert all(path.stat().st_size <= 2000 for path in tmp_path.glob("audit.jsonl*"))
    numbers = [record["n"] for record in memory.audit_records()]
    assert numbers == sorted(numbers) and numbers[-1] == 59 and numbers[0] > 0  # oldest dropped


def test_run_folders_keep_the_newest(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    (runs / "operator-notes").mkdir(parents=True)  # not a run folder: never touched
    harness = Harness(model=Final(), tools=[pick_object], limits=HarnessLimits(runs_keep=3), runs_dir=runs)
    for index in range(5):
        list(harness.run("go", task_id=f"task-{index}"))
        os.utime(runs / f"task-{index}", (1000 + index, 1000 + index))
    assert sorted(p.name for p in runs.iterdir()) == ["operator-notes", "task-2", "task-3", "task-4"]


def fake_recording(folder: Path) -> Path:
    """What the recorder leaves: its marker, metadata.yaml and one storage file."""
    folder.mkdir()
    mark_recording(folder)
    (folder / "metadata.yaml").write_text("rosbag2_bagfile_information: {}\n", encoding="utf-8")
    (folder / f"{folder.name}.mcap").write_bytes(b"\x89MCAP0\r\n")
    return folder


def test_recordings_keep_the_newest_and_only_their_family(tmp_path: Path) -> None:
    for index, name in enumerate(["bag", "bag_100", "bag_200", "bag_300", "bagpipes", "bag_x"]):
        fake_recording(tmp_path / name)
        os.utime(tmp_path / name, (1000 + index, 1000 + index))
    removed = prune_recordings(tmp_path / "bag", 2)
    assert sorted(p.name for p in removed) == ["bag", "bag_100"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bag_200", "bag_300", "bag_x", "bagpipes"]


def test_a_folder_at_record_path_that_is_not_a_recording_survives(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # Finding: with record.keep 1, prune_recordings removed whatever sat at record.path.
    notes = tmp_path / "bag"
    notes.mkdir()
    (notes / "calibration.yaml").write_text("operator's file\n", encoding="utf-8")
    caplog.set_level("INFO", logger="harness_ros.retention")
    assert prune_recordings(notes, 0) == []  # record.keep 1: the new recording plus 0 earlier
    assert (notes / "calibration.yaml").read_text(encoding="utf-8") == "operator's file\n"
    assert f"not removing {notes}" in caplog.text and "not a recording harness_ros wrote" in caplog.text


def test_a_marked_recording_holding_other_files_survives(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    bag = fake_recording(tmp_path / "bag")
    (bag / "notes.txt").write_text("kept\n", encoding="utf-8")
    (bag / "extra").mkdir()
    older = fake_recording(tmp_path / "bag_100")
    os.utime(older, (1000, 1000))
    caplog.set_level("INFO", logger="harness_ros.retention")
    assert prune_recordings(tmp_path / "bag", 0) == [older]
    assert (bag / "notes.txt").is_file()
    assert "which the recorder did not write" in caplog.text


def test_a_run_folder_the_harness_did_not_create_survives(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    (runs / "operator-log").mkdir(parents=True)
    (runs / "operator-log" / "events.jsonl").write_text("{}\n", encoding="utf-8")  # looks like a run
    harness = Harness(model=Final(), tools=[pick_object], limits=HarnessLimits(runs_keep=1), runs_dir=runs)
    list(harness.run("go", task_id="task-0"))
    list(harness.run("go", task_id="task-1"))
    assert sorted(p.name for p in runs.iterdir()) == ["operator-log", "task-1"]
    assert (runs / "task-1" / RUN_MARKER).is_file()


def test_retention_never_follows_a_symlink(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    (outside / "keep").mkdir(parents=True)
    (outside / "events.jsonl").write_text("")
    runs = tmp_path / "runs"
    runs.mkdir()
    (runs / "link").symlink_to(outside, target_is_directory=True)
    assert prune_run_folders(runs, 0) == []
    assert (outside / "keep").is_dir()


@pytest.mark.parametrize("key", ["resident_budget_chars", "audit_max_bytes", "audit_keep"])
def test_config_keys_exist_with_safe_defaults(key: str) -> None:
    value = getattr(HarnessConfig().memory, key)
    assert value is not None and value > 0
    assert HarnessConfig().harness.runs_keep > 0 and HarnessConfig().record.keep > 0
