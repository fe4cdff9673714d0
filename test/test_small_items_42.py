"""Smaller items of issue 42 (item 10): litellm's banner, a preset's argument text on a
tool that moves something other than an arm, the units of move_arm_to's poses, and the
indexed goal paths docs/robot.md documents."""

from __future__ import annotations

import re
import socket
from pathlib import Path

import pytest
import yaml

from harness_ros.config import ToolBinding, load_config
from harness_ros.errors import LLMError
from harness_ros.ros.interfaces import binding_schema, fill_message, request_class

REPO_ROOT = Path(__file__).resolve().parents[1]
PRESETS = REPO_ROOT / "config" / "presets"


def test_litellms_banner_is_never_printed(capfd: pytest.CaptureFixture[str]) -> None:
    # litellm printed "Give Feedback / Get Help ..." to stdout on every failed attempt:
    # three times in the node log for one decision with two retries.
    litellm = pytest.importorskip("litellm")
    from harness_ros.model import LiteLLMModel

    litellm.suppress_debug_info = False  # as a fresh import of litellm has it
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{probe.getsockname()[1]}/v1"
    model = LiteLLMModel(
        "openai/loopback", api_base=url, api_key="dummy", max_retries=2, sleep=lambda _: None
    )
    with pytest.raises(LLMError, match="3 attempts"):
        model.complete([{"role": "system", "content": "# harness_ros: decide"}])
    captured = capfd.readouterr()
    assert "Give Feedback" not in captured.out + captured.err
    assert "litellm.turn_on_debug" not in captured.out + captured.err


def test_a_head_bound_through_move_arm_to_is_not_told_it_moves_an_arm(tmp_path: Path) -> None:
    path = tmp_path / "head.yaml"
    path.write_text(
        f"tools:\n  - preset: {PRESETS / 'move_arm_to.yaml'}\n"
        "    name: look_at\n"
        "    description: Point the head camera at a named direction.\n"
        "    goal: {trajectory.joint_names: [joint_head_pan, joint_head_tilt]}\n"
        "    lookups: {arm_poses: {ahead: [0.0, 0.0], floor: [0.0, -0.9]}}\n",
        encoding="utf-8",
    )
    (tool,) = load_config(path).tools
    schema, _ = binding_schema(tool)
    pose = schema["properties"]["pose"]
    assert "arm" not in pose["description"].lower()
    assert pose["enum"] == ["ahead", "floor"]


def test_move_arm_to_says_poses_are_metres_for_a_lift_or_telescoping_joint() -> None:
    text = (PRESETS / "move_arm_to.yaml").read_text(encoding="utf-8")
    comment = next(line for line in text.splitlines() if line.strip().startswith("arm_poses:"))
    assert "in rad," not in comment
    assert "rad for a revolute joint" in comment and "m for a prismatic one" in comment


def test_the_documented_indexed_goal_path_fills_one_joint() -> None:
    doc = (REPO_ROOT / "docs" / "robot.md").read_text(encoding="utf-8")
    match = re.search(
        r"<!-- snippet: config/robots/stretch3.yaml#move-lift -->\n```yaml\n(.*?)```", doc, re.S
    )
    assert match, "docs/robot.md has no indexed-paths example"
    assert "**Indexed paths.**" in doc
    (entry,) = yaml.safe_load(match.group(1))
    assert "trajectory.points[0].positions[0]" in entry["goal"]
    pytest.importorskip("control_msgs")
    tool = ToolBinding.model_validate(entry)
    _, compiled = binding_schema(tool)
    assert compiled is not None
    goal = fill_message(
        request_class(tool), compiled.build({"height": 0.8}, now=lambda: {"sec": 0, "nanosec": 0})
    )
    assert list(goal.trajectory.joint_names) == ["joint_lift"]
    assert list(goal.trajectory.points[0].positions) == [0.8]
    assert goal.trajectory.points[0].time_from_start.sec == 4
