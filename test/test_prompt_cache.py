"""Prompt caching: cache_control breakpoints where the provider needs them, none elsewhere.

The Anthropic cases go through litellm's real Anthropic translation and HTTP path to a
loopback server that speaks the Anthropic Messages API, so the assertions are on the
body Anthropic would receive, and the usage it reports comes back through litellm.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from harness_ros.config import HarnessConfig, ModelConfig
from harness_ros.context import ContextBuilder, ResidentContext
from harness_ros.model import LiteLLMModel
from harness_ros.model.litellm_model import add_cache_breakpoints, import_litellm, needs_cache_markers
from harness_ros.testing.loopback_llm import LoopbackLLMServer

CLAUDE = "anthropic/claude-3-5-sonnet-20241022"
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": f"tool_{n}",
            "description": f"Tool number {n}.",
            "parameters": {"type": "object", "properties": {"target": {"type": "string"}}},
        },
    }
    for n in range(3)
]
IMAGE = {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,/9j/4AAQSkZJRgABAQAAAQABAAD/2Q=="}}


class AnthropicLoopback:
    """A minimal Anthropic Messages API on 127.0.0.1: records bodies, answers with fixed usage."""

    def __init__(self, usage: dict[str, int]) -> None:
        self.bodies: list[dict[str, Any]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                outer.bodies.append(body)
                content: list[dict[str, Any]] = [{"type": "text", "text": "All done."}]
                if any(tool.get("name") == "finish_task" for tool in body.get("tools") or []):
                    # A harness task: end it the way a task ends, with finish_task.
                    finish = {"outcome": "succeeded", "summary": "All done."}
                    content = [{"type": "tool_use", "id": "toolu_1", "name": "finish_task", "input": finish}]
                reply = {
                    "id": f"msg_{len(outer.bodies)}",
                    "type": "message",
                    "role": "assistant",
                    "model": body.get("model", "claude"),
                    "content": content,
                    "stop_reason": "tool_use" if content[0]["type"] == "tool_use" else "end_turn",
                    "stop_sequence": None,
                    "usage": usage,
                }
                data = json.dumps(reply).encode()
                self.send_response(200 if self.path.endswith("/v1/messages") else 404)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


@pytest.fixture
def anthropic_server() -> Iterator[AnthropicLoopback]:
    server = AnthropicLoopback(
        {
            "input_tokens": 40,
            "output_tokens": 7,
            "cache_read_input_tokens": 900,
            "cache_creation_input_tokens": 60,
        }
    )
    yield server
    server.close()


def _conversation() -> list[dict[str, Any]]:
    """Two turns of a task as the ContextBuilder lays them out, the observation last."""
    builder = ContextBuilder(ResidentContext(system_prompt="You drive a robot.", memory="- mugs upright"))
    builder.history.add_instruction("tidy the kitchen")
    call = {
        "id": "toolu_1",
        "type": "function",
        "function": {"name": "tool_0", "arguments": '{"target": "cup"}'},
    }
    builder.history.add_assistant({"role": "assistant", "content": None, "tool_calls": [call]})
    builder.history.add_tool({"role": "tool", "tool_call_id": "toolu_1", "content": '{"success": true}'})
    observation = {"role": "user", "content": [{"type": "text", "text": "# Observation\nViews:"}, IMAGE]}
    return builder.messages(observation)


def _markers(value: Any) -> int:
    return json.dumps(value).count('"cache_control"')


def test_anthropic_body_has_breakpoints_on_tools_system_and_last_history(
    anthropic_server: AnthropicLoopback,
) -> None:
    model = LiteLLMModel(CLAUDE, api_base=anthropic_server.url, api_key="dummy", max_retries=0)
    messages = _conversation()
    before = json.dumps(messages)
    reply = model.complete(messages, tools=TOOLS)
    assert json.dumps(messages) == before, "the caller's messages must not be mutated"

    body = anthropic_server.bodies[0]
    assert body["tools"][-1]["cache_control"] == {"type": "ephemeral"}
    assert all("cache_control" not in tool for tool in body["tools"][:-1])
    assert body["system"][-1]["cache_control"] == {"type": "ephemeral"}
    # Anthropic merges the tool result and the observation into one user turn; the
    # breakpoint sits on the tool result, never on the observation that changes every turn.
    last = body["messages"][-1]["content"]
    tool_results = [block for block in last if block["type"] == "tool_result"]
    assert tool_results[-1]["cache_control"] == {"type": "ephemeral"}
    assert [block for block in last if block["type"] != "tool_result" and "cache_control" in block] == []
    assert 3 <= _markers(body) <= 4, "Anthropic allows at most 4 breakpoints"

    # litellm folds cache reads and writes into prompt_tokens and reports them apart.
    assert reply.usage.cached_prompt_tokens == 900
    assert reply.usage.cache_write_tokens == 60
    assert reply.usage.prompt_tokens == 40 + 900 + 60
    assert reply.usage.completion_tokens == 7
    assert reply.usage.images == 1


def test_anthropic_off_sends_no_markers(anthropic_server: AnthropicLoopback) -> None:
    model = LiteLLMModel(CLAUDE, api_base=anthropic_server.url, api_key="dummy", prompt_cache="off")
    model.complete(_conversation(), tools=TOOLS)
    assert _markers(anthropic_server.bodies[0]) == 0


def test_openai_gets_no_markers_and_cached_tokens_are_read() -> None:
    import litellm

    seen: list[dict[str, Any]] = []

    def reply(body: dict[str, Any]) -> dict[str, Any]:
        seen.append(body)
        return {"content": "ok"}

    with LoopbackLLMServer(reply) as server:
        model = LiteLLMModel("openai/gpt-4o", api_base=server.url, api_key="dummy", max_retries=0)
        model.complete(_conversation(), tools=TOOLS)
    assert _markers(seen[0]) == 0
    assert seen[0]["messages"][0]["content"].startswith("You drive a robot.")

    # OpenAI reports its automatic cache hits as prompt_tokens_details.cached_tokens.
    mocked = LiteLLMModel("openai/gpt-4o", completion_kwargs={"mock_response": "ok"})
    response = litellm.ModelResponse(
        choices=[{"message": {"role": "assistant", "content": "ok"}}],
        usage={
            "prompt_tokens": 1200,
            "completion_tokens": 9,
            "total_tokens": 1209,
            "prompt_tokens_details": {"cached_tokens": 1024},
        },
    )
    mocked._extra = {"mock_response": response}
    usage = mocked.complete([{"role": "user", "content": "hi"}]).usage
    assert (usage.prompt_tokens, usage.cached_prompt_tokens, usage.completion_tokens) == (1200, 1024, 9)
    assert usage.cache_write_tokens == 0 and usage.images == 0


def test_on_marks_any_provider_in_the_request_litellm_receives(monkeypatch: pytest.MonkeyPatch) -> None:
    litellm = import_litellm()
    seen: list[dict[str, Any]] = []
    real = litellm.completion

    def spy(**kwargs: Any) -> Any:
        seen.append(kwargs)
        return real(**kwargs)

    monkeypatch.setattr(litellm, "completion", spy)
    for setting, expected in (("on", 3), ("auto", 0), ("off", 0)):
        model = LiteLLMModel("openai/gpt-4o", prompt_cache=setting, completion_kwargs={"mock_response": "ok"})
        model.complete(_conversation(), tools=TOOLS)
        assert _markers(seen[-1]["messages"]) + _markers(seen[-1]["tools"]) == expected, setting


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        ("anthropic/claude-3-5-sonnet-20241022", True),
        ("anthropic/claude-sonnet-4-20250514", True),
        ("bedrock/anthropic.claude-3-5-sonnet-20240620-v1:0", True),
        ("bedrock/us.anthropic.claude-3-7-sonnet-20250219-v1:0", True),
        ("vertex_ai/claude-3-5-sonnet@20240620", True),
        ("claude-3-5-sonnet-20241022", True),
        ("openai/gpt-4o-mini", False),
        ("gpt-4o", False),
        ("ollama/llama3", False),
        ("bedrock/meta.llama3-70b-instruct-v1:0", False),
        ("vertex_ai/gemini-1.5-pro", False),
        ("harness_demo/policy", False),
    ],
)
def test_provider_resolution_decides_markers(
    model: str, expected: bool, capsys: pytest.CaptureFixture
) -> None:
    assert needs_cache_markers(import_litellm(), model) is expected
    assert capsys.readouterr().out == "", "resolving a provider must not print"


def test_breakpoint_placement_without_observation_and_with_text_only_assistant() -> None:
    messages = [
        {"role": "system", "content": "rules"},
        {"role": "user", "content": "task"},
        {"role": "assistant", "content": "thinking", "tool_calls": [{"id": "a", "type": "function"}]},
        {"role": "tool", "tool_call_id": "a", "content": "{}"},
    ]
    marked, tools = add_cache_breakpoints(messages, None)
    assert tools is None
    # No observation: the last message is history the next turn re-reads, so it is the breakpoint.
    assert marked[-1] == {**messages[-1], "cache_control": {"type": "ephemeral"}}
    assert marked[0]["content"][0]["cache_control"] == {"type": "ephemeral"}
    assert marked[1:3] == messages[1:3]
    # An assistant message with only tool calls carries the marker on its last call.
    only_calls = {"role": "assistant", "content": None, "tool_calls": [{"id": "b"}, {"id": "c"}]}
    marked, _ = add_cache_breakpoints([messages[0], only_calls, {"role": "user", "content": "obs"}], None)
    assert marked[1]["tool_calls"][-1]["cache_control"] == {"type": "ephemeral"}
    assert "cache_control" not in marked[1]["tool_calls"][0] and marked[2] == {
        "role": "user",
        "content": "obs",
    }
    # First turn: system + instruction only; the instruction is new, only the system is marked.
    marked, _ = add_cache_breakpoints(messages[:2], None)
    assert _markers(marked) == 1 and marked[1] == messages[1]


def test_config_key_defaults_to_auto_and_reaches_the_adapter() -> None:
    assert ModelConfig().prompt_cache == "auto"
    config = HarnessConfig.model_validate({"model": {"model": CLAUDE, "prompt_cache": "off"}})
    assert LiteLLMModel.from_config(config.model).prompt_cache == "off"
    with pytest.raises(ValidationError, match="prompt_cache"):
        HarnessConfig.model_validate({"model": {"prompt_cache": "always"}})
    with pytest.raises(ValueError, match="prompt_cache"):
        LiteLLMModel(CLAUDE, prompt_cache="yes")  # type: ignore[arg-type]


def test_stable_prefix_between_turns() -> None:
    """Turn 2's request starts with turn 1's request minus its observation, byte for byte,
    with and without breakpoints (the moved history breakpoint is the only difference)."""
    builder = ContextBuilder(ResidentContext(system_prompt="You drive a robot.", memory="- m"))
    builder.history.add_instruction("tidy")
    observation = {"role": "user", "content": [{"type": "text", "text": "obs 1"}, IMAGE]}
    first = builder.messages(observation)
    builder.history.add_assistant({"role": "assistant", "content": None, "tool_calls": [{"id": "x"}]})
    builder.history.add_tool({"role": "tool", "tool_call_id": "x", "content": "{}"})
    builder.history.add_notes("- picked the cup")
    second = builder.messages({"role": "user", "content": [{"type": "text", "text": "obs 2"}]})
    assert json.dumps(second[: len(first) - 1]) == json.dumps(first[:-1])
    marked_first, _ = add_cache_breakpoints(first, TOOLS)
    marked_second, _ = add_cache_breakpoints(second, TOOLS)
    assert json.dumps(marked_second[0]) == json.dumps(marked_first[0])


def test_harness_task_through_litellm_reports_cached_tokens(anthropic_server: AnthropicLoopback) -> None:
    """A task on the real adapter: the done event sums what Anthropic reported through litellm."""
    from harness_ros.harness import Harness

    model = LiteLLMModel(CLAUDE, api_base=anthropic_server.url, api_key="dummy", max_retries=0)
    events = list(Harness(model=model, tools=[]).run("say hi", task_id="cache-1"))
    done = events[-1].to_dict()["data"]
    assert done["status"] == "completed"
    assert done["tokens"]["cached_prompt_tokens"] == 900
    assert done["tokens"]["cache_write_tokens"] == 60
    assert done["tokens"]["prompt_tokens"] == 1000
    # First turn: system + instruction; the system message carries the breakpoint.
    assert anthropic_server.bodies[0]["system"][-1]["cache_control"] == {"type": "ephemeral"}


def test_bench_prompt_quick_keeps_the_prefix_cacheable() -> None:
    """bench/bench_prompt.py on a short task: the layout re-sends all older history unchanged."""
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": str(root), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    run = subprocess.run(
        [sys.executable, "bench_prompt.py", "--quick", "--views", "1"],
        cwd=root / "bench",
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.count("older history re-sent unchanged at every turn") == 2, run.stdout
    share = re.search(r"^cacheable prefix: (\d+)%", run.stdout, re.MULTILINE)
    assert share is not None and int(share.group(1)) >= 90, run.stdout


def test_bedrock_converse_turns_the_history_breakpoint_into_a_cache_point() -> None:
    """litellm's Bedrock Converse translation (a litellm internal: skipped if it moves)."""
    import_litellm()
    factory = pytest.importorskip("litellm.litellm_core_utils.prompt_templates.factory")
    convert = getattr(factory, "_bedrock_converse_messages_pt", None)
    if convert is None:
        pytest.skip("litellm moved its Bedrock Converse translation")
    messages, _ = add_cache_breakpoints(_conversation(), TOOLS)
    converted = convert(
        messages=messages[1:],
        model="us.anthropic.claude-3-7-sonnet-20250219-v1:0",
        llm_provider="bedrock_converse",
    )
    blocks = converted[-1]["content"]
    kinds = [next(iter(block)) for block in blocks]
    # The cache point follows the tool result and precedes the observation's text and image.
    assert kinds[:2] == ["toolResult", "cachePoint"] and "cachePoint" not in kinds[2:]
