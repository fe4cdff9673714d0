"""Lessons need evidence that happened on the robot.

Refused calls are refusals (Task Notes, audit), never failure evidence; verdicts that
contradict themselves or have wrong types fail closed; compaction keeps every tool
result's outcome; Task Notes follow the phase and the operator's revisions.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from harness_ros.context import Compactor, History
from harness_ros.context.compaction import COMPACT_PROMPT
from harness_ros.evaluation import Verdict, VerdictStatus, parse_verdict
from harness_ros.events import EventType
from harness_ros.harness import Harness
from harness_ros.hooks import HookAction, HookDecision
from harness_ros.memory import FileMemory, MemoryConsolidation
from harness_ros.memory.contracts import ToolExperienceEntry
from harness_ros.memory.rules import has_failure_then_confirmed_success
from harness_ros.model.contracts import ModelReply, ToolCall, Usage
from harness_ros.observation.contracts import Observation
from harness_ros.tools import ToolSpec, success, tool
from harness_ros.tools.finish_task import FINISH_TASK
from harness_ros.trajectory import Trajectory, steps_from

FAILURE_LESSON = "When pick is refused, check the arguments and call it again."


# ---------------------------------------------------------------------- fakes
def call(name: str, call_id: str, **arguments: Any) -> ToolCall:
    return ToolCall(call_id, name, json.dumps(arguments), arguments)


def reply(*calls: ToolCall) -> ModelReply:
    return ModelReply(text=None, tool_calls=tuple(calls), usage=Usage(1, 1), model="scripted")


def finish(outcome: str = "succeeded") -> ModelReply:
    return reply(call(FINISH_TASK, "fin", outcome=outcome, summary="report"))


class Model:
    name = "scripted/evidence"

    def __init__(self, steps: Sequence[ModelReply]) -> None:
        self.steps = list(steps)
        self.requests: list[list[dict[str, Any]]] = []

    def complete(
        self, messages: list[dict[str, Any]], *, tools: Any = None, json_mode: bool = False
    ) -> ModelReply:
        self.requests.append(copy.deepcopy(messages))
        return self.steps.pop(0)


class Evaluator:
    def evaluate(self, *, tool: str, run_id: str, post_condition: str, observation: Observation) -> Verdict:
        return Verdict(VerdictStatus.SUCCESS, run_id, None, "the cup is held")


class Proposer:
    """Proposes one Failure lesson for ``pick`` and remembers the trajectories it saw."""

    def __init__(self) -> None:
        self.seen: list[Trajectory] = []

    def consolidate(
        self, task_notes: Trajectory, *, allowed_tools: list[str], existing: dict[str, Any]
    ) -> MemoryConsolidation:
        self.seen.append(task_notes)
        return MemoryConsolidation(
            tool_experience_entries=(ToolExperienceEntry("pick", "failure", FAILURE_LESSON, 0.9),)
        )


class BlockOnce:
    """A pre-execution hook that blocks the first call (a safety block or a denied approval)."""

    name = "approval"

    def __init__(self) -> None:
        self.blocked = False

    def before_execution(self, spec: ToolSpec, arguments: dict[str, Any], observation: Any) -> HookDecision:
        if self.blocked:
            return HookDecision.allow()
        self.blocked = True
        return HookDecision(HookAction.BLOCK, reason="the operator denied approval", hook=self.name)


class Attempts:
    """pick fails on the robot ``failures`` times, then succeeds."""

    def __init__(self, failures: int) -> None:
        self.failures = failures

        @tool(description="Pick.", physical=True, evaluated=True, post_condition="the object is held")
        def pick(target: str) -> dict[str, Any]:
            if self.failures > 0:
                self.failures -= 1
                return {"success": False, "reason": "the grasp slipped"}
            return success(picked=target, run_id="run-1")

        self.tool = pick


def run_task(
    tmp_path: Path, steps: list[ModelReply], *, failures: int = 0, hooks: Sequence[Any] = ()
) -> tuple[FileMemory, Proposer, list[Any]]:
    proposer = Proposer()
    memory = FileMemory(tmp_path / "memory", consolidator=proposer)
    harness = Harness(
        model=Model(steps), tools=[Attempts(failures).tool], memory=memory, evaluator=Evaluator(), hooks=hooks
    )
    events = list(harness.run("pick up the red cup", task_id="t"))
    return memory, proposer, events


def pick_decision(memory: FileMemory) -> dict[str, Any]:
    proposals = [r for r in memory.audit_records() if r.get("event") == "proposal"]
    assert len(proposals) == 1
    return proposals[0]


# ---------------------------------------------------------------------- refusals are not failures
@pytest.mark.parametrize(
    ("first", "hooks", "kind"),
    [
        (call("pick", "c1"), (), "invalid_arguments"),  # target missing: refused by validation
        (call("pick", "c1", target="red_cup"), (BlockOnce(),), "blocked"),  # denied approval
    ],
    ids=["argument-validation", "approval-denied"],
)
def test_a_refused_call_is_no_failure_evidence(
    tmp_path: Path, first: ToolCall, hooks: tuple[Any, ...], kind: str
) -> None:
    steps = [reply(first), reply(call("pick", "c2", target="red_cup")), finish()]
    memory, proposer, events = run_task(tmp_path, steps, hooks=hooks)
    results = [e.payload.to_data() for e in events if e.type is EventType.TOOL_RESULT]
    assert [(r["refusal"], r["executed"]) for r in results] == [(kind, False), (None, True)]
    trajectory = proposer.seen[0]
    assert trajectory.steps[0].refusal == kind
    assert trajectory.steps[1].refusal is None
    decision = pick_decision(memory)
    assert (decision["accepted"], decision["rule"]) == (False, "refusal_is_not_failure")
    refusals = [r for r in memory.audit_records() if r.get("event") == "refusal"]
    assert [(r["tool"], r["kind"]) for r in refusals] == [("pick", kind)]
    assert not memory.ledger_entries("pick")["failure"]


def test_an_executed_failure_later_confirmed_fixed_is_evidence(tmp_path: Path) -> None:
    steps = [
        reply(call("pick", "c1", target="red_cup")),
        reply(call("pick", "c2", target="red_cup")),
        finish(),
    ]
    memory, _, events = run_task(tmp_path, steps, failures=1)
    results = [e.payload.to_data() for e in events if e.type is EventType.TOOL_RESULT]
    assert [(r["refusal"], r["executed"]) for r in results] == [(None, True), (None, True)]
    decision = pick_decision(memory)
    assert (decision["accepted"], decision["rule"], decision["task_outcome"]) == (
        True,
        "accepted",
        "unverified",
    )
    assert memory.ledger_entries("pick")["failure"] == [FAILURE_LESSON]


def test_a_tool_that_refuses_before_acting_is_recorded_as_a_refusal(tmp_path: Path) -> None:
    proposer = Proposer()
    memory = FileMemory(tmp_path / "memory", consolidator=proposer)
    attempts = {"n": 0}

    @tool(description="Pick.", physical=True, evaluated=True, post_condition="the object is held")
    def pick(target: str) -> dict[str, Any]:
        attempts["n"] += 1
        if attempts["n"] == 1:  # e.g. a ROS tool whose action server is not up yet
            return {
                "success": False,
                "reason": "action server '/pick' not available",
                "refusal": "server_unavailable",
            }
        return success(picked=target, run_id="run-2")

    steps = [reply(call("pick", "c1", target="a")), reply(call("pick", "c2", target="a")), finish()]
    harness = Harness(model=Model(steps), tools=[pick], memory=memory, evaluator=Evaluator())
    events = list(harness.run("pick up a", task_id="t"))
    results = [e.payload.to_data() for e in events if e.type is EventType.TOOL_RESULT]
    assert [(r["refusal"], r["executed"]) for r in results] == [("server_unavailable", False), (None, True)]
    assert proposer.seen[0].steps[0].refusal == "server_unavailable"
    assert pick_decision(memory)["rule"] == "refusal_is_not_failure"


def test_evidence_rule_on_recorded_trajectories() -> None:
    confirmed = {"tool": "pick", "result": {"success": True}, "verdict": {"status": "success"}}
    refused = {
        "tool": "pick",
        "result": {"success": False, "reason": "server down"},
        "refusal": "server_unavailable",
    }
    blocked = {"tool": "pick", "result": {"success": False, "reason": "stop", "blocked_by": "safety"}}
    executed = {"tool": "pick", "result": {"success": False, "reason": "slipped"}}
    judged = {"tool": "pick", "result": {"success": False, "reason": "x"}, "verdict": {"status": "failure"}}
    assert not has_failure_then_confirmed_success(steps_from([refused, confirmed]), "pick")
    assert not has_failure_then_confirmed_success(steps_from([blocked, confirmed]), "pick")
    assert has_failure_then_confirmed_success(steps_from([executed, confirmed]), "pick")
    assert has_failure_then_confirmed_success(steps_from([judged, confirmed]), "pick")


# ---------------------------------------------------------------------- verdicts fail closed
@pytest.mark.parametrize(
    ("raw", "why"),
    [
        ({"status": "success", "failure_reason": "the cup fell"}, "'success' with a failure_reason"),
        ({"status": "process", "failure_reason": "stuck"}, "'process' with a failure_reason"),
        ({"status": "success", "evidence": {}}, "evidence must be a string"),
        ({"status": "success", "evidence": ["held"]}, "evidence must be a string"),
        ({"status": "failure", "failure_reason": ["slipped"]}, "failure_reason must be a string"),
        ({"status": ["success"]}, "status must be a string"),
        ({"status": 1}, "status must be a string"),
    ],
)
def test_self_contradicting_or_mistyped_verdicts_are_malformed(raw: dict[str, Any], why: str) -> None:
    verdict = parse_verdict(raw, run_id="r", allow_process=True)
    assert verdict.status is VerdictStatus.FAILURE
    assert verdict.failure_reason is not None and verdict.failure_reason.startswith("malformed verdict: ")
    assert why in verdict.failure_reason


def test_well_formed_verdicts_still_pass() -> None:
    ok = parse_verdict(
        {"status": "Success", "failure_reason": None, "evidence": "held"}, run_id="r", allow_process=False
    )
    assert (ok.status, ok.evidence) == (VerdictStatus.SUCCESS, "held")
    assert parse_verdict(
        {"status": "success", "failure_reason": "  "}, run_id="r", allow_process=False
    ).status is (VerdictStatus.SUCCESS)
    failed = parse_verdict(
        {"status": "failure", "failure_reason": "empty gripper"}, run_id="r", allow_process=False
    )
    assert (failed.status, failed.failure_reason) == (VerdictStatus.FAILURE, "empty gripper")


# ---------------------------------------------------------------------- compaction keeps outcomes
class _Summariser:
    name = "fake"

    def __init__(self) -> None:
        self.requests: list[list[dict[str, Any]]] = []

    def complete(
        self, messages: list[dict[str, Any]], *, tools: Any = None, json_mode: bool = False
    ) -> ModelReply:
        self.requests.append(messages)
        return ModelReply(text='{"summary": "s"}')


def test_compaction_keeps_the_outcome_of_long_tool_results() -> None:
    history = History()
    history.add_instruction("find the cup")
    detections = [{"label": f"object {i}", "box": [i, i, i + 10, i + 10], "score": 0.5} for i in range(200)]
    verdict = {
        "status": "failure",
        "failure_reason": "no cup in the gripper",
        "run_id": "run-9",
        "evidence": "empty",
    }
    results = [
        {
            "success": False,
            "reason": "post-condition not met: no cup in the gripper",
            "run_id": "run-9",
            "detections": detections,
            "verdict": verdict,
        },
        {"success": True, "run_id": "run-10", "detections": detections},
    ]
    for i in range(4):
        history.add_assistant(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": f"c{i}", "type": "function", "function": {"name": "detect", "arguments": "{}"}}
                ],
            }
        )
        # The full envelope as sorted-key JSON (a tool message the harness did not shorten, e.g.
        # from a recording): the compactor must keep the outcome of any long result.
        content = json.dumps(results[i % 2], ensure_ascii=False, sort_keys=True)
        history.add_tool({"role": "tool", "tool_call_id": f"c{i}", "content": content})
    # Sorted-key JSON puts "detections" first: a plain 1,500-character cut loses the outcome.
    assert '"success"' not in history.entries[2].message["content"][:1500]
    model = _Summariser()
    outcome = Compactor(model, keep_exchanges=2).compact(history, measure=lambda: 0)
    assert outcome.compacted
    # The long results were summarised whole first; the checkpoint request comes last.
    transcript = model.requests[-1][1]["content"]
    assert model.requests[-1][0]["content"] == COMPACT_PROMPT
    blocks = [b for b in transcript.split("[tool result]\n")[1:]]
    assert len(blocks) == 2
    first = json.loads(blocks[0].split("\n\n[")[0])
    assert (first["success"], first["run_id"]) == (False, "run-9")
    assert first["reason"] == "post-condition not met: no cup in the gripper"
    assert first["verdict"] == {
        "status": "failure",
        "failure_reason": "no cup in the gripper",
        "evidence": "empty",
    }
    assert first["details"].startswith("[summarised by the harness: the whole ")
    second = json.loads(blocks[1].split("\n\n[")[0])
    assert (second["success"], second["run_id"]) == (True, "run-10")
    assert all(len(b) < 2200 for b in blocks)


# ---------------------------------------------------------------------- Task Notes
def test_task_notes_follow_the_phase_and_the_revisions(tmp_path: Path) -> None:
    proposer = Proposer()
    memory = FileMemory(tmp_path / "memory", consolidator=proposer)
    phases: list[str] = []
    notes_seen: list[str] = []

    class Watching(Model):
        def complete(
            self, messages: list[dict[str, Any]], *, tools: Any = None, json_mode: bool = False
        ) -> ModelReply:
            phases.append(memory.trajectory().phase)
            notes_seen.append(memory.notes_path.read_text(encoding="utf-8"))
            return super().complete(messages, tools=tools, json_mode=json_mode)

    class GoalEvaluator(Evaluator):
        def evaluate_task(
            self, *, goal: str, revisions: Sequence[str], run_id: str, observation: Observation
        ) -> Verdict:
            phases.append(memory.trajectory().phase)
            return Verdict(VerdictStatus.SUCCESS, run_id, None, "on the counter")

    revised = "Pick up the blue mug instead."
    model = Watching([reply(call("pick", "c1", target="red_cup")), finish()])
    harness = Harness(model=model, tools=[Attempts(0).tool], memory=memory, evaluator=GoalEvaluator())
    stream = harness.run("pick up the red cup", task_id="t")
    first = next(stream)
    assert first.type is EventType.TASK_STARTED
    harness.revise(revised)
    events = list(stream)
    assert phases == ["started", "acting", "evaluating"]
    assert f"- Revised goal (1): {revised}" in notes_seen[0]
    trajectory = proposer.seen[0]
    assert (trajectory.phase, trajectory.revisions, trajectory.outcome) == (
        "finishing",
        (revised,),
        "succeeded",
    )
    assert trajectory.goal == "pick up the red cup"
    assert events[-1].payload.get("outcome") == "succeeded"
