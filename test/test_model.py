"""The litellm model adapter: parsing, retries, JSON mode, loopback HTTP, record and replay."""

from __future__ import annotations

import json
import socket
import sys
from pathlib import Path
from typing import Any

import pytest

from harness_ros.config import HarnessConfig, ModelConfig
from harness_ros.errors import LLMError
from harness_ros.memory import FileMemory, ModelMemoryConsolidator
from harness_ros.model import (
    LiteLLMModel,
    ModelRecorder,
    ReplayModel,
    build_model,
    complete_json,
    parse_json_loose,
    request_digest,
)
from harness_ros.testing.loopback_llm import LoopbackLLMServer

MOCK_MODEL = "openai/gpt-4o-mini"


def loopback_model(server: LoopbackLLMServer, **kwargs: Any) -> LiteLLMModel:
    sleeps: list[float] = []
    model = LiteLLMModel(
        "openai/loopback", api_base=server.url, api_key="dummy", timeout_s=10, sleep=sleeps.append, **kwargs
    )
    model.sleeps = sleeps  # type: ignore[attr-defined]
    return model


def system(purpose: str, text: str = "") -> dict[str, str]:
    return {"role": "system", "content": f"# harness_ros: {purpose}\n{text}"}


# ---------------------------------------------------------------- JSON parsing


@pytest.mark.parametrize(
    "text",
    [
        '{"a": 1}',
        '```json\n{"a": 1}\n```',
        '```\n{"a": 1}\n```',
        'Here is the result:\n{"a": 1}\nHope that helps.',
        '{"a": 1,}',
        'Sure! ```json\n{"a": 1, }\n``` done',
    ],
)
def test_parse_json_loose_accepts_fences_prose_and_trailing_commas(text: str) -> None:
    assert parse_json_loose(text) == {"a": 1}


def test_parse_json_loose_handles_braces_inside_strings() -> None:
    assert parse_json_loose('Note: {"text": "use } and { freely", "n": 2} end') == {
        "text": "use } and { freely",
        "n": 2,
    }


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (None, "is empty"),
        ("   ", "is empty"),
        ("[1, 2]", "JSON list, not an object"),
        ("I cannot help with that.", "contains no JSON object"),
        ('{"a": 1', "contains no JSON object"),
        ('{"a": tru}', "malformed JSON object"),
    ],
)
def test_parse_json_loose_names_the_problem(text: str | None, message: str) -> None:
    with pytest.raises(LLMError, match=message):
        parse_json_loose(text)


# ---------------------------------------------------------------- litellm mock_response


def test_tool_calls_parsed_and_malformed_arguments_kept_as_none() -> None:
    calls = [
        {
            "id": "c1",
            "type": "function",
            "function": {"name": "pick_object", "arguments": '{"object": "mug"}'},
        },
        {"id": "c2", "type": "function", "function": {"name": "navigate_to", "arguments": '{"room": "kit'}},
        {"id": "c3", "type": "function", "function": {"name": "place_object", "arguments": "[1, 2]"}},
    ]
    model = LiteLLMModel(MOCK_MODEL, completion_kwargs={"mock_response": "", "mock_tool_calls": calls})
    reply = model.complete([system("decide"), {"role": "user", "content": "go"}], tools=[])
    assert [call.name for call in reply.tool_calls] == ["pick_object", "navigate_to", "place_object"]
    assert reply.tool_calls[0].arguments == {"object": "mug"} and reply.tool_calls[0].id == "c1"
    assert reply.tool_calls[1].arguments is None
    assert reply.tool_calls[1].arguments_json == '{"room": "kit'
    assert reply.tool_calls[2].arguments is None
    assert reply.usage.prompt_tokens > 0 and reply.usage.completion_tokens > 0


