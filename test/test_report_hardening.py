"""The HTML report refuses non-regular image files and survives hostile numbers (issue 16)."""

from __future__ import annotations

import base64
import json
import os
import re
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest

from harness_ros.report import render_html
from harness_ros.report.run import load_run


def jpeg(colour: tuple[int, int, int]) -> bytes:
    ok, encoded = cv2.imencode(".jpg", np.full((12, 16, 3), colour, dtype=np.uint8))
    assert ok
    return encoded.tobytes()


def write_events(run: Path, events: list[dict[str, Any]]) -> None:
    # json.dumps writes NaN/Infinity as bare tokens, which json.loads (and the report) accept.
    (run / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")


def page_of(run: Path) -> str:
    return render_html(load_run(run))


def observation(turn: int, **extra: Any) -> dict[str, Any]:
    view = {"name": "front", "width": 16, "height": 12, "age_s": 0.1, "freshness": "age 0.10 s"}
    return {
        "type": "observation",
        "task_id": "t",
        "turn": turn,
        "time": 1.0,
        "data": {"views": [view], **extra},
    }


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="needs symlinks")
def test_a_turn_image_symlink_is_not_inlined(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    secret = tmp_path / "secret.jpg"
    secret.write_bytes(jpeg((0, 200, 0)))
    (run / "turn_1_front.jpg").symlink_to(secret)  # named like the run's own image
    (run / "turn_2_front.jpg").write_bytes(jpeg((0, 0, 200)))
    write_events(
        run, [observation(1, images=["turn_1_front.jpg"]), observation(2, images=["turn_2_front.jpg"])]
    )
    page = page_of(run)
    inlined = [base64.b64decode(src) for src in re.findall(r'src="data:image/jpeg;base64,([^"]+)"', page)]
    assert inlined == [(run / "turn_2_front.jpg").read_bytes()]
    assert "image file turn_1_front.jpg is missing" in page
    # Also when the file list comes from the folder (an older run log without "images").
    write_events(run, [observation(1)])
    assert "base64" not in page_of(run)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_named_like_an_image_does_not_block(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    os.mkfifo(run / "turn_1_front.jpg")
    write_events(run, [observation(1, images=["turn_1_front.jpg"])])
    assert "image file turn_1_front.jpg is missing" in page_of(run)


HOSTILE = [float("inf"), float("-inf"), float("nan"), 10**400, 1e308, -(10**30)]


@pytest.mark.parametrize("number", HOSTILE, ids=repr)
def test_hostile_numbers_in_events_render(tmp_path: Path, number: Any) -> None:
    run = tmp_path / "run"
    run.mkdir()
    clearance = {d: number for d in ("forward", "left", "backward", "right")} | {"age_s": number}
    depth = {"age_s": number, "regions": [{"name": "centre", "nearest_m": number, "median_m": number}]}
    events = [
        {"type": "task_started", "task_id": "t", "turn": None, "time": number, "data": {"max_turns": number}},
        {"type": "turn", "task_id": "t", "turn": 1, "time": number, "data": {"elapsed_s": number}},
        observation(1, clearance=clearance, depth=depth),
        {
            "type": "tool_result",
            "task_id": "t",
            "turn": 1,
            "time": 2.0,
            "data": {"tool": "drive", "elapsed_s": number, "result": {"success": True, "d": number}},
        },
        {
            "type": "done",
            "task_id": "t",
            "turn": None,
            "time": number,
            "data": {"status": "completed", "elapsed_s": number, "turns": number},
        },
        {
            "type": "memory_consolidation",
            "task_id": "t",
            "turn": None,
            "time": 3.0,
            "data": {"pending": number},
        },
    ]
    write_events(run, events)
    page = page_of(run)
    assert page.startswith("<!DOCTYPE html>") and page.endswith("</html>\n")
    assert "<dt>Duration</dt><dd>unknown</dd>" in page or "<dt>Duration</dt><dd>0.0 s</dd>" in page
    assert "forward unknown" in page
