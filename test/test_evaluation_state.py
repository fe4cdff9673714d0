"""Evidence for verdicts beyond the views: what was asked and measured robot state.

A navigation post-condition ("the base is stopped at the requested pose") cannot be seen
in a camera view; the evaluator gets the tool's arguments, the pose the goal requested and
the measured base pose with its age (never the tool's result), and a configured pose
check compares the numbers itself. A model evaluator also judges a whole task's goal.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from harness_ros.commands.task import EXIT_SUCCEEDED, EXIT_UNVERIFIED, exit_code
from harness_ros.config import EvaluatorConfig, HarnessLimits, PoseCheckConfig, config_from_dict
from harness_ros.errors import ConfigError
from harness_ros.evaluation import ModelEvaluator, Verdict, VerdictStatus
from harness_ros.evaluation.evidence import Pose2D, StateReading, check_pose, requested_pose_from_goal
from harness_ros.events import EventType, HarnessEvent, Outcome
from harness_ros.harness import Harness
from harness_ros.model.contracts import ModelReply, ToolCall, Usage
from harness_ros.observation.contracts import Observation
from harness_ros.tools import CancelToken, ToolSpec, success
from harness_ros.tools.finish_task import FINISH_TASK

POST = "The robot base is stopped at the requested pose."
CLAIM = "Goal reached, robot docked perfectly"  # the tool's own story: never evidence


# ---------------------------------------------------------------------- fakes
@dataclass
class ScriptedVisionModel:
    """The evaluator's model: records every request, answers from a script."""

    replies: list[str]
    name: str = "scripted/vision"
    calls: list[list[dict[str, Any]]] = field(default_factory=list)

    def complete(
        self, messages: list[dict[str, Any]], *, tools: Any = None, json_mode: bool = False
    ) -> ModelReply:
        self.calls.append(messages)
        return ModelReply(text=self.replies.pop(0), model=self.name)

    def request_text(self, index: int = -1) -> str:
        parts = self.calls[index][1]["content"]
        return "\n".join(p["text"] for p in parts if p["type"] == "text")


class ActingModel:
    """The acting model: navigates once, then finishes with a success claim."""

    name = "scripted/acting"

    def __init__(self, x: float, y: float, yaw: float) -> None:
        arguments = {"x": x, "y": y, "yaw": yaw}
        finish = {"outcome": "succeeded", "summary": "at the goal"}
        self.steps = [
            ModelReply(
                text=None,
                tool_calls=(ToolCall("c1", "navigate", json.dumps(arguments), arguments),),
                usage=Usage(1, 1),
                model=self.name,
            ),
            ModelReply(
                text=None,
                tool_calls=(ToolCall("c2", FINISH_TASK, json.dumps(finish), finish),),
                usage=Usage(1, 1),
                model=self.name,
            ),
        ]

    def complete(self, messages: Any, *, tools: Any = None, json_mode: bool = False) -> ModelReply:
        return self.steps.pop(0) if self.steps else ModelReply(text="done", model=self.name)


class NavigateTool:
    """A navigation tool whose goal names a map pose, as the Nav2 preset's does."""

    spec = ToolSpec(
        name="navigate",
        description="Drive to x, y (m) and yaw (deg) in the map frame.",
        input_schema={
            "type": "object",
            "properties": {"x": {"type": "number"}, "y": {"type": "number"}, "yaw": {"type": "number"}},
            "required": ["x", "y"],
        },
        physical=True,
        evaluated=True,
        post_condition=POST,
    )

    def execute(
        self, arguments: dict[str, Any], *, cancel: CancelToken, feedback: Any = None
    ) -> dict[str, Any]:
        return success(run_id="nav-1", message=CLAIM)

    def requested_pose(self, arguments: dict[str, Any]) -> Pose2D:
        return Pose2D(
            "map", float(arguments["x"]), float(arguments["y"]), math.radians(arguments.get("yaw", 0))
        )


class FakeState:
    """A RobotStateSource with fixed readings."""

    def __init__(self, *readings: StateReading) -> None:
        self.readings = {r.source: r for r in readings}
        self.asked: list[list[str]] = []

    def state_names(self) -> tuple[str, ...]:
        return tuple(self.readings)

    def read_state(self, names: Sequence[str]) -> tuple[StateReading, ...]:
        self.asked.append(list(names))
        return tuple(self.readings[n] for n in names)


