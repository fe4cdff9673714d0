"""``harness-ros eval --robot stretch3-physics`` (issue 45, item 2): the learning eval's two
arms on Stretch 3 in MuJoCo, reset through /sim/reset, judged from /sim/ground_truth."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from support.processes import run_orchestrator

from harness_ros.memory.world import WORLD_FILE, WorldDocument
from harness_ros_sim.physics.scripted import (
    PHYSICS_FETCH,
    PHYSICS_INSTRUCTION,
    PHYSICS_PLACES,
    scripted_physics_reply,
)
from harness_ros_sim.ros.physics_eval_runner import physics_success

CLI = [sys.executable, "-m", "harness_ros.cli"]


def _body(purpose: str, results: list[dict[str, Any]]) -> dict[str, Any]:
    messages: list[dict[str, Any]] = [{"role": "system", "content": f"# harness_ros: {purpose}\n..."}]
    messages += [{"role": "tool", "content": json.dumps(result)} for result in results]
    return {"messages": messages}


def test_the_scripted_physics_fetch_steps_on_and_stops_at_a_failure() -> None:
    calls = []
    results: list[dict[str, Any]] = []
    for _ in PHYSICS_FETCH:
        reply = scripted_physics_reply(_body("decide", results))
        calls.append(reply["tool_calls"][0]["name"])
        results.append({"success": True})
    assert tuple(calls) == tuple(name for name, _ in PHYSICS_FETCH)
    done = scripted_physics_reply(_body("decide", results))["tool_calls"][0]
    assert (done["name"], done["arguments"]["outcome"]) == ("finish_task", "succeeded")
    failed = scripted_physics_reply(
        _body("decide", [{"success": True}, {"success": False, "reason": "slipped"}])
    )
    assert failed["tool_calls"][0]["arguments"]["outcome"] == "failed"
    assert json.loads(scripted_physics_reply(_body("evaluate", [])))["status"] == "success"
    assert json.loads(scripted_physics_reply(_body("consolidate", []))) == {
        "memory_entries": [],
        "tool_experience_entries": [],
    }
    assert "red cup" in PHYSICS_INSTRUCTION and "kitchen counter" in PHYSICS_INSTRUCTION


def test_physics_success_reads_the_physics_ground_truth() -> None:
    placed = {"objects": {"red_cup": {"on": "kitchen_counter"}}, "robot": {"holding": ""}}
    assert physics_success(placed)[0]
    held = {"objects": {"red_cup": {"on": "kitchen_counter"}}, "robot": {"holding": "red_cup"}}
    assert not physics_success(held)[0]
    on_table = {"objects": {"red_cup": {"on": "dining_table"}}, "robot": {"holding": ""}}
    ok, check = physics_success(on_table)
    assert not ok and "'dining_table'" in check
    assert not physics_success({})[0]


def test_the_moved_objects_suite_is_refused_on_the_physics_robot(tmp_path: Path) -> None:
    result = subprocess.run(
        [*CLI, "eval", "--robot", "stretch3-physics", "--suite", "moved-objects", "--workdir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 1
    assert "--suite moved-objects runs on the kinematic sim only" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.serial
@pytest.mark.ros
@pytest.mark.slow
def test_one_scripted_episode_per_arm_on_the_physics_robot(tmp_path: Path, ros_env: dict[str, str]) -> None:
    """Both arms succeed by the physics' ground truth; the second arm's pick at the dining
    table works only because /sim/reset put the cup back after the first arm moved it."""
    pytest.importorskip("mujoco", reason="pip install -r requirements.txt -c constraints.txt")
    pytest.importorskip("harness_sim_msgs", reason="build it first: scripts/build_interfaces.sh .venv")
    pytest.importorskip("nav2_msgs", reason="the test stand-ins: make test-interfaces")
    workdir = tmp_path / "eval"
    result = run_orchestrator(
        [*CLI, "eval", "--robot", "stretch3-physics", "--episodes", "1", "--workdir", str(workdir)],
        env=ros_env,
        timeout=240,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    data = json.loads((workdir / "physics_eval.json").read_text())
    assert data["measures_learning"] is False and data["disclaimer"]
    assert data["instruction"] == PHYSICS_INSTRUCTION
    rows = data["episodes_run"]
    assert [(r["arm"], r["episode"]) for r in rows] == [("memory_on", 0), ("memory_off", 0)]
    for row in rows:
        assert row["success"] and row["status"] == "completed", row
        assert row["check"].startswith("red_cup on 'kitchen_counter'"), row
    assert (
        data["arms"]["memory_on"]
        == data["arms"]["memory_off"]
        == {
            "episodes": 1,
            "fetches_done": 1,
            "failed_picks": 0,
            "turns": rows[0]["turns"],
        }
    )
    assert rows[0]["memory_dir"] != rows[1]["memory_dir"]
    assert "| memory_on | 1 | 1 | 0 |" in (workdir / "physics_eval.md").read_text()
    # Both arms started with the operator's map (the places and the poses to stop at), the
    # first decision was briefed with it, and the task's evidence kept the poses.
    for row in rows:
        world = WorldDocument.parse((Path(row["memory_dir"]) / WORLD_FILE).read_text(encoding="utf-8"))
        for name, (x, y, _) in PHYSICS_PLACES.items():
            place = world.get("place", name)
            assert place is not None and place.pose is not None, (name, world.text())
            assert (place.pose.x, place.pose.y) == (x, y)
        events = "".join(p.read_text(encoding="utf-8") for p in (workdir / row["arm"]).rglob("events.jsonl"))
        assert "place dining_table (surface) at x 0.20 y 0.00 yaw 0 deg map" in events, row["arm"]
