"""The agentic loop with scripted model replies: envelopes, evaluation, hooks, limits,
cancellation, memory at task end, context stability, compaction and the run folder."""

from __future__ import annotations

import copy
import json
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from harness_ros.config import EvaluatorConfig, HarnessLimits, SafetyConfig
from harness_ros.errors import LLMError, TaskRejectedError
from harness_ros.evaluation import Verdict, VerdictStatus
from harness_ros.events import EventType, HarnessEvent
from harness_ros.harness import Harness
from harness_ros.hooks import ApprovalHook, BaseMotionSafetyFilter, HookAction, HookDecision
from harness_ros.memory import FileMemory, MemoryConsolidation
from harness_ros.model.contracts import ModelReply, ToolCall, Usage
from harness_ros.model.markers import NOTES_HEADER, NOTES_UPDATE_HEADER
from harness_ros.observation.contracts import Clearance, Observation, ViewImage
from harness_ros.tools import CancelToken, ToolSpec, success, tool
from harness_ros.trajectory import Trajectory

JPEG = b"\xff\xd8\xff\xe0scripted-frame\xff\xd9"

Step = ModelReply | Exception | Callable[[list[dict[str, Any]]], ModelReply]


# ---------------------------------------------------------------------- fakes
def call(name: str, _id: str | None = None, **arguments: Any) -> ToolCall:
    return ToolCall(_id or f"id_{name}", name, json.dumps(arguments), arguments)


def reply(*calls: ToolCall, text: str | None = None) -> ModelReply:
    return ModelReply(text=text, tool_calls=tuple(calls), usage=Usage(10, 2), model="scripted")


def plain(text: str) -> ModelReply:
    """A reply with text only (a compaction summary, or a decide reply without a tool call)."""
    return ModelReply(text=text, usage=Usage(10, 5), model="scripted")


def final(text: str, outcome: str = "succeeded") -> ModelReply:
    """The model ends the task: ``finish_task`` with ``text`` as the summary."""
    finish = ToolCall("id_finish", "finish_task", json.dumps({"outcome": outcome, "summary": text}), None)
    finish = ToolCall(finish.id, finish.name, finish.arguments_json, json.loads(finish.arguments_json))
    return ModelReply(text=None, tool_calls=(finish,), usage=Usage(10, 5), model="scripted")


class ScriptedModel:
    """Serves decide replies in order; compaction requests go to ``compact``."""

    name = "scripted/test"

    def __init__(self, steps: Sequence[Step], *, compact: Step | None = None) -> None:
        self.steps = list(steps)
        self.compact = compact
        self.requests: list[list[dict[str, Any]]] = []
        self.tools: list[Any] = []
        self.compact_requests: list[list[dict[str, Any]]] = []

    def complete(
        self, messages: list[dict[str, Any]], *, tools: Any = None, json_mode: bool = False
    ) -> ModelReply:
        purpose = str(messages[0]["content"]).splitlines()[0]
        if purpose == "# harness_ros: compact":
            self.compact_requests.append(copy.deepcopy(messages))
            step = self.compact
        else:
            assert purpose == "# harness_ros: decide"
            self.requests.append(copy.deepcopy(messages))
            self.tools.append(copy.deepcopy(tools))
            step = self.steps.pop(0) if self.steps else final("script exhausted")
        if step is None:
            raise LLMError("no compact reply scripted")
        if isinstance(step, Exception):
            raise step
        if callable(step):
            return step(messages)
        return step


class FakeObservations:
    def __init__(self, *, clearance_age: float = 0.05, stale: bool = False) -> None:
        self.clearance_age = clearance_age
        self.stale = stale
        self.observe_calls = 0
        self.after_calls: list[tuple[float, float]] = []

    def now(self) -> float:
        return 1000.0 + self.observe_calls

    def clearance(self) -> Clearance | None:
        return Clearance(1.5, 0.6, 0.8, 0.6, self.now(), self.clearance_age, self.stale)

    def observe(self) -> Observation:
        self.observe_calls += 1
        return Observation(
            time=self.now(),
            views=(ViewImage("front", JPEG, 320, 240, self.now(), 0.1, False),),
            clearance=self.clearance(),
        )

    def observe_after(self, after: float, timeout_s: float) -> Observation:
        self.after_calls.append((after, timeout_s))
        return self.observe()


class FakeEvaluator:
    def __init__(self, answer: Any) -> None:
        self.answer = answer
        self.calls: list[dict[str, Any]] = []

    def evaluate(self, *, tool: str, run_id: str, post_condition: str, observation: Observation) -> Any:
        self.calls.append(
            {"tool": tool, "run_id": run_id, "post_condition": post_condition, "obs": observation}
        )
        return self.answer


class RecordingConsolidator:
    def __init__(self) -> None:
        self.calls: list[Trajectory] = []

    def consolidate(
        self, task_notes: Trajectory, *, allowed_tools: list[str], existing: dict[str, Any]
    ) -> MemoryConsolidation:
        self.calls.append(task_notes)
        return MemoryConsolidation()


class FixedHook:
    def __init__(self, name: str, decision: HookDecision) -> None:
        self.name = name
        self.decision = decision

    def before_execution(self, spec: ToolSpec, arguments: dict[str, Any], observation: Any) -> HookDecision:
        return self.decision


