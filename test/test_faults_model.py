"""Fault tests: the model endpoint is down, slow past its timeout, returns garbage or
invalid tool calls, or fails during consolidation.

One real harness node process serves every scenario (its model points at a
FaultyModelServer whose behaviour is switched between tasks); tasks are sent with
``harness-ros task`` (a subprocess for the first, ``follow_task`` for the rest). Each
failing task must end ``failed``/``aborted`` with a clear reason, leave memory
untouched, and the node must serve the next task; a consolidation that failed after a
completed task is kept and retried when a later task completes.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.waiting import ProcessLines

from harness_ros.commands.task import EXIT_FAILED
from harness_ros.testing.loopback_llm import finish_reply

pytest.importorskip("rclpy")

from support.fault_llm import FaultyModelServer

pytestmark = pytest.mark.ros

MODEL_TIMEOUT_S = 2.0
GREEN = "Prefer green cups."  # the operator's own words (provenance)
TIDY = "Keep the kitchen counter clear."


def consolidation(text: str) -> str:
    entry = {"section": "Preferences", "text": text, "confidence": 0.9}
    return json.dumps({"memory_entries": [entry], "tool_experience_entries": []})


class NodeProcess:
    """``harness-ros node`` in its own process; stderr lines are collected."""

    def __init__(self, config: Path, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "harness_ros.cli", "node", "--config", str(config)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.output = ProcessLines(self.proc, self.proc.stderr)
        self.lines = self.output.lines

    def wait_for(self, text: str, timeout_s: float) -> bool:
        return bool(self.output.wait_for(text, timeout_s))

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(subprocess.signal.SIGINT)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@pytest.fixture
def rig(tmp_path: Path, ros_env: dict[str, str]) -> Iterator[tuple[FaultyModelServer, NodeProcess, Path]]:
    server = FaultyModelServer()
    config = tmp_path / "harness.yaml"
    config.write_text(
        f"""
model:
  model: openai/fault-model
  api_base: {server.url}
  api_key_env: FAULT_MODEL_KEY
  timeout_s: {MODEL_TIMEOUT_S}
  max_retries: 0
memory:
  dir: memory
  consolidator: model
harness:
  max_turns: 5
  task_timeout_s: 60
  runs_dir: runs
graph_check_timeout_s: 0
""",
        encoding="utf-8",
    )
    node = NodeProcess(config, {**ros_env, "FAULT_MODEL_KEY": "not-a-real-key"})
    try:
        assert node.wait_for("active: send a task", 60.0), "\n".join(node.lines)
        yield server, node, tmp_path / "memory"
    finally:
        node.stop()
        server.close()


def memory_state(root: Path) -> dict[str, bytes]:
    """Every durable file of the memory folder (Task Notes exist only during a task)."""
    return {
        str(path.relative_to(root)): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file() and path.name != "TASK_NOTES.md"
    }


def run_task(instruction: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    from harness_ros.commands.task import follow_task

    events: list[dict[str, Any]] = []
    done = follow_task(instruction, timeout_s=60.0, connect_timeout_s=30.0, printer=events.append)
    return done, events


def memory_event(events: list[dict[str, Any]]) -> dict[str, Any]:
    (event,) = [e for e in events if e["type"] == "memory_consolidation"]
    return dict(event["data"])


def test_model_faults_fail_tasks_cleanly_node_survives_and_consolidation_is_retried(
    rig: tuple[FaultyModelServer, NodeProcess, Path], ros_env: dict[str, str]
) -> None:
    server, node, memory = rig
    before = memory_state(memory)

    # 1. endpoint down: connection refused, through the real CLI
    server.down()
    task = subprocess.run(
        [sys.executable, "-m", "harness_ros.cli", "task", "bring the cup", "--json",
         "--connect-timeout", "30"],
        env=ros_env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    server.up()
    assert task.returncode == EXIT_FAILED, task.stderr
    events = [json.loads(line) for line in task.stdout.splitlines() if line.startswith("{")]
    done = events[-1]["data"]
    assert done["status"] == "failed"
    assert done["reason"].startswith("model provider failed: Model call failed"), done
    assert "Connection" in done["reason"], done
    assert memory_event(events)["skipped"] is True
    assert memory_state(memory) == before

    # 2. slow past the model timeout
    server.script("decide", [{"delay_s": MODEL_TIMEOUT_S + 3.0, "content": "too late"}])
    done, events = run_task("bring the cup")
    assert done["status"] == "failed"
    assert "model provider failed" in done["reason"] and "Timeout" in done["reason"], done
    assert done["elapsed_s"] < MODEL_TIMEOUT_S + 3.0  # gave up at the timeout, not when the reply came
    assert memory_state(memory) == before

    # 3. garbage: a non-JSON body, then an HTTP 500
    for reply, marker in (
        ({"garbage": "<html>oops"}, "model provider failed"),
        ({"status": 500}, "InternalServerError"),
    ):
        server.script("decide", [reply])
        done, events = run_task("bring the cup")
        assert done["status"] == "failed", done
        assert done["reason"].startswith("model provider failed"), done
        assert marker in done["reason"], done
        assert memory_state(memory) == before

    # 4. invalid tool calls: an unknown tool, then unparseable arguments
    server.script(
        "decide",
        [
            {"tool_calls": [{"name": "no_such_tool", "arguments": {}}]},
            {"tool_calls": [{"name": "no_such_tool", "arguments": "{not json"}]},
        ],
    )
    done, events = run_task("bring the cup")
    assert done["status"] == "aborted", done
    assert done["reason"].startswith("3 malformed decisions in a row"), done
    results = [e["data"]["result"] for e in events if e["type"] == "tool_result"]
    assert len(results) == 3 and all(r["success"] is False and r["reason"] for r in results)
    assert memory_state(memory) == before

    # 5. the task completes but its consolidation fails: nothing written, trajectory kept
    server.script("decide", [finish_reply("I will remember that you prefer green cups.")])
    server.script("consolidate", [{"status": 500}])
    done, events = run_task("remember that I prefer green cups")
    assert done["status"] == "completed", done
    consolidated = memory_event(events)
    assert consolidated["error"] and consolidated["pending"] == 1, consolidated
    assert not (memory / "MEMORY.md").exists()
    assert len(list((memory / "pending").glob("*.json"))) == 1

    # 6. the next completed task consolidates, then retries the pending one
    server.script("decide", [finish_reply("Noted: the counter stays clear.")])
    server.script("consolidate", [consolidation(TIDY), consolidation(GREEN)])
    done, events = run_task("keep the kitchen counter clear")
    assert done["status"] == "completed", done
    consolidated = memory_event(events)
    assert consolidated["error"] is None and consolidated["memory_written"] == 1, consolidated
    assert consolidated["pending_retried"] == 1 and consolidated["pending"] == 0, consolidated
    text = (memory / "MEMORY.md").read_text(encoding="utf-8")
    assert f"- [user-preference] {TIDY}" in text and f"- [user-preference] {GREEN}" in text
    assert not list((memory / "pending").glob("*.json"))

    assert node.proc.poll() is None, "the node died"
    assert not any("Traceback" in line for line in node.lines), "\n".join(node.lines)
