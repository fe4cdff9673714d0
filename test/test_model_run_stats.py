"""bench/model_run_stats.py: the figures it reads from a task's events."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "bench" / "model_run_stats.py"


def _stats_module() -> Any:
    spec = importlib.util.spec_from_file_location("model_run_stats", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _event(kind: str, time: float, **data: Any) -> str:
    return json.dumps({"type": kind, "time": time, "task_id": "t1", "data": data})


def _reply(time: float, calls: list[dict[str, Any]], prompt: int, cached: int, text: str = "") -> str:
    usage = {"prompt_tokens": prompt, "cached_prompt_tokens": cached}
    return _event("model_response", time, model="openai/qwen", text=text, tool_calls=calls, usage=usage)


def test_calls_recoveries_reminders_times_and_outcome(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "work" / "runs" / "task-1"
    folder.mkdir(parents=True)
    lines = [
        _event("task_started", 0.0, instruction="Fetch the red cup."),
        _event("observation", 1.0),
        _reply(101.0, [{"name": "navigate_to", "recovered_from_text": True}], 1700, 0),
        _event("observation", 110.0),
        _reply(120.0, [], 1900, 1600, text=""),
        _event("reminder", 120.5, reminder=1),
        _event("observation", 121.0),
        _reply(127.0, [{"name": "pick_object"}], 2000, 1900),
        "not json",
        _event("done", 130.0, status="completed", outcome="failed", finished_by="finish_task", reason="",
               goal_verdict={"status": "failure"}),
    ]  # fmt: skip
    (folder / "events.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    stats = _stats_module()
    (row,) = [stats.task_stats(f) for f in stats.task_folders([tmp_path / "work"])]
    assert (row["calls"], row["recovered_from_text"], row["empty_replies"], row["reminders"]) == (2, 1, 1, 1)
    assert (row["first_decision_s"], row["later_decision_median_s"]) == (100.0, 8.0)
    assert row["later_decision_range_s"] == [6.0, 10.0]
    assert row["first_prompt_tokens"] == 1700 and row["later_cached_share"] == round(3500 / 3900, 2)
    assert (row["outcome"], row["ground_truth"], row["finished_by"]) == ("failed", "failure", "finish_task")
    assert stats.main([str(tmp_path / "work")]) == 0
    out = capsys.readouterr().out
    assert "calls 2 (recovered from text 1), empty replies 1, reminders 1" in out
    assert stats.main([str(tmp_path / "nothing")]) == 1
