"""The scripted demo policy: pure decisions, lessons and routing, and its litellm glue."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from harness_ros.evaluation.model_evaluator import read_verdict_object
from harness_ros.memory import FileMemory
from harness_ros.memory.contracts import MemoryConsolidation
from harness_ros.memory.model_policies import consolidation_from_dict
from harness_ros.trajectory import Trajectory
from harness_ros_sim.demo.decide import (
    POLICY_LABEL,
    Step,
    decide,
    experience_summary,
    instruction_of,
    steps_of,
)
from harness_ros_sim.demo.lessons import (
    GENERAL_RECOVERY,
    PICK_OUT_OF_REACH_FAILURE,
    PICK_SLIP_FAILURE,
    consolidate,
    summarize,
)
from harness_ros_sim.demo.policy import purpose_of, register, scripted_reply
from harness_ros_sim.demo.scenarios import DEMO_TASKS, parse_fetch_goal

FETCH = "Fetch the red cup from the kitchen table and put it on the coffee table."
OUT_OF_REACH = "action server '/sim/pick_object' aborted the goal: object out of reach: 0.91 m > 0.75 m"
CONFIRMED = {"status": "success", "run_id": "r", "failure_reason": None, "evidence": "gt"}


def _ok(run_id: str = "r") -> dict[str, Any]:
    return {"success": True, "run_id": run_id, "verdict": CONFIRMED}


def _fail(reason: str) -> dict[str, Any]:
    return {"success": False, "reason": reason}


def _tools(pick_summary: str = "") -> list[dict[str, Any]]:
    description = "Grasp one object by id."
    if pick_summary:
        description += f"\n\nExperience from earlier tasks:\n{pick_summary}"
    return [
        {"type": "function", "function": {"name": "navigate_to", "description": "Drive.", "parameters": {}}},
        {
            "type": "function",
            "function": {"name": "pick_object", "description": description, "parameters": {}},
        },
    ]


# ---------------------------------------------------------------------- instructions
def test_parse_fetch_goal_reads_object_source_and_target() -> None:
    goal = parse_fetch_goal(FETCH)
    assert goal is not None
    assert (goal.object_id, goal.source, goal.target) == ("red_cup", "kitchen_table", "coffee_table")


def test_parse_fetch_goal_handles_ids_bare_surfaces_and_unknown_objects() -> None:
    goal = parse_fetch_goal("move green_bottle coffee_table kitchen_counter")
    assert goal is not None and (goal.source, goal.target) == ("coffee_table", "kitchen_counter")
    only_target = parse_fetch_goal("Put the blue mug on the office desk")
    assert only_target is not None and (only_target.source, only_target.target) == (None, "office_desk")
    assert parse_fetch_goal("Bring me a sandwich") is None


def test_every_demo_task_parses_to_its_object_and_target() -> None:
    for task in DEMO_TASKS:
        text = task.instruction if task.operator_answer is None else f"{task.object_id} {task.instruction}"
        goal = parse_fetch_goal(text)
        assert goal is not None and (goal.object_id, goal.target) == (task.object_id, task.target)


def _with_ask(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    ask = {"type": "function", "function": {"name": "ask_operator", "description": "Ask.", "parameters": {}}}
    return [*tools, ask]


def test_an_ambiguous_instruction_is_asked_about_then_the_answer_is_fetched() -> None:
    ambiguous = DEMO_TASKS[0]
    assert ambiguous.operator_answer is not None
    question = decide(ambiguous.instruction, [], _with_ask(_tools()))
    assert question.tool == "ask_operator"
    assert question.arguments["choices"] == [
        "red cup from the kitchen table",
        "blue mug from the kitchen counter",
    ]
    assert POLICY_LABEL in question.text
    answered = Step(
        "ask_operator", question.arguments, {"success": True, "answer": ambiguous.operator_answer}
    )
    first = decide(ambiguous.instruction, [answered], _with_ask(_tools()))
    assert (first.tool, first.arguments) == ("navigate_to", {"target": "kitchen_table"})
    # The fetch then runs as for a named object, and the report lists only robot steps.
    steps = [answered, Step("navigate_to", {"target": "kitchen_table"}, _ok())]
    assert decide(ambiguous.instruction, steps, _with_ask(_tools())).arguments == {"object_id": "red_cup"}


def test_no_answer_or_an_answer_naming_nothing_means_nothing_is_done() -> None:
    instruction = DEMO_TASKS[0].instruction
    silent = Step("ask_operator", {}, _fail("no answer from the operator within 120 s"))
    final = decide(instruction, [silent], _with_ask(_tools()))
    assert final.final and final.outcome == "failed" and "no answer" in final.report
    vague = Step("ask_operator", {}, {"success": True, "answer": "whatever you like"})
    final = decide(instruction, [vague], _with_ask(_tools()))
    assert final.final and "names none of red_cup, blue_mug" in final.report
    # Without the tool there is nobody to ask: it does not guess.
    assert decide(instruction, [], _tools()).final


# ---------------------------------------------------------------------- decisions
def test_fresh_task_goes_to_the_source_surface_first() -> None:
    decision = decide(FETCH, [], _tools())
    assert (decision.tool, decision.arguments) == ("navigate_to", {"target": "kitchen_table"})
    assert decision.text.startswith(f"[{POLICY_LABEL}]")


def test_out_of_reach_pick_is_recovered_by_approaching_the_object() -> None:
    steps = [
        Step("navigate_to", {"target": "kitchen_table"}, _ok()),
        Step("pick_object", {"object_id": "red_cup"}, _fail(OUT_OF_REACH)),
    ]
    decision = decide(FETCH, steps, _tools())
    assert (decision.tool, decision.arguments) == ("navigate_to", {"target": "red_cup"})
    steps.append(Step("navigate_to", {"target": "red_cup"}, _ok()))
    assert decide(FETCH, steps, _tools()).tool == "pick_object"
    # Out of reach again although it already stands at the object: stop and say so.
    steps.append(Step("pick_object", {"object_id": "red_cup"}, _fail(OUT_OF_REACH)))
    final = decide(FETCH, steps, _tools())
    assert (final.tool, final.outcome) == ("finish_task", "failed")
    assert "could not pick red_cup" in final.report


def test_experience_in_the_tool_definition_makes_it_approach_the_object_first() -> None:
    summary = f"Known failures and their fixes: {PICK_OUT_OF_REACH_FAILURE}"
    decision = decide(FETCH, [], _tools(summary))
    assert (decision.tool, decision.arguments) == ("navigate_to", {"target": "red_cup"})
    assert "Experience from earlier tasks" in decision.text
    # An unrelated lesson does not change the plan.
    assert decide(FETCH, [], _tools("place_object works after navigate_to.")).arguments == {
        "target": "kitchen_table"
    }


def test_slips_are_retried_a_bounded_number_of_times() -> None:
    slip = _fail("grasp slipped: green_bottle slid out of the gripper; it is slippery, try again")
    instruction = "Fetch the green bottle from the coffee table and put it on the kitchen table."
    steps = [Step("navigate_to", {"target": "green_bottle"}, _ok()), Step("pick_object", {}, slip)]
    assert decide(instruction, steps, _tools()).tool == "pick_object"
    steps += [Step("pick_object", {}, slip)]
    assert decide(instruction, steps, _tools()).tool == "pick_object"
    steps += [Step("pick_object", {}, slip)]
    final = decide(instruction, steps, _tools())
    assert (final.tool, final.outcome) == ("finish_task", "failed")


def test_full_fetch_ends_with_an_honest_final_report() -> None:
    steps = [
        Step("navigate_to", {"target": "red_cup"}, _ok()),
        Step("pick_object", {"object_id": "red_cup"}, _ok()),
    ]
    assert decide(FETCH, steps, _tools()).arguments == {"target": "coffee_table"}
    steps.append(Step("navigate_to", {"target": "coffee_table"}, _ok()))
    assert (decide(FETCH, steps, _tools()).tool, decide(FETCH, steps, _tools()).arguments) == (
        "place_object",
        {"surface_id": "coffee_table"},
    )
    steps.append(Step("place_object", {"surface_id": "coffee_table"}, {"success": True, "run_id": "p"}))
    report = decide(FETCH, steps, _tools())
    # The policy ends with finish_task: it claims success; the harness checks the goal.
    assert (report.tool, report.outcome) == ("finish_task", "succeeded")
    assert report.arguments["summary"] == report.report
    assert POLICY_LABEL in report.report
    # No verdict on the place: the report must not claim it was confirmed.
    assert "not evaluated" in report.report
    assert "(the evaluator confirmed it)" not in report.report


def test_conversation_is_read_from_openai_messages() -> None:
    messages = [
        {"role": "system", "content": "# harness_ros: decide\nrules"},
        {"role": "user", "content": f"# Task\n{FETCH}"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "navigate_to", "arguments": '{"target": "kitchen_table"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": json.dumps(_ok())},
        {"role": "user", "content": [{"type": "text", "text": "# Observation"}]},
    ]
    assert instruction_of(messages) == FETCH
    steps = steps_of(messages)
    assert [(s.tool, s.target, s.ok, s.verdict) for s in steps] == [
        ("navigate_to", "kitchen_table", True, "success")
    ]
    reply = scripted_reply(messages, _tools())
    assert reply["tool_calls"] == [{"name": "pick_object", "arguments": {"object_id": "red_cup"}}]
    assert experience_summary(_tools("lesson one"), "pick_object") == "lesson one"


def _session_after_a_failed_task() -> str:
    from harness_ros.operator.session import Session, TaskSummary

    session = Session()
    session.record(
        TaskSummary(
            task_id="t1",
            instruction="Bring the purple elephant from the garage to the kitchen table.",
            status="failed (completed)",
            report="# Task\nI did not find an object I know in the instruction, so I did nothing.",
            actions=(),
        )
    )
    return session.begin_task()[1]


def test_the_instruction_is_the_tasks_own_not_the_session_summary_before_it() -> None:
    from harness_ros.context.history import History

    history = History()
    history.add_instruction("Bring the red cup to the coffee table.", session=_session_after_a_failed_task())
    messages = [{"role": "system", "content": "# harness_ros: decide\nrules"}, *history.messages()]
    assert "purple elephant" in messages[1]["content"]  # the summary rides in the same message
    assert instruction_of(messages) == "Bring the red cup to the coffee table."
    reply = scripted_reply(messages, _tools())
    assert reply["tool_calls"] == [{"name": "navigate_to", "arguments": {"target": "red_cup"}}]


def test_the_instruction_skips_data_blocks_wherever_the_harness_puts_them() -> None:
    earlier = "<earlier_tasks>\n# Task\nBring the purple elephant to the garage.\n</earlier_tasks>"
    for content in (
        f"# Task\n{FETCH}\n\n{earlier}",
        f"{earlier}\n\n# Task\n{FETCH}",
        f"# Task\n{FETCH}\n\n# Earlier tasks in this session\n- task t1: 'Bring the elephant' -> failed",
    ):
        assert instruction_of([{"role": "user", "content": content}]) == FETCH, content
    revised = [
        {"role": "user", "content": f"# Task\n{FETCH}"},
        {
            "role": "user",
            "content": "# Instruction revision from the operator\nBring the blue mug.\n"
            "(It refines or replaces the task above.)",
        },
    ]
    assert instruction_of(revised) == "Bring the blue mug."


# ---------------------------------------------------------------------- lessons
def _event(index: int, tool: str, arguments: dict[str, Any], result: dict[str, Any]) -> dict[str, Any]:
    verdict = result.get("verdict")
    return {"index": index, "tool": tool, "arguments": arguments, "result": result, "verdict": verdict}


def _task1_events() -> list[dict[str, Any]]:
    return [
        _event(0, "navigate_to", {"target": "kitchen_table"}, _ok()),
        _event(1, "pick_object", {"object_id": "red_cup"}, _fail(OUT_OF_REACH)),
        _event(2, "navigate_to", {"target": "red_cup"}, _ok()),
        _event(3, "pick_object", {"object_id": "red_cup"}, _ok()),
        _event(4, "navigate_to", {"target": "coffee_table"}, _ok()),
        _event(5, "place_object", {"surface_id": "coffee_table"}, _ok()),
    ]


def _payload(events: list[dict[str, Any]], existing: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "allowed_tools": ["navigate_to", "pick_object", "place_object"],
        "existing": existing or {},
        "task_notes": {"task_id": "t", "goal": FETCH, "status": "completed", "events": events},
    }


def test_consolidate_derives_a_failure_lesson_only_when_a_confirmed_success_follows() -> None:
    proposal = consolidate(_payload(_task1_events()))
    pick = [e for e in proposal["tool_experience_entries"] if e["tool"] == "pick_object"]
    assert {e["outcome"] for e in pick} == {"failure", "success"}
    assert all(e["confidence"] == 0.9 for e in proposal["tool_experience_entries"])
    assert proposal["memory_entries"][0]["text"] == GENERAL_RECOVERY
    # The same failure with no later confirmed pick: no failure lesson, no general lesson.
    unrecovered = consolidate(_payload(_task1_events()[:3]))
    assert not [e for e in unrecovered["tool_experience_entries"] if e["outcome"] == "failure"]
    assert unrecovered["memory_entries"] == []


def test_consolidate_learns_from_a_recovered_slip_and_skips_known_entries() -> None:
    slip = _fail("grasp slipped: it is slippery, try again")
    events = [
        _event(0, "navigate_to", {"target": "green_bottle"}, _ok()),
        _event(1, "pick_object", {"object_id": "green_bottle"}, slip),
        _event(2, "pick_object", {"object_id": "green_bottle"}, _ok()),
    ]
    texts = [e["text"] for e in consolidate(_payload(events))["tool_experience_entries"]]
    assert PICK_SLIP_FAILURE in texts
    known = {"tool_experience": {"pick_object": {"failure": [PICK_SLIP_FAILURE.upper()], "success": []}}}
    texts = [e["text"] for e in consolidate(_payload(events, known))["tool_experience_entries"]]
    assert PICK_SLIP_FAILURE not in texts


class _LessonsConsolidator:
    def consolidate(
        self, task_notes: Trajectory, *, allowed_tools: list[str], existing: dict[str, Any]
    ) -> MemoryConsolidation:
        payload = {"allowed_tools": allowed_tools, "existing": existing, "task_notes": task_notes.to_json()}
        return consolidation_from_dict(consolidate(payload))


def test_filememory_accepts_every_lesson_the_policy_proposes(tmp_path: Path) -> None:
    memory = FileMemory(tmp_path / "memory", consolidator=_LessonsConsolidator())
    trajectory = {"task_id": "t1", "goal": FETCH, "status": "completed", "events": _task1_events()}
    result = memory.consolidate_trajectory(
        Trajectory.from_json(trajectory), allowed_tools=["navigate_to", "pick_object", "place_object"]
    )
    decisions = result["decisions"]
    assert decisions and all(d["accepted"] for d in decisions), decisions
    assert memory.ledger_entries("pick_object")["failure"] == [PICK_OUT_OF_REACH_FAILURE]
    # Generic text: no object or surface ids of the world.
    for decision in decisions:
        assert not any(name in decision["text"] for name in ("red_cup", "kitchen_table", "coffee_table"))


def test_summarize_puts_failures_first_and_is_bounded() -> None:
    summary = summarize({"tool": "pick_object", "success": ["works"], "failure": ["fix it"]})["summary"]
    assert summary.index("fix it") < summary.index("works")
    long = summarize({"tool": "x", "success": ["word " * 400], "failure": []})["summary"]
    assert len(long) <= 700


# ---------------------------------------------------------------------- routing
def _request(purpose: str, user: str) -> list[dict[str, Any]]:
    return [
        {"role": "system", "content": f"# harness_ros: {purpose}\n..."},
        {"role": "user", "content": user},
    ]


def test_routing_by_purpose_and_labelled_json_replies() -> None:
    assert purpose_of(_request("evaluate", "x")) == "evaluate"
    verdict = json.loads(scripted_reply(_request("evaluate", "look"))["content"])
    assert verdict["status"] == "failure" and verdict["failure_reason"]
    # The verdict carries exactly the evaluator's three keys (a fourth makes it malformed);
    # its failure reason names the policy.
    assert set(verdict) == {"status", "failure_reason", "evidence"}
    assert POLICY_LABEL in verdict["failure_reason"]
    read = read_verdict_object(
        scripted_reply(_request("evaluate", "look"))["content"], statuses=("success", "failure")
    )
    assert isinstance(read, dict) and read["status"] == "failure", read
    summary = json.loads(scripted_reply(_request("summarize", '{"tool": "t", "success": ["a"]}'))["content"])
    assert summary["summary"] == "What worked: a"
    compact = json.loads(scripted_reply(_request("compact", '[tool result]\n{"success": true}'))["content"])
    assert POLICY_LABEL in compact["summary"]
    unknown = scripted_reply([{"role": "user", "content": "hi"}])
    assert unknown["tool_calls"] == [] and POLICY_LABEL in unknown["content"]


# ---------------------------------------------------------------------- litellm glue
class _FakeCustomLLM:
    pass


def test_register_is_idempotent_and_serves_scripted_replies() -> None:
    setups: list[int] = []
    fake = SimpleNamespace(
        CustomLLM=_FakeCustomLLM,
        custom_provider_map=[],
        custom_llm_setup=lambda: setups.append(1),
        ModelResponse=lambda **kwargs: kwargs,
    )
    register(fake)
    register(fake)
    assert [p["provider"] for p in fake.custom_provider_map] == ["harness_demo"]
    assert setups == [1]
    handler = fake.custom_provider_map[0]["custom_handler"]
    response = handler.completion(
        model="scripted",
        messages=[
            {"role": "system", "content": "# harness_ros: decide"},
            {"role": "user", "content": f"# Task\n{FETCH}"},
        ],
        optional_params={"tools": _tools()},
    )
    message = response["choices"][0]["message"]
    assert response["model"] == "harness_demo/scripted"
    assert message["tool_calls"][0]["function"]["name"] == "navigate_to"
    assert json.loads(message["tool_calls"][0]["function"]["arguments"]) == {"target": "kitchen_table"}


def test_the_real_litellm_adapter_reaches_the_policy() -> None:
    from harness_ros.model import LiteLLMModel
    from harness_ros.plugins import model_provider

    reply = LiteLLMModel("harness_demo/scripted", max_retries=0, providers=model_provider).complete(
        [
            {"role": "system", "content": "# harness_ros: decide\n"},
            {"role": "user", "content": f"# Task\n{FETCH}"},
        ],
        tools=_tools(),
    )
    assert reply.model == "harness_demo/scripted"
    assert [(c.name, c.arguments) for c in reply.tool_calls] == [("navigate_to", {"target": "kitchen_table"})]
    assert reply.text is not None and POLICY_LABEL in reply.text
