"""The grasp check (issue 45): a grasp or a release judged from a finger joint, no model.

A close that stops short of closed has something between the fingers; open fingers after
a place have let go. ``evaluator.evidence.<tool>.grasp_check`` makes the harness read the
finger joint of a ``joint_states`` source after the tool and decide by numbers, as the
pose check does for the base; ``evaluator.kind: checks`` runs those checks with no model
at all, so a text-only model gets a verdict for every checked tool.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from harness_ros.config import GraspCheckConfig, HarnessLimits, config_from_dict, load_config
from harness_ros.errors import ConfigError
from harness_ros.evaluation import ChecksEvaluator, EvaluationGate, Verdict, VerdictStatus
from harness_ros.evaluation.evidence import Evidence, StateReading, describe_evidence
from harness_ros.evaluation.grasp import check_grasp
from harness_ros.events import EventType, HarnessEvent
from harness_ros.harness import Harness
from harness_ros.model.contracts import ModelReply, ToolCall, Usage
from harness_ros.observation.contracts import Observation
from harness_ros.tools import CancelToken, ToolSpec, success
from harness_ros.tools.finish_task import FINISH_TASK

REPO = Path(__file__).resolve().parents[1]
FINGER = "joint_gripper_finger_left"
HOLDING = GraspCheckConfig(
    source="arm", joint=FINGER, expect="holding", holding_above=0.0, open_above=0.3, wait_s=0.0
)
EMPTY = HOLDING.model_copy(update={"expect": "empty"})


def arm(
    finger: float | None, *, age: float = 0.05, stale: bool = False, note: str | None = None
) -> StateReading:
    joints = (("joint_lift", 0.78),) + (((FINGER, finger),) if finger is not None else ())
    return StateReading("arm", "joint_states", "/joint_states", 100.0, age, stale, joints=joints, note=note)


# ---------------------------------------------------------------------- the check
@pytest.mark.parametrize(
    ("limits", "finger", "holds", "why"),
    [
        (HOLDING, 0.170, True, f"holding: {FINGER} at 0.170, the fingers stopped short of closed"),
        (HOLDING, -0.350, False, f"not holding: {FINGER} at -0.350, closed at or below 0"),
        (HOLDING, 0.361, False, f"not holding: {FINGER} at 0.361, the fingers are open"),
        (EMPTY, -0.350, True, f"empty: {FINGER} at -0.350, closed on nothing"),
        (EMPTY, 0.361, True, f"empty: {FINGER} at 0.361, the fingers are open: released"),
        (EMPTY, 0.170, False, f"still holding: {FINGER} at 0.170"),
    ],
)
def test_grasp_check_compares_the_finger_with_the_thresholds(
    limits: GraspCheckConfig, finger: float, holds: bool, why: str
) -> None:
    check = check_grasp(arm(finger), limits, since_end_s=0.5)
    assert check.holds is holds, check.reason
    assert check.reason.startswith(why), check.reason
    assert "holding above 0, open at or above 0.3" in check.reason  # the thresholds, named


def test_without_open_above_any_position_above_holding_above_holds() -> None:
    limits = GraspCheckConfig(source="arm", joint=FINGER, expect="holding", holding_above=-0.1)
    assert check_grasp(arm(0.5), limits).holds
    assert not check_grasp(arm(-0.2), limits).holds


@pytest.mark.parametrize(
    ("reading", "since_end", "why"),
    [
        (None, None, "state source 'arm' gave no reading"),
        (
            StateReading(
                "arm",
                "joint_states",
                "/joint_states",
                None,
                None,
                True,
                note="nothing received on '/joint_states'",
            ),
            None,
            f"no measured position of '{FINGER}': nothing received on '/joint_states'",
        ),
        (
            arm(0.17, age=3.0, stale=True),
            None,
            "the joint reading from '/joint_states' is STALE (age 3.00 s)",
        ),
        (
            arm(0.17, age=0.8),
            0.3,
            "the joint states from '/joint_states' are 0.80 s old, measured before the tool ended 0.30 s ago",
        ),
        (
            arm(None, note=f"joints not received yet: {FINGER}"),
            None,
            f"'/joint_states' gave no position of '{FINGER}' (joints not received yet: {FINGER})",
        ),
        (arm(float("nan")), None, f"the position of '{FINGER}' from '/joint_states' is not finite"),
    ],
)
def test_a_missing_stale_or_old_reading_is_never_a_confirmation(
    reading: StateReading | None, since_end: float | None, why: str
) -> None:
    for limits in (HOLDING, EMPTY):
        check = check_grasp(reading, limits, since_end_s=since_end)
        assert not check.holds
        assert check.reason.startswith(why), check.reason


# ---------------------------------------------------------------------- config
STATE = {
    "arm": {"type": "joint_states", "topic": "/joint_states", "joints": ["joint_lift", FINGER]},
    "odom": {"type": "odometry", "topic": "/odom"},
}
GRASP = {"source": "arm", "joint": FINGER, "expect": "holding", "holding_above": 0.0, "open_above": 0.3}


@pytest.mark.parametrize(
    ("grasp", "extra", "message"),
    [
        (
            {"joint": "joint_gripper_finger_right"},
            {},
            "evaluator.evidence.pick.grasp_check.joint: 'joint_gripper_finger_right' is not in "
            "evaluator.state.arm.joints (joint_lift, joint_gripper_finger_left)",
        ),
        (
            {"source": "gripper"},
            {},
            "evaluator.evidence.pick.grasp_check.source: unknown state source 'gripper' "
            "(evaluator.state has: arm, odom)",
        ),
        (
            {"source": "odom"},
            {},
            "evaluator.evidence.pick.grasp_check.source: 'odom' is a odometry source; a grasp "
            "check needs type joint_states",
        ),
        ({"expect": "empty", "open_above": None}, {}, "open_above: required with expect 'empty'"),
        ({"open_above": -0.1}, {}, "open_above: -0.1 must be above holding_above (0)"),
        ({"expect": "gripped"}, {}, "evaluator.evidence.pick.grasp_check.expect"),
        ({"holding_above": float("nan")}, {}, "evaluator.evidence.pick.grasp_check.holding_above"),
        (
            {},
            {"pose_check": {"source": "odom"}},
            "evaluator.evidence.pick: set pose_check (the base) or arm_pose_check (the arm) or "
            "grasp_check (the gripper), one of them, not pose_check and grasp_check",
        ),
    ],
)
def test_bad_grasp_check_config_names_the_key(
    grasp: dict[str, Any], extra: dict[str, Any], message: str
) -> None:
    evidence = {"pick": {"grasp_check": {**GRASP, **grasp}, **extra}}
    with pytest.raises(ConfigError) as err:
        config_from_dict(
            {"evaluator": {"kind": "checks", "state": STATE, "evidence": evidence}},
            base_dir=Path("."),
            origin="robot.yaml",
        )
    assert message in str(err.value)
    if "grasp_check" in message and "." in message.split(":", maxsplit=1)[0]:
        assert "robot.yaml" in str(err.value)


def test_a_joint_states_source_without_a_joint_list_takes_any_joint() -> None:
    state = {"arm": {"type": "joint_states", "topic": "/joint_states"}}
    config = config_from_dict(
        {"evaluator": {"state": state, "evidence": {"pick": {"grasp_check": GRASP}}}},
        base_dir=Path("."),
        origin="robot.yaml",
    )
    assert config.evaluator.evidence["pick"].grasp_check == GraspCheckConfig.model_validate(GRASP)


def test_the_physics_config_judges_pick_and_place_by_the_grasp_check() -> None:
    evidence = load_config(REPO / "config" / "robots" / "stretch3_physics.yaml").evaluator.evidence
    pick, place = evidence["pick_object"].grasp_check, evidence["place_object"].grasp_check
    assert pick is not None and (pick.joint, pick.expect) == (FINGER, "holding")
    assert place is not None and (place.joint, place.expect) == (FINGER, "empty")
    # measured on the physics sim: closed on nothing -0.35, grasps 0.11-0.19, open 0.36
    for limits in (pick, place):
        assert -0.35 < limits.holding_above < 0.11 and limits.open_above is not None
        assert 0.19 < limits.open_above < 0.36


# ---------------------------------------------------------------------- through the harness
class PickTool:
    """An evaluated pick whose own claim is success, whatever the gripper holds."""

    spec = ToolSpec(
        name="pick",
        description="Pick an object.",
        input_schema={"type": "object", "properties": {"object_id": {"type": "string"}}},
        physical=True,
        evaluated=True,
        post_condition="The gripper holds the object.",
    )

    def execute(
        self, arguments: dict[str, Any], *, cancel: CancelToken, feedback: Any = None
    ) -> dict[str, Any]:
        return success(run_id="pick-1", message="picked it, trust me")


class UncheckedTool(PickTool):
    spec = ToolSpec(
        name="wave",
        description="Wave.",
        input_schema={"type": "object", "properties": {}},
        physical=True,
        evaluated=True,
        post_condition="The robot waved.",
    )


class ActingModel:
    """Calls one tool, then finishes with a success claim."""

    name = "scripted/acting"

    def __init__(self, tool: str) -> None:
        arguments = {"object_id": "red_cup"} if tool == "pick" else {}
        finish = {"outcome": "succeeded", "summary": "done"}
        self.steps = [
            ModelReply(
                None, (ToolCall("c1", tool, json.dumps(arguments), arguments),), Usage(1, 1), self.name
            ),
            ModelReply(
                None, (ToolCall("c2", FINISH_TASK, json.dumps(finish), finish),), Usage(1, 1), self.name
            ),
        ]

    def complete(self, messages: Any, *, tools: Any = None, json_mode: bool = False) -> ModelReply:
        return self.steps.pop(0) if self.steps else ModelReply(text="done", model=self.name)


class NeverAsked:
    """A model evaluator that must not be asked about a tool with a grasp check."""

    def evaluate(self, **_: Any) -> Verdict:
        raise AssertionError("the evaluator was asked about a tool with a grasp check")


class FakeState:
    def __init__(self, *readings: StateReading) -> None:
        self.readings = {r.source: r for r in readings}

    def state_names(self) -> tuple[str, ...]:
        return tuple(self.readings)

    def read_state(self, names: Sequence[str]) -> tuple[StateReading, ...]:
        return tuple(self.readings[n] for n in names)


def run(tmp_path: Path, tool: PickTool, evaluator: Any, state: FakeState, kind: str) -> list[HarnessEvent]:
    config = config_from_dict(
        {"evaluator": {"kind": kind, "state": STATE, "evidence": {"pick": {"grasp_check": GRASP}}}},
        base_dir=Path("."),
        origin="robot.yaml",
    ).evaluator
    harness = Harness(
        model=ActingModel(tool.spec.name),
        tools=[PickTool(), UncheckedTool()],
        evaluator=evaluator,
        evaluator_config=config,
        robot_state=state,
        runs_dir=tmp_path / "runs",
        limits=HarnessLimits(max_turns=4),
    )
    return list(harness.run("Pick the red cup."))


def tool_verdict(events: list[HarnessEvent]) -> dict[str, Any]:
    (verdict,) = [e.payload.verdict for e in events if e.type is EventType.VERDICT and e.payload.tool]
    return dict(verdict)


@pytest.mark.parametrize("kind", ["checks", "model"])
@pytest.mark.parametrize(
    ("finger", "status", "reason"),
    [(0.17, "success", None), (-0.35, "failure", f"not holding: {FINGER} at -0.350, closed at or below 0")],
)
def test_the_grasp_check_is_the_verdict_and_asks_no_model(
    tmp_path: Path, kind: str, finger: float, status: str, reason: str | None
) -> None:
    evaluator = ChecksEvaluator() if kind == "checks" else NeverAsked()
    events = run(tmp_path, PickTool(), evaluator, FakeState(arm(finger)), kind)
    verdict = tool_verdict(events)
    assert verdict["status"] == status
    assert verdict["evidence"].startswith(f"grasp check: {'holding' if reason is None else 'not holding'}: ")
    if reason is not None:
        assert verdict["failure_reason"].startswith(reason)
        result = next(e for e in events if e.type is EventType.TOOL_RESULT)
        # the model is told the measured reason, not the tool's claim
        assert f"post-condition not met: {reason}" in json.dumps(result.payload.to_data())
    run_dir = next((tmp_path / "runs").iterdir())
    assert "grasp check: " in (run_dir / "events.jsonl").read_text(encoding="utf-8")  # the ledger
    from harness_ros.report import render_html
    from harness_ros.report.run import load_run

    page = render_html(load_run(run_dir))  # and the run's HTML report
    assert "<strong>Evidence:</strong> grasp check: " in page


def test_kind_checks_fails_closed_for_a_tool_without_a_check(tmp_path: Path) -> None:
    events = run(tmp_path, UncheckedTool(), ChecksEvaluator(), FakeState(arm(0.17)), "checks")
    verdict = tool_verdict(events)
    assert verdict["status"] == "failure"
    assert (
        "evaluator.kind 'checks' asks no model, and tool 'wave' has no pose_check"
        in verdict["failure_reason"]
    )


def test_the_gate_waits_for_a_reading_measured_after_the_tool_ended() -> None:
    """A reading older than the tool's end is no evidence; the gate waits up to wait_s."""

    class Ageing(FakeState):
        def __init__(self) -> None:
            super().__init__()
            self.reads = 0

        def read_state(self, names: Sequence[str]) -> tuple[StateReading, ...]:
            self.reads += 1  # the first reading is from before the close, then a fresh one
            return (arm(0.36, age=5.0) if self.reads == 1 else arm(0.17, age=0.0),)

    limits = HOLDING.model_copy(update={"wait_s": 2.0})
    config = config_from_dict(
        {
            "evaluator": {
                "kind": "checks",
                "state": STATE,
                "evidence": {"pick": {"grasp_check": limits.model_dump()}},
            }
        },
        base_dir=Path("."),
        origin="robot.yaml",
    ).evaluator
    state = Ageing()
    gate = EvaluationGate(ChecksEvaluator(), max_segments=1, evidence=config.evidence, state=state)
    verdict = gate.judge(PickTool.spec, "pick-1", Observation(time=0.0), ended_at=time.monotonic())
    assert verdict.status is VerdictStatus.SUCCESS, verdict
    assert state.reads >= 2


