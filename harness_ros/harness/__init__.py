"""The agentic loop: a Harness runs one task at a time and reports typed events."""

from __future__ import annotations

from harness_ros.harness.factory import build_harness, build_hooks
from harness_ros.harness.loop import Harness, new_task_id
from harness_ros.harness.prompts import DECIDE_HEADER, DECIDE_PROMPT
from harness_ros.harness.runlog import RunLog

__all__ = [
    "DECIDE_HEADER",
    "DECIDE_PROMPT",
    "Harness",
    "RunLog",
    "build_harness",
    "build_hooks",
    "new_task_id",
]
