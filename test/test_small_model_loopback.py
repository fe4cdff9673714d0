"""A task driven the way Qwen2.5-Coder drives it through llama.cpp, over litellm's real HTTP path.

The loopback server answers as that model does: no native tool_calls, the calls written
in the content as a bare JSON line or with the chat template's doubled braces, and once
the previous tool result echoed back as plain text. The task must complete through the
recovered calls, and the echo must get a reminder instead of ending the task.
"""

from __future__ import annotations

import json
from typing import Any

from harness_ros.events import EventType
from harness_ros.harness import Harness
from harness_ros.model import LiteLLMModel
from harness_ros.model.litellm_model import CALL_PREFILL
from harness_ros.testing.loopback_llm import LoopbackLLMServer
from harness_ros.tools import success, tool

ECHO = '<tool_response>\n{"success": true, "seen": "a red cup on the table"}\n</tool_response>'
REPLIES: list[Any] = [
    # turn 1: a bare JSON line, and a second call after it (only the first may run)
    'I will look first.\n{"name": "look", "arguments": {"area": "table"}}\n'
    '{"name": "look", "arguments": {"area": "shelf"}}',
    # turn 2: the previous tool result echoed back as plain text
    ECHO,
    # turn 3: the template's doubled braces
    '{{"name": "finish_task", "arguments": {{"outcome": "succeeded", '
    '"summary": "The red cup is on the table."}}}}',
]


def _tools(calls: list[str]) -> list[Any]:
    @tool(description="Look at an area and say what is there.")
    def look(area: str) -> dict[str, Any]:
        calls.append(area)
        return success(seen=f"a red cup on the {area}", run_id=f"look-{len(calls)}")

    return [look]


def _served_model(url: str, **settings: Any) -> LiteLLMModel:
    """The 1.5B's model string against the loopback server, as a local server is reached."""
    return LiteLLMModel(
        "openai/qwen2.5-coder-1.5b-instruct",
        api_base=url,
        api_key="not-a-real-key",
        max_retries=0,
        timeout_s=20,
        completion_kwargs={"_skip_mcp_handler": True},  # litellm's MCP import needs 'mcp'
        **settings,
    )


def test_a_small_model_completes_a_task_through_calls_recovered_from_text() -> None:
    calls: list[str] = []
    with LoopbackLLMServer(list(REPLIES)) as server:
        model = _served_model(server.url)
        events = list(Harness(model=model, tools=_tools(calls)).run("where is the cup?", task_id="small"))
        requests = list(server.requests)

    done = events[-1].payload.to_data()
    assert (done["status"], done["finished_by"], done["claim"]) == ("completed", "finish_task", "succeeded")
    assert done["report"] == "The red cup is on the table."
    assert calls == ["table"]  # one physical action per reply: the second call did not run
    assert len(requests) == 3
    # No tool_choice: "required" makes llama.cpp's small models write junk until max_tokens.
    assert all("tool_choice" not in request for request in requests)

    responses = [e.payload.to_data() for e in events if e.type is EventType.MODEL_RESPONSE]
    assert [r["recovered_from_text"] for r in (responses[0], responses[2])] == [2, 1]
    assert responses[0]["original_text"] == REPLIES[0] and responses[0]["text"] == "I will look first."
    assert all(call["recovered_from_text"] for call in responses[0]["tool_calls"])
    assert "recovered_from_text" not in responses[1] and responses[1]["tool_calls"] == []

    results = [e.payload.to_data() for e in events if e.type is EventType.TOOL_RESULT]
    assert results[0]["tool"] == "look" and results[0]["recovered_from_text"] is True
    assert results[0]["result"]["run_id"] == "look-1"  # the run log keeps the full envelope
    assert results[1]["refused"] is True and "one tool call per turn" in results[1]["result"]["reason"]

    reminders = [e.payload.to_data() for e in events if e.type is EventType.REMINDER]
    assert [(r["reminder"], r["limit"]) for r in reminders] == [(1, 2)]

    # What went back over the wire: the recovered calls as native tool calls, each answered
    # by a compact tool message, then the echo and the reminder.
    second = requests[1]["messages"]
    assistant = next(m for m in second if m["role"] == "assistant")
    assert [c["function"]["name"] for c in assistant["tool_calls"]] == ["look", "look"]
    tool_messages = [m for m in second if m["role"] == "tool"]
    assert json.loads(tool_messages[0]["content"]) == {"success": True, "seen": "a red cup on the table"}
    assert "run_id" not in tool_messages[0]["content"]
    third = requests[2]["messages"]
    # The echo is not shown back as the model's words (a small model repeats its last
    # reply); the reminder shows how to write a call, since this model writes them as text.
    assert not any(m["role"] == "assistant" and m.get("content") == ECHO for m in third)
    # A decision of a model served here is started as a call (model.call_prefill auto).
    assert all(r["messages"][-1] == {"role": "assistant", "content": CALL_PREFILL} for r in requests)
    assert third[-2]["role"] == "user" and "reminder 1 of 2" in third[-2]["content"]
    assert (
        'Reply with the call only, as {"name": "<tool>", "arguments": {...}}; tools: look'
        in third[-2]["content"]
    )


