"""Plugins: the documented example runs, bad entries fail at start-up naming themselves,
and the package's own sim evaluator and demo policy are plugins the node never imports."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import zlib
from pathlib import Path
from typing import Any

import pytest

from harness_ros.errors import ConfigError
from harness_ros.harness import Harness
from harness_ros.model.contracts import ModelReply, ToolCall, Usage
from harness_ros.observation.contracts import Clearance, Observation
from harness_ros.plugins import ObservationWithExtras, PluginRegistry, load_plugins
from harness_ros.tools import success, tool

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "docs" / "examples" / "plugins"


class Script:
    name = "scripted-test"

    def __init__(self, *replies: ModelReply) -> None:
        self.replies = list(replies)
        self.seen: list[list[dict[str, Any]]] = []

    def complete(self, messages: list[dict[str, Any]], tools: Any = None, **_: Any) -> ModelReply:
        self.seen.append(messages)
        return self.replies.pop(0) if self.replies else ModelReply(text="done")


def call(name: str, **arguments: Any) -> ModelReply:
    return ModelReply(
        text="", tool_calls=(ToolCall("c1", name, json.dumps(arguments), arguments),), usage=Usage()
    )


class Still:
    """An observation source with nothing to show but a fresh clearance."""

    def now(self) -> float:
        return 1.0

    def observe(self) -> Observation:
        return Observation(time=1.0)

    def observe_after(self, after: float, timeout_s: float) -> Observation:
        return self.observe()

    def clearance(self) -> Clearance:
        return Clearance(2.0, 2.0, 2.0, 2.0, stamp=1.0, age_s=0.0, stale=False)


def test_the_documented_example_plugin_runs_in_a_task(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(EXAMPLES))
    plugins = load_plugins(["battery_plugin:register"], entry_points=False)
    assert plugins.loaded == ["battery_plugin:register"]

    @tool(description="Put the held object on a surface.", physical=True)
    def place_object(surface_id: str) -> dict[str, Any]:
        return success(placed_on=surface_id)

    model = Script(call("battery_level"), call("place_object", surface_id="stove"), ModelReply(text="done"))
    harness = Harness(
        model=model,
        tools=[place_object, *plugins.tools],
        hooks=plugins.hooks,
        observations=ObservationWithExtras(Still(), plugins.observation_extras),
    )
    events = list(harness.run("check the battery, then put the pan on the stove", task_id="p1"))
    results = [e.payload.get("result") for e in events if e.type.value == "tool_result"]
    assert results[0] == {"success": True, "percent": 87.0}
    assert results[1]["success"] is False and results[1]["reason"] == "never place objects on the stove"
    observed = json.dumps(model.seen[0])
    assert "battery: 87 % charge" in observed


def test_an_observation_extra_that_fails_is_a_note() -> None:
    def broken() -> str:
        raise RuntimeError("sensor gone")

    observation = ObservationWithExtras(Still(), {"battery": broken}).observe()
    assert observation.notes == ("battery: unavailable (RuntimeError)",)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("no_colon", r"plugins\[0\]: 'no_colon' must look like 'package.module:callable'"),
        ("no_such_module_xyz:register", r"plugins\[0\]: cannot import 'no_such_module_xyz'"),
        ("json:no_such_function", r"plugins\[0\]: 'json' has no attribute 'no_such_function'"),
        ("json:decoder", r"plugins\[0\]: 'json:decoder' is not callable"),
        ("json:loads", r"plugins\[0\]: plugin 'json:loads' failed while registering: TypeError"),
    ],
)
def test_bad_plugin_entries_fail_naming_the_entry(spec: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_plugins([spec], entry_points=False)


def test_the_package_registers_its_sim_and_demo_through_entry_points() -> None:
    plugins = load_plugins()
    assert {"demo", "sim"} <= set(plugins.loaded)
    assert "sim" in plugins.evaluators
    demo = plugins.model_providers["harness_demo"]
    # Registered as what it is: not a language model, with the label every output uses.
    assert demo.language_model is False and demo.label == "scripted demo policy, not a language model"
    assert demo.config_problem is not None


def test_a_provider_that_is_not_a_language_model_must_say_how_it_is_named() -> None:
    registry = PluginRegistry()
    with pytest.raises(ValueError, match="'mine': a provider that is not a language model needs a label"):
        registry.add_model_provider("mine", lambda litellm: None, language_model=False)
    registry.add_model_provider("llm", lambda litellm: None)  # a language model needs none
    assert registry.model_providers["llm"].language_model is True


def test_the_sim_evaluator_reads_its_own_options_and_refuses_others() -> None:
    from harness_ros_sim.ros.sim.plugin import ground_truth_topic

    assert ground_truth_topic({}) == "/sim/ground_truth"
    assert ground_truth_topic({"ground_truth_topic": "/gz/ground_truth"}) == "/gz/ground_truth"
    with pytest.raises(
        ConfigError, match=r"^evaluator\.options\.topic: unknown option for evaluator\.kind 'sim'"
    ):
        ground_truth_topic({"topic": "/x"})
    with pytest.raises(ConfigError, match=r"^evaluator\.options\.ground_truth_topic: expected a ROS topic"):
        ground_truth_topic({"ground_truth_topic": "not a topic"})


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    names |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    strings = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    return names | {s for s in strings if s.startswith("harness_ros.")}


def test_the_node_and_the_model_adapter_import_no_sim_and_no_demo() -> None:
    node = _imports(REPO / "harness_ros" / "ros" / "node.py")
    adapter = _imports(REPO / "harness_ros" / "model" / "litellm_model.py")
    assert not {n for n in node if n.startswith("harness_ros_sim.ros.sim")}, node
    assert not {n for n in adapter if n.startswith("harness_ros_sim.demo")}, adapter


def test_check_refuses_an_unknown_evaluator_kind(tmp_path: Path) -> None:
    config = tmp_path / "robot.yaml"
    config.write_text(
        "model: {model: openai/gpt-4o-mini}\nevaluator: {kind: crystal_ball}\n", encoding="utf-8"
    )
    result = subprocess.run(
        [sys.executable, "-m", "harness_ros.cli", "check", "--config", str(config)],
        env={**os.environ, "OPENAI_API_KEY": "sk-not-a-real-key"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 1
    assert (
        "evaluator.kind 'crystal_ball' is not a known evaluator (known: none, model, checks, sim)"
        in result.stderr
    )


@pytest.mark.parametrize(
    ("source", "raised"),
    [
        ("raise RuntimeError('no robot config found')\n", "RuntimeError: no robot config found"),
        ("def register(registry:\n", "SyntaxError: "),
        ("import json\nVALUE = json.loads('{')\n", "JSONDecodeError: Expecting property name"),
        ("def __getattr__(name):\n    raise KeyError(name)\n", "reading 'register' raised KeyError"),
    ],
    ids=["runtime-error", "syntax-error", "value-error", "getattr"],
)
def test_a_plugin_module_that_raises_at_import_is_named_with_its_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: str, raised: str
) -> None:
    module = f"broken_plugin_{zlib.crc32(source.encode()):08x}"
    (tmp_path / f"{module}.py").write_text(source, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ConfigError) as info:
        load_plugins([f"{module}:register"], entry_points=False)
    message = str(info.value)
    assert message.startswith(f"plugins[0]: plugin '{module}:register': "), message
    assert raised in message


def test_a_robot_config_uses_neither_the_demo_nor_the_sim_plugin(tmp_path: Path) -> None:
    """Issue 30, item 10: the package's demo and sim plugins are reported only for a config
    that uses them (the demo's model provider, the sim's evaluator kind)."""
    plugins = load_plugins()
    assert {"demo", "sim"} <= set(plugins.loaded)
    assert plugins.added["sim"].evaluators == ("sim",) and plugins.added["demo"].model_providers == (
        "harness_demo",
    )
    assert not {"demo", "sim"} & set(plugins.in_use("openai/gpt-4o-mini", "model"))
    assert {"demo", "sim"} <= set(plugins.in_use("harness_demo/scripted", "sim"))
    assert "sim" in plugins.in_use("openai/gpt-4o-mini", "sim")
    assert "demo" not in plugins.in_use("openai/gpt-4o-mini", "sim")

    env = {**os.environ, "HARNESS_MODEL": "openai/gpt-4o-mini", "OPENAI_API_KEY": "sk-not-a-real-key"}
    result = subprocess.run(
        [sys.executable, "-m", "harness_ros.cli", "check", "--config", str(REPO / "config" / "example.yaml")],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    line = next(line for line in result.stdout.splitlines() if line.startswith("plugins: "))
    assert line.startswith("plugins: none (installed, not used by this config: "), line
    assert "demo" in line and "sim" in line, line