def odometry(
    x: float, y: float, yaw_deg: float, *, frame: str = "map", age: float = 0.1, speed: float = 0.0
) -> StateReading:
    return StateReading(
        "base", "odometry", "/odom", 100.0, age, age > 1.0,
        pose=Pose2D(frame, x, y, math.radians(yaw_deg)), linear_speed_m_s=speed, turn_rate_rad_s=0.0,
    )  # fmt: skip


GRIPPER = StateReading(
    "gripper", "joint_states", "/joint_states", 100.0, 0.05, False, joints=(("finger", 0.012),)
)


def evaluator_config(**evidence: Any) -> EvaluatorConfig:
    return EvaluatorConfig.model_validate(
        {
            "kind": "model",
            "state": {
                "base": {"type": "odometry", "topic": "/odom"},
                "gripper": {"type": "joint_states", "topic": "/joint_states", "joints": ["finger"]},
            },
            "evidence": evidence,
        }
    )


def harness(
    tmp_path: Path, vision: ScriptedVisionModel, state: FakeState, config: EvaluatorConfig, *, x: float = 2.0
) -> Harness:
    return Harness(
        model=ActingModel(x, -1.0, 90.0),
        tools=[NavigateTool()],
        evaluator=ModelEvaluator(vision),
        evaluator_config=config,
        robot_state=state,
        runs_dir=tmp_path / "runs",
        limits=HarnessLimits(max_turns=4),
    )


def verdict(status: str, reason: str | None = None) -> str:
    return json.dumps({"status": status, "failure_reason": reason, "evidence": "seen"})


def tool_verdicts(events: list[HarnessEvent]) -> list[dict[str, Any]]:
    return [e.payload.verdict for e in events if e.type is EventType.VERDICT and e.payload.tool]


