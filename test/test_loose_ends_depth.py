"""Per-view depth (issue 42, item 6, loose ends): a node whose views carry their own depth
cameras does not warn that there is no depth, and the model evaluator is given each view's
depth summary (and its false-colour rendering while the image budget lasts), as the acting
model is."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
from support.node_log import NodeProcess

from harness_ros.evaluation.model_evaluator import build_evaluation_messages, build_task_evaluation_messages
from harness_ros.observation.contracts import DepthRegion, DepthSummary, Observation, ViewImage


@pytest.mark.ros
def test_a_node_with_only_per_view_depth_does_not_warn_of_no_depth(
    tmp_path: Path, ros_env: dict[str, str]
) -> None:
    pytest.importorskip("rclpy")
    config = tmp_path / "robot.yaml"
    config.write_text(
        f"memory: {{dir: {tmp_path / 'memory'}}}\nharness: {{runs_dir: {tmp_path / 'runs'}}}\n"
        "graph_check_timeout_s: 0.0\n"
        "observations:\n  views:\n"
        "    head: {topic: /head/color, depth: {topic: /head/depth}}\n"
        "    gripper: {topic: /gripper/color, depth: {topic: /gripper/depth}}\n",
        encoding="utf-8",
    )
    node = NodeProcess(["--config", str(config)], ros_env)
    try:
        configured = node.wait_for("]: configured: model", 60)
        assert configured, node.output
        # the warnings of _warn_missing_sources come before 'configured': the clearance one is there
        assert node.wait_for("no clearance source configured", 1), node.output
        assert not node.wait_for("no depth topic", 0), node.output
    finally:
        node.stop()


def _regions(near: float) -> tuple[DepthRegion, ...]:
    return (DepthRegion("middle-centre", near, near + 0.5),)


JPEG = b"\xff\xd8fake-jpeg\xff\xd9"
PREVIEW = b"\xff\xd8gripper-depth-preview\xff\xd9"


def _observation() -> Observation:
    return Observation(
        time=100.0,
        views=(
            ViewImage("head", JPEG, 64, 48, 99.9, 0.1, False),
            ViewImage("gripper", JPEG, 64, 48, 99.9, 0.1, False),
        ),
        view_depths=(
            DepthSummary(_regions(1.25), 99.9, 0.1, False, view="head"),
            DepthSummary(_regions(0.08), 99.9, 0.1, False, preview_jpeg=PREVIEW, view="gripper"),
        ),
    )


def _text_and_images(messages: list[dict[str, object]]) -> tuple[str, list[bytes]]:
    content = messages[1]["content"]
    assert isinstance(content, list)
    text = content[0]["text"]
    prefix = "data:image/jpeg;base64,"
    images = [base64.b64decode(part["image_url"]["url"][len(prefix) :]) for part in content[1:]]
    return text, images


def test_the_evaluator_is_given_each_views_depth() -> None:
    text, images = _text_and_images(
        build_evaluation_messages("the cup is in the gripper", _observation(), max_images=3)
    )
    lines = text.splitlines()
    assert "- depth of view 'head' (age 0.10 s): middle-centre: nearest 1.25 m, median 1.75 m" in lines
    assert "- depth of view 'gripper' (age 0.10 s): middle-centre: nearest 0.08 m, median 0.58 m" in lines
    # two views, then the gripper depth's rendering, named as such
    assert images == [JPEG, JPEG, PREVIEW]
    assert "- image 3 is a false-colour rendering of this depth" in lines
    assert (
        lines.index("- image 3 is a false-colour rendering of this depth")
        == lines.index("- depth of view 'gripper' (age 0.10 s): middle-centre: nearest 0.08 m, median 0.58 m")
        + 1
    )

    # the goal check too; with no image left in the budget the rendering is not attached or announced
    text, images = _text_and_images(
        build_task_evaluation_messages("hold the cup", (), _observation(), max_images=2, evidence=None)
    )
    assert "- depth of view 'gripper' (age 0.10 s): middle-centre: nearest 0.08 m, median 0.58 m" in text
    assert images == [JPEG, JPEG] and "false-colour" not in text