def test_a_model_that_only_echoes_ends_as_a_limit_not_as_done() -> None:
    with LoopbackLLMServer([ECHO] * 3) as server:
        model = _served_model(server.url)
        events = list(Harness(model=model, tools=_tools([])).run("where is the cup?", task_id="echo"))
    done = events[-1].payload.to_data()
    assert (done["status"], done["outcome"], done["finished_by"]) == ("failed", "failed", None)
    assert "plain text 3 times in a row" in done["reason"]


def test_an_empty_greedy_decision_is_sampled_once_more() -> None:
    # What the 1.5B did after loading a skill: one token, no text, three times in a row.
    call = {"tool_calls": [{"name": "look", "arguments": {}}], "completion_tokens": 12}
    with LoopbackLLMServer([{"content": "", "completion_tokens": 1}, call, "", ""]) as server:
        model = _served_model(server.url, temperature=0.0)
        tools = [{"type": "function", "function": {"name": "look", "parameters": {"type": "object"}}}]
        reply = model.complete([{"role": "user", "content": "go"}], tools=tools)
        assert [c.name for c in reply.tool_calls] == ["look"]
        assert [r.get("temperature") for r in server.requests] == [0.0, 0.7]
        assert reply.usage.completion_tokens == 13  # both replies are counted
        # Only once: a second empty reply stands (the harness answers it).
        assert model.complete([{"role": "user", "content": "go"}], tools=tools).tool_calls == ()
        assert len(server.requests) == 4
        # Not for a request without tools (consolidation), nor for a sampling model.
        sampling = LiteLLMModel("openai/x", api_base=server.url, api_key="k", temperature=0.5)
        assert sampling._resamples_empty is False


LOOK = [{"type": "function", "function": {"name": "look", "parameters": {"type": "object"}}}]


def test_a_decision_of_a_model_served_here_is_started_as_a_call() -> None:
    # After a failed pick the 1.5B's likeliest first token ended its turn; started as a
    # call, it names a tool. llama.cpp returns the prefill with its continuation, vLLM
    # only the continuation: both are one call.
    replies = [
        CALL_PREFILL + 'look", "arguments": {"area": "table"}}',
        'look", "arguments": {"area": "shelf"}}',
        CALL_PREFILL,  # nothing added to the prefill: an empty reply, not text
        {"content": CALL_PREFILL + 'To continue, I will look."'},
    ]
    with LoopbackLLMServer(replies) as server:
        model = _served_model(server.url)
        prompt = [{"role": "user", "content": "go"}]
        first, second, third, fourth = (model.complete(prompt, tools=LOOK) for _ in replies)
        requests = list(server.requests)
    calls = [*first.tool_calls, *second.tool_calls]
    assert [c.arguments for c in calls] == [{"area": "table"}, {"area": "shelf"}]
    assert (third.text, third.tool_calls) == (None, ())
    assert fourth.tool_calls == () and fourth.text == CALL_PREFILL + 'To continue, I will look."'
    assert all(r["messages"] == [*prompt, {"role": "assistant", "content": CALL_PREFILL}] for r in requests)


def test_no_prefill_when_off_for_a_hosted_model_or_a_request_without_tools() -> None:
    with LoopbackLLMServer(['{"name": "look", "arguments": {}}', "{}", "plain"]) as server:
        off = _served_model(server.url, call_prefill="off")
        reply = off.complete([{"role": "user", "content": "go"}], tools=LOOK)
        assert [c.name for c in reply.tool_calls] == ["look"]
        _served_model(server.url).complete([{"role": "user", "content": "summarise"}])  # no tools
        assert [r["messages"][-1]["role"] for r in server.requests] == ["user", "user"]
    assert LiteLLMModel("openai/gpt-4o-mini", api_key="k").prefills_calls is False
    remote = LiteLLMModel("openai/x", api_base="https://llm.example.com/v1", api_key="k")
    assert remote.prefills_calls is False
    assert LiteLLMModel("anthropic/x", api_base="http://127.0.0.1:9/v1", call_prefill="on").prefills_calls