def test_json_mode_sends_response_format_and_parses_fenced_reply(monkeypatch: pytest.MonkeyPatch) -> None:
    import litellm

    seen: list[dict[str, Any]] = []
    real = litellm.completion

    def spy(**kwargs: Any) -> Any:
        seen.append(kwargs)
        return real(**kwargs)

    monkeypatch.setattr(litellm, "completion", spy)
    model = LiteLLMModel(MOCK_MODEL, completion_kwargs={"mock_response": '```json\n{"summary": "ok"}\n```'})
    assert complete_json(model, [system("summarize")]) == {"summary": "ok"}
    assert seen[0]["response_format"] == {"type": "json_object"}
    model.complete([system("decide")])
    assert "response_format" not in seen[1]


@pytest.mark.parametrize(
    ("name", "api_base", "setting", "sent"),
    [
        ("openai/gpt-4o-mini", None, "auto", True),
        ("openai/qwen2.5-coder-1.5b-instruct", "http://127.0.0.1:44379/v1", "auto", False),
        ("hosted_vllm/qwen", "http://localhost:8000/v1", "auto", False),
        ("openai/qwen", "https://models.example.com/v1", "auto", True),
        ("ollama_chat/qwen2.5-coder:1.5b", "http://localhost:11434", "auto", True),
        ("openai/qwen", "http://127.0.0.1:8080/v1", "on", True),
        ("openai/gpt-4o-mini", None, "off", False),
    ],
)
def test_json_mode_is_not_sent_to_an_openai_compatible_server_on_this_machine(
    name: str, api_base: str | None, setting: Any, sent: bool
) -> None:
    # llama.cpp's server aborted on the JSON grammar during the demo's consolidation
    # (llama-grammar.cpp: fatal error), and was gone for the rest of the demo.
    model = LiteLLMModel(name, api_base=api_base, json_mode=setting)
    assert model.sends_json_mode is sent
    request = model._request([system("consolidate")], None, True)
    assert ("response_format" in request) is sent
    assert "response_format" not in model._request([system("decide")], None, False)


def test_json_mode_comes_from_the_config() -> None:
    from harness_ros.config import ModelConfig

    config = ModelConfig(model="openai/gpt-4o-mini", json_mode="off")
    assert LiteLLMModel.from_config(config).sends_json_mode is False
    with pytest.raises(ValueError, match="json_mode must be"):
        LiteLLMModel("openai/gpt-4o-mini", json_mode="sometimes")  # type: ignore[arg-type]


def test_json_mode_falls_back_silently_when_provider_rejects_it(monkeypatch: pytest.MonkeyPatch) -> None:
    import litellm

    seen: list[dict[str, Any]] = []
    real = litellm.completion

    def picky(**kwargs: Any) -> Any:
        seen.append(dict(kwargs))
        if "response_format" in kwargs:
            raise litellm.BadRequestError(
                "response_format is not supported", model="x", llm_provider="openai"
            )
        return real(**kwargs)

    monkeypatch.setattr(litellm, "completion", picky)
    model = LiteLLMModel(
        MOCK_MODEL, completion_kwargs={"mock_response": '{"summary": "plain"}'}, max_retries=0
    )
    assert complete_json(model, [system("summarize")]) == {"summary": "plain"}
    assert ["response_format" in call for call in seen] == [True, False]


def test_demo_model_without_demo_policy_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    import litellm

    from harness_ros.plugins import model_provider

    monkeypatch.setattr(litellm, "custom_provider_map", [])
    monkeypatch.setitem(sys.modules, "harness_ros_sim.demo.policy", None)
    with pytest.raises(
        LLMError, match=r"'harness_demo/scripted': its provider plugin failed: ModuleNotFoundError"
    ):
        LiteLLMModel("harness_demo/scripted", providers=model_provider).complete([system("decide")])
    # Without the demo plugin installed at all:
    with pytest.raises(LLMError, match=r"litellm has no provider 'harness_demo', and no installed plugin"):
        LiteLLMModel("harness_demo/scripted", providers=lambda prefix: None).complete([system("decide")])
    # Built without the plugins' providers (the model layer never looks them up itself):
    with pytest.raises(LLMError, match=r"built without the plugins' providers"):
        LiteLLMModel("harness_demo/scripted").complete([system("decide")])


