"""Verdicts from measured robot state over ROS: a real odometry and localizer publisher
process, the node's own state subscriptions and the Nav2 preset's requested pose."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from support.spinning_node import release_node
from support.waiting import wait_for

from harness_ros.config import load_config
from harness_ros.evaluation import EvaluationGate, ModelEvaluator, VerdictStatus
from harness_ros.model.contracts import ModelReply
from harness_ros.observation.contracts import Observation

REPO = Path(__file__).resolve().parents[1]
PUBLISHER = REPO / "test" / "support" / "state_publisher.py"
CLI = [sys.executable, "-m", "harness_ros.cli"]


class StatePublisher:
    def __init__(self, env: dict[str, str], *args: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(PUBLISHER), *args],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        assert self.proc.stdout.readline().strip() == "publishing", self.proc.stderr

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.communicate(timeout=10)


class ScriptedVision:
    def __init__(self, *replies: str) -> None:
        self.replies = list(replies)
        self.requests: list[str] = []

    def complete(self, messages: Any, *, tools: Any = None, json_mode: bool = False) -> ModelReply:
        self.requests.append(messages[1]["content"][0]["text"])
        return ModelReply(text=self.replies.pop(0), model="scripted/vision")


@pytest.fixture
def robot(ros_context: Any) -> Iterator[tuple[Any, Any, dict[str, Any]]]:
    """The robot_nav2 config's state subscriptions and tools on a spinning node."""
    from rclpy.executors import MultiThreadedExecutor
    from rclpy.node import Node

    from harness_ros.ros.robot_state import RosRobotState
    from harness_ros.ros.ros_tools import build_ros_tools

    config = load_config(REPO / "config" / "robot_nav2.yaml")
    node = Node("evidence_test", context=ros_context)
    executor = MultiThreadedExecutor(context=ros_context)
    spinner: threading.Thread | None = None
    # Everything after the node is inside the try: a setup that fails must not leave the
    # node on the graph for the next test (test_graph_check_hints saw it). Its tools'
    # action clients keep it there too unless destroyed: release_node does.
    try:
        state = RosRobotState(node, config.evaluator.state)
        tools = {tool.spec.name: tool for tool in build_ros_tools(node, config.tools)}
        executor.add_node(node)
        spinner = threading.Thread(target=executor.spin, daemon=True)
        spinner.start()
        yield config, state, tools
    finally:
        release_node(node, executor, spinner)


def test_navigation_is_judged_against_the_measured_pose(
    robot: tuple[Any, Any, dict[str, Any]], ros_env: dict[str, str]
) -> None:
    config, state, tools = robot
    navigate = tools["navigate_to_location"]
    requested = navigate.requested_pose({"location": "kitchen"})  # kitchen: x 4.2, y -1.5, yaw 90
    assert (requested.frame, requested.x, requested.y) == ("map", 4.2, -1.5)
    vision = ScriptedVision()  # the pose check asks no model: an empty script proves it
    gate = EvaluationGate(
        ModelEvaluator(vision), max_segments=5, evidence=config.evaluator.evidence, state=state
    )

    def judge() -> Any:
        return gate.judge(
            navigate.spec,
            "nav-1",
            Observation(time=0.0),
            arguments={"location": "kitchen"},
            requested_pose=requested,
        )

    nothing = judge()
    assert nothing.status is VerdictStatus.FAILURE
    assert nothing.failure_reason == "no measured pose: nothing received on '/amcl_pose'"

    arrived = StatePublisher(ros_env, "--x", "4.3", "--y", "-1.45", "--yaw-deg", "84")
    try:
        # the verdict reads the pose and the odometry: wait for both (they arrive in either order)
        assert wait_for(lambda: not any(r.missing for r in state.read_state(["base_pose", "odom"])), 20.0)
        verdict = judge()
        assert verdict.status is VerdictStatus.SUCCESS, verdict
        assert "within 0.11 m and 6.0 deg of the request, stopped" in verdict.evidence
    finally:
        arrived.kill()

    moving = StatePublisher(ros_env, "--x", "4.2", "--y", "-1.5", "--yaw-deg", "90", "--speed", "0.4")
    try:
        assert wait_for(lambda: (state.read_state(["odom"])[0].linear_speed_m_s or 0) > 0.3, 20.0)
        verdict = judge()
        assert verdict.status is VerdictStatus.FAILURE
        assert "the base is still moving at 0.40 m/s" in (verdict.failure_reason or "")
    finally:
        moving.kill()
    assert vision.requests == []


