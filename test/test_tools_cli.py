"""``harness-ros tools``: what the model sees, with token estimates, without a ROS graph."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness_ros.cli import main
from harness_ros.tools import EXPERIENCE_HEADING

REPO_ROOT = Path(__file__).resolve().parents[1]
HIDDEN = {"header", "stamp", "frame_id", "behavior_tree"}


def _property_names(schema: Any) -> set[str]:
    """Every property name at any depth of a JSON Schema."""
    names: set[str] = set()
    if isinstance(schema, dict):
        for key, value in (schema.get("properties") or {}).items():
            names.add(key)
            names |= _property_names(value)
        names |= _property_names(schema.get("items"))
    return names


def test_robot_nav2_definitions_are_small_and_hide_the_plumbing() -> None:
    # The done-when, as a user runs it: a fresh process, no ROS server anywhere.
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "ROS_DOMAIN_ID": "231"}
    done = subprocess.run(
        [sys.executable, "-m", "harness_ros.cli", "tools", "--config", "config/robot_nav2.yaml", "--json"],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)["tools"]
    names = [row["name"] for row in rows]
    for expected in (
        "navigate_to_pose",
        "navigate_to_location",
        "drive_forward",
        "back_up",
        "spin",
        "move_arm_to",
        "open_gripper",
        "close_gripper",
        "reset_arm_faults",
        "set_arm_motors",
    ):
        assert expected in names
    for row in rows:
        parameters = row["definition"]["function"]["parameters"]
        assert not HIDDEN & _property_names(parameters), row["name"]
        if row["budget"] is not None:
            assert 0 < row["tokens"] <= row["budget"], row
    location = next(r for r in rows if r["name"] == "navigate_to_location")["definition"]["function"]
    assert location["parameters"]["properties"]["location"]["enum"] == ["dock", "kitchen", "table", "shelf"]


def test_text_output_shows_description_flags_and_experience(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    memory = tmp_path / "memory"
    (memory / "tool_experience").mkdir(parents=True)
    ledger = (
        "# Tool Experience: spin\n\n## Success\n- [2026-01-01] turned 90 deg in the kitchen\n## Failure\n"
    )
    (memory / "tool_experience" / "spin.md").write_text(ledger, encoding="utf-8")
    sha = hashlib.sha256(ledger.encode("utf-8")).hexdigest()
    summary = "Turning 90 degrees in the kitchen worked."
    (memory / ".summary_cache.json").write_text(json.dumps({"spin": {"sha256": sha, "summary": summary}}))
    config = tmp_path / "robot.yaml"
    config.write_text(
        yaml.safe_dump({"memory": {"dir": str(memory)}, "tools": [{"preset": "spin"}]}), encoding="utf-8"
    )
    assert main(["tools", "--config", str(config)]) == 0
    out = capsys.readouterr().out
    assert "spin  (~" in out and "of 400 tokens)" in out
    assert "Base motion: safety may shorten or refuse it." in out
    assert '"angle": {"type": "number", "description": "Angle to turn (deg)"' in out
    assert f"{EXPERIENCE_HEADING}\n    {summary}" in out


def test_an_over_budget_binding_fails_naming_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "robot.yaml"
    config.write_text(
        yaml.safe_dump({"tools": [{"preset": "navigate_to_pose", "max_definition_tokens": 100}]}),
        encoding="utf-8",
    )
    assert main(["tools", "--config", str(config)]) == 1
    err = capsys.readouterr().err
    assert "error: tool 'navigate_to_pose': its model-facing definition is about" in err
    assert "over max_definition_tokens 100" in err


def test_a_bad_binding_fails_naming_the_field_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "robot.yaml"
    config.write_text(
        yaml.safe_dump({"tools": [{"preset": "navigate_to_pose", "goal": {"pose.header.frame_id": ""}}]}),
        encoding="utf-8",
    )
    assert main(["tools", "--config", str(config), "--json"]) == 1
    assert (
        "goal field 'pose.header.frame_id': is required and its constant is empty" in capsys.readouterr().err
    )


def test_printing_the_tools_never_loads_rclpy() -> None:
    # "Without a ROS graph": the command reads interface types only, no node or middleware.
    script = (
        "import contextlib, io, sys\n"
        "from harness_ros.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    code = main(['tools', '--config', 'config/robot_nav2.yaml', '--json'])\n"
        "print(code, 'rclpy' in sys.modules)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.stdout.split() == ["0", "False"], done.stderr


def test_the_listing_holds_every_tool_the_harness_offers_and_counts_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from harness_ros.commands.tools import _DefinitionOnly, _NoOperator
    from harness_ros.config import load_config
    from harness_ros.harness import build_harness
    from harness_ros.ros.interfaces import tool_spec

    source = yaml.safe_load((REPO_ROOT / "config" / "sim.yaml").read_text(encoding="utf-8"))
    source["skills"] = {"dir": str(REPO_ROOT / "skills")}
    source["embodiment_profile_file"] = str(REPO_ROOT / "profiles" / "sim_robot.md")
    source["memory"] = {"dir": str(tmp_path / "memory")}
    path = tmp_path / "sim.yaml"
    path.write_text(yaml.safe_dump(source), encoding="utf-8")

    assert main(["tools", "--config", str(path), "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    # What the harness built for a node with this config offers the model each turn.
    config = load_config(path)
    robot_tools = [_DefinitionOnly(tool_spec(binding)[0]) for binding in config.tools]
    harness = build_harness(config, tools=robot_tools, model=object(), operator=_NoOperator())  # type: ignore[arg-type]
    offered = harness.registry.definitions({})
    assert [row["definition"] for row in listed["tools"]] == offered
    names = [row["name"] for row in listed["tools"]]
    for built_in in ("load_skill", "load_skill_resource", "ask_operator", "notify_operator", "finish_task"):
        assert built_in in names
        assert next(r for r in listed["tools"] if r["name"] == built_in)["origin"] == "built-in"
    assert listed["total_tokens"] == sum(row["tokens"] for row in listed["tools"])

    assert main(["tools", "--config", str(path)]) == 0
    out = capsys.readouterr().out
    assert "finish_task  (~" in out and "built in: offered every turn" in out
    assert f"8 tools (3 configured, 5 built in), ~{listed['total_tokens']} tokens in all" in out
    assert out.rstrip().splitlines()[-1].startswith("first decision: ")

    # Without the operator channel and skills, only finish_task is added.
    source["operator"] = {"enabled": False}
    source["skills"] = {"dir": None}
    path.write_text(yaml.safe_dump(source), encoding="utf-8")
    assert main(["tools", "--config", str(path), "--json"]) == 0
    names = [row["name"] for row in json.loads(capsys.readouterr().out)["tools"]]
    assert names == ["navigate_to", "pick_object", "place_object", "finish_task"]