def test_describe_evidence_shows_the_grasp_check() -> None:
    lines = describe_evidence(Evidence(tool="pick", grasp_check=check_grasp(arm(0.17), HOLDING)))
    assert any(
        line.startswith("- grasp check (finger joint against thresholds): holds: holding: ") for line in lines
    )


def test_checks_is_a_built_in_evaluator_kind() -> None:
    from harness_ros.plugins.contracts import PluginRegistry
    from harness_ros.startup import check_evaluator_kind

    config = config_from_dict({"evaluator": {"kind": "checks"}}, base_dir=Path("."), origin="robot.yaml")
    check_evaluator_kind(config, {})  # no plugin needed
    with pytest.raises(ValueError, match="built in"):
        PluginRegistry().add_evaluator("checks", lambda context: ChecksEvaluator())


def test_a_text_only_model_runs_with_kind_checks_but_not_with_kind_model() -> None:
    from harness_ros.model.settings import validate_model_settings

    data = load_config(REPO / "config" / "robots" / "stretch3_physics.yaml").model_dump(mode="json")
    data["model"] = {"model": "local/1.5b"}
    model_kind = config_from_dict(data, base_dir=REPO / "config" / "robots", origin="physics")
    with pytest.raises(ConfigError, match=r"evaluator\.kind 'model' judges camera images"):
        validate_model_settings(model_kind, require_model=True, env={})
    data["evaluator"]["kind"] = "checks"
    checks = config_from_dict(data, base_dir=REPO / "config" / "robots", origin="physics")
    validate_model_settings(checks, require_model=True, env={})


def test_the_physics_eval_turns_to_kind_checks_for_a_text_only_model() -> None:
    from harness_ros_sim.ros.physics_eval_runner import evaluator_parameters

    config = REPO / "config" / "robots" / "stretch3_physics.yaml"
    assert evaluator_parameters(config, "local/1.5b") == {"evaluator.kind": "checks"}
    assert evaluator_parameters(config, "openai/gpt-4o") == {}  # a vision model judges the goal too
    assert evaluator_parameters(config, "openai/gpt-4o", "http://127.0.0.1:8080/v1") == {
        "evaluator.kind": "checks"
    }  # a server on this machine: text-only
