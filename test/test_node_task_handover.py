"""The next task is accepted as soon as the previous task's ``done`` can be seen.

The demo once ended ``task 2: rejected`` on a loaded machine: the node published task 1's
``done`` and only then marked the task finished, so a client that sent task 2 on seeing
the ``done`` could land in between and be told "another task is running". The load only
widened that window; this test opens it for certain by sending task 2 from inside the
publication of task 1's ``done`` (an event listener runs in the worker thread, right where
a descheduled worker would sit).
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from harness_ros.events import EventType, HarnessEvent
from harness_ros.harness import Harness
from harness_ros.model.contracts import ModelReply, ToolCall, Usage

pytestmark = pytest.mark.ros


class FinishAtOnce:
    """A scripted model (not a language model): every task ends at its first decision."""

    name = "scripted/finish-at-once"

    def complete(
        self, messages: list[dict[str, Any]], *, tools: Any = None, json_mode: bool = False
    ) -> ModelReply:
        arguments = {"outcome": "succeeded", "summary": "nothing to do"}
        finish = ToolCall(
            "id_finish", "finish_task", '{"outcome": "succeeded", "summary": "nothing to do"}', arguments
        )
        return ModelReply(text=None, tool_calls=(finish,), usage=Usage(10, 5), model=self.name)


def test_a_task_sent_on_seeing_the_previous_done_is_accepted(ros_context: Any, tmp_path: Path) -> None:
    from harness_ros.errors import TaskRejectedError
    from harness_ros.ros.node import HarnessNode

    node = HarnessNode(node_name="harness", context=ros_context)
    try:
        node._harness = Harness(model=FinishAtOnce(), tools=[], runs_dir=tmp_path / "runs")
        node._accepting = True
        second_start: dict[str, Any] = {}
        second_done = threading.Event()
        seen: list[tuple[str, str]] = []

        def on_event(event: HarnessEvent) -> None:
            seen.append((event.task_id, event.type.value))
            if event.type is EventType.DONE and event.task_id == "task-1":
                try:  # what a client does the moment it sees the first task's done
                    second_start["id"] = node.start_task("the second task", "task-2")
                except TaskRejectedError as err:
                    second_start["rejected"] = str(err)
            if event.type is EventType.DONE and event.task_id == "task-2":
                second_done.set()

        node.event_listeners.append(on_event)
        assert node.start_task("the first task", "task-1") == "task-1"
        assert second_done.wait(30.0) or "rejected" in second_start, f"events: {seen}"
        assert second_start == {"id": "task-2"}, f"the second task was refused: {second_start}"
        # The first task's done went out before anything of the second task.
        first_done = seen.index(("task-1", "done"))
        assert all(task_id == "task-1" for task_id, _ in seen[: first_done + 1])
        assert ("task-2", "done") in seen
        assert node.current_task_id is None, "after both dones no task is running"
    finally:
        node._stop_task("test end")
        node.destroy_node()
