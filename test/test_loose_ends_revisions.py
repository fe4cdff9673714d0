"""Every entry point's revisions are budgeted (issue 47, item 10, loose end): the in-process
``Harness.revise`` takes at most task_api.max_revisions_per_task revisions and
task_api.max_revision_chars_per_task characters of them per task, as the node's ~/revise
does (it now goes through the same budget), and says why it refused one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness_ros.config import TaskApiConfig, config_from_dict
from harness_ros.events import EventType
from harness_ros.harness import Harness, build_harness
from harness_ros.model.contracts import ModelReply, ToolCall, Usage
from harness_ros.tools import success, tool


def _call(name: str, **arguments: Any) -> ModelReply:
    call = ToolCall(f"id_{name}", name, json.dumps(arguments), arguments)
    return ModelReply(text=None, tool_calls=(call,), usage=Usage(10, 2), model="scripted")


class FloodingModel:
    """At its first decision it sends ``revisions`` through ``harness.revise`` (what an
    in-process caller may do), then looks; at the second it finishes."""

    name = "scripted/test"

    def __init__(self, revisions: list[str]) -> None:
        self.harness: Harness | None = None
        self.revisions = revisions
        self.answers: list[str | None] = []
        self.requests: list[list[dict[str, Any]]] = []

    def complete(
        self, messages: list[dict[str, Any]], *, tools: Any = None, json_mode: bool = False
    ) -> ModelReply:
        self.requests.append(messages)
        if len(self.requests) == 1:
            assert self.harness is not None
            self.answers = [self.harness.revise(text) for text in self.revisions]
            return _call("look")
        return _call("finish_task", outcome="succeeded", summary="done")


@tool(description="Look around.")
def look() -> dict[str, Any]:
    return success(seen="a table")


def _run(harness: Harness, model: FloodingModel) -> list[Any]:
    model.harness = harness
    return list(harness.run("tidy the table"))


def test_harness_revise_refuses_revisions_past_the_count_limit() -> None:
    model = FloodingModel([f"also take cup {i}" for i in range(300)])
    harness = Harness(model=model, tools=[look])  # no limits given: the task_api defaults
    events = _run(harness, model)
    limit = TaskApiConfig().max_revisions_per_task
    assert model.answers[:limit] == [None] * limit
    refused = model.answers[limit:]
    assert len(refused) == 300 - limit
    assert all(answer and "task_api.max_revisions_per_task" in answer for answer in refused)
    applied = [e.payload.get("instruction") for e in events if e.type is EventType.REVISION]
    assert applied == [f"also take cup {i}" for i in range(limit)]
    second = json.dumps(model.requests[1])
    assert "also take cup 15" in second and "also take cup 16" not in second


def test_harness_revise_takes_the_configured_character_budget(tmp_path: Path) -> None:
    model = FloodingModel(["x" * 600, "y" * 600, "z" * 100])
    config = config_from_dict(
        {
            "task_api": {"max_revision_chars_per_task": 1000},
            "memory": {"dir": str(tmp_path / "memory")},
            "harness": {"runs_dir": str(tmp_path / "runs")},
        },
        base_dir=tmp_path,
        origin="test",
    )
    harness = build_harness(config, model=model, tools=[look])
    _run(harness, model)
    first, second, third = model.answers
    assert first is None and third is None
    assert second is not None and "task_api.max_revision_chars_per_task" in second
    assert "400 of its 1,000 characters" in second
    # a new task starts afresh
    model2 = FloodingModel(["w" * 900])
    harness.model = model2
    _run(harness, model2)
    assert model2.answers == [None]
