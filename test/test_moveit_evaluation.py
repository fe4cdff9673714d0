"""An arm move judged by the end-effector pose the robot reports (issue 44, item 4).

The fake move_group (test/support/move_group_server.py) runs in another process and also
publishes the end effector's geometry_msgs/PoseStamped, at the target or off it; the
harness's own state subscription reads it and ``evaluator.evidence.<tool>.arm_pose_check``
compares it with the target of the goal the call sent. move_group reports success every
time: the verdict comes from the measured pose, never from the tool's claim or a model.
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from harness_ros.config import ArmPoseCheckConfig, EvaluatorConfig, HarnessLimits, load_config
from harness_ros.evaluation import EvaluationGate, ModelEvaluator, VerdictStatus
from harness_ros.evaluation.arm_pose import ArmPose, requested_arm_pose_from_goal
from harness_ros.evaluation.evidence import StateReading, check_arm_pose
from harness_ros.events import EventType
from harness_ros.harness import Harness
from harness_ros.model.contracts import ModelReply, ToolCall, Usage
from harness_ros.observation.contracts import Observation
from harness_ros.tools import ToolSpec, success
from harness_ros.tools.contracts import CancelToken
from harness_ros.tools.finish_task import FINISH_TASK
from harness_ros.tools.moveit_goal import built_goal

REPO_ROOT = Path(__file__).resolve().parents[1]
SCRIPT = REPO_ROOT / "test" / "support" / "move_group_server.py"
ROBOT = REPO_ROOT / "config" / "robot_moveit.yaml"
TOPIC = "/tool_pose"
TARGET = {"x": 0.45, "y": -0.2, "z": 0.3, "orientation": "forward"}
FORWARD = (0.0, 0.7071068, 0.0, 0.7071068)
POST_CONDITION = "The gripper is at the requested point in the requested orientation."
EVALUATOR = {
    "state": {"tool_pose": {"type": "pose_stamped", "topic": TOPIC}},
    "evidence": {"move_arm_to_pose": {"arm_pose_check": {"source": "tool_pose", "wait_s": 0.5}}},
}


class NoModel:
    """An evaluator that must not be asked: the pose check decides."""

    def evaluate(self, **_: Any) -> Any:
        raise AssertionError("the model evaluator was asked about an arm move with a pose check")


def wait_until(condition: Callable[[], bool], timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    pause = threading.Event()
    while not condition():
        if time.monotonic() >= deadline:
            return condition()
        pause.wait(0.02)
    return True


def evaluated_tools() -> list[Any]:
    """config/robot_moveit.yaml's tools, move_arm_to_pose evaluated as a user would set it."""
    return [
        tool.model_copy(update={"evaluated": True, "post_condition": POST_CONDITION})
        if tool.name == "move_arm_to_pose"
        else tool
        for tool in load_config(ROBOT).tools
    ]


@pytest.fixture
def arm(ros_env: dict[str, str], ros_context: Any) -> Iterator[Callable[..., Any]]:
    """Starts the fake move_group with pose options; returns (tool, gate, state, server)."""
    from support.processes import ServerProcess
    from support.spinning_node import spinning_node

    from harness_ros.ros.robot_state import RosRobotState
    from harness_ros.ros.ros_tools import build_ros_tools

    servers: list[Any] = []
    with spinning_node(ros_context, "arm_evaluation_test") as node:
        evaluator = EvaluatorConfig.model_validate(EVALUATOR)
        state = RosRobotState(node, evaluator.state)
        tools = {t.spec.name: t for t in build_ros_tools(node, evaluated_tools())}
        gate = EvaluationGate(NoModel(), max_segments=3, evidence=evaluator.evidence, state=state)

        def start(*args: str) -> tuple[Any, EvaluationGate, Any, Any]:
            server = ServerProcess("succeed", {**ros_env, "ROS_DISTRO": "kilted"}, script=SCRIPT, args=args)
            servers.append(server)
            assert server.wait_for_line("ready", 30), server.output
            tool = tools["move_arm_to_pose"]
            assert tool._client.wait_for_server(timeout_sec=10.0), server.output
            return tool, gate, state, server

        try:
            yield start
        finally:
            for server in servers:
                server.stop()
            state.destroy()


def move_and_judge(tool: Any, gate: EvaluationGate) -> Any:
    result = tool.execute(dict(TARGET), cancel=CancelToken())
    ended = time.monotonic()
    assert result["success"] is True, result  # move_group's claim, every time
    requested = tool.requested_pose(dict(TARGET))
    assert isinstance(requested, ArmPose), requested
    return gate.judge(
        tool.spec,
        result["run_id"],
        Observation(time=time.time()),
        arguments=dict(TARGET),
        requested_pose=requested,
        ended_at=ended,
    )


def pose_received(state: Any) -> bool:
    return not state.read_state(["tool_pose"])[0].missing


