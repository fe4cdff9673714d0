"""Token accounting per turn: events, run log, HTML report, the task's final line, eval."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness_ros.harness import Harness
from harness_ros.model.contracts import ModelReply, ToolCall, Usage, count_images
from harness_ros.observation.contracts import Clearance, Observation, ViewImage
from harness_ros.progress import format_event
from harness_ros.report import render_report
from harness_ros.tools import success, tool
from harness_ros_sim.learning_eval import episode_metrics
from harness_ros_sim.learning_eval.contracts import TokenCount

JPEG = b"\xff\xd8\xff\xe0token-frame\xff\xd9"


_FINISH = '{"outcome": "succeeded", "summary": "Waved."}'


class UsageModel:
    """One tool call, then a final report; each reply carries provider-style usage."""

    name = "scripted/tokens"

    def __init__(self) -> None:
        self.replies = [
            ModelReply(
                None,
                (ToolCall("c1", "wave", "{}", {}),),
                Usage(
                    prompt_tokens=1000, completion_tokens=20, cached_prompt_tokens=800, cache_write_tokens=100
                ),
            ),
            ModelReply(
                None,
                (ToolCall("c2", "finish_task", _FINISH, json.loads(_FINISH)),),
                Usage(prompt_tokens=1200, completion_tokens=10, cached_prompt_tokens=1100),
            ),
        ]

    def complete(
        self, messages: list[dict[str, Any]], *, tools: Any = None, json_mode: bool = False
    ) -> ModelReply:
        return self.replies.pop(0)


class TwoViews:
    """An observation with two camera images per turn."""

    def observe(self) -> Observation:
        views = tuple(ViewImage(name, JPEG, 320, 240, 1000.0, 0.1, False) for name in ("front", "wrist"))
        return Observation(
            time=1000.0, views=views, clearance=Clearance(1.5, 0.6, 0.8, 0.6, 1000.0, 0.05, False)
        )

    def observe_after(self, after: float, timeout_s: float) -> Observation:
        return self.observe()


@tool(description="Wave the arm.")
def wave() -> dict[str, Any]:
    return success(waved=True)


def _run(tmp_path: Path) -> tuple[list[dict[str, Any]], Path]:
    harness = Harness(model=UsageModel(), tools=[wave], observations=TwoViews(), runs_dir=tmp_path / "runs")
    events = [event.to_dict() for event in harness.run("wave at me", task_id="tok-1")]
    assert events[-1]["type"] == "done" and events[-1]["data"]["status"] == "completed"
    return events, tmp_path / "runs" / "tok-1"


def test_usage_per_turn_and_totals_in_events_and_run_log(tmp_path: Path) -> None:
    events, folder = _run(tmp_path)
    usages = [event["data"]["usage"] for event in events if event["type"] == "model_response"]
    assert usages == [
        {
            "prompt_tokens": 1000,
            "completion_tokens": 20,
            "cached_prompt_tokens": 800,
            "cache_write_tokens": 100,
            "images": 2,
        },
        {
            "prompt_tokens": 1200,
            "completion_tokens": 10,
            "cached_prompt_tokens": 1100,
            "cache_write_tokens": 0,
            "images": 2,
        },
    ]
    totals = {
        "prompt_tokens": 2200,
        "completion_tokens": 30,
        "cached_prompt_tokens": 1900,
        "cache_write_tokens": 100,
        "images": 4,
    }
    assert events[-1]["data"]["tokens"] == totals
    logged = [json.loads(line) for line in (folder / "events.jsonl").read_text().splitlines()]
    assert [e["data"]["usage"] for e in logged if e["type"] == "model_response"] == usages
    assert logged[-1]["data"]["tokens"] == totals
    # harness-ros eval sums the same events.
    assert episode_metrics(logged).decision_tokens == TokenCount(2200, 30, 1900)
    assert episode_metrics(logged).decision_tokens.to_dict() == {"in": 2200, "out": 30, "cached": 1900}


def test_final_line_and_report_show_tokens(tmp_path: Path) -> None:
    events, folder = _run(tmp_path)
    line = format_event(events[-1])
    assert line == (
        "done: UNVERIFIED, status completed [model claimed succeeded; goal not checked]"
        " | tokens: 2,200 in (1,900 cached), 30 out, 4 images"
    )
    page = render_report(folder)
    assert (
        "Tokens: 1,000 prompt, 800 of them cached (80%), 100 written to the cache; "
        "20 completion; 2 images sent" in page
    )
    assert "Tokens: 1,200 prompt, 1,100 of them cached (92%); 10 completion; 2 images sent" in page
    # A run logged before the accounting existed (no usage, no tokens) still renders and prints.
    assert format_event({"type": "done", "data": {"status": "failed", "reason": "x"}}) == "done: failed (x)"


def test_count_images_counts_image_parts_only() -> None:
    image = {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,AAAA"}}
    messages = [
        {"role": "system", "content": "rules"},
        {"role": "user", "content": [{"type": "text", "text": "obs"}, image, image]},
        {"role": "tool", "content": '{"type": "image_url"}'},
    ]
    assert count_images(messages) == 2
