"""The Stretch 3 example's profile names the joints that move its head camera in the
Camera Positions form the loader reads (issue 42, item 11 with item 5), and they are the
head view's pan and tilt joints in config/robots/stretch3.yaml."""

from __future__ import annotations

from pathlib import Path

from harness_ros.config import load_config
from harness_ros.profile import load_embodiment_profile_document_from_config
from harness_ros.profile.loader import check_camera_joints

CONFIG = Path(__file__).resolve().parents[1] / "config" / "robots" / "stretch3.yaml"


def test_the_stretch3_profile_names_the_head_cameras_joints() -> None:
    config = load_config(CONFIG)
    profile = load_embodiment_profile_document_from_config(config)
    assert profile is not None
    assert dict(profile.camera_joints) == {"head": ("joint_head_pan", "joint_head_tilt")}
    check_camera_joints(profile, config)  # raises when a joint is not the view's pan or tilt
    head = config.observations.views["head"]
    assert head.rotate == 90
    assert head.pan is not None and (head.pan.joint, head.pan.positive) == ("joint_head_pan", "left")
    assert head.tilt is not None and (head.tilt.joint, head.tilt.positive) == ("joint_head_tilt", "up")
    assert head.depth is not None and config.observations.views["gripper"].depth is not None
