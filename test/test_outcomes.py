"""Task outcomes: a completed task is not a successful one until its outcome says so.

``finish_task`` (and the plain final message as a fallback) carry the model's claim; the
evaluator's goal check settles it; events, exit codes, run log, report, eval and the demo
policy show it; consolidation runs for a failed outcome and the audit names it.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from harness_ros.commands.task import EXIT_FAILED, EXIT_NO_OUTCOME, EXIT_SUCCEEDED, EXIT_UNVERIFIED, exit_code
from harness_ros.config import HarnessLimits
from harness_ros.evaluation import EvaluationGate, Verdict, VerdictStatus
from harness_ros.events import EventType, HarnessEvent, Outcome
from harness_ros.harness import Harness
from harness_ros.memory import FileMemory, MemoryConsolidation
from harness_ros.memory.contracts import ToolExperienceEntry
from harness_ros.model.contracts import ModelReply, ToolCall, Usage
from harness_ros.observation.contracts import Observation
from harness_ros.progress import format_event
from harness_ros.report import render_report
from harness_ros.tools import success, tool
from harness_ros.tools.finish_task import FINISH_TASK, settle_outcome
from harness_ros.trajectory import Trajectory
from harness_ros_sim.demo.decide import FINISH, Step, decide
from harness_ros_sim.demo.policy import scripted_reply

FETCH = "Fetch the red cup from the kitchen table and put it on the coffee table."


# ---------------------------------------------------------------------- fakes
def call(name: str, **arguments: Any) -> ToolCall:
    return ToolCall(f"id_{name}", name, json.dumps(arguments), arguments)


def reply(*calls: ToolCall, text: str | None = None) -> ModelReply:
    return ModelReply(text=text, tool_calls=tuple(calls), usage=Usage(1, 1), model="scripted")


def finish(outcome: str, summary: str = "done") -> ModelReply:
    return reply(call(FINISH_TASK, outcome=outcome, summary=summary))


class Model:
    name = "scripted/outcomes"

    def __init__(self, steps: Sequence[ModelReply]) -> None:
        self.steps = list(steps)
        self.tools: list[Any] = []

    def complete(
        self, messages: list[dict[str, Any]], *, tools: Any = None, json_mode: bool = False
    ) -> ModelReply:
        self.tools.append(copy.deepcopy(tools))
        return self.steps.pop(0) if self.steps else ModelReply(text="script exhausted", model="scripted")


class GoalEvaluator:
    """Confirms tool post-conditions; answers the goal check with ``goal`` (None: cannot judge)."""

    def __init__(self, goal: Any) -> None:
        self.goal = goal
        self.task_calls: list[dict[str, Any]] = []

    def evaluate(self, *, tool: str, run_id: str, post_condition: str, observation: Observation) -> Verdict:
        return Verdict(VerdictStatus.SUCCESS, run_id, None, "held")

    def evaluate_task(
        self, *, goal: str, revisions: Sequence[str], run_id: str, observation: Observation
    ) -> Any:
        self.task_calls.append({"goal": goal, "revisions": list(revisions), "run_id": run_id})
        if isinstance(self.goal, Exception):
            raise self.goal
        return self.goal


class ToolOnlyEvaluator:
    def evaluate(self, *, tool: str, run_id: str, post_condition: str, observation: Observation) -> Verdict:
        return Verdict(VerdictStatus.SUCCESS, run_id, None, "ok")


class Proposer:
    def __init__(self, proposal: MemoryConsolidation) -> None:
        self.proposal = proposal
        self.seen: list[Trajectory] = []

    def consolidate(
        self, task_notes: Trajectory, *, allowed_tools: list[str], existing: dict[str, Any]
    ) -> MemoryConsolidation:
        self.seen.append(task_notes)
        assert FINISH_TASK not in allowed_tools  # the harness's own end call has no ledger
        return self.proposal


@tool(description="Pick an object.", physical=True, evaluated=True, post_condition="the object is held")
def pick(target: str) -> dict[str, Any]:
    return success(picked=target, run_id="run-1")


CONFIRMED = Verdict(VerdictStatus.SUCCESS, "t", None, "red_cup is on coffee_table")
REFUTED = Verdict(VerdictStatus.FAILURE, "t", "red_cup is still in the gripper", "gripper holds red_cup")


def run(harness: Harness, instruction: str = FETCH, task_id: str = "t") -> list[HarnessEvent]:
    return list(harness.run(instruction, task_id=task_id))


def done(events: list[HarnessEvent]) -> dict[str, Any]:
    assert events[-1].type is EventType.DONE
    return events[-1].payload.to_data()


# ---------------------------------------------------------------------- the harness
def test_confirmed_claim_succeeds_and_the_goal_check_is_an_event(tmp_path: Path) -> None:
    evaluator = GoalEvaluator(CONFIRMED)
    model = Model(
        [reply(call("pick", target="red_cup")), finish("succeeded", "The cup is on the coffee table.")]
    )
    harness = Harness(model=model, tools=[pick], evaluator=evaluator, runs_dir=tmp_path)
    events = run(harness)
    end = done(events)
    assert (end["status"], end["outcome"], end["claim"]) == ("completed", "succeeded", "succeeded")
    assert end["finished_by"] == FINISH_TASK
    assert end["report"] == "The cup is on the coffee table."
    assert end["goal_verdict"]["status"] == "success"
    goal_checks = [e for e in events if e.type is EventType.VERDICT and e.payload.get("scope") == "task"]
    assert len(goal_checks) == 1 and goal_checks[0].payload.get("goal") == FETCH
    assert evaluator.task_calls == [{"goal": FETCH, "revisions": [], "run_id": "t"}]
    # finish_task is offered to the model as a tool, and is never a tool_result of its own.
    assert FINISH_TASK in [t["function"]["name"] for t in model.tools[0]]
    assert [e.payload.get("tool") for e in events if e.type is EventType.TOOL_RESULT] == ["pick"]
    report_md = (tmp_path / "t" / "report.md").read_text(encoding="utf-8")
    assert (
        "## Outcome\n\nsucceeded (the model claimed succeeded; the evaluator judged the goal: success"
        in report_md
    )
    trajectory = json.loads((tmp_path / "t" / "trajectory.json").read_text(encoding="utf-8"))
    assert trajectory["outcome"] == "succeeded"


def test_refuted_claim_is_failed_but_still_consolidated_with_its_outcome_in_the_audit(tmp_path: Path) -> None:
    proposer = Proposer(
        MemoryConsolidation(
            tool_experience_entries=(ToolExperienceEntry("pick", "success", "Grasp cups by the rim.", 0.9),)
        )
    )
    memory = FileMemory(tmp_path / "memory", consolidator=proposer)
    model = Model([reply(call("pick", target="red_cup")), finish("succeeded", "Done, the cup is there.")])
    harness = Harness(model=model, tools=[pick], evaluator=GoalEvaluator(REFUTED), memory=memory)
    events = run(harness)
    end = done(events)
    assert (end["status"], end["outcome"], end["claim"]) == ("completed", "failed", "succeeded")
    assert end["goal_verdict"]["failure_reason"] == "red_cup is still in the gripper"
    # A failed outcome is not an aborted task: consolidation ran, and its evidence counted.
    consolidation = next(e for e in events if e.type is EventType.MEMORY_CONSOLIDATION).payload.to_data()
    assert consolidation["skipped"] is False and consolidation["tool_experience_written"] == 1
    assert proposer.seen[0].outcome == "failed" and proposer.seen[0].status == "completed"
    proposals = [r for r in memory.audit_records() if r.get("event") == "proposal"]
    assert [(r["task_outcome"], r["accepted"]) for r in proposals] == [("failed", True)]
    assert "done: FAILED, status completed" in (format_event(events[-1].to_dict()) or "")
    lines = [format_event(e.to_dict()) for e in events]
    assert "[turn 2] decide: finish_task, claiming succeeded" in lines
    assert any(line and line.startswith("[turn 2] goal check by the evaluator: failure") for line in lines)


@pytest.mark.parametrize(
    ("evaluator", "steps", "outcome", "claim"),
    [
        (None, [finish("succeeded")], "unverified", "succeeded"),
        (ToolOnlyEvaluator(), [finish("succeeded")], "unverified", "succeeded"),
        (GoalEvaluator(None), [finish("succeeded")], "unverified", "succeeded"),
        (GoalEvaluator(CONFIRMED), [finish("failed", "I could not reach it.")], "failed", "failed"),
        (None, [ModelReply(text="Which cup do you mean, the red or the blue one?")], "unverified", None),
        (GoalEvaluator(REFUTED), [ModelReply(text="Should I use the left table?")], "failed", None),
        (GoalEvaluator(CONFIRMED), [ModelReply(text="Is the cup where you wanted it?")], "unverified", None),
        (GoalEvaluator(RuntimeError("ground truth gone")), [finish("succeeded")], "failed", "succeeded"),
        (
            GoalEvaluator({"status": "success", "failure_reason": "still held"}),
            [finish("succeeded")],
            "failed",
            "succeeded",
        ),
    ],
    ids=[
        "no-evaluator",
        "evaluator-without-goal-check",
        "evaluator-cannot-judge-this-goal",
        "failed-claim-never-checked",
        "operator-question-no-claim",
        "operator-question-refuted",
        "operator-question-never-a-success",
        "goal-check-raises",
        "goal-check-contradicts-itself",
    ],
)
def test_outcome_from_claim_and_goal_check(
    evaluator: Any, steps: list[ModelReply], outcome: str, claim: str | None
) -> None:
    harness = Harness(model=Model(steps), tools=[pick], evaluator=evaluator)
    end = done(run(harness))
    assert (end["status"], end["outcome"], end["claim"]) == ("completed", outcome, claim)
    if claim == "failed" and isinstance(evaluator, GoalEvaluator):
        assert evaluator.task_calls == []  # nothing to confirm: the model gave up


def test_bad_finish_task_arguments_are_malformed_and_the_task_goes_on() -> None:
    model = Model([reply(call(FINISH_TASK, outcome="done", summary="x")), finish("failed", "gave up")])
    events = run(Harness(model=model, tools=[pick]))
    results = [e.payload.to_data() for e in events if e.type is EventType.TOOL_RESULT]
    assert results[0]["tool"] == FINISH_TASK and results[0]["malformed"] is True
    assert results[0]["refusal"] == "invalid_arguments"
    assert done(events)["outcome"] == "failed"


def test_a_task_that_did_not_complete_has_outcome_failed() -> None:
    harness = Harness(
        model=Model([reply(call("pick", target="a"))] * 3), tools=[pick], limits=HarnessLimits(max_turns=2)
    )
    end = done(run(harness))
    assert (end["status"], end["outcome"]) == ("failed", "failed")


def test_revised_goal_is_what_the_evaluator_judges() -> None:
    evaluator = GoalEvaluator(CONFIRMED)
    harness = Harness(model=Model([]), tools=[pick], evaluator=evaluator)
    revised = "Put the red cup on the kitchen counter instead."
    model = harness.model
    assert isinstance(model, Model)
    model.steps = [reply(call("pick", target="red_cup")), finish("succeeded")]
    stream = harness.run(FETCH, task_id="t")
    events = [next(stream)]  # task_started: the task is running
    harness.revise(revised)
    events += list(stream)
    assert evaluator.task_calls[0]["revisions"] == [revised]
    goal_check = next(e for e in events if e.type is EventType.VERDICT and e.payload.get("scope") == "task")
    assert goal_check.payload.get("goal") == revised


# ---------------------------------------------------------------------- pieces
def test_no_claim_is_never_a_success() -> None:
    assert settle_outcome(None, "success") is Outcome.UNVERIFIED  # no claim is never a success
    assert settle_outcome("succeeded", None) is Outcome.UNVERIFIED
    assert settle_outcome("succeeded", "failure") is Outcome.FAILED


def test_gate_goal_check_fails_closed() -> None:
    gate = EvaluationGate(GoalEvaluator({"status": "process"}), max_segments=2)
    obs = Observation(time=0.0)
    verdict = gate.judge_task("g", (), "t", obs)
    assert verdict is not None and verdict.status is VerdictStatus.FAILURE  # process is never a task verdict
    assert EvaluationGate(GoalEvaluator(None), max_segments=2).judge_task("g", (), "t", obs) is None
    assert EvaluationGate(ToolOnlyEvaluator(), max_segments=2).judge_task("g", (), "t", obs) is None


def test_exit_codes_are_distinct_per_outcome() -> None:
    assert exit_code({"status": "completed", "outcome": "succeeded"}) == EXIT_SUCCEEDED == 0
    assert exit_code({"status": "completed", "outcome": "failed"}) == EXIT_FAILED
    assert exit_code({"status": "completed", "outcome": "unverified"}) == EXIT_UNVERIFIED
    assert exit_code({"status": "aborted", "outcome": "failed"}) == EXIT_FAILED
    assert exit_code({"status": "completed"}) == EXIT_UNVERIFIED  # a node without outcomes: unchecked
    assert exit_code({"status": "timeout"}) == exit_code({}) == EXIT_NO_OUTCOME
    assert len({EXIT_SUCCEEDED, EXIT_FAILED, EXIT_UNVERIFIED, EXIT_NO_OUTCOME, 2}) == 5  # 2: argparse


def test_html_report_leads_with_the_outcome(tmp_path: Path) -> None:
    model = Model([finish("succeeded", "done it")])
    run(Harness(model=model, tools=[pick], evaluator=GoalEvaluator(REFUTED), runs_dir=tmp_path))
    page = render_report(tmp_path / "t")
    assert "<title>Task t: failed (completed)</title>" in page
    assert '<span class="badge outcome-failed">failed</span>' in page
    assert "red_cup is still in the gripper" in page


def test_scripted_demo_policy_ends_with_finish_task() -> None:
    ok = {"success": True, "run_id": "r", "verdict": {"status": "success"}}
    steps = [
        Step("navigate_to", {"target": "red_cup"}, ok),
        Step("pick_object", {"object_id": "red_cup"}, ok),
        Step("navigate_to", {"target": "coffee_table"}, ok),
        Step("place_object", {"surface_id": "coffee_table"}, ok),
    ]
    decision = decide(FETCH, steps, [])
    assert (decision.tool, decision.outcome) == (FINISH, "succeeded")
    failed = decide(
        FETCH, [Step("navigate_to", {"target": "kitchen_table"}, {"success": False, "reason": "blocked"})], []
    )
    assert (failed.tool, failed.outcome) == (FINISH, "failed")
    # Through the provider glue: a finish_task tool call, not a bare message.
    messages = [
        {"role": "system", "content": "# harness_ros: decide\n"},
        {"role": "user", "content": "# Task\nFetch the purple unicorn."},
    ]
    answer = scripted_reply(messages, [])
    assert [c["name"] for c in answer["tool_calls"]] == [FINISH_TASK]
    assert answer["tool_calls"][0]["arguments"]["outcome"] == "failed"


def test_eval_counts_outcomes_next_to_ground_truth() -> None:
    from harness_ros_sim.learning_eval.contracts import Arm, EpisodeResult
    from harness_ros_sim.learning_eval.metrics import episode_metrics, outcome_contradicted, summarize_arm

    def result(episode: int, outcome: str, success: bool) -> EpisodeResult:
        metrics = episode_metrics([{"type": "done", "data": {"status": "completed", "outcome": outcome}}])
        scenario = type("S", (), {"episode": episode})()
        return EpisodeResult(Arm.MEMORY_ON, scenario, success, "", metrics, 1.0)  # type: ignore[arg-type]

    results = [
        result(1, "succeeded", True),
        result(2, "succeeded", False),
        result(3, "failed", False),
        result(4, "unverified", True),
    ]
    assert [outcome_contradicted(r) for r in results] == [False, True, False, False]
    summary = summarize_arm(Arm.MEMORY_ON, results)
    assert dict(summary.outcomes) == {"succeeded": 2, "failed": 1, "unverified": 1}
    assert summary.outcome_wrong == 1 and summary.completed == 4 and summary.successes == 2
    assert summary.to_dict()["outcomes"]["succeeded"] == 2