# --------------------------------------------------------------------------- over DDS


@pytest.mark.ros
def test_a_move_whose_measured_pose_matches_is_a_success(arm: Any) -> None:
    tool, gate, state, server = arm("--pose-topic", TOPIC)
    assert wait_until(lambda: pose_received(state), 10), server.output
    verdict = move_and_judge(tool, gate)
    assert verdict.status is VerdictStatus.SUCCESS, verdict
    assert "end effector within 0.000 m and 0.0 deg of the request (tolerance 0.01 m)" in verdict.evidence


@pytest.mark.ros
def test_a_move_the_server_calls_a_success_but_whose_pose_is_off_fails_with_the_distance(arm: Any) -> None:
    tool, gate, state, server = arm("--pose-topic", TOPIC, "--pose-offset", "0.12")
    assert wait_until(lambda: pose_received(state), 10), server.output
    verdict = move_and_judge(tool, gate)
    assert verdict.status is VerdictStatus.FAILURE, verdict
    assert verdict.failure_reason.startswith(
        "end effector 0.120 m from the requested point (tolerance 0.01 m)"
    ), verdict


@pytest.mark.ros
def test_a_pose_from_before_the_move_ended_is_no_evidence(arm: Any) -> None:
    # The pose publisher stops when the goal arrives: its last pose is the arm at home.
    tool, gate, state, server = arm("--pose-topic", TOPIC, "--pose-stops")
    assert wait_until(lambda: pose_received(state), 10), server.output
    started = time.monotonic()
    verdict = move_and_judge(tool, gate)
    assert verdict.status is VerdictStatus.FAILURE, verdict
    assert "measured before the move ended" in verdict.failure_reason, verdict
    assert time.monotonic() - started < 5.0  # waited wait_s (0.5 s) for a newer one, no more


@pytest.mark.ros
def test_no_pose_at_all_is_a_failure(arm: Any) -> None:
    tool, gate, _, _ = arm()
    verdict = move_and_judge(tool, gate)
    assert verdict.status is VerdictStatus.FAILURE, verdict
    assert verdict.failure_reason == f"no measured end-effector pose: nothing received on {TOPIC!r}"


@pytest.mark.ros
def test_a_pose_in_another_frame_is_not_compared(arm: Any) -> None:
    # At the target's numbers, but in another frame: no transform here, so no verdict of success.
    tool, gate, state, server = arm("--pose-topic", TOPIC, "--pose-frame", "world")
    assert wait_until(lambda: pose_received(state), 10), server.output
    verdict = move_and_judge(tool, gate)
    assert verdict.status is VerdictStatus.FAILURE, verdict
    assert verdict.failure_reason.startswith(
        "the end-effector pose is in frame 'world', the request in 'base_link': they are not compared"
    ), verdict


# --------------------------------------------------------------------------- without ROS


def requested() -> ArmPose:
    binding = next(t for t in load_config(ROBOT).tools if t.name == "move_arm_to_pose")
    pose = requested_arm_pose_from_goal(built_goal(binding, dict(TARGET)))
    assert pose is not None
    return pose


def reading(pose: ArmPose, *, age_s: float = 0.01) -> StateReading:
    return StateReading("tool_pose", "pose_stamped", TOPIC, 100.0, age_s, False, arm_pose=pose)


def test_the_request_is_the_goals_target_with_its_tolerances() -> None:
    pose = requested()
    assert (pose.frame, pose.x, pose.y, pose.z) == ("base_link", 0.45, -0.2, 0.3)
    assert pose.orientation == pytest.approx(FORWARD, abs=1e-6)
    assert pose.position_tolerance_m == 0.01
    assert pose.orientation_tolerance_rad == 0.05
    named = next(t for t in load_config(ROBOT).tools if t.name == "move_arm_to_named")
    assert requested_arm_pose_from_goal(built_goal(named, {"state": "home"})) is None


def test_orientation_and_configured_tolerance() -> None:
    target = requested()
    limits = ArmPoseCheckConfig(source="tool_pose")
    level = ArmPose("base_link", 0.45, -0.2, 0.3, (0.0, 0.0, 0.0, 1.0))
    check = check_arm_pose(target, reading(level), limits, since_end_s=1.0)
    assert not check.holds
    assert check.reason.startswith(
        "end effector turned 90.0 deg from the requested orientation (tolerance 5.0 deg)"
    ), check.reason
    assert check_arm_pose(target, reading(level), limits.model_copy(update={"orientation": False})).holds
    near = ArmPose("base_link", 0.465, -0.2, 0.3, FORWARD)
    assert not check_arm_pose(target, reading(near), limits).holds
    wider = limits.model_copy(update={"position_m": 0.02})
    assert check_arm_pose(target, reading(near), wider).holds
    nan = ArmPose("base_link", math.nan, -0.2, 0.3, FORWARD)
    assert not check_arm_pose(target, reading(nan), wider).holds
    old = check_arm_pose(target, reading(near, age_s=2.0), wider, since_end_s=1.0)
    assert not old.holds and "measured before the move ended" in old.reason


