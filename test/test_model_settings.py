"""Model settings are checked before any task: no model, unknown providers, missing keys,
malformed URLs and the scripted demo policy next to real tools are caught by ``check``
(and the same function runs in the node's configure); ``check --online`` times one real
request through litellm's HTTP path to the loopback OpenAI-compatible server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness_ros.cli import main
from harness_ros.config import HarnessConfig, ModelConfig, config_from_dict, load_config
from harness_ros.errors import ConfigError, LLMError
from harness_ros.model import (
    NO_MODEL_MESSAGE,
    UnconfiguredModel,
    build_model,
    model_takes_images,
    validate_model_settings,
)
from harness_ros.plugins import model_provider
from harness_ros.testing.loopback_llm import LoopbackLLMServer

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "config" / "example.yaml"
SIM = REPO / "config" / "sim.yaml"

SIM_TOOL = {
    "name": "navigate_to",
    "description": "Drive to a named target.",
    "action": "/sim/navigate_to",
    "type": "harness_sim_msgs/action/NavigateTo",
}
ROBOT_TOOL = {
    "name": "navigate_to_pose",
    "description": "Drive with Nav2.",
    "action": "/navigate_to_pose",
    "type": "nav2_msgs/action/NavigateToPose",
}


def config(tmp_path: Path, **data: Any) -> HarnessConfig:
    data.setdefault("memory", {"dir": str(tmp_path / "memory")})
    return config_from_dict(data, base_dir=tmp_path, origin="test")


def write_config(tmp_path: Path, **data: Any) -> Path:
    data.setdefault("memory", {"dir": str(tmp_path / "memory")})
    path = tmp_path / "robot.yaml"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def check(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["check", *args])
    out, err = capsys.readouterr()
    return code, out, err


# ---------------------------------------------------------------------- no model
def test_no_model_is_reported_not_replaced_by_the_scripted_policy(tmp_path: Path) -> None:
    bare = config(tmp_path)
    assert bare.effective_model() is None
    with pytest.raises(ConfigError) as err:
        validate_model_settings(bare, require_model=True)
    assert str(err.value) == NO_MODEL_MESSAGE
    assert NO_MODEL_MESSAGE == (
        "no model configured: set model.model or HARNESS_MODEL "
        "(e.g. openai/gpt-4o-mini, anthropic/..., ollama/...)"
    )
    # The node's configure: no error, nothing to check; it refuses tasks instead.
    assert validate_model_settings(bare, require_model=False) == []
    with pytest.raises(ConfigError, match=r"^no model configured"):
        build_model(bare)
    placeholder = build_model(bare, allow_unset=True)
    assert isinstance(placeholder, UnconfiguredModel)
    with pytest.raises(LLMError, match=r"^no model configured"):
        placeholder.complete([{"role": "user", "content": "hi"}])


def test_blank_model_strings_mean_no_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HARNESS_MODEL", "  ")
    assert config(tmp_path, model={"model": " "}).effective_model() is None


def test_check_of_the_example_config_fails_with_the_no_model_message(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = check(capsys, "--config", str(EXAMPLE))
    assert code == 1
    assert err == f"error: {NO_MODEL_MESSAGE}\n"
    assert "check: OK" not in out
    # Everything but the model was checked and printed before the error.
    assert out.startswith("config:  ")
    for line in (
        "model:   NOT USABLE (see the error below)",
        "profile: ",
        "topics:  view front: /head_camera/color/image_raw (Image, qos sensor_data",
        "topics:  depth: /head_camera/depth/image_raw",
        "topics:  clearance: /scan (LaserScan",
        "skills:  3 (",
        "         built in: load_skill, load_skill_resource, ask_operator, notify_operator, finish_task",
        "         also sent, not validated: ",
        "plugins: ",
        "memory:  ",
    ):
        assert f"\n{line}" in out, line


# ---------------------------------------------------------------------- litellm models
def test_check_names_openai_api_key_when_it_is_unset(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HARNESS_MODEL", "openai/gpt-4o-mini")
    code, out, err = check(capsys, "--config", str(EXAMPLE))
    assert code == 1
    assert err.startswith("error: HARNESS_MODEL 'openai/gpt-4o-mini' (provider 'openai') needs")
    assert "OPENAI_API_KEY" in err and "model.api_key_env" in err
    # Everything else was checked and printed first; the model problem ends it.
    assert "model:   NOT USABLE (see the error below)\n" in out and "tools:   " in out
    assert "check: OK" not in out

    monkeypatch.setenv("OPENAI_API_KEY", "sk-not-a-real-key")
    code, out, err = check(capsys, "--config", str(EXAMPLE))
    assert (code, err) == (0, "")
    assert "model:   openai/gpt-4o-mini (from HARNESS_MODEL) [provider openai]\n" in out
    assert out.endswith("check: OK\n")


def test_check_names_the_key_of_an_unknown_provider(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_config(tmp_path, model={"model": "foo/bar"})
    code, out, err = check(capsys, "--config", str(path))
    assert code == 1
    assert err.startswith("error: model.model 'foo/bar': litellm knows no provider for it")
    # litellm's own provider list must not leak onto stdout.
    assert "Provider List" not in out and "litellm" not in out
    assert "check: OK" not in out


def test_a_model_string_without_a_model_name_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"model\.model 'openai/' is not a model string"):
        validate_model_settings(config(tmp_path, model={"model": "openai/"}), require_model=True)


def test_api_key_env_must_be_set_and_is_used_instead_of_the_provider_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = config(tmp_path, model={"model": "openai/local", "api_key_env": "ROBOT_LLM_KEY"})
    with pytest.raises(ConfigError, match=r"model\.api_key_env names 'ROBOT_LLM_KEY', but .* not set"):
        validate_model_settings(settings, require_model=True)
    monkeypatch.setenv("ROBOT_LLM_KEY", "secret")
    (setting,) = validate_model_settings(settings, require_model=True)
    assert (setting.key, setting.provider) == ("model.model", "openai")


def test_a_pasted_key_in_api_key_env_is_refused_without_echoing_it(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as err:
        config(tmp_path, model={"model": "openai/x", "api_key_env": "sk-proj-abc123"})
    assert "model.api_key_env: Value error, must be the name of an environment variable" in str(err.value)
    assert "abc123" not in str(err.value)


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("localhost:8000/v1", "must start with http:// or https://"),
        ("ftp://gpu-box/v1", "must start with http:// or https://"),
        ("http:///v1", "has no host name"),
        ("http://gpu-box:99999/v1", "has an invalid port"),
        ("http://gpu box:8000/v1", "must be an http:// or https:// URL without spaces"),
    ],
)
def test_api_base_must_be_a_well_formed_url(tmp_path: Path, url: str, problem: str) -> None:
    with pytest.raises(ConfigError, match=rf"model\.api_base: Value error, {problem}"):
        config(tmp_path, model={"model": "openai/x", "api_base": url})


def test_well_formed_api_base_passes_and_ollama_needs_no_variable(tmp_path: Path) -> None:
    ok = config(tmp_path, model={"model": "ollama/qwen2.5vl", "api_base": "http://localhost:11434"})
    assert validate_model_settings(ok, require_model=True)[0].provider == "ollama"
    # No api_base: litellm calls a local Ollama at its default address, which check says.
    (setting,) = validate_model_settings(config(tmp_path, model={"model": "ollama/x"}), require_model=True)
    assert "http://localhost:11434" in setting.note


def test_a_differing_evaluator_model_is_checked_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-not-a-real-key")
    settings = config(
        tmp_path,
        model={"model": "openai/gpt-4o-mini"},
        evaluator={"kind": "model", "model": "anthropic/claude-3-5-sonnet-latest"},
    )
    with pytest.raises(ConfigError) as err:
        validate_model_settings(settings, require_model=True)
    assert str(err.value).startswith("evaluator.model 'anthropic/claude-3-5-sonnet-latest'")
    assert "ANTHROPIC_API_KEY" in str(err.value)

    monkeypatch.setenv("ANTHROPIC_API_KEY", "not-a-real-key")
    roles = [(s.role, s.key) for s in validate_model_settings(settings, require_model=True)]
    assert roles == [("model", "model.model"), ("evaluator", "evaluator.model")]
    # The same model, or an evaluator that is not a model, adds nothing to check.
    same = config(tmp_path, model={"model": "openai/gpt-4o-mini"}, evaluator={"kind": "model"})
    (main_model,) = validate_model_settings(same, require_model=True)
    assert main_model.sees_images, "it judges camera images as the evaluator: --online sends one"
    plain = config(tmp_path, model={"model": "openai/gpt-4o-mini"})
    assert not validate_model_settings(plain, require_model=True)[0].sees_images


# ---------------------------------------------------------------------- scripted policy
def test_the_sim_config_may_use_the_scripted_policy() -> None:
    (setting,) = validate_model_settings(load_config(SIM), require_model=True, providers=model_provider)
    assert (setting.name, setting.provider, setting.kind) == (
        "harness_demo/scripted",
        "harness_demo",
        "scripted",
    )
    assert setting.note == "scripted demo policy, not a language model"  # the plugin's own label


def test_the_scripted_policy_refuses_tools_that_are_not_the_sims(tmp_path: Path) -> None:
    mixed = config(tmp_path, model={"model": "harness_demo/scripted"}, tools=[SIM_TOOL, ROBOT_TOOL])
    for refuse in (
        lambda: validate_model_settings(mixed, require_model=True, providers=model_provider),
        lambda: build_model(mixed, providers=model_provider),
    ):
        with pytest.raises(ConfigError) as err:
            refuse()
        message = str(err.value)
        assert "scripted demo policy, not a language model" in message
        assert "navigate_to_pose (nav2_msgs/action/NavigateToPose)" in message
        assert "navigate_to (" not in message


def test_the_scripted_policy_on_a_robot_config_without_sim_tools_refuses_to_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HARNESS_MODEL", "harness_demo/scripted")
    with pytest.raises(ConfigError, match=r"^HARNESS_MODEL 'harness_demo/scripted' is the scripted demo"):
        validate_model_settings(load_config(EXAMPLE), require_model=True, providers=model_provider)
    # Offline consolidation (replay, memory) binds no tools: the policy may serve it there.
    assert build_model(config(tmp_path), providers=model_provider).name == "harness_demo/scripted"


# ---------------------------------------------------------------------- --online
def test_online_check_times_a_text_and_an_image_request_against_the_loopback_server(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOOPBACK_KEY", "not-a-real-key")
    with LoopbackLLMServer(["OK", "Red."]) as server:
        path = write_config(
            tmp_path,
            model={
                "model": "openai/loopback",
                "api_base": server.url,
                "api_key_env": "LOOPBACK_KEY",
                "vision": True,  # a local server's name says nothing: this one serves a vision model
            },
            observations={"views": {"front": {"topic": "/camera/image"}}},
        )
        code, out, err = check(capsys, "--config", str(path), "--online")
    assert code == 0, err
    lines = out.splitlines()
    text_line = next(line for line in lines if ", text request: " in line)
    image_line = next(line for line in lines if ", image request: " in line)
    assert text_line.startswith("online:  model openai/loopback, text request: ")
    assert text_line.endswith(" s round trip, replied 'OK'")
    assert image_line.endswith(" s round trip, replied 'Red.'")
    seconds = float(text_line.split("text request: ")[1].split(" s ")[0])
    assert 0 < seconds < 30
    assert lines[-1] == "check: OK"
    assert len(server.requests) == 2
    image_parts = [p for p in server.requests[1]["messages"][0]["content"] if p.get("type") == "image_url"]
    assert image_parts and image_parts[0]["image_url"]["url"].startswith("data:image/jpeg;base64,")


def test_online_check_fails_on_a_provider_error_after_one_attempt(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOOPBACK_KEY", "not-a-real-key")
    with LoopbackLLMServer([{"status": 503, "error": "overloaded"}, "unused"]) as server:
        path = write_config(
            tmp_path,
            model={
                "model": "openai/loopback",
                "api_base": server.url,
                "api_key_env": "LOOPBACK_KEY",
                "max_retries": 3,
            },
        )
        code, out, err = check(capsys, "--config", str(path), "--online")
    assert code == 1
    assert err.startswith("error: model 'openai/loopback' failed the text probe: Model call failed")
    assert "overloaded" in err
    assert len(server.requests) == 1, "the probe makes one attempt, so its time is one round trip"
    assert "check: OK" not in out


def test_a_local_openai_compatible_server_is_text_only_unless_configured(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOOPBACK_KEY", "not-a-real-key")
    with LoopbackLLMServer(["OK", "Red."]) as server:
        path = write_config(
            tmp_path,
            model={"model": "openai/gpt-4o", "api_base": server.url, "api_key_env": "LOOPBACK_KEY"},
            observations={"views": {"front": {"topic": "/camera/image"}}},
        )
        code, out, err = check(capsys, "--config", str(path), "--online")
    assert code == 0, err
    assert "text-only (model.vision): camera views are described, never sent" in out
    assert ", image request: " not in out
    assert len(server.requests) == 1  # no image probe for a model that takes none
    assert "image_url" not in json.dumps(server.requests)


@pytest.mark.parametrize(
    ("model", "vision", "takes"),
    [
        ("openai/gpt-4o-mini", "auto", True),  # litellm's capability data
        ("anthropic/claude-3-5-haiku-latest", "auto", False),
        ("openai/qwen2.5-coder-1.5b", "auto", False),  # unknown to litellm
        ("openai/qwen2.5-coder-1.5b", True, True),  # YAML true
        ("openai/gpt-4o-mini", "false", False),
        ("harness_demo/scripted", "auto", True),
    ],
)
def test_model_vision_setting(model: str, vision: Any, takes: bool) -> None:
    assert model_takes_images(ModelConfig(model=model, vision=vision), model, model_provider) is takes


def test_a_text_only_model_cannot_be_its_own_image_evaluator(tmp_path: Path) -> None:
    settings = config(
        tmp_path,
        model={"model": "openai/gpt-4o-mini", "vision": "false"},
        evaluator={"kind": "model"},
    )
    with pytest.raises(ConfigError) as raised:
        validate_model_settings(settings, require_model=True)
    assert "judges camera images with model.model 'openai/gpt-4o-mini', which takes no images" in str(
        raised.value
    )
    assert "model.vision is false" in str(raised.value)


# ---------------------------------------------------------------------- model.profile
def _requests_after_a_failed_grasp(model_name: str, profile: str) -> list[dict[str, Any]]:
    """Each decision request of a task whose grasp fails, from a model built from its config
    and served on this machine (the loopback server)."""
    from harness_ros.harness import Harness
    from harness_ros.model import LiteLLMModel
    from harness_ros.tools import failure, tool

    @tool(description="Grasp an object.", physical=True)
    def grasp(object_id: str) -> dict[str, Any]:
        return failure(f"object out of reach: {object_id} is 0.96 m away")

    replies = [
        '{"name": "grasp", "arguments": {"object_id": "red_cup"}}',
        '{"name": "finish_task", "arguments": {"outcome": "failed", "summary": "out of reach"}}',
    ]
    with LoopbackLLMServer(replies) as server:
        cfg = ModelConfig(model=model_name, api_base=server.url, profile=profile, max_retries=0, timeout_s=20)
        # litellm's MCP import needs 'mcp'
        model = LiteLLMModel.from_config(
            cfg, api_key="not-a-real-key", completion_kwargs={"_skip_mcp_handler": True}
        )
        events = list(Harness(model=model, tools=[grasp]).run("pick up the red cup", task_id="profile"))
        assert events[-1].payload.get("finished_by") == "finish_task", events[-1].payload.to_data()
        return list(server.requests)


def _coached(request: dict[str, Any]) -> bool:
    """Whether a decision request carries the small-model coaching: the failure note last
    (before a call prefill), and decisions that stop at the harness's own text."""
    notes = [m for m in request["messages"] if m["role"] == "user"]
    return "stop" in request and str(notes[-1]["content"]).startswith("Your last grasp call")


