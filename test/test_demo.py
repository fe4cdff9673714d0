"""``harness-ros demo`` end to end: sim + harness node as processes, two fetch tasks, memory.

One run with the scripted demo policy (the litellm custom provider, what ``make demo``
runs) and one through the loopback OpenAI-compatible server (the real HTTP path),
whose replies come from the same pure policy functions.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from support.processes import run_orchestrator

from harness_ros.memory import FileMemory
from harness_ros.memory.rules import DEFAULT_TRANSIENT_RULES, first_match
from harness_ros.testing.loopback_llm import LoopbackLLMServer
from harness_ros_sim.demo.decide import POLICY_LABEL
from harness_ros_sim.demo.lessons import PICK_OUT_OF_REACH_FAILURE
from harness_ros_sim.demo.policy import scripted_reply
from harness_ros_sim.demo.scenarios import apartment_vocabulary

pytestmark = [pytest.mark.ros, pytest.mark.slow]

CLI = [sys.executable, "-m", "harness_ros.cli"]


def _demo(workdir: Path, env: dict[str, str], *extra: str) -> subprocess.CompletedProcess[str]:
    return run_orchestrator([*CLI, "demo", "--workdir", str(workdir), *extra], env=env, timeout=150)


def _runs(workdir: Path) -> list[dict[str, Any]]:
    """Per task, in order: its events and trajectory."""
    runs = []
    for folder in (workdir / "runs").iterdir():
        events = [json.loads(line) for line in (folder / "events.jsonl").read_text().splitlines()]
        trajectory = json.loads((folder / "trajectory.json").read_text())
        runs.append({"folder": folder, "events": events, "trajectory": trajectory})
    return sorted(runs, key=lambda run: run["events"][0]["time"])


def _done(run: dict[str, Any]) -> dict[str, Any]:
    return next(e["data"] for e in run["events"] if e["type"] == "done")


def _check_memory(workdir: Path, first_task: str) -> FileMemory:
    memory = FileMemory(workdir / "memory")
    ledger = memory.ledger_entries("pick_object")
    assert ledger["failure"] == [PICK_OUT_OF_REACH_FAILURE]
    assert ledger["success"], "no pick_object Success lesson"
    audit = [r for r in memory.audit_records() if r.get("event") == "proposal"]
    failure_lessons = [r for r in audit if r.get("tool") == "pick_object" and r.get("outcome") == "failure"]
    assert [(r["task_id"], r["accepted"], r["rule"]) for r in failure_lessons] == [
        (first_task, True, "accepted")
    ]
    # Nothing transient: no rule matches, and no object/surface id of the world is in memory.
    names = (*apartment_vocabulary().objects, *apartment_vocabulary().surfaces)
    written = memory.memory_path.read_text() + "".join(
        memory.ledger_path(tool).read_text() for tool in memory.ledger_tools()
    )
    for record in audit:
        if record["accepted"]:
            assert first_match(DEFAULT_TRANSIENT_RULES, record["text"]) is None, record
    assert not [name for name in names if name in written]
    return memory


def _check_first_task(run: dict[str, Any]) -> None:
    events = run["trajectory"]["events"]
    picks = [e for e in events if e["tool"] == "pick_object"]
    assert "object out of reach" in picks[0]["result"]["reason"]
    assert picks[-1]["verdict"]["status"] == "success"  # the failure was later confirmed fixed


def test_scripted_demo_end_to_end(tmp_path: Path, ros_env: dict[str, str]) -> None:
    workdir = tmp_path / "demo"
    result = _demo(workdir, ros_env)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    assert f"decisions: the {POLICY_LABEL}" in result.stdout
    assert (
        "rule accepted: a pick_object failure was later followed by an evaluator-confirmed" in result.stdout
    )

    first, second = _runs(workdir)
    assert [_done(first)["status"], _done(second)["status"]] == ["completed", "completed"]
    # The sim evaluator checked each goal (the object on the target surface) after finish_task.
    assert [_done(first)["outcome"], _done(second)["outcome"]] == ["succeeded", "succeeded"]
    assert (
        result.stdout.count("outcome: SUCCEEDED (the model claimed succeeded; the evaluator's goal check")
        == 2
    )
    assert POLICY_LABEL in _done(first)["report"]
    # Task 1 says "a cup": two objects match, so the robot asked and the runner answered.
    assert "QUESTION for the operator: The instruction fits 2 objects." in result.stdout
    assert "operator answered: The red cup, from the kitchen table." in result.stdout
    assert "operator (the demo runner, through harness-ros answer): answered q-" in result.stdout
    asks = [e for e in first["trajectory"]["events"] if e["tool"] == "ask_operator"]
    assert [e["result"]["answer"] for e in asks] == ["The red cup, from the kitchen table."]
    _check_first_task(first)
    _check_memory(workdir, first["events"][0]["task_id"])

    # Task 2: its pick_object definition carried the summary (the policy quotes what it got),
    # so it approached the bottle first and no pick failed.
    summary = json.loads((workdir / "memory" / ".summary_cache.json").read_text())["pick_object"]["summary"]
    assert "object itself" in summary
    decision = next(e["data"] for e in second["events"] if e["type"] == "model_response")
    assert f"Experience from earlier tasks for pick_object says: <<{summary[:200]}" in decision["text"]
    assert decision["tool_calls"][0]["arguments"] == {"target": "green_bottle"}
    assert all(e["result"]["success"] for e in second["trajectory"]["events"])

    bag = workdir / "recording"
    assert (bag / "metadata.yaml").is_file()
    replay = subprocess.run(
        [*CLI, "replay", str(bag), "--mode", "consolidate", "--dry-run", "--model", "harness_demo/scripted"],
        env=ros_env,
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )
    assert replay.returncode == 0, replay.stdout + replay.stderr
    assert "2 task(s)" in replay.stdout
    assert "accepted tool_experience [pick_object/failure]" in replay.stdout


def test_demo_through_the_loopback_model_server(tmp_path: Path, ros_env: dict[str, str]) -> None:
    def reply(body: dict[str, Any]) -> dict[str, Any]:
        return scripted_reply(body["messages"], body.get("tools"))

    env = {**ros_env, "OPENAI_API_KEY": "not-a-real-key"}
    workdir = tmp_path / "loopback"
    with LoopbackLLMServer(reply) as server:
        result = _demo(
            workdir,
            env,
            "--model",
            "openai/loopback",
            "--api-base",
            server.url,
            "--no-record",
            "--sim-speed",
            "4",
        )
        requests = list(server.requests)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    assert "decisions: model 'openai/loopback' through litellm" in result.stdout
    assert not (workdir / "recording").exists()

    first, second = _runs(workdir)
    assert [_done(first)["status"], _done(second)["status"]] == ["completed", "completed"]
    _check_first_task(first)
    _check_memory(workdir, first["events"][0]["task_id"])
    # The wire proves it: task 2's decide requests carry the experience in pick_object's definition.
    task2 = [
        r
        for r in requests
        if r["messages"][0]["content"].startswith("# harness_ros: decide")
        and "green bottle" in json.dumps(r["messages"])
    ]
    assert task2
    pick = next(t for t in task2[0]["tools"] if t["function"]["name"] == "pick_object")
    assert "Experience from earlier tasks:" in pick["function"]["description"]
    assert PICK_OUT_OF_REACH_FAILURE in pick["function"]["description"]
    purposes = {r["messages"][0]["content"].split("\n", 1)[0] for r in requests}
    assert {"# harness_ros: decide", "# harness_ros: consolidate", "# harness_ros: summarize"} <= purposes