def test_build_model_hands_the_providers_to_the_model(monkeypatch: pytest.MonkeyPatch) -> None:
    import litellm

    from harness_ros.model import build_model

    monkeypatch.setattr(litellm, "custom_provider_map", [])
    asked: list[str] = []

    def providers(prefix: str) -> None:
        asked.append(prefix)

    config = HarnessConfig(model=ModelConfig(model="harness_demo/scripted"))
    with pytest.raises(LLMError, match="no installed plugin adds it"):
        build_model(config, providers=providers).complete([system("decide")])
    assert asked and set(asked) == {"harness_demo"}  # the plugins are asked for that prefix only


def test_a_decision_is_capped_by_decision_max_tokens_and_other_requests_are_not() -> None:
    cfg = ModelConfig(model="openai/x", max_tokens=1024, decision_max_tokens=256)
    model = LiteLLMModel.from_config(cfg)
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
    assert model._request([], tools, False)["max_tokens"] == 256  # a decision offers tools
    assert model._request([], None, True)["max_tokens"] == 1024  # consolidation, summaries
    # Never above max_tokens, and on its own when max_tokens is unset.
    assert (
        LiteLLMModel("openai/x", max_tokens=100, decision_max_tokens=256)._request([], tools, False)[
            "max_tokens"
        ]
        == 100
    )
    only = LiteLLMModel("openai/x", decision_max_tokens=256)
    assert only._request([], tools, False)["max_tokens"] == 256
    assert "max_tokens" not in only._request([], None, False)


def test_a_decision_of_a_model_served_here_stops_where_the_harness_text_begins() -> None:
    from harness_ros.model.markers import (
        HARNESS_MARKERS,
        NOTES_HEADER,
        NOTES_UPDATE_HEADER,
        OBSERVATION_HEADER,
    )

    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
    local = LiteLLMModel("openai/qwen", api_base="http://127.0.0.1:8080/v1")
    assert local._request([], tools, False)["stop"] == list(HARNESS_MARKERS)
    assert "stop" not in local._request([], None, True)  # consolidation's JSON: no stops
    assert "stop" not in LiteLLMModel("openai/gpt-4o")._request([], tools, False)  # hosted: never
    # Every marker starts a block the harness writes, and there are at most four.
    assert len(HARNESS_MARKERS) <= 4
    assert any(NOTES_HEADER.startswith(m) for m in HARNESS_MARKERS)
    assert any(NOTES_UPDATE_HEADER.startswith(m) for m in HARNESS_MARKERS)
    assert any(OBSERVATION_HEADER.startswith(m) for m in HARNESS_MARKERS)