def test_a_70b_model_on_localhost_with_profile_hosted_gets_no_coaching() -> None:
    on_localhost = ModelConfig(model="openai/llama-3.3-70b", api_base="http://127.0.0.1:8080/v1")
    assert _built_profile(on_localhost).name == "small"  # auto: the URL's guess
    hosted = _built_profile(on_localhost.model_copy(update={"profile": "hosted"}))
    assert (hosted.name, hosted.why, hosted.guided) == ("hosted", "model.profile: hosted", False)

    _, after_failure = _requests_after_a_failed_grasp("openai/llama-3.3-70b", "hosted")
    assert not _coached(after_failure)
    assert after_failure["messages"][-1]["role"] == "tool"  # no note, no prefill after the result
    _, auto_after_failure = _requests_after_a_failed_grasp("openai/llama-3.3-70b", "auto")
    assert _coached(auto_after_failure)


def test_a_remote_small_model_with_profile_small_gets_coaching() -> None:
    remote = ModelConfig(
        model="openai/qwen2.5-coder-1.5b-instruct", api_base="https://gpu-box.example.com/v1"
    )
    auto = _built_profile(remote)
    assert (auto.name, auto.guided) == ("hosted", False)
    assert auto.why == (
        "auto: openai/qwen2.5-coder-1.5b-instruct at https://gpu-box.example.com/v1 "
        "is not served on this machine"
    )
    small = _built_profile(remote.model_copy(update={"profile": "small"}))
    assert (small.name, small.why) == ("small", "model.profile: small")
    assert small.guided and small.stops_at_harness_text and small.skill_in_history and small.prefills_calls
    # What a task does is the profile's, wherever the server is (here: the loopback one).
    first, after_failure = _requests_after_a_failed_grasp("openai/qwen2.5-coder-1.5b-instruct", "small")
    assert not _coached(first) and _coached(after_failure)


