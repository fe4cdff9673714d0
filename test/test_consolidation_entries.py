"""Consolidation that survives one bad entry (a small model's reply), and says when it failed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness_ros.memory import FileMemory, ModelMemoryConsolidator
from harness_ros.memory.contracts import SECTIONS
from harness_ros.memory.model_policies import _CONSOLIDATE_PROMPT
from harness_ros.model.contracts import ModelReply
from harness_ros_sim.demo.runner import DemoOptions, DemoRunner, TaskOutcome
from harness_ros_sim.demo.scenarios import DEMO_TASKS

GOAL = "Bring the mug to the table. Keep reports short."


class JsonModel:
    """A chat model that answers every request with one fixed JSON reply."""

    name = "test/json"

    def __init__(self, reply: dict[str, Any] | Exception) -> None:
        self.reply = reply

    def complete(self, messages: list[dict[str, Any]], **_: Any) -> ModelReply:
        if isinstance(self.reply, Exception):
            raise self.reply
        return ModelReply(text=json.dumps(self.reply))


def run_task(memory: FileMemory) -> dict[str, Any]:
    memory.start_task(GOAL, task_id="t1")
    memory.record_tool_result(
        "pick_object",
        {"target": "mug"},
        {"success": True, "run_id": "r1"},
        {"status": "success", "run_id": "r1", "failure_reason": None, "evidence": "held"},
    )
    return memory.finish_task("completed", allowed_tools=["pick_object"])


def test_a_section_written_as_all_three_drops_only_that_entry(tmp_path: Path) -> None:
    reply = {
        "memory_entries": [
            # What Qwen2.5-Coder-1.5B wrote: the prompt's enum copied as one string.
            {
                "section": "Preferences|Conventions|General Lessons",
                "text": "Keep reports short.",
                "confidence": 0.9,
            },
            {"section": "General Lessons", "text": "Re-observe after every base motion.", "confidence": 0.9},
            "not an object",
            {"section": "General Lessons", "text": "<one sentence>", "confidence": 0.9},
        ],
        "tool_experience_entries": [
            {
                "tool": "pick_object",
                "outcome": "success",
                "text": "Grasp mugs by the handle.",
                "confidence": 0.9,
            }
        ],
    }
    memory = FileMemory(tmp_path, consolidator=ModelMemoryConsolidator(JsonModel(reply)))
    result = run_task(memory)
    assert result["error"] is None
    assert (result["memory_written"], result["tool_experience_written"], result["rejected"]) == (1, 1, 3)
    dropped = {d["reason"] for d in result["decisions"] if d["rule"] == "invalid_entry"}
    assert dropped == {
        "memory_entries[0]: unknown section 'Preferences|Conventions|General Lessons' "
        "(expected exactly one of ['Preferences', 'Conventions', 'General Lessons'])",
        "memory_entries: item 3 of the reply must be an object, got str",
        "memory_entries[2]: text '<one sentence>' is a placeholder copied from the prompt's example",
    }
    assert "Re-observe after every base motion." in memory.memory_path.read_text(encoding="utf-8")
    audited = [r for r in memory.audit_records() if r.get("rule") == "invalid_entry"]
    assert len(audited) == 3 and all(r["reason"] for r in audited)


def test_the_prompt_lists_each_section_on_its_own_line() -> None:
    prompt = _CONSOLIDATE_PROMPT.format(threshold=0.75)
    assert "|" not in prompt  # nothing to copy as one joined string
    for section in SECTIONS:
        assert f'\n  "{section}"\n' in prompt
    example = prompt[prompt.index("Example, one entry of each kind:") :].splitlines()
    assert any('"section": "General Lessons"' in line for line in example)


def _summary(tmp_path: Path, *, status: str = "completed") -> str:
    lines: list[str] = []
    runner = DemoRunner(DemoOptions(workdir=tmp_path / "demo"), write=lines.append)
    runner._print_learning([TaskOutcome(DEMO_TASKS[0], status, task_id="t1")])
    return "\n".join(lines)


def test_the_demo_summary_says_when_consolidation_failed(tmp_path: Path) -> None:
    from harness_ros.errors import LLMError

    memory = FileMemory(
        tmp_path / "demo" / "memory", consolidator=ModelMemoryConsolidator(JsonModel(LLMError("model down")))
    )
    assert run_task(memory)["error"]
    text = _summary(tmp_path)
    assert "consolidation failed: LLMError: model down" in text
    assert "nothing new proposed" not in text


def test_the_demo_summary_names_the_reason_an_entry_was_dropped(tmp_path: Path) -> None:
    reply = {"memory_entries": [{"section": "Preferences|Conventions", "text": "x y z", "confidence": 0.9}]}
    memory = FileMemory(tmp_path / "demo" / "memory", consolidator=ModelMemoryConsolidator(JsonModel(reply)))
    run_task(memory)
    text = _summary(tmp_path)
    assert "- rejected [MEMORY.md Preferences|Conventions] 'x y z'" in text
    assert "rule invalid_entry: memory_entries[0]: unknown section 'Preferences|Conventions'" in text


def test_the_demo_summary_says_a_task_that_did_not_complete_was_not_consolidated(tmp_path: Path) -> None:
    text = _summary(tmp_path, status="failed")
    assert "not consolidated: task status failed" in text
    assert "nothing new proposed" not in text