class ArmTool:
    """A MoveIt tool that claims success; its requested pose is the goal's target."""

    spec = ToolSpec(
        name="move_arm_to_pose",
        description="Move the gripper.",
        input_schema={"type": "object", "properties": {"x": {"type": "number"}}},
        physical=True,
        evaluated=True,
        post_condition=POST_CONDITION,
    )

    def execute(self, arguments: dict[str, Any], *, cancel: CancelToken, feedback: Any = None) -> Any:
        return success(run_id="arm-1", message="move_group says SUCCESS")

    def requested_pose(self, arguments: dict[str, Any]) -> ArmPose:
        return requested()


class OneReading:
    def __init__(self, reading: StateReading) -> None:
        self.reading = reading

    def state_names(self) -> tuple[str, ...]:
        return ("tool_pose",)

    def read_state(self, names: Any) -> tuple[StateReading, ...]:
        return tuple(self.reading for _ in names)


class Script:
    """The acting model moves the arm once, then finishes; the evaluator's model answers
    only the task's goal check (the arm verdict asks no model)."""

    name = "scripted"

    def __init__(self, *replies: ModelReply) -> None:
        self.replies = list(replies)

    def complete(self, messages: Any, *, tools: Any = None, json_mode: bool = False) -> ModelReply:
        return self.replies.pop(0)


def call(name: str, arguments: dict[str, Any]) -> ModelReply:
    return ModelReply(
        text=None, tool_calls=(ToolCall(name, name, json.dumps(arguments), arguments),), usage=Usage(1, 1)
    )


@pytest.mark.parametrize(("age_s", "status"), [(0.0, "success"), (0.9, "failure")])
def test_the_harness_passes_the_tools_end_to_the_arm_check(tmp_path: Path, age_s: float, status: str) -> None:
    # 0.9 s old is not stale by max_age_s (1 s) but predates the tool's end: no evidence.
    at_target = ArmPose("base_link", 0.45, -0.2, 0.3, FORWARD)
    config = EvaluatorConfig.model_validate(
        {
            "kind": "model",
            "state": EVALUATOR["state"],
            "evidence": {"move_arm_to_pose": {"arm_pose_check": {"source": "tool_pose", "wait_s": 0}}},
        }
    )
    finish = {"outcome": "succeeded", "summary": "moved"}
    goal_check = json.dumps({"status": "success", "failure_reason": None, "evidence": "seen"})
    harness = Harness(
        model=Script(call("move_arm_to_pose", dict(TARGET)), call(FINISH_TASK, finish)),
        tools=[ArmTool()],
        evaluator=ModelEvaluator(Script(ModelReply(text=goal_check))),
        evaluator_config=config,
        robot_state=OneReading(reading(at_target, age_s=age_s)),
        runs_dir=tmp_path / "runs",
        limits=HarnessLimits(max_turns=3),
    )
    events = list(harness.run("Move the gripper."))
    (tool_verdict,) = [e.payload.verdict for e in events if e.type is EventType.VERDICT and e.payload.tool]
    assert tool_verdict["status"] == status, tool_verdict
    if status == "failure":
        assert "measured before the move ended" in tool_verdict["failure_reason"]


@pytest.mark.parametrize(
    ("evidence", "error"),
    [
        (
            {"arm_pose_check": {"source": "nope"}},
            "evaluator.evidence.move_arm_to_pose.arm_pose_check.source: unknown state source 'nope'",
        ),
        (
            {"arm_pose_check": {"source": "odom"}},
            "evaluator.evidence.move_arm_to_pose.arm_pose_check.source: 'odom' is a odometry "
            "source; it needs type pose_stamped",
        ),
        (
            {"arm_pose_check": {"source": "tool_pose"}, "pose_check": {"source": "odom"}},
            "evaluator.evidence.move_arm_to_pose: set pose_check (the base) or arm_pose_check",
        ),
        (
            {"pose_check": {"source": "tool_pose"}},
            "evaluator.evidence.move_arm_to_pose.pose_check.source: 'tool_pose' is a pose_stamped source",
        ),
    ],
)
def test_config_errors_name_the_key(evidence: dict[str, Any], error: str) -> None:
    state = {
        "tool_pose": {"type": "pose_stamped", "topic": TOPIC},
        "odom": {"type": "odometry", "topic": "/odom"},
    }
    with pytest.raises(ValidationError) as raised:
        EvaluatorConfig.model_validate({"state": state, "evidence": {"move_arm_to_pose": evidence}})
    assert error in str(raised.value)