def _built_profile(cfg: ModelConfig) -> Any:
    from harness_ros.model import LiteLLMModel
    from harness_ros.model.contracts import profile_of

    return profile_of(LiteLLMModel.from_config(cfg))


def test_the_start_up_log_says_which_profile_applies_and_why(caplog: pytest.LogCaptureFixture) -> None:
    from harness_ros.model import LiteLLMModel

    url = "http://user:secret@127.0.0.1:8080/v1?key=sk-123"
    with caplog.at_level("INFO", logger="harness_ros.model.litellm_model"):
        LiteLLMModel.from_config(ModelConfig(model="openai/qwen2.5-coder-1.5b-instruct", api_base=url))
        LiteLLMModel.from_config(ModelConfig(model="openai/llama-3.3-70b", api_base=url, profile="hosted"))
    assert caplog.messages == [
        "openai/qwen2.5-coder-1.5b-instruct: model profile: small "
        "(auto: served on this machine at http://127.0.0.1:8080/v1)",
        "openai/llama-3.3-70b: model profile: hosted (model.profile: hosted)",
    ]
    assert "secret" not in caplog.text and "sk-123" not in caplog.text


def test_check_settings_carry_the_resolved_profile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-not-a-real-key")
    settings = validate_model_settings(
        config(tmp_path, model={"model": "openai/gpt-4o-mini", "profile": "small"}), require_model=True
    )
    assert [s.profile.describe() if s.profile else None for s in settings] == [
        "model profile: small (model.profile: small)"
    ]
    with pytest.raises(ConfigError, match=r"model\.profile"):
        config(tmp_path, model={"model": "openai/gpt-4o-mini", "profile": "tiny"})
