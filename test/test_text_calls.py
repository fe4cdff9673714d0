"""Tool calls written as text (small local models): what is recovered and what stays text."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness_ros.model import ModelRecorder, ModelReply, ReplayModel, ToolCall
from harness_ros.model.litellm_model import with_text_calls
from harness_ros.model.text_calls import recover_text_calls

TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "navigate_to",
            "description": "Drive to a named place.",
            "parameters": {
                "type": "object",
                "properties": {"target": {"type": "string", "minLength": 1}},
                "required": ["target"],
                "additionalProperties": False,
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "finish_task",
            "description": "End the task.",
            "parameters": {
                "type": "object",
                "properties": {
                    "outcome": {"type": "string", "enum": ["succeeded", "failed"]},
                    "summary": {"type": "string", "minLength": 1},
                },
                "required": ["outcome", "summary"],
                "additionalProperties": False,
            },
        },
    },
    {
        "type": "function",
        "function": {"name": "battery_level", "description": "Battery.", "parameters": {"type": "object"}},
    },
]

NAVIGATE = {"name": "navigate_to", "arguments": {"target": "kitchen table"}}


def names(text: str) -> list[tuple[str, dict[str, Any]]]:
    return [(call.name, call.arguments or {}) for call in recover_text_calls(text, TOOLS).calls]


def test_a_bare_json_line_is_recovered_and_marked() -> None:
    recovery = recover_text_calls(json.dumps(NAVIGATE), TOOLS)
    assert [(call.name, call.arguments) for call in recovery.calls] == [
        ("navigate_to", {"target": "kitchen table"})
    ]
    call = recovery.calls[0]
    assert call.recovered_from_text is True
    assert json.loads(call.arguments_json) == {"target": "kitchen table"}
    assert recovery.text is None


def test_prose_before_a_call_line_stays_as_the_text() -> None:
    text = f"I will drive to the table first.\n{json.dumps(NAVIGATE)}\n"
    recovery = recover_text_calls(text, TOOLS)
    assert names(text) == [("navigate_to", {"target": "kitchen table"})]
    assert recovery.text == "I will drive to the table first."


def test_tagged_call_with_and_without_newlines() -> None:
    inline = f"<tool_call>{json.dumps(NAVIGATE)}</tool_call>"
    spaced = f"Going.\n<tool_call>\n{json.dumps(NAVIGATE)}\n</tool_call>"
    assert names(inline) == [("navigate_to", {"target": "kitchen table"})]
    recovery = recover_text_calls(spaced, TOOLS)
    assert [call.name for call in recovery.calls] == ["navigate_to"]
    assert recovery.text == "Going."  # the tags go with the call


def test_an_unclosed_tag_at_the_end_is_read() -> None:
    assert names(f"<tool_call>\n{json.dumps(NAVIGATE)}") == [("navigate_to", {"target": "kitchen table"})]


def test_fenced_json_block() -> None:
    text = f"Plan:\n```json\n{json.dumps(NAVIGATE, indent=2)}\n```\nThen I pick."
    recovery = recover_text_calls(text, TOOLS)
    assert [call.name for call in recovery.calls] == ["navigate_to"]
    assert recovery.text == "Plan:\nThen I pick."


def test_doubled_braces_copied_from_the_template() -> None:
    text = '{{"name": "navigate_to", "arguments": {{"target": "sink"}}}}'
    assert names(text) == [("navigate_to", {"target": "sink"})]
    tagged = f"<tool_call>\n{text}\n</tool_call>"
    assert names(tagged) == [("navigate_to", {"target": "sink"})]


def test_parameters_is_an_alias_and_string_arguments_are_parsed() -> None:
    assert names('{"name": "navigate_to", "parameters": {"target": "sink"}}') == [
        ("navigate_to", {"target": "sink"})
    ]
    assert names('{"name": "navigate_to", "arguments": "{\\"target\\": \\"sink\\"}"}') == [
        ("navigate_to", {"target": "sink"})
    ]
    assert names('{"name": "battery_level"}') == [("battery_level", {})]


def test_unknown_tool_stays_text_with_a_reason() -> None:
    text = '{"name": "teleport", "arguments": {"target": "moon"}}'
    recovery = recover_text_calls(text, TOOLS)
    assert recovery.calls == ()
    assert recovery.text == text
    assert len(recovery.problems) == 1
    assert "'teleport' is not an offered tool" in recovery.problems[0]
    assert "navigate_to" in recovery.problems[0]


@pytest.mark.parametrize(
    ("arguments", "why"),
    [
        ({}, "'target' is a required property"),
        ({"target": 3}, "target: 3 is not of type 'string'"),
        ({"target": "sink", "speed": 9}, "Additional properties"),
        ("not json", "arguments are not a JSON object"),
        ([1, 2], "arguments are not a JSON object"),
    ],
)
def test_invalid_arguments_stay_text(arguments: Any, why: str) -> None:
    text = json.dumps({"name": "navigate_to", "arguments": arguments})
    recovery = recover_text_calls(text, TOOLS)
    assert recovery.calls == ()
    assert recovery.text == text
    assert why in recovery.problems[0]


def test_several_calls_come_back_in_order() -> None:
    finish = {"name": "finish_task", "arguments": {"outcome": "succeeded", "summary": "At the table."}}
    text = f"{json.dumps(NAVIGATE)}\n<tool_call>{json.dumps(finish)}</tool_call>"
    recovery = recover_text_calls(text, TOOLS)
    assert [call.name for call in recovery.calls] == ["navigate_to", "finish_task"]
    assert [call.id for call in recovery.calls] == ["text_call_0", "text_call_1"]


def test_json_inside_a_sentence_stays_text() -> None:
    text = f"I could call {json.dumps(NAVIGATE)} but first I need to know which table."
    recovery = recover_text_calls(text, TOOLS)
    assert recovery.calls == ()
    assert recovery.problems == ()
    assert recovery.text == text


def test_an_echoed_tool_result_never_becomes_a_call() -> None:
    envelope = {"success": True, "run_id": "r-12", "result": {"name": "navigate_to", "arrived": True}}
    for text in (
        json.dumps(envelope),
        f"<tool_response>\n{json.dumps(envelope)}\n</tool_response>",
        # an echoed result that even holds a call-shaped object is still a result
        f"<tool_response>\n{json.dumps(NAVIGATE)}\n</tool_response>",
        json.dumps({"name": "navigate_to", "arguments": {"target": "t"}, "success": True}),
    ):
        recovery = recover_text_calls(text, TOOLS)
        assert recovery.calls == (), text
        assert recovery.text == text


def test_nothing_is_recovered_without_offered_tools_or_text() -> None:
    assert recover_text_calls(json.dumps(NAVIGATE), None).calls == ()
    assert recover_text_calls(json.dumps(NAVIGATE), []).calls == ()
    assert recover_text_calls("", TOOLS).calls == ()
    assert recover_text_calls("Just prose.", TOOLS).text == "Just prose."


def test_the_adapter_leaves_native_calls_alone_and_keeps_the_original_text() -> None:
    native = ModelReply(text=json.dumps(NAVIGATE), tool_calls=(ToolCall("c1", "battery_level", "{}", {}),))
    assert with_text_calls(native, TOOLS) is native
    written = ModelReply(text=f"Going.\n{json.dumps(NAVIGATE)}")
    recovered = with_text_calls(written, TOOLS)
    assert [call.name for call in recovered.tool_calls] == ["navigate_to"]
    assert recovered.tool_calls[0].recovered_from_text
    assert recovered.text == "Going."
    assert recovered.original_text == written.text
    unknown = with_text_calls(ModelReply(text='{"name": "fly", "arguments": {}}'), TOOLS)
    assert unknown.tool_calls == ()
    assert unknown.text == '{"name": "fly", "arguments": {}}'
    assert unknown.text_call_problems and "'fly'" in unknown.text_call_problems[0]


def test_a_recording_keeps_the_recovered_mark(tmp_path: Any) -> None:
    path = tmp_path / "rec.jsonl"
    reply = with_text_calls(ModelReply(text=json.dumps(NAVIGATE)), TOOLS)
    messages = [{"role": "user", "content": "go"}]
    ModelRecorder(path).record(messages, tools=TOOLS, json_mode=False, reply=reply)
    replayed = ReplayModel(path).complete(messages, tools=TOOLS)
    assert replayed.tool_calls[0].recovered_from_text is True
    assert replayed.original_text == json.dumps(NAVIGATE)


# --- reasoning blocks: a call the model weighed there is never run -----------------------

ASK_OPERATOR_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "ask_operator",
        "description": "Ask the operator a question.",
        "parameters": {
            "type": "object",
            "properties": {"question": {"type": "string", "minLength": 1}},
            "required": ["question"],
            "additionalProperties": False,
        },
    },
}
WITH_ASK = [*TOOLS, ASK_OPERATOR_TOOL]
STAIRS = '{"name": "navigate_to", "arguments": {"target": "stairs_top"}}'
ASK = '{"name": "ask_operator", "arguments": {"question": "Should I carry the parcel upstairs myself?"}}'
REJECTED_DRIVE = (
    "<think>\n"
    "The parcel belongs upstairs. I could drive there directly:\n"
    f"{STAIRS}\n"
    "No: the stairs are a fall hazard and the instruction never said to go up. I reject that drive "
    "and ask the operator instead.\n"
    "</think>\n"
    f"{ASK}"
)


def test_a_call_weighed_and_rejected_in_a_think_block_is_never_run() -> None:
    recovery = recover_text_calls(REJECTED_DRIVE, WITH_ASK)
    assert [(call.name, call.arguments) for call in recovery.calls] == [
        ("ask_operator", {"question": "Should I carry the parcel upstairs myself?"})
    ]
    assert recovery.problems == ()
    # Through the adapter the harness uses: the first (and only) call is the question.
    reply = with_text_calls(ModelReply(text=REJECTED_DRIVE), WITH_ASK)
    assert [call.name for call in reply.tool_calls] == ["ask_operator"]


@pytest.mark.parametrize("tag", ["think", "thinking", "reasoning", "reflection", "Thought", "analysis"])
@pytest.mark.parametrize("form", ["bare", "tagged", "fenced"])
def test_no_call_is_read_from_inside_any_reasoning_block(tag: str, form: str) -> None:
    inner = {
        "bare": STAIRS,
        "tagged": f"<tool_call>{STAIRS}</tool_call>",
        "fenced": f"```json\n{STAIRS}\n```",
    }[form]
    text = f"<{tag}>\nMaybe this:\n{inner}\nNo, too risky.\n</{tag}>\n{ASK}"
    recovery = recover_text_calls(text, WITH_ASK)
    assert [call.name for call in recovery.calls] == ["ask_operator"], text
    # Nothing inside the block is reported either (it was never offered as a call).
    unknown = f"<{tag}>\n" + '{"name": "teleport", "arguments": {}}' + f"\n</{tag}>"
    assert recover_text_calls(unknown, WITH_ASK).problems == ()


def test_an_unterminated_reasoning_block_runs_to_the_end() -> None:
    text = f"<think>\nI will go up.\n{STAIRS}\n<tool_call>{STAIRS}</tool_call>"
    recovery = recover_text_calls(text, WITH_ASK)
    assert recovery.calls == ()
    assert recovery.text == text


def test_a_closing_tag_without_an_opening_one_ends_a_block_from_the_start() -> None:
    # Templates that put <think> in the prompt: the reply starts inside the block.
    text = f"Maybe the stairs.\n{STAIRS}\nNo.\n</think>\n{ASK}"
    assert [call.name for call in recover_text_calls(text, WITH_ASK).calls] == ["ask_operator"]


def test_nested_blocks_and_calls_after_them() -> None:
    text = (
        f"<think>\n<reasoning>\n{STAIRS}\n</reasoning>\nstill thinking\n{STAIRS}\n</think>\n"
        f"{json.dumps(NAVIGATE)}"
    )
    assert names_with_ask(text) == [("navigate_to", {"target": "kitchen table"})]
    # An empty block (<think/>) hides nothing.
    assert names_with_ask(f"<think/>\n{json.dumps(NAVIGATE)}") == [
        ("navigate_to", {"target": "kitchen table"})
    ]


def names_with_ask(text: str) -> list[tuple[str, dict[str, Any]]]:
    return [(call.name, call.arguments or {}) for call in recover_text_calls(text, WITH_ASK).calls]


_WORDS = st.text(alphabet=st.characters(codec="utf-8", exclude_characters="<>"), max_size=60)


@settings(deadline=None, derandomize=True, database=None, max_examples=300)
@given(before=_WORDS, inside=_WORDS, after=_WORDS, tag=st.sampled_from(["think", "reasoning", "reflection"]))
def test_a_call_inside_a_reasoning_block_is_never_recovered_whatever_the_words(
    before: str, inside: str, after: str, tag: str
) -> None:
    for form in (STAIRS, f"<tool_call>{STAIRS}</tool_call>"):
        closed = f"{before}\n<{tag}>\n{inside}\n{form}\n{after}\n</{tag}>\n{ASK}"
        assert "stairs_top" not in json.dumps(
            [c.arguments for c in recover_text_calls(closed, WITH_ASK).calls]
        )
        unclosed = f"{before}\n<{tag}>{inside}\n{form}\n{after}"
        assert recover_text_calls(unclosed, WITH_ASK).calls == ()
