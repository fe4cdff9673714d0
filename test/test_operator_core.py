"""The operator tools and the session, without ROS: an in-memory channel."""

from __future__ import annotations

import json
import threading
from typing import Any

from harness_ros.harness import Harness
from harness_ros.model.contracts import ModelReply, ToolCall, Usage
from harness_ros.operator import OperatorAnswer, OperatorQuestion, Session, summarize_task
from harness_ros.tools import CancelToken, success, tool
from harness_ros.trajectory import Trajectory


class Channel:
    """Answers with ``answer`` (None: never), records questions and notices."""

    def __init__(self, answer: str | None) -> None:
        self.answer = answer
        self.questions: list[OperatorQuestion] = []
        self.notices: list[tuple[str, str, str]] = []
        self.waiting = threading.Event()

    def ask(self, question: OperatorQuestion, cancel: CancelToken) -> OperatorAnswer | None:
        self.questions.append(question)
        if self.answer is None:
            self.waiting.set()
            cancel.wait(question.timeout_s)
            return None
        return OperatorAnswer(question.question_id, self.answer)

    def notify(self, task_id: str, text: str, level: str) -> None:
        self.notices.append((task_id, text, level))


class Script:
    """A model that replays decisions and records what it saw."""

    name = "scripted-test"

    def __init__(self, *replies: ModelReply) -> None:
        self.replies = list(replies)
        self.seen: list[list[dict[str, Any]]] = []

    def complete(self, messages: list[dict[str, Any]], tools: Any = None, **_: Any) -> ModelReply:
        self.seen.append(messages)
        return self.replies.pop(0) if self.replies else final("done")


def call(name: str, **arguments: Any) -> ModelReply:
    import json

    tool_call = ToolCall(id="c1", name=name, arguments_json=json.dumps(arguments), arguments=arguments)
    return ModelReply(text="", tool_calls=(tool_call,), usage=Usage())


def final(text: str) -> ModelReply:
    """The model ends the task with ``finish_task`` and ``text`` as its summary."""
    arguments = {"outcome": "succeeded", "summary": text}
    finish = ToolCall("c_finish", "finish_task", json.dumps(arguments), arguments)
    return ModelReply(text=None, tool_calls=(finish,), usage=Usage())


def results(events: list[Any]) -> list[dict[str, Any]]:
    return [e.payload.get("result") for e in events if e.type.value == "tool_result"]


def test_the_answer_reaches_the_model_and_no_answer_is_never_made_up() -> None:
    channel = Channel("the red one")
    model = Script(call("ask_operator", question="Which cup?", choices=["red", "blue"]), final("ok"))
    events = list(Harness(model=model, operator=channel).run("bring a cup", task_id="t1"))
    assert results(events)[0] == {
        "success": True,
        "question_id": channel.questions[0].question_id,
        "question": "Which cup?",
        "answer": "the red one",
        "answered_by": "operator",
    }
    assert channel.questions[0].task_id == "t1" and channel.questions[0].choices == ("red", "blue")

    silent = Channel(None)
    model = Script(call("ask_operator", question="Which cup?"), final("ok"))
    events = list(
        Harness(model=model, operator=silent, operator_timeout_s=0.2).run("bring a cup", task_id="t2")
    )
    result = results(events)[0]
    assert result["success"] is False
    assert result["reason"].startswith("no answer from the operator within 0.2 s")
    assert "answer" not in result


def test_a_waiting_question_ends_with_the_task_cancel() -> None:
    silent = Channel(None)
    harness = Harness(
        model=Script(call("ask_operator", question="Which?")), operator=silent, operator_timeout_s=60
    )
    stream = harness.run("bring a cup", task_id="t3")
    events: list[Any] = []
    thread = threading.Thread(target=lambda: events.extend(stream))
    thread.start()
    assert silent.waiting.wait(10)
    harness.cancel("operator stop")
    thread.join(10)
    assert not thread.is_alive(), "the question kept waiting after the cancel"
    assert events[-1].payload.get("status") == "cancelled"


def test_notices_go_to_the_operator_and_tools_exist_only_with_a_channel() -> None:
    channel = Channel("x")
    model = Script(call("notify_operator", text="Battery at 15 %", level="warning"), final("ok"))
    harness = Harness(model=model, operator=channel)
    list(harness.run("check battery", task_id="t4"))
    assert channel.notices == [("t4", "Battery at 15 %", "warning")]
    assert "ask_operator" in harness.registry.names()
    assert "ask_operator" not in Harness(model=Script()).registry.names()