# ---------------------------------------------------------------------- tools
class Robot:
    """Real FunctionTools that remember what they were asked to do."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

        @tool(description="Look around.")
        def look() -> dict[str, Any]:
            self.calls.append(("look", {}))
            return success(seen="a red cup on the table")

        @tool(description="Pick an object.", physical=True, evaluated=True, post_condition="the cup is held")
        def pick(target: str) -> dict[str, Any]:
            self.calls.append(("pick", {"target": target}))
            return success(picked=target, run_id="run-7")

        @tool(description="Pick without run id.", physical=True, evaluated=True, post_condition="held")
        def sloppy_pick(target: str) -> dict[str, Any]:
            self.calls.append(("sloppy_pick", {"target": target}))
            return success(picked=target)

        @tool(
            description="Drive straight.",
            physical=True,
            base_motion=True,
            distance_argument="distance_m",
            direction_argument="direction",
        )
        def drive(distance_m: float, direction: str = "forward") -> dict[str, Any]:
            self.calls.append(("drive", {"distance_m": distance_m, "direction": direction}))
            return success(moved_m=distance_m)

        @tool(description="Open the door.", physical=True, requires_approval=True)
        def open_door() -> dict[str, Any]:
            self.calls.append(("open_door", {}))
            return success(opened=True)

        @tool(description="Returns garbage.")
        def broken() -> Any:
            self.calls.append(("broken", {}))
            return {"ok": 1}

        @tool(description="Waits until cancelled.")
        def wait(cancel: CancelToken) -> dict[str, Any]:
            self.calls.append(("wait", {}))
            cancelled = cancel.wait(10.0)
            return success(cancelled=cancelled)

        self.tools = [look, pick, sloppy_pick, drive, open_door, broken, wait]


def run_all(harness: Harness, instruction: str = "bring the red cup", **kwargs: Any) -> list[HarnessEvent]:
    return list(harness.run(instruction, **kwargs))


def of(events: list[HarnessEvent], kind: EventType) -> list[HarnessEvent]:
    return [e for e in events if e.type is kind]


def done(events: list[HarnessEvent]) -> HarnessEvent:
    finals = of(events, EventType.DONE)
    assert len(finals) == 1
    assert events[-1] is finals[0]
    return finals[0]


def tool_contents(request: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [json.loads(m["content"]) for m in request if m["role"] == "tool"]


@pytest.fixture
def robot() -> Robot:
    return Robot()


@pytest.fixture
def memory(tmp_path: Path) -> FileMemory:
    return FileMemory(
        tmp_path / "memory", consolidator=RecordingConsolidator(), tool_experience_summarizer=None
    )


# ---------------------------------------------------------------------- basic loop
def test_completed_task_reports_and_consolidates(robot: Robot, memory: FileMemory, tmp_path: Path) -> None:
    model = ScriptedModel([reply(call("look")), final("The cup is on the table.")])
    harness = Harness(model=model, tools=robot.tools, memory=memory, runs_dir=tmp_path / "runs")
    events = run_all(harness, task_id="t1")
    end = done(events)
    assert end.payload.get("status") == "completed"
    assert end.payload.get("report") == "The cup is on the table."
    kinds = [e.type for e in events]
    assert kinds[0] is EventType.TASK_STARTED
    assert kinds.index(EventType.TOOL_CALL) < kinds.index(EventType.TOOL_RESULT)
    assert kinds[-2:] == [EventType.MEMORY_CONSOLIDATION, EventType.DONE]
    assert robot.calls == [("look", {})]
    consolidator = memory.consolidator
    assert isinstance(consolidator, RecordingConsolidator)
    assert len(consolidator.calls) == 1
    assert consolidator.calls[0].steps[0].tool == "look"
    assert of(events, EventType.MEMORY_CONSOLIDATION)[0].payload.get("skipped") is False
    assert not memory.notes_path.exists()  # expired
    assert not harness.busy


@pytest.mark.parametrize(
    ("steps", "limits", "status"),
    [
        ([LLMError("provider down after retries")], HarnessLimits(), "failed"),
        ([reply(call("look"))] * 5, HarnessLimits(max_turns=2), "failed"),
        ([reply(call("nope"))] * 5, HarnessLimits(), "aborted"),
    ],
    ids=["provider-failure", "turn-limit", "malformed-abort"],
)
def test_unsuccessful_tasks_do_not_consolidate_but_expire_notes(
    robot: Robot, memory: FileMemory, steps: list[Step], limits: HarnessLimits, status: str
) -> None:
    model = ScriptedModel(steps)
    events = run_all(Harness(model=model, tools=robot.tools, memory=memory, limits=limits))
    end = done(events)
    assert end.payload.get("status") == status
    assert end.payload.get("reason")
    consolidation = of(events, EventType.MEMORY_CONSOLIDATION)[0].payload.to_data()
    assert consolidation["skipped"] is True
    assert consolidation["status"] == "aborted"
    assert isinstance(memory.consolidator, RecordingConsolidator)
    assert memory.consolidator.calls == []
    assert not memory.notes_path.exists()


def test_turn_limit_fails_with_a_clear_reason(robot: Robot) -> None:
    model = ScriptedModel([reply(call("look"))] * 10)
    events = run_all(Harness(model=model, tools=robot.tools, limits=HarnessLimits(max_turns=3)))
    end = done(events)
    assert end.payload.get("status") == "failed"
    assert "turn limit of 3" in end.payload.get("reason")
    assert len(model.requests) == 3
    assert len(of(events, EventType.TURN)) == 3


def test_provider_failure_fails_cleanly(robot: Robot) -> None:
    events = run_all(Harness(model=ScriptedModel([LLMError("HTTP 503 after 3 attempts")]), tools=robot.tools))
    end = done(events)
    assert end.payload.get("status") == "failed"
    assert "model provider failed: HTTP 503" in end.payload.get("reason")


# ---------------------------------------------------------------------- envelopes
def test_envelope_rules_reach_the_model(robot: Robot) -> None:
    bad_json = ToolCall("id_bad", "look", "{not json", None)
    model = ScriptedModel(
        [
            reply(call("broken")),
            reply(call("pick", target=5)),  # schema: target must be a string
            reply(call("teleport")),
            reply(call("look", "between")),  # resets the malformed count
            reply(bad_json),
            reply(call("look", "first"), call("pick", "second", target="cup")),
            final("done"),
        ]
    )
    events = run_all(Harness(model=model, tools=robot.tools))
    assert done(events).payload.get("status") == "completed"
    results = tool_contents(model.requests[-1])
    broken, invalid, unknown, _, not_object, first, second = results
    assert broken == {"success": False, "reason": "tool result has no boolean 'success' field"}
    assert invalid["success"] is False and "target" in invalid["reason"]
    assert unknown["success"] is False and "unknown tool 'teleport'" in unknown["reason"]
    assert not_object["success"] is False and "not a JSON object" in not_object["reason"]
    assert first == {"success": True, "seen": "a red cup on the table"}
    assert second["success"] is False and "one tool call per turn" in second["reason"]
    # Only valid first calls ran; the second call of the last turn did not.
    assert robot.calls == [("broken", {}), ("look", {}), ("look", {})]
    # The bad JSON is stored as {} so the provider can re-read the history.
    assistant = [m for m in model.requests[-1] if m["role"] == "assistant"]
    assert assistant[4]["tool_calls"][0]["function"]["arguments"] == "{}"
    # Each tool call is answered exactly once, right after its assistant message.
    ids = [c["id"] for m in assistant for c in m["tool_calls"]]
    answered = [m["tool_call_id"] for m in model.requests[-1] if m["role"] == "tool"]
    assert ids == answered


def test_three_malformed_decisions_in_a_row_abort(robot: Robot) -> None:
    model = ScriptedModel([reply(call("nope")), reply(call("look", target=1)), final(""), final("never")])
    events = run_all(Harness(model=model, tools=robot.tools))
    end = done(events)
    assert end.payload.get("status") == "aborted"
    assert "3 malformed decisions in a row" in end.payload.get("reason")
    assert robot.calls == []


def test_a_valid_call_resets_the_malformed_count(robot: Robot) -> None:
    model = ScriptedModel(
        [reply(call("nope")), reply(call("nope")), reply(call("look")), reply(call("nope"))]
    )
    events = run_all(Harness(model=model, tools=robot.tools))
    assert done(events).payload.get("status") == "completed"


# ---------------------------------------------------------------------- evaluation
def test_evaluator_gets_post_condition_and_post_execution_observation(
    robot: Robot, memory: FileMemory
) -> None:
    observations = FakeObservations()
    evaluator = FakeEvaluator({"status": "success", "evidence": "cup in gripper"})
    model = ScriptedModel([reply(call("pick", target="cup")), final("holding the cup")])
    harness = Harness(
        model=model,
        tools=robot.tools,
        memory=memory,
        observations=observations,
        evaluator=evaluator,
        post_execution_wait_s=0.7,
    )
    events = run_all(harness)
    assert done(events).payload.get("status") == "completed"
    assert evaluator.calls[0]["tool"] == "pick"
    assert evaluator.calls[0]["run_id"] == "run-7"
    assert evaluator.calls[0]["post_condition"] == "the cup is held"
    assert observations.after_calls and observations.after_calls[0][1] == 0.7
    verdict = of(events, EventType.VERDICT)[0].payload.get("verdict")
    assert verdict["status"] == "success"
    result = tool_contents(model.requests[-1])[0]
    assert result["success"] is True and result["verdict"]["status"] == "success"
    assert isinstance(memory.consolidator, RecordingConsolidator)
    notes = memory.consolidator.calls[0]
    assert notes.steps[0].verdict is not None and notes.steps[0].verdict.status == "success"


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        ({"status": "failure", "failure_reason": "cup still on table"}, "cup still on table"),
        ({"status": "looks fine"}, "malformed verdict"),
        ({"status": "process"}, "malformed verdict: 'process' for a non-segment tool"),
        (Verdict(VerdictStatus.FAILURE, "run-7", "gripper empty"), "gripper empty"),
    ],
    ids=["failure", "bad-status", "process-not-allowed", "verdict-object"],
)
def test_failure_and_malformed_verdicts_fail_closed(robot: Robot, answer: Any, reason: str) -> None:
    model = ScriptedModel([reply(call("pick", target="cup")), final("report")])
    harness = Harness(
        model=model, tools=robot.tools, observations=FakeObservations(), evaluator=FakeEvaluator(answer)
    )
    events = run_all(harness)
    result = tool_contents(model.requests[-1])[0]
    assert result["success"] is False
    assert result["reason"].startswith("post-condition not met")
    assert reason in result["reason"]
    assert result["verdict"]["status"] == "failure"
    assert result["tool_reported"]["picked"] == "cup"
    assert of(events, EventType.TOOL_RESULT)[0].payload.get("result")["success"] is False


def test_evaluated_tool_without_run_id_fails(robot: Robot) -> None:
    evaluator = FakeEvaluator({"status": "success"})
    model = ScriptedModel([reply(call("sloppy_pick", target="cup")), final("report")])
    run_all(Harness(model=model, tools=robot.tools, observations=FakeObservations(), evaluator=evaluator))
    result = tool_contents(model.requests[-1])[0]
    assert result["success"] is False and "run_id" in result["reason"]
    assert evaluator.calls == []


def test_segment_limit_from_evaluator_config(robot: Robot) -> None:
    @tool(
        description="Move arm a bit.",
        physical=True,
        evaluated=True,
        post_condition="arm at goal",
        segment=True,
    )
    def reach() -> dict[str, Any]:
        return success(run_id="reach-1", moved=True)

    model = ScriptedModel([reply(call("reach"))] * 3 + [final("ok")])
    harness = Harness(
        model=model,
        tools=[reach],
        observations=FakeObservations(),
        evaluator=FakeEvaluator({"status": "process"}),
        evaluator_config=EvaluatorConfig(max_segments=2),
    )
    events = run_all(harness)
    statuses = [e.payload.get("verdict")["status"] for e in of(events, EventType.VERDICT)]
    assert statuses == ["process", "process", "failure"]


# ---------------------------------------------------------------------- hooks
def test_each_hook_outcome_is_a_safety_event(robot: Robot) -> None:
    hooks = [
        FixedHook("watcher", HookDecision(HookAction.PASS)),
        FixedHook("shortener", HookDecision(HookAction.REWRITE, arguments={"distance_m": 0.2})),
    ]
    model = ScriptedModel([reply(call("drive", distance_m=3.0)), final("ok")])
    # Hook mechanics only: the built-in clearance filter is switched off, by its loud name.
    harness = Harness(
        model=model, tools=robot.tools, hooks=hooks, unsafe_disable_base_motion_safety_filter=True
    )
    events = run_all(harness)
    safety = [(e.payload.get("hook"), e.payload.get("action")) for e in of(events, EventType.SAFETY)]
    assert safety == [("watcher", "pass"), ("shortener", "rewrite")]
    assert robot.calls == [("drive", {"distance_m": 0.2, "direction": "forward"})]

    robot.calls.clear()
    blocker = FixedHook("wall", HookDecision(HookAction.BLOCK, reason="a wall is there"))
    model = ScriptedModel([reply(call("drive", distance_m=1.0)), final("blocked")])
    events = run_all(Harness(model=model, tools=robot.tools, hooks=[blocker]))
    assert [(e.payload.get("hook"), e.payload.get("action")) for e in of(events, EventType.SAFETY)] == [
        ("wall", "block")
    ]
    assert robot.calls == []
    result = tool_contents(model.requests[-1])[0]
    assert result == {"success": False, "reason": "a wall is there", "blocked_by": "wall"}


def test_stale_clearance_blocks_base_motion(robot: Robot) -> None:
    observations = FakeObservations(clearance_age=2.0, stale=True)
    hook = BaseMotionSafetyFilter(SafetyConfig(), observations.clearance)
    model = ScriptedModel([reply(call("drive", distance_m=0.5)), final("could not move")])
    events = run_all(Harness(model=model, tools=robot.tools, observations=observations, hooks=[hook]))
    block = of(events, EventType.SAFETY)[0].payload.to_data()
    assert block["action"] == "block" and "stale" in block["reason"]
    assert robot.calls == []
    # The model was told before deciding, and again in the result.
    assert "STALE" in model.requests[0][-1]["content"][0]["text"]
    assert "stale" in tool_contents(model.requests[-1])[0]["reason"]


def test_fresh_clearance_clamps_translation(robot: Robot) -> None:
    observations = FakeObservations()
    hook = BaseMotionSafetyFilter(SafetyConfig(margin_m=0.1), observations.clearance)
    model = ScriptedModel([reply(call("drive", distance_m=1.2, direction="left")), final("moved")])
    events = run_all(Harness(model=model, tools=robot.tools, observations=observations, hooks=[hook]))
    assert of(events, EventType.SAFETY)[0].payload.get("action") == "rewrite"
    assert robot.calls == [("drive", {"distance_m": 0.5, "direction": "left"})]


def test_approval_timeout_denies(robot: Robot) -> None:
    released = threading.Event()

    class SilentOperator:
        def request(self, tool: str, arguments: dict[str, Any], timeout_s: float) -> bool:
            released.wait(5.0)
            return True  # far too late

    hook = ApprovalHook(SilentOperator(), timeout_s=0.2)
    model = ScriptedModel([reply(call("open_door")), final("door stays closed")])
    try:
        events = run_all(Harness(model=model, tools=robot.tools, hooks=[hook]))
    finally:
        released.set()
    block = of(events, EventType.SAFETY)[0].payload.to_data()
    assert block["action"] == "block" and "timed out" in block["reason"]
    assert robot.calls == []
    assert tool_contents(model.requests[-1])[0]["success"] is False


# ---------------------------------------------------------------------- cancellation
def test_cancel_before_the_first_model_call(robot: Robot) -> None:
    model = ScriptedModel([reply(call("look"))])
    token = CancelToken()
    token.cancel("operator said stop")
    events = run_all(Harness(model=model, tools=robot.tools), cancel=token)
    end = done(events)
    assert end.payload.get("status") == "cancelled" and end.payload.get("reason") == "operator said stop"
    assert model.requests == []


def test_cancel_before_tool_execution(robot: Robot, memory: FileMemory) -> None:
    harness: Harness

    def decide_then_cancel(messages: list[dict[str, Any]]) -> ModelReply:
        assert harness.cancel("stop now")
        return reply(call("look"))

    model = ScriptedModel([decide_then_cancel, final("never")])
    harness = Harness(model=model, tools=robot.tools, memory=memory)
    events = run_all(harness)
    end = done(events)
    assert end.payload.get("status") == "cancelled"
    assert robot.calls == []
    assert len(model.requests) == 1
    assert of(events, EventType.TOOL_RESULT)[0].payload.get("result")["reason"] == "not executed: stop now"
    assert of(events, EventType.MEMORY_CONSOLIDATION)[0].payload.get("skipped") is True


def test_cancel_during_a_tool_reaches_the_tool_and_skips_the_next_decision(robot: Robot) -> None:
    harness: Harness

    def decide_then_cancel_later(messages: list[dict[str, Any]]) -> ModelReply:
        threading.Timer(0.1, lambda: harness.cancel("abort mission")).start()
        return reply(call("wait"))

    model = ScriptedModel([decide_then_cancel_later, final("never")])
    harness = Harness(model=model, tools=robot.tools)
    events = run_all(harness)
    assert done(events).payload.get("status") == "cancelled"
    assert of(events, EventType.TOOL_RESULT)[0].payload.get("result") == {"success": True, "cancelled": True}
    assert len(model.requests) == 1


def test_wall_time_limit_fails_and_cancels_the_tool(robot: Robot) -> None:
    model = ScriptedModel([reply(call("wait")), final("never")])
    events = run_all(Harness(model=model, tools=robot.tools, limits=HarnessLimits(task_timeout_s=0.3)))
    end = done(events)
    assert end.payload.get("status") == "failed"
    assert "wall-time limit" in end.payload.get("reason")
    assert of(events, EventType.TOOL_RESULT)[0].payload.get("result")["cancelled"] is True


def test_second_concurrent_run_is_rejected(robot: Robot) -> None:
    entered = threading.Event()
    release = threading.Event()

    def slow(messages: list[dict[str, Any]]) -> ModelReply:
        entered.set()
        release.wait(5.0)
        return final("done")

    harness = Harness(model=ScriptedModel([slow]), tools=robot.tools)
    stream = harness.run("first task")
    collected: list[HarnessEvent] = []
    worker = threading.Thread(target=lambda: collected.extend(stream))
    worker.start()
    try:
        assert entered.wait(5.0)
        assert harness.busy
        with pytest.raises(TaskRejectedError, match="is running"):
            harness.run("second task")
    finally:
        release.set()
        worker.join(5.0)
    assert done(collected).payload.get("status") == "completed"
    assert not harness.busy
    # The harness accepts a new task once the first is done.
    assert done(run_all(harness, "third task")).payload.get("status") == "completed"


def test_rejection_is_immediate_even_before_iterating(robot: Robot) -> None:
    harness = Harness(model=ScriptedModel([final("a"), final("b")]), tools=robot.tools)
    stream = harness.run("first")
    with pytest.raises(TaskRejectedError):
        harness.run("second")
    assert done(list(stream)).payload.get("status") == "completed"
    with pytest.raises(TaskRejectedError, match="empty"):
        harness.run("   ")


def test_revision_reaches_the_model_before_the_next_decision(robot: Robot) -> None:
    harness: Harness

    def decide_and_revise(messages: list[dict[str, Any]]) -> ModelReply:
        harness.revise("bring the blue cup instead")
        return reply(call("look"))

    model = ScriptedModel([decide_and_revise, final("blue cup brought")])
    harness = Harness(model=model, tools=robot.tools)
    events = run_all(harness)
    assert of(events, EventType.REVISION)[0].payload.get("instruction") == "bring the blue cup instead"
    users = [m["content"] for m in model.requests[1] if m["role"] == "user" and isinstance(m["content"], str)]
    assert users[-1].startswith("# Instruction revision from the operator\nbring the blue cup instead")
    assert not any("blue" in str(m.get("content")) for m in model.requests[0])


# ---------------------------------------------------------------------- context
class Profile:
    def render(self) -> str:
        return "# Embodiment Profile\n## Operational Envelope\nfootprint radius 0.3 m"


def test_resident_prefix_is_byte_stable_across_turns(robot: Robot, memory: FileMemory) -> None:
    memory.memory_path.write_text("# Memory\n\n## Preferences\n- [user-preference] Cups go on the left.\n")
    model = ScriptedModel([reply(call("look")), reply(call("look")), reply(call("look")), final("ok")])
    harness = Harness(
        model=model, tools=robot.tools, memory=memory, profile=Profile(), observations=FakeObservations()
    )
    run_all(harness)
    systems = [r[0]["content"].encode() for r in model.requests]
    assert len(set(systems)) == 1
    system = systems[0].decode()
    assert system.startswith("# harness_ros: decide\n")
    assert system.index("Cups go on the left") < system.index("footprint radius 0.3 m")
    assert len({json.dumps(t, sort_keys=False) for t in model.tools}) == 1
    # Everything before the newest observation is a byte-identical prefix of the next request.
    for earlier, later in zip(model.requests, model.requests[1:], strict=False):
        prefix = earlier[:-1]
        assert json.dumps(later[: len(prefix)]).encode() == json.dumps(prefix).encode()


def test_images_only_in_the_newest_observation_message(robot: Robot) -> None:
    model = ScriptedModel([reply(call("look")), reply(call("look")), final("ok")])
    events = run_all(Harness(model=model, tools=robot.tools, observations=FakeObservations()))
    last = model.requests[-1]
    with_images = [
        i
        for i, m in enumerate(last)
        if isinstance(m["content"], list) and any(p["type"] == "image_url" for p in m["content"])
    ]
    assert with_images == [len(last) - 1]
    assert last[-1]["role"] == "user"
    assert all("image" not in m["content"] for m in last if m["role"] == "tool")
    # Observation events describe views but never carry image bytes.
    observation = of(events, EventType.OBSERVATION)[0].payload.to_data()
    assert observation["views"][0]["name"] == "front"
    assert observation["clearance"]["forward"] == 1.5
    assert "base64" not in json.dumps([e.to_dict() for e in events])


def test_task_notes_snapshot_is_added_only_when_changed(robot: Robot, memory: FileMemory) -> None:
    model = ScriptedModel([reply(call("look")), final("ok")])
    events = run_all(Harness(model=model, tools=robot.tools, memory=memory))
    notes_events = of(events, EventType.NOTES)
    # None before the first call (the notes hold only the goal, which the model has), then
    # one after the look result.
    assert len(notes_events) == 1
    first, last = model.requests[0], model.requests[-1]
    assert not any("Task Notes snapshot" in str(m["content"]) for m in first)
    notes = [m["content"] for m in last if m["role"] == "user" and "Task Notes snapshot" in str(m["content"])]
    assert len(notes) == 1 and "look" in notes[-1] and "bring the red cup" not in notes[-1]


def test_later_task_notes_snapshots_hold_only_what_changed(robot: Robot, memory: FileMemory) -> None:
    model = ScriptedModel([reply(call("look", "c1")), reply(call("look", "c2")), final("ok")])
    events = run_all(Harness(model=model, tools=robot.tools, memory=memory))
    notes_events = of(events, EventType.NOTES)
    assert [e.payload.get("update") for e in notes_events] == [False, True]
    last = model.requests[-1]
    notes = [str(m["content"]) for m in last if "Task Notes snapshot" in str(m["content"])]
    # The first snapshot is whole; the second, new text of the decision, repeats none of it.
    assert notes[0].startswith(NOTES_HEADER) and "1. look" in notes[0] and "Phase: acting" in notes[0]
    assert notes[1].startswith(NOTES_UPDATE_HEADER) and "2. look" in notes[1]
    assert "1. look" not in notes[1] and "Phase" not in notes[1] and "## Timeline" not in notes[1]


def test_compaction_keeps_tail_and_never_summarises_resident_context(
    robot: Robot, memory: FileMemory
) -> None:
    steps = [reply(call("look", f"c{i}")) for i in range(6)] + [final("done")]
    model = ScriptedModel(steps, compact=plain('{"summary": "looked six times, saw a red cup"}'))
    harness = Harness(
        model=model, tools=robot.tools, memory=memory, profile=Profile(), context_window_tokens=1500
    )
    events = run_all(harness)
    assert done(events).payload.get("status") == "completed"
    compactions = of(events, EventType.COMPACTION)
    assert (
        compactions
        and compactions[0].payload.get("compacted") is True
        and compactions[0].payload.get("error") is None
    )
    summary_request = model.compact_requests[0]
    transcript = summary_request[1]["content"]
    assert "footprint radius" not in transcript and "# harness_ros: decide" not in transcript
    assert "# Task\n" not in transcript  # the instruction stays verbatim, outside the summary
    after = model.requests[-1]
    assert after[0] == model.requests[0][0]  # resident untouched
    assert after[1]["content"] == "# Task\nbring the red cup"
    assert any("looked six times" in str(m["content"]) for m in after)
    # The notes are shown whole once more after the checkpoint (later snapshots hold only
    # what changed, and the checkpoint summarised the earlier ones): every result is there.
    checkpoint = next(i for i, m in enumerate(after) if "looked six times" in str(m["content"]))
    notes = [str(m["content"]) for m in after[checkpoint:] if "Task Notes snapshot" in str(m["content"])]
    whole = [i for i, text in enumerate(notes) if text.startswith(NOTES_HEADER)]
    assert whole, "no whole snapshot after the checkpoint"
    shown = "\n".join(notes[whole[-1] :])
    assert all(f"{n}. look" in shown for n in range(1, 7))
    # The latest tool exchange is intact: assistant call then its result.
    assistant = [i for i, m in enumerate(after) if m["role"] == "assistant"]
    assert after[assistant[-1] + 1]["role"] == "tool"
    assert after[assistant[-1] + 1]["tool_call_id"] == after[assistant[-1]]["tool_calls"][0]["id"]


def test_failed_compaction_leaves_history_unchanged(robot: Robot) -> None:
    steps = [reply(call("look", f"c{i}")) for i in range(4)] + [final("done")]
    model = ScriptedModel(steps, compact=plain("I refuse to answer in JSON"))
    events = run_all(Harness(model=model, tools=robot.tools, context_window_tokens=900))
    errors = [e.payload.get("error") for e in of(events, EventType.COMPACTION)]
    assert errors and all(errors)
    assert done(events).payload.get("status") == "completed"
    for earlier, later in zip(model.requests, model.requests[1:], strict=False):
        assert later[: len(earlier)] == earlier  # nothing was replaced


# ---------------------------------------------------------------------- run folder
def test_run_folder_contents(robot: Robot, memory: FileMemory, tmp_path: Path) -> None:
    model = ScriptedModel([reply(call("look")), final("The cup is on the table.")])
    harness = Harness(
        model=model,
        tools=robot.tools,
        memory=memory,
        observations=FakeObservations(),
        runs_dir=tmp_path / "runs",
    )
    events = run_all(harness, task_id="task-42")
    folder = tmp_path / "runs" / "task-42"
    assert harness.last_run_dir == folder
    lines = (folder / "events.jsonl").read_text().splitlines()
    logged = [HarnessEvent.from_dict(json.loads(line)) for line in lines]
    assert [e.type for e in logged] == [e.type for e in events]
    assert sum(e.type is EventType.DONE for e in logged) == 1
    assert (folder / "turn_1_front.jpg").read_bytes() == JPEG
    assert (folder / "turn_2_front.jpg").exists()
    assert of(events, EventType.OBSERVATION)[0].payload.get("images") == ["turn_1_front.jpg"]
    report = (folder / "report.md").read_text()
    assert "completed" in report.splitlines()[0] and "The cup is on the table." in report
    trajectory = json.loads((folder / "trajectory.json").read_text())
    assert trajectory["status"] == "completed"
    assert trajectory["task_id"] == "task-42"
    assert trajectory["goal"] == "bring the red cup"
    assert trajectory["events"][0]["tool"] == "look"
    assert trajectory["events"][0]["result"]["success"] is True
    with pytest.raises(TaskRejectedError, match="already exists"):
        harness.run("again", task_id="task-42")
    assert not harness.busy


def test_trajectory_without_memory_and_aborted_status(robot: Robot, tmp_path: Path) -> None:
    model = ScriptedModel([reply(call("look")), LLMError("down")])
    run_all(Harness(model=model, tools=robot.tools, runs_dir=tmp_path), task_id="t")
    trajectory = json.loads((tmp_path / "t" / "trajectory.json").read_text())
    assert trajectory["status"] == "aborted"
    assert trajectory["events"][0]["tool"] == "look"
    assert "failed" in (tmp_path / "t" / "report.md").read_text()


def test_tool_feedback_becomes_events() -> None:
    @tool(description="Reports progress.")
    def progress(feedback: Any) -> dict[str, Any]:
        feedback("progress", {"percent": 50})
        return success(done=True)

    model = ScriptedModel([reply(call("progress")), final("ok")])
    events = run_all(Harness(model=model, tools=[progress]))
    assert of(events, EventType.TOOL_FEEDBACK)[0].payload.to_data() == {
        "tool": "progress",
        "feedback": {"percent": 50},
    }


def test_idle_controls_and_prompt_override(robot: Robot) -> None:
    model = ScriptedModel([final("ok")])
    harness = Harness(model=model, tools=robot.tools, system_prompt="Be brief.")
    assert harness.cancel() is False
    harness.revise("ignored while idle")  # logged, never raised (the ROS callback calls it)
    run_all(harness)
    assert model.requests[0][0]["content"].startswith("# harness_ros: decide\nBe brief.")
    assert not any("ignored while idle" in str(m["content"]) for m in model.requests[0])


def test_a_tool_that_ignores_cancel_is_abandoned_after_the_grace_period(
    robot: Robot, monkeypatch: pytest.MonkeyPatch
) -> None:
    import harness_ros.harness.calls as calls

    monkeypatch.setattr(calls, "_STOP_GRACE_S", 0.3)
    release = threading.Event()

    @tool(description="Hangs and ignores cancellation.", physical=True)
    def stubborn() -> dict[str, Any]:
        release.wait(10.0)
        return success(done=True)

    harness: Harness

    def decide_then_cancel(messages: list[dict[str, Any]]) -> ModelReply:
        threading.Timer(0.1, lambda: harness.cancel("operator stop")).start()
        return reply(call("stubborn"))

    harness = Harness(model=ScriptedModel([decide_then_cancel, final("never")]), tools=[stubborn])
    try:
        events = run_all(harness)
    finally:
        release.set()
    assert done(events).payload.get("status") == "cancelled"
    result = of(events, EventType.TOOL_RESULT)[0].payload.get("result")
    assert result["success"] is False
    assert "did not return after cancellation" in result["reason"]


def test_tool_calls_share_one_thread_and_an_abandoned_tool_gets_it_replaced(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import harness_ros.harness.calls as calls

    monkeypatch.setattr(calls, "_STOP_GRACE_S", 0.3)
    release = threading.Event()
    threads: list[threading.Thread] = []

    @tool(description="Says which thread ran it.")
    def where() -> dict[str, Any]:
        threads.append(threading.current_thread())
        return success(done=True)

    @tool(description="Hangs and ignores cancellation.", physical=True)
    def stubborn() -> dict[str, Any]:
        threads.append(threading.current_thread())
        release.wait(10.0)
        return success(done=True)

    harness: Harness

    def stubborn_then_cancel(messages: list[dict[str, Any]]) -> ModelReply:
        threading.Timer(0.1, lambda: harness.cancel("operator stop")).start()
        return reply(call("stubborn"))

    model = ScriptedModel(
        [reply(call("where")), reply(call("where")), stubborn_then_cancel, reply(call("where")), final("ok")]
    )
    harness = Harness(model=model, tools=[where, stubborn])
    try:
        first = run_all(harness)
        second = run_all(harness)  # the stubborn tool still hangs on its thread
        still_hanging = not release.is_set()
    finally:
        release.set()
    assert done(first).payload.get("status") == "cancelled"
    assert done(second).payload.get("status") == "completed"
    assert still_hanging
    assert threads[0] is threads[1] is threads[2], "calls in turn reuse one thread"
    assert threads[3] is not threads[2], "the call after an abandoned tool runs on a new thread"
    assert of(second, EventType.TOOL_RESULT)[0].payload.get("result")["success"] is True


def test_load_skill_resource_is_offered_only_while_a_loaded_skill_lists_resources(tmp_path: Path) -> None:
    from harness_ros.skills import SkillCatalog

    for name, resources in (("with-files", {"checklist.md": "grip low"}), ("plain", {})):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "SKILL.md").write_text(f"---\nname: {name}\ndescription: A skill.\n---\nDo it.\n")
        for file, text in resources.items():
            (folder / file).write_text(text)
    model = ScriptedModel(
        [
            reply(ToolCall("l1", "load_skill", '{"name": "with-files"}', {"name": "with-files"})),
            reply(call("load_skill_resource", path="checklist.md")),
            reply(ToolCall("l2", "load_skill", '{"name": "plain"}', {"name": "plain"})),
            final("ok"),
        ]
    )
    events = run_all(Harness(model=model, tools=[], skills=SkillCatalog.discover(tmp_path)))
    offered = [sorted(d["function"]["name"] for d in tools or []) for tools in model.tools]
    assert ["load_skill_resource" in names for names in offered] == [False, True, True, False]
    assert all("load_skill" in names for names in offered)
    results = [e.payload.get("result") for e in of(events, EventType.TOOL_RESULT)]
    assert results[1]["success"] is True and "grip low" in json.dumps(results[1])


def test_closing_the_event_stream_mid_tool_cancels_the_tool() -> None:
    # A consumer that stops reading (the node failing to publish, say) must not leave a
    # robot goal running unwatched: the tool's CancelToken fires.
    started, stopped = threading.Event(), threading.Event()

    @tool(description="Drives until cancelled.", physical=True)
    def drive_on(cancel: CancelToken, feedback: Any) -> dict[str, Any]:
        started.set()
        feedback("drive_on", {"progress": 0.1})
        if cancel.wait(10.0):
            stopped.set()
        return success(stopped=stopped.is_set())

    harness = Harness(model=ScriptedModel([reply(call("drive_on")), final("never")]), tools=[drive_on])
    stream = harness.run("drive")
    for event in stream:  # the generator pauses at a feedback event while the tool runs
        if event.type is EventType.TOOL_FEEDBACK:
            break
    assert started.is_set()
    stream.close()
    assert stopped.wait(2.0), "closing the stream must cancel the running tool"
    assert not harness.busy


def test_server_readiness_is_awaited_before_the_safety_hooks() -> None:
    # The clearance the base-motion filter reads must be the last thing before the goal:
    # a tool's server wait happens first, and a server that never came means no hook runs.
    order: list[str] = []

    @tool(description="Drive.", physical=True, base_motion=True)
    def drive() -> dict[str, Any]:
        order.append("execute")
        return success(moved=True)

    class Hook:
        name = "recording_hook"

        def before_execution(
            self, spec: ToolSpec, arguments: dict[str, Any], observation: Any
        ) -> HookDecision:
            order.append("hook")
            return HookDecision(HookAction.PASS, hook=self.name)

    def ready(cancel: CancelToken) -> str | None:
        order.append("ready")
        return None

    drive.wait_until_ready = ready  # type: ignore[attr-defined]
    model = ScriptedModel([reply(call("drive")), final("done")])
    unsafe = {"unsafe_disable_base_motion_safety_filter": True}  # only the order is under test
    events = run_all(Harness(model=model, tools=[drive], hooks=[Hook()], **unsafe))
    assert order == ["ready", "hook", "execute"]
    assert done(events).payload.get("status") == "completed"

    order.clear()
    drive.wait_until_ready = lambda cancel: "action server '/drive' not available after 2 s"  # type: ignore[attr-defined]
    model = ScriptedModel([reply(call("drive")), final("gave up")])
    events = run_all(Harness(model=model, tools=[drive], hooks=[Hook()], **unsafe))
    assert order == []
    assert (
        of(events, EventType.TOOL_RESULT)[0]
        .payload.get("result")["reason"]
        .startswith("action server '/drive'")
    )


# ---------------------------------------------------------------------- safe by default
def test_a_harness_built_directly_checks_clearance_before_base_motion(robot: Robot) -> None:
    # Finding: Harness(...) without hooks ran base motion with no clearance check at all.
    model = ScriptedModel([reply(call("drive", distance_m=0.5, direction="forward")), final("ok")])
    events = run_all(Harness(model=model, tools=robot.tools))
    result = of(events, EventType.TOOL_RESULT)[0].payload.get("result")
    assert result["success"] is False
    assert "no base clearance reading" in result["reason"]
    assert robot.calls == []
    # A pick is not base motion: the filter lets it through.
    model = ScriptedModel([reply(call("look")), final("ok")])
    run_all(Harness(model=model, tools=robot.tools))
    assert robot.calls == [("look", {})]


def test_the_default_filter_reads_the_harness_observation_source(robot: Robot) -> None:
    class Source:
        def now(self) -> float:
            return 1.0

        def observe(self) -> Observation:
            return Observation(time=1.0, clearance=self.clearance())

        def observe_after(self, after: float, timeout_s: float) -> Observation:
            return self.observe()

        def clearance(self) -> Clearance:
            return Clearance(0.35, 3.0, 3.0, 3.0, stamp=1.0, age_s=0.01, stale=False)

    model = ScriptedModel([reply(call("drive", distance_m=2.0, direction="forward")), final("ok")])
    run_all(Harness(model=model, tools=robot.tools, observations=Source()))
    assert robot.calls == [("drive", {"distance_m": 0.25, "direction": "forward"})]


def test_disabling_the_filter_needs_the_loud_argument(robot: Robot, caplog: pytest.LogCaptureFixture) -> None:
    model = ScriptedModel([reply(call("drive", distance_m=0.5, direction="forward")), final("ok")])
    run_all(Harness(model=model, tools=robot.tools, unsafe_disable_base_motion_safety_filter=True))
    assert robot.calls == [("drive", {"distance_m": 0.5, "direction": "forward"})]
    assert "UNSAFE: the base-motion safety filter is disabled" in caplog.text


@pytest.mark.parametrize("task_id", ["task-1\n", "task-1\r\n", "a/b", " task-1", "x" * 129])
def test_task_ids_are_matched_in_full(robot: Robot, task_id: str) -> None:
    # Finding: "task-1\n" passed the ``$``-anchored check and named a run folder with a newline.
    harness = Harness(model=ScriptedModel([final("ok")]), tools=robot.tools)
    with pytest.raises(TaskRejectedError, match="task id"):
        harness.run("look around", task_id=task_id)
    assert not harness.busy
