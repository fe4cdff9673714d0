"""``harness-ros eval --robot stretch3-physics`` with a model that takes no images (issue 45).

The physics config's ``evaluator.kind: model`` would need a vision model; with a text-only
model (here a model server on this machine, as the offline 1.5B is: ``--model
openai/loopback --api-base``, answering with the scripted fetch) the eval runs the node with
``evaluator.kind: checks``: every physical tool it evaluates gets its verdict from the pose
or grasp check on the robot's state topics, no model is asked for a verdict and no image is
sent. The physics, the node, the harness and the eval are real; only the decisions are
scripted.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from support.processes import run_orchestrator

from harness_ros.testing.loopback_llm import LoopbackLLMServer
from harness_ros_sim.physics.scripted import scripted_physics_reply

pytestmark = [pytest.mark.ros, pytest.mark.slow, pytest.mark.serial]

CLI = [sys.executable, "-m", "harness_ros.cli"]


def _purpose(body: dict[str, Any]) -> str:
    content = body["messages"][0].get("content", "")
    if isinstance(content, list):
        content = "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content).splitlines()[0].removeprefix("# harness_ros:").strip()


def test_a_text_only_model_gets_every_physical_verdict_from_the_checks(
    tmp_path: Path, ros_env: dict[str, str]
) -> None:
    pytest.importorskip("mujoco", reason="pip install -r requirements.txt -c constraints.txt")
    pytest.importorskip("harness_sim_msgs", reason="build it first: scripts/build_interfaces.sh .venv")
    pytest.importorskip("nav2_msgs", reason="the test stand-ins: make test-interfaces")
    workdir = tmp_path / "eval"
    env = {**ros_env, "OPENAI_API_KEY": "not-a-real-key"}
    with LoopbackLLMServer(scripted_physics_reply) as server:
        command = [
            *CLI, "eval", "--robot", "stretch3-physics", "--episodes", "1", "--workdir", str(workdir),
            "--model", "openai/loopback", "--api-base", server.url,
        ]  # fmt: skip
        result = run_orchestrator(command, env=env, timeout=300)
        requests = list(server.requests)
    output = result.stdout[-4000:] + result.stderr[-4000:]
    assert result.returncode == 0, output
    assert "evaluator: kind checks ('openai/loopback' takes no images)" in result.stdout, output
    data = json.loads((workdir / "physics_eval.json").read_text())
    assert data["evaluator_kind"] == "checks" and data["measures_learning"] is True
    assert [r["success"] for r in data["episodes_run"]] == [True, True], data["episodes_run"]

    # No model was asked for a verdict, and no request carried an image.
    assert requests and not [b for b in requests if _purpose(b).startswith("evaluate")]
    assert "image_url" not in json.dumps(requests)

    # Every evaluated physical tool got its verdict from a deterministic check.
    verdicts: list[dict[str, Any]] = []
    for events in sorted(workdir.glob("memory_*/runs/*/events.jsonl")):
        for line in events.read_text(encoding="utf-8").splitlines():
            event = json.loads(line)
            if event.get("type") == "verdict" and "tool" in event.get("data", {}):
                verdicts.append(event["data"])
    assert len(verdicts) == 8, verdicts  # two arms: drive, pick, drive, place
    for data_ in verdicts:
        verdict = data_["verdict"]
        assert verdict["status"] == "success", data_
        expected = {
            "navigate_to_pose": "pose check: ",
            "pick_object": "grasp check: holding: ",
            "place_object": "grasp check: empty: ",
        }[data_["tool"]]
        assert verdict["evidence"].startswith(expected), data_