def test_follow_up_tasks_see_the_session_and_a_new_session_does_not() -> None:
    @tool(description="Pick up an object.", physical=True)
    def pick(target: str) -> dict[str, Any]:
        return success(held=target)

    model = Script(
        call("pick", target="green_bottle"), final("The bottle is on the sofa."), final("ok"), final("ok")
    )
    harness = Harness(model=model, tools=[pick])
    list(harness.run("Bring the green bottle to the sofa.", task_id="a"))
    list(harness.run("Now put it back.", task_id="b"))
    follow_up = "\n".join(str(m.get("content")) for m in model.seen[-1] if m.get("role") == "user")
    assert "Earlier tasks in this session" in follow_up
    assert "'Bring the green bottle to the sofa.' -> unverified (completed)" in follow_up
    assert 'pick(target="green_bottle") succeeded' in follow_up
    assert "The bottle is on the sofa." in follow_up
    list(harness.run("Something else.", task_id="c", new_session=True))
    assert "Earlier tasks" not in "\n".join(str(m.get("content")) for m in model.seen[-1])


def test_the_session_ends_after_the_idle_timeout_and_stays_bounded() -> None:
    now = [0.0]
    session = Session(idle_timeout_s=60.0, max_chars=1500, clock=lambda: now[0])
    events = [
        {"type": "task_started", "task_id": "t", "data": {"instruction": "x" * 400}},
        {"type": "done", "task_id": "t", "data": {"status": "completed", "report": "r" * 400}},
    ]
    summary = summarize_task(events, set())
    assert summary is not None
    for _ in range(5):
        session.begin_task()
        session.record(summary)
    _, context = session.begin_task()
    assert 0 < len(context) <= 1500
    assert context.count("- task t:") == 2  # the newest that fit
    assert "earlier task(s) of this session not shown" in context
    now[0] += 61.0
    _, context = session.begin_task()
    assert context == ""


def test_one_task_over_the_budget_is_cut_not_dropped() -> None:
    session = Session(max_chars=300)
    events = [
        {"type": "task_started", "task_id": "t", "data": {"instruction": "y" * 400}},
        {"type": "done", "task_id": "t", "data": {"status": "completed", "report": "r" * 400}},
    ]
    summary = summarize_task(events, set())
    assert summary is not None
    session.record(summary)
    _, context = session.begin_task()
    assert "- task t:" in context and len(context) <= 300


def test_an_operator_answer_is_operator_text_for_memory(tmp_path: Any) -> None:
    """A preference stated in an answer to ask_operator may become a Preference; the same
    words in a robot tool's result may not."""
    from harness_ros.memory import DurableMemoryEntry, FileMemory, MemoryConsolidation

    class Fixed:
        def consolidate(self, task_notes: Any, *, allowed_tools: Any, existing: Any) -> MemoryConsolidation:
            entry = DurableMemoryEntry(
                "Preferences", "Use the red cup for coffee.", 0.9, "the red cup for coffee"
            )
            return MemoryConsolidation(memory_entries=(entry,))

    def trajectory(tool: str, answered_by: str = "operator") -> dict[str, Any]:
        result = {
            "success": True,
            "question": "Which cup?",
            "answer": "Always use the red cup for coffee, please.",
        }
        result["answered_by"] = answered_by
        event = {"index": 1, "tool": tool, "arguments": {}, "result": result, "verdict": None}
        return {
            "task_id": "t",
            "goal": "Bring me a coffee.",
            "phase": "",
            "status": "completed",
            "events": [event],
        }

    def decisions(path: Any, traj: dict[str, Any]) -> list[tuple[bool, str]]:
        memory = FileMemory(path, consolidator=Fixed())
        return [
            (d["accepted"], d["rule"])
            for d in memory.consolidate_trajectory(Trajectory.from_json(traj), allowed_tools=[])["decisions"]
        ]

    assert decisions(tmp_path / "a", trajectory("ask_operator")) == [(True, "accepted")]
    assert decisions(tmp_path / "b", trajectory("read_sign"))[0][0] is False


def test_the_goal_check_judges_what_the_operator_chose() -> None:
    from harness_ros.evaluation import Verdict, VerdictStatus

    class GoalJudge:
        def __init__(self) -> None:
            self.revisions: list[str] = []

        def evaluate(self, **_: Any) -> Verdict:  # per-tool checks: not used here
            raise AssertionError("no evaluated tool in this task")

        def evaluate_task(self, *, goal: str, revisions: Any, run_id: str, observation: Any) -> Verdict:
            self.revisions = list(revisions)
            return Verdict(VerdictStatus.SUCCESS, run_id, None, "checked")

    judge = GoalJudge()
    model = Script(
        call("ask_operator", question="Which cup?"),
        call("finish_task", outcome="succeeded", summary="Done."),
    )
    harness = Harness(model=model, operator=Channel("The red cup."), evaluator=judge)
    events = list(harness.run("Fetch a cup and put it on the coffee table.", task_id="t5"))
    assert judge.revisions == ["The red cup. Fetch a cup and put it on the coffee table."]
    assert events[-1].payload.get("outcome") == "succeeded"
