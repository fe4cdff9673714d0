"""The first decision's prompt of config/sim.yaml: what `harness-ros tools` says it costs,
that it stays within its budget, and that nothing the model needs was cut to get there.

Counted with the local model's tokenizer where it is installed (``make test`` installs
the 0.5B; the 0.5B and 1.5B share a tokenizer), else with the estimate, as the command does.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
import yaml

from harness_ros.cli import main
from harness_ros.commands._prompt_size import count_first_decision, first_decision
from harness_ros.commands.tools import model_tool_definitions
from harness_ros.config import load_config
from harness_ros.local_model.tokenizer import installed_tokenizer_model
from harness_ros.profile.contracts import REQUIRED_STRUCTURE

REPO_ROOT = Path(__file__).resolve().parents[1]
BUDGET = 1700
"""Tokens of the first decision of config/sim.yaml with the repository's example memory
(about 130 tokens of it): this bound keeps what was cut from growing back."""
GOAL = 1500
"""Tokens of the first decision of config/sim.yaml as shipped (no memory yet), counted by
the local model's tokenizer: issue 29's goal."""


def _sim_config(tmp_path: Path, *, memory: bool) -> Path:
    source = yaml.safe_load((REPO_ROOT / "config" / "sim.yaml").read_text(encoding="utf-8"))
    source["skills"] = {"dir": str(REPO_ROOT / "skills")}
    source["embodiment_profile_file"] = str(REPO_ROOT / "profiles" / "sim_robot.md")
    folder = tmp_path / "memory"
    if memory:
        folder.mkdir()
        shutil.copy(REPO_ROOT / "memory" / "MEMORY.md", folder / "MEMORY.md")
    source["memory"] = {"dir": str(folder)}
    path = tmp_path / "sim.yaml"
    path.write_text(yaml.safe_dump(source), encoding="utf-8")
    return path


def test_tools_ends_with_the_first_decision_line_and_its_parts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _sim_config(tmp_path, memory=True)
    assert main(["tools", "--config", str(path)]) == 0
    lines = capsys.readouterr().out.rstrip().splitlines()
    match = re.fullmatch(r"first decision: (\d+) tokens \((.+)\)", lines[-1])
    assert match, lines[-1]
    tokens, how = int(match.group(1)), match.group(2)
    if installed_tokenizer_model() is not None:
        assert how.startswith("counted by the tokenizer of qwen2.5-coder-"), how
    else:
        assert how.startswith("estimate"), how
    assert tokens <= BUDGET
    parts = "\n".join(lines[-20:])
    for part in ("system prompt", "memory", "embodiment profile", "skill catalog", "observation"):
        assert re.search(rf"^\s+\d+  {part}", parts, re.MULTILINE), part
    for tool in ("navigate_to", "pick_object", "place_object", "finish_task", "ask_operator"):
        assert re.search(rf"^\s+\d+  tool {tool}$", parts, re.MULTILINE), tool


def test_estimate_is_used_when_asked_and_json_carries_the_count(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _sim_config(tmp_path, memory=True)
    assert main(["tools", "--config", str(path), "--json", "--estimate"]) == 0
    first = json.loads(capsys.readouterr().out)["first_decision"]
    assert first["how"].startswith("estimate") and 0 < first["tokens"] <= BUDGET
    assert first["parts"]["memory"] > 0 and first["parts"]["tool finish_task"] > 0


def test_the_cut_prompt_still_holds_the_profile_tool_contracts_and_memory(tmp_path: Path) -> None:
    config = load_config(_sim_config(tmp_path, memory=True))
    rows = model_tool_definitions(config)
    request = first_decision(config, [row["definition"] for row in rows])
    system = request.messages[0]["content"]
    # The profile's seven items, each with its text.
    for section, items in REQUIRED_STRUCTURE:
        assert f"## {section}" in system
        for item in items:
            assert re.search(rf"### {re.escape(item)}\n\S", system), item
    # Memory: every entry of the example MEMORY.md the model may read.
    for entry in ("by the handle or the lower half", "left of the sink", "spines facing out", "glossy"):
        assert entry in system
    assert "Charging dock" not in system  # operator notes never reach the model
    # Every tool's contract: name, required arguments, enums and the flags that change a call.
    by_name = {d["function"]["name"]: d["function"] for d in request.tools}
    # load_skill_resource is offered once a loaded skill lists resources (test_skills_harness.py).
    assert set(by_name) == {
        "navigate_to", "pick_object", "place_object", "load_skill",
        "ask_operator", "notify_operator", "finish_task",
    }  # fmt: skip
    assert by_name["navigate_to"]["parameters"]["required"] == ["target"]
    assert by_name["pick_object"]["parameters"]["required"] == ["object_id"]
    assert by_name["place_object"]["parameters"]["required"] == ["surface_id"]
    assert by_name["finish_task"]["parameters"]["properties"]["outcome"]["enum"] == ["succeeded", "failed"]
    assert by_name["finish_task"]["parameters"]["required"] == ["outcome", "summary"]
    for name in ("navigate_to", "pick_object", "place_object"):
        assert "Physical" in by_name[name]["description"] and "Post-condition" in by_name[name]["description"]
    assert "Base motion" in by_name["navigate_to"]["description"]
    for target in ("kitchen", "doorway", "coffee_table", "office_shelf", "red_cup", "yellow_sponge"):
        assert target in by_name["navigate_to"]["description"]
    # The rules: one call per reply, data is not authority, how a task ends.
    for rule in ("exactly one tool", "not authority", "finish_task", "stale or missing"):
        assert rule in system


def test_validation_only_keywords_stay_out_of_the_definition_but_are_enforced() -> None:
    from harness_ros.tools import ToolRegistry
    from harness_ros.tools.contracts import CancelToken
    from harness_ros.tools.finish_task import FinishTaskTool

    registry = ToolRegistry([FinishTaskTool()])
    (definition,) = registry.definitions({})
    summary = definition["function"]["parameters"]["properties"]["summary"]
    assert "minLength" not in summary and "additionalProperties" not in definition["function"]["parameters"]
    refused = registry.execute("finish_task", {"outcome": "failed", "summary": ""}, cancel=CancelToken())
    assert refused["success"] is False and "summary" in str(refused["reason"])


@pytest.mark.skipif(installed_tokenizer_model() is None, reason="no local model installed (make test-model)")
def test_the_count_is_what_llama_cpp_reads(tmp_path: Path) -> None:
    # The tokenizer's count of the rendered request equals its parts plus the template's
    # own text; the parts alone are less (role markers, tool-calling instructions).
    config = load_config(_sim_config(tmp_path, memory=False))
    request = first_decision(config, [row["definition"] for row in model_tool_definitions(config)])
    counted = count_first_decision(request)
    assert counted.how.startswith("counted by the tokenizer")
    assert sum(tokens for _name, tokens in counted.parts) < counted.total <= GOAL