def test_the_model_evaluator_reads_the_measured_pose_and_the_gripper(
    robot: tuple[Any, Any, dict[str, Any]], ros_env: dict[str, str]
) -> None:
    config, state, tools = robot
    reply = json.dumps(
        {"status": "failure", "failure_reason": "the gripper is not reported", "evidence": "-"}
    )
    vision = ScriptedVision(
        reply, json.dumps({"status": "success", "failure_reason": None, "evidence": "dock"})
    )
    gate = EvaluationGate(
        ModelEvaluator(vision), max_segments=5, evidence=config.evaluator.evidence, state=state
    )
    publisher = StatePublisher(ros_env, "--x", "0.0", "--y", "0.0", "--yaw-deg", "0")
    try:
        # the goal check below reads the pose and the odometry: wait for both (two topics,
        # two first messages that arrive in either order)
        assert wait_for(lambda: not any(r.missing for r in state.read_state(["base_pose", "odom"])), 20.0)
        close = tools["close_gripper"]
        verdict = gate.judge(close.spec, "grip-1", Observation(time=0.0), arguments={})
        assert verdict.status is VerdictStatus.FAILURE
        (tool_request,) = vision.requests
        assert "The gripper holds an object." in tool_request
        assert (
            "state 'gripper' (joint_states on '/joint_states', nothing received on '/joint_states')"
            in tool_request
        )
        assert "base_pose" not in tool_request  # close_gripper's evidence names the gripper only
        goal = gate.judge_task("Go to the dock.", [], "t1", Observation(time=0.0))
        assert goal is not None and goal.status is VerdictStatus.SUCCESS
        task_request = vision.requests[1]
        assert "state 'base_pose' (pose on '/amcl_pose', age " in task_request
        assert "base pose x 0.00 m, y 0.00 m, yaw 0.0 deg in frame 'map'" in task_request
        assert "state 'odom' (odometry on '/odom', age " in task_request
        assert "in frame 'odom'; speed 0.000 m/s" in task_request
    finally:
        publisher.kill()


def test_check_and_the_node_refuse_evidence_for_a_missing_tool(
    tmp_path: Path, ros_env: dict[str, str]
) -> None:
    data = yaml.safe_load((REPO / "config" / "example.yaml").read_text(encoding="utf-8"))
    data["embodiment_profile_file"] = str(REPO / "profiles" / "mobile_manipulator.md")
    data["skills"] = {"dir": str(REPO / "skills")}
    data["memory"] = {"dir": str(tmp_path / "memory")}
    data["harness"] = {**(data.get("harness") or {}), "runs_dir": str(tmp_path / "runs")}
    data["graph_check_timeout_s"] = 0
    data["evaluator"] = {
        "kind": "model",
        "state": {"odom": {"type": "odometry", "topic": "/odom"}},
        "evidence": {"navigate_to_dock": {"state": ["odom"]}},
    }
    path = tmp_path / "robot.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    env = {**ros_env, "HARNESS_MODEL": "openai/gpt-4o-mini", "OPENAI_API_KEY": "sk-not-a-real-key"}
    messages = []
    for command in ("check", "node"):
        result = subprocess.run(
            [*CLI, command, "--config", str(path)],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert result.returncode == 1, result.stdout[-2000:] + result.stderr[-3000:]
        errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
        assert len(errors) == 1, result.stderr[-3000:]
        messages.append(errors[0])
    assert messages[0].startswith(
        "error: evaluator.evidence.navigate_to_dock: no tool named 'navigate_to_dock'"
    )
    assert messages[0] == messages[1]