# ---------------------------------------------------------------------- config
@pytest.mark.parametrize(
    ("evaluator", "message"),
    [
        (
            {"state": {}, "evidence": {"navigate": {"state": ["odom"]}}},
            "evaluator.evidence.navigate.state[0]: unknown state source 'odom'",
        ),
        (
            {
                "state": {"arm": {"type": "joint_states", "topic": "/joint_states"}},
                "evidence": {"navigate": {"pose_check": {"source": "arm"}}},
            },
            "evaluator.evidence.navigate.pose_check.source: 'arm' is a joint_states source",
        ),
        (
            {"state": {"base": {"type": "odometry", "topic": "/odom", "joints": ["j1"]}}},
            "joints is for type 'joint_states'",
        ),
        ({"state": {"base": {"type": "tf", "topic": "/tf"}}}, "evaluator.state.base.type"),
        (
            {
                "state": {"amcl": {"type": "pose", "topic": "/amcl_pose"}},
                "evidence": {"navigate": {"pose_check": {"source": "amcl", "speed_source": "amcl"}}},
            },
            "evaluator.evidence.navigate.pose_check.speed_source: a pose source, not odometry: 'amcl'",
        ),
    ],
)
def test_bad_evidence_config_names_the_key(evaluator: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as err:
        config_from_dict({"evaluator": evaluator}, base_dir=Path("."), origin="robot.yaml")
    assert message in str(err.value)


def test_evidence_for_a_tool_the_harness_lacks_is_refused(tmp_path: Path) -> None:
    config = evaluator_config(navigate_to_pose={"state": ["base"]})
    with pytest.raises(ConfigError, match=r"evaluator.evidence.navigate_to_pose: no tool named"):
        harness(tmp_path, ScriptedVisionModel([]), FakeState(), config)


def test_evidence_travels_as_one_ros_parameter_and_back() -> None:
    from harness_ros.config import config_from_flat, flatten_config

    data = {
        "evaluator": evaluator_config(
            navigate={"state": ["base"], "pose_check": {"source": "base"}}
        ).model_dump()
    }
    config = config_from_dict(data, base_dir=Path("."), origin="robot.yaml")
    flat = flatten_config(config)
    assert isinstance(flat["evaluator.evidence"], str) and isinstance(flat["evaluator.state"], str)
    back = config_from_flat(flat, base_dir=Path("."), origin="parameters")
    assert back.evaluator == config.evaluator


# ---------------------------------------------------------------------- the pose check
LIMITS = PoseCheckConfig(source="base", position_m=0.25, yaw_deg=15.0)
ASKED = Pose2D("map", 2.0, -1.0, math.radians(90.0))


@pytest.mark.parametrize(
    ("reading", "holds", "why"),
    [
        (odometry(2.1, -0.9, 95.0), True, "within 0.14 m and 5.0 deg of the request, stopped"),
        (odometry(2.5, -1.0, 90.0), False, "the base is 0.50 m from the requested pose (limit 0.25 m)"),
        (odometry(2.0, -1.0, 120.0), False, "the heading is 30.0 deg off (limit 15 deg)"),
        (odometry(2.0, -1.0, 90.0, speed=0.3), False, "still moving at 0.30 m/s"),
        (odometry(2.0, -1.0, 90.0, age=3.0), False, "is STALE (age 3.00 s)"),
        (odometry(2.0, -1.0, 90.0, frame="odom"), False, "in frame 'odom', the request in 'map'"),
        (
            StateReading("base", "odometry", "/odom", None, None, True, note="nothing received on '/odom'"),
            False,
            "no measured pose: nothing received on '/odom'",
        ),
    ],
)
def test_pose_check(reading: StateReading, holds: bool, why: str) -> None:
    check = check_pose(ASKED, reading, LIMITS)
    assert check.holds is holds
    assert why in check.reason


def test_pose_check_takes_stopped_from_the_speed_source() -> None:
    amcl = StateReading("amcl", "pose", "/amcl_pose", 100.0, 0.5, False, pose=ASKED)
    limits = PoseCheckConfig(source="amcl", speed_source="base")
    assert check_pose(ASKED, amcl, limits, odometry(9.0, 9.0, 0.0)).holds  # its pose is not used
    moving = check_pose(ASKED, amcl, limits, odometry(0.0, 0.0, 0.0, speed=0.2))
    assert not moving.holds and "still moving at 0.20 m/s" in moving.reason
    stale = check_pose(ASKED, amcl, limits, odometry(0.0, 0.0, 0.0, age=5.0))
    assert not stale.holds and "whether the base stopped is unknown: 'base': STALE" in stale.reason


def test_pose_check_wraps_the_heading_and_needs_a_request() -> None:
    assert check_pose(Pose2D("map", 0, 0, math.radians(179.0)), odometry(0, 0, -179.0), LIMITS).holds
    assert not check_pose(None, odometry(0, 0, 0), LIMITS).holds


def test_requested_pose_from_a_nav2_goal() -> None:
    half = math.sin(math.radians(45.0))
    goal = {
        "pose": {
            "header": {"frame_id": "map", "stamp": {"sec": 0, "nanosec": 0}},
            "pose": {
                "position": {"x": 4.2, "y": -1.5},
                "orientation": {"x": 0, "y": 0, "z": half, "w": half},
            },
        }
    }
    pose = requested_pose_from_goal(goal)
    assert pose is not None and pose.frame == "map" and (pose.x, pose.y) == (4.2, -1.5)
    assert math.isclose(math.degrees(pose.yaw_rad), 90.0)
    assert requested_pose_from_goal({"target": {"x": 1.0}}) is None  # a drive has no pose goal


# ---------------------------------------------------------------------- through the harness
def test_model_evaluator_sees_what_was_asked_and_the_measured_state_not_the_claim(tmp_path: Path) -> None:
    vision = ScriptedVisionModel([verdict("success"), verdict("success")])
    state = FakeState(odometry(2.05, -0.98, 88.0, age=0.12), GRIPPER)
    events = list(harness(tmp_path, vision, state, evaluator_config(navigate={"state": ["base"]})).run("Go."))
    assert tool_verdicts(events)[0]["status"] == "success"
    text = vision.request_text(0)
    assert POST in text
    assert '```json\n{"x": 2.0, "y": -1.0, "yaw": 90.0}\n```' in text  # the request, as data
    assert "requested base pose: x 2.00 m, y -1.00 m, yaw 90.0 deg in frame 'map'" in text
    assert (
        "state 'base' (odometry on '/odom', age 0.12 s): base pose x 2.05 m, y -0.98 m, yaw 88.0 deg "
        "in frame 'map'; speed 0.000 m/s" in text
    )
    assert "gripper" not in text  # only the sources the tool's evidence names
    whole = json.dumps(vision.calls[0])
    assert CLAIM not in whole and "nav-1" not in whole  # never the tool's result or run


def test_without_evidence_config_the_evaluator_gets_the_arguments_only(tmp_path: Path) -> None:
    vision = ScriptedVisionModel([verdict("failure", "no pose can be seen"), verdict("success")])
    state = FakeState(odometry(2.0, -1.0, 90.0))
    events = list(harness(tmp_path, vision, state, evaluator_config()).run("Go."))
    text = vision.request_text(0)
    assert '{"x": 2.0, "y": -1.0, "yaw": 90.0}' in text and "state 'base'" not in text
    assert tool_verdicts(events)[0]["status"] == "failure"


@pytest.mark.parametrize(
    ("measured_x", "status", "reason"),
    [
        (2.1, "success", None),
        (3.0, "failure", "the base is 1.00 m from the requested pose (limit 0.25 m)"),
    ],
)
def test_pose_check_decides_without_the_model(
    tmp_path: Path, measured_x: float, status: str, reason: str | None
) -> None:
    # The only scripted reply is the task goal check's: the tool verdict asks no model.
    vision = ScriptedVisionModel([verdict("success")])
    state = FakeState(odometry(measured_x, -1.0, 90.0))
    config = evaluator_config(navigate={"pose_check": {"source": "base", "position_m": 0.25}})
    events = list(harness(tmp_path, vision, state, config).run("Go."))
    (tool_verdict,) = tool_verdicts(events)
    assert tool_verdict["status"] == status
    assert tool_verdict["evidence"].startswith("pose check: ")
    if reason is not None:
        assert reason in tool_verdict["failure_reason"]
        result = next(e for e in events if e.type is EventType.TOOL_RESULT)
        assert "post-condition not met: the base is 1.00 m" in json.dumps(result.payload.to_data())
    assert len(vision.calls) == 1 and "Task goal to check:" in vision.request_text(0)


# ---------------------------------------------------------------------- the task's goal
@pytest.mark.parametrize(
    ("goal_reply", "outcome", "exit_status"),
    [
        (verdict("success"), Outcome.SUCCEEDED, EXIT_SUCCEEDED),
        (verdict("unknown"), Outcome.UNVERIFIED, EXIT_UNVERIFIED),
        (verdict("failure", "the base is in the kitchen, not at the dock"), Outcome.FAILED, 4),
        ("the robot is probably there", Outcome.FAILED, 4),  # not JSON: fail closed
        (verdict("process"), Outcome.FAILED, 4),  # never a task verdict
        (verdict("unknown", "cannot see"), Outcome.FAILED, 4),  # contradicts itself
    ],
)
def test_model_evaluator_judges_the_task_goal(
    tmp_path: Path, goal_reply: str, outcome: Outcome, exit_status: int
) -> None:
    vision = ScriptedVisionModel([verdict("success"), goal_reply])
    state = FakeState(odometry(2.0, -1.0, 90.0), GRIPPER)
    events = list(
        harness(tmp_path, vision, state, evaluator_config(navigate={"state": ["base"]})).run("Dock.")
    )
    done = events[-1].payload.to_data()
    assert events[-1].type is EventType.DONE
    assert done["outcome"] == outcome.value
    assert exit_code(done) == exit_status
    system, _ = vision.calls[1]
    assert system["content"].startswith("# harness_ros: evaluate a task")
    text = vision.request_text(1)
    assert "Task goal to check:\nDock." in text
    # The goal check reads every configured source: the goal may concern any of them.
    assert "state 'base'" in text and "state 'gripper'" in text and "finger 0.012" in text
    assert "at the goal" not in text  # not the model's summary


def test_goal_check_sends_the_revisions_newest_last() -> None:
    vision = ScriptedVisionModel([verdict("success")])
    result = ModelEvaluator(vision).evaluate_task(
        goal="Go to the dock.",
        revisions=("Go to the kitchen.", "Go to the dock."),
        run_id="t1",
        observation=Observation(time=1.0),
    )
    assert result == Verdict(VerdictStatus.SUCCESS, "t1", None, "seen")
    text = vision.request_text()
    assert text.index("- Go to the kitchen.") < text.index("- Go to the dock.")


def test_goal_check_over_litellm_and_the_loopback_server() -> None:
    from harness_ros.model import LiteLLMModel
    from harness_ros.testing.loopback_llm import LoopbackLLMServer

    with LoopbackLLMServer([verdict("success"), verdict("unknown")]) as server:
        model = LiteLLMModel(
            "openai/loopback", api_base=server.url, api_key="test", max_retries=0, timeout_s=10.0
        )
        evaluator = ModelEvaluator(model)
        observation = Observation(time=1.0, notes=("front view shows the dock",))
        confirmed = evaluator.evaluate_task(goal="Dock.", revisions=(), run_id="t2", observation=observation)
        unknown = evaluator.evaluate_task(goal="Dock.", revisions=(), run_id="t3", observation=observation)
    assert confirmed == Verdict(VerdictStatus.SUCCESS, "t2", None, "seen")
    assert unknown is None
    body = server.requests[0]
    assert body["messages"][0]["content"].startswith("# harness_ros: evaluate a task\n")
    assert "Dock." in body["messages"][1]["content"][0]["text"]