def test_from_config_reads_the_key_from_the_named_env_var(monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = ModelConfig(model="openai/x", api_key_env="MY_LLM_KEY", timeout_s=5, max_retries=4, temperature=0.2)
    with pytest.raises(LLMError, match="'MY_LLM_KEY'"):
        LiteLLMModel.from_config(cfg)
    monkeypatch.setenv("MY_LLM_KEY", "sk-test")
    model = LiteLLMModel.from_config(cfg, model="openai/override")
    assert model.name == "openai/override" and model.max_retries == 4 and model.timeout_s == 5
    assert model._request([], None, False)["api_key"] == "sk-test"


# ---------------------------------------------------------------- loopback HTTP


def test_transient_500_is_retried_with_backoff() -> None:
    with LoopbackLLMServer([{"status": 500}, "recovered"]) as server:
        model = loopback_model(server, retry_backoff_s=0.5)
        reply = model.complete([system("decide"), {"role": "user", "content": "hi"}])
    assert reply.text == "recovered"
    assert len(server.requests) == 2
    assert model.sleeps == [0.5]  # type: ignore[attr-defined]


def test_retries_are_bounded_and_exponential() -> None:
    with LoopbackLLMServer([{"status": 503}] * 5) as server:
        model = loopback_model(server, max_retries=2, retry_backoff_s=1.0)
        with pytest.raises(LLMError, match=r"provider 'openai', model 'openai/loopback', 3 attempts"):
            model.complete([system("decide")])
    assert len(server.requests) == 3
    assert model.sleeps == [1.0, 2.0]  # type: ignore[attr-defined]


@pytest.mark.parametrize("status", [400, 401])
def test_client_errors_are_not_retried(status: int) -> None:
    with LoopbackLLMServer([{"status": status}, "never"]) as server:
        model = loopback_model(server)
        with pytest.raises(LLMError, match="1 attempt"):
            model.complete([system("decide")])
    assert len(server.requests) == 1


def test_connection_refused_is_an_llm_error() -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{probe.getsockname()[1]}/v1"
    model = LiteLLMModel(
        "openai/loopback", api_base=url, api_key="dummy", max_retries=1, sleep=lambda _: None
    )
    with pytest.raises(LLMError, match="2 attempts"):
        model.complete([system("decide")])


def test_a_server_on_this_machine_gets_json_requests_without_json_mode_over_http() -> None:
    with LoopbackLLMServer(['Here it is: {"summary": "ok"}']) as server:
        assert complete_json(loopback_model(server), [system("summarize")]) == {"summary": "ok"}
    (request,) = server.requests
    assert "response_format" not in request


def test_model_consolidator_end_to_end_over_http(tmp_path: Path) -> None:
    consolidation = {
        "memory_entries": [
            {
                "section": "Preferences",
                "text": "Keep the completion report concise.",
                "confidence": 0.9,
                "source": "keep the completion report concise",
            },
            {"section": "General Lessons", "text": "The mug is currently on the shelf.", "confidence": 0.9},
        ],
        "tool_experience_entries": [
            {
                "tool": "pick_object",
                "outcome": "success",
                "text": "Grasp mugs by the handle.",
                "confidence": 0.8,
            }
        ],
    }
    replies = [
        "```json\n" + json.dumps(consolidation) + "\n```",
        json.dumps({"summary": "Grasp by the handle."}),
    ]
    with LoopbackLLMServer(replies) as server:
        # The loopback stands in for a hosted provider here: JSON mode on, as auto sends it there.
        model = loopback_model(server, json_mode="on")
        memory = FileMemory(tmp_path, consolidator=ModelMemoryConsolidator(model))
        memory.start_task("bring the mug and keep the completion report concise")
        memory.record_tool_result(
            "pick_object",
            {"object": "mug"},
            {"success": True, "run_id": "r1"},
            {"status": "success", "run_id": "r1"},
        )
        result = memory.finish_task("completed", allowed_tools=["pick_object", "navigate_to"])
        summaries = memory.tool_experience_summaries(["pick_object", "navigate_to"])
        assert memory.tool_experience_summaries(["pick_object"]) == summaries  # cached: no third request
    assert result["error"] is None
    assert (result["memory_written"], result["tool_experience_written"], result["rejected"]) == (1, 1, 1)
    assert summaries == {"pick_object": "Grasp by the handle."}
    assert len(server.requests) == 2
    consolidate, summarize = server.requests
    assert consolidate["messages"][0]["content"].split("\n", 1)[0] == "# harness_ros: consolidate"
    assert summarize["messages"][0]["content"].split("\n", 1)[0] == "# harness_ros: summarize"
    assert consolidate["response_format"] == {"type": "json_object"}
    payload = json.loads(consolidate["messages"][1]["content"])
    assert payload["allowed_tools"] == ["navigate_to", "pick_object"]
    assert payload["task_notes"]["events"][0]["verdict"]["status"] == "success"
    assert json.loads(summarize["messages"][1]["content"]) == {
        "tool": "pick_object",
        "success": ["Grasp mugs by the handle."],
        "failure": [],
    }


def test_model_consolidator_down_keeps_trajectory_pending(tmp_path: Path) -> None:
    with LoopbackLLMServer([{"status": 500}] * 3) as server:
        memory = FileMemory(tmp_path, consolidator=ModelMemoryConsolidator(loopback_model(server)))
        memory.start_task("bring the mug")
        result = memory.finish_task("completed", allowed_tools=["pick_object"])
    assert "LLMError" in result["error"] and result["pending"] == 1


# ---------------------------------------------------------------- record and replay


def _session(model: Any) -> list[Any]:
    image = {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,AAAA"}}
    tools = [{"type": "function", "function": {"name": "pick_object", "parameters": {"type": "object"}}}]
    first = model.complete(
        [system("decide"), {"role": "user", "content": [{"type": "text", "text": "pick"}, image]}],
        tools=tools,
    )
    second = model.complete([system("consolidate"), {"role": "user", "content": "{}"}], json_mode=True)
    return [first, second]


def test_replay_reproduces_a_recorded_session(tmp_path: Path) -> None:
    recording = tmp_path / "session.jsonl"
    replies = [
        {"tool_calls": [{"name": "pick_object", "arguments": {"object": "mug"}}]},
        '{"memory_entries": []}',
    ]
    with LoopbackLLMServer(replies) as server:
        recorded = _session(loopback_model(server, recorder=ModelRecorder(recording)))
    lines = [json.loads(line) for line in recording.read_text().splitlines()]
    assert [line["request"]["purpose"] for line in lines] == ["decide", "consolidate"]
    assert lines[0]["request"]["tools"] == ["pick_object"]
    assert "AAAA" not in recording.read_text()  # image bytes never reach the recording
    replay = ReplayModel(recording)
    assert _session(replay) == recorded
    assert recorded[0].tool_calls[0].arguments == {"object": "mug"}
    with pytest.raises(LLMError, match="exhausted"):
        replay.complete([system("decide")])


def test_replay_detects_a_diverging_request(tmp_path: Path) -> None:
    recording = tmp_path / "session.jsonl"
    with LoopbackLLMServer(["a", "b"]) as server:
        _session(loopback_model(server, recorder=ModelRecorder(recording)))
    replay = ReplayModel(recording)
    with pytest.raises(LLMError, match="request 1 differs from the recording"):
        replay.complete([system("decide"), {"role": "user", "content": "something else"}])
    assert ReplayModel(recording, verify=False).complete([system("other")]).text == "a"


def test_digest_ignores_image_bytes_but_not_text() -> None:
    def messages(data: str, text: str) -> list[dict[str, Any]]:
        part = {"type": "image_url", "image_url": {"url": f"data:image/jpeg;base64,{data}"}}
        return [{"role": "user", "content": [{"type": "text", "text": text}, part]}]

    assert request_digest(messages("AAAA", "x"), tools=None, json_mode=False) == request_digest(
        messages("BBBB", "x"), tools=None, json_mode=False
    )
    assert request_digest(messages("AAAA", "x"), tools=None, json_mode=False) != request_digest(
        messages("AAAA", "y"), tools=None, json_mode=False
    )
    assert request_digest([], tools=None, json_mode=False) != request_digest([], tools=None, json_mode=True)


def test_replay_rejects_unreadable_recordings(tmp_path: Path) -> None:
    with pytest.raises(LLMError, match="Cannot read model recording"):
        ReplayModel(tmp_path / "missing.jsonl")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"digest": "x", "reply": {}}\nnot json\n')
    with pytest.raises(LLMError, match="line 2: not JSON"):
        ReplayModel(bad)


def test_build_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = HarnessConfig(model=ModelConfig(model="openai/a", record_file=tmp_path / "rec.jsonl"))
    model = build_model(config)
    assert isinstance(model, LiteLLMModel) and model.name == "openai/a"
    assert model.recorder is not None and model.recorder.path == tmp_path / "rec.jsonl"
    monkeypatch.setenv("HARNESS_MODEL", "ollama/llama3")
    assert build_model(config).name == "ollama/llama3"
    assert build_model(config, model="openai/b").name == "openai/b"
    (tmp_path / "rec.jsonl").write_text("")
    replay = build_model(config, model=f"replay/{tmp_path / 'rec.jsonl'}")
    assert isinstance(replay, ReplayModel)
