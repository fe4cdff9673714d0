"""camera_info per view: depth regions registered to a view by the two cameras' intrinsics.

Pure geometry first, then RosObservationSource against test/support/frame_publisher.py
in its own process (its depth camera sees twice the angle of its front view).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from support import frame_publisher as scene

from harness_ros.config import ObservationConfig
from harness_ros.observation.pipeline import Intrinsics, registered_grid, summarize_depth_mm

REPO_ROOT = Path(__file__).resolve().parents[1]
PUBLISHER = REPO_ROOT / "test" / "support" / "frame_publisher.py"


def info(focal: float, width: int, height: int) -> SimpleNamespace:
    return SimpleNamespace(k=[focal, 0, width / 2, 0, focal, height / 2, 0, 0, 1], width=width, height=height)


def test_same_field_of_view_at_half_resolution_gives_the_depth_images_thirds() -> None:
    view = Intrinsics.from_camera_info(info(525.0, 640, 480))
    depth = Intrinsics.from_camera_info(info(262.5, 320, 240))
    rows, cols = registered_grid(view, depth)
    assert rows.tolist() == [0, 80, 160, 240] and cols.tolist() == [0, 107, 213, 320]


def test_a_wider_depth_camera_maps_the_view_to_its_centre() -> None:
    view = Intrinsics.from_camera_info(info(500.0, 640, 480))
    depth = Intrinsics.from_camera_info(info(250.0, 640, 480))
    rows, cols = registered_grid(view, depth)
    assert rows.tolist() == [120, 200, 280, 360] and cols.tolist() == [160, 267, 373, 480]
    # the scene's box (top-left of the depth image) is outside what the view shows
    plain = {r.name: r for r in summarize_depth_mm(scene.depth_mm())}
    registered = {r.name: r for r in summarize_depth_mm(scene.depth_mm(), grid=(rows, cols))}
    assert plain["top-left"].nearest_m == scene.BOX_MM / 1000
    assert registered["top-left"].nearest_m == scene.PLANE_MM / 1000
    # a view five times wider than the depth camera: its outer cells lie beyond the depth
    # image, so they are empty (unknown), and its centre cell is the whole depth image
    wide = Intrinsics.from_camera_info(info(100.0, 640, 480))
    rows, cols = registered_grid(wide, view)
    assert rows.tolist() == [0, 0, 480, 480] and cols.tolist() == [0, 0, 640, 640]
    outer = {r.name: r for r in summarize_depth_mm(scene.depth_mm(), grid=(rows, cols))}
    assert outer["top-left"].nearest_m is None and outer["bottom-right"].median_m is None
    assert outer["middle-centre"].nearest_m == scene.BOX_MM / 1000


def test_unusable_camera_info_and_config_errors_name_the_problem() -> None:
    with pytest.raises(ValueError, match="without usable intrinsics"):
        Intrinsics.from_camera_info(info(0.0, 640, 480))
    views = {"front": {"topic": "/cam/front/image"}}
    with pytest.raises(ValueError, match=r"depth\.view needs views\.front\.camera_info"):
        ObservationConfig.model_validate({"views": views, "depth": {"topic": "/d", "view": "front"}})
    with pytest.raises(ValueError, match=r"depth\.view 'back' is not a key of views"):
        ObservationConfig.model_validate({"views": views, "depth": {"topic": "/d", "view": "back"}})


def run_check(config: Path) -> subprocess.CompletedProcess[str]:
    # The config may set no model (check would refuse): give it one, with a placeholder key.
    env = {**os.environ, "HARNESS_MODEL": "openai/gpt-4o-mini", "OPENAI_API_KEY": "sk-not-a-real-key"}
    return subprocess.run(
        [sys.executable, "-m", "harness_ros.cli", "check", "--config", str(config)],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_check_does_not_warn_about_a_camera_info_nothing_reads(tmp_path: Path) -> None:
    """Only depth.view's camera_info is read (issue 30, item 10): the wrist and torso views
    without one, with depth registered to the front view, get no warning."""
    text = (REPO_ROOT / "config" / "example.yaml").read_text(encoding="utf-8")
    for view in ("torso", "wrist"):
        line = f"      camera_info: /{view}_camera/camera_info\n"
        assert line in text, view
        text = text.replace(line, "")
    text = text.replace("../", f"{REPO_ROOT}/")
    config = tmp_path / "robot.yaml"
    config.write_text(text, encoding="utf-8")
    result = run_check(config)
    assert result.returncode == 0, result.stderr
    assert "warning" not in result.stderr and "camera_info" not in result.stderr, result.stderr
    assert "; regions: registered to view front by camera_info)\n" in result.stdout, result.stdout

    # Depth not registered to a view: no view's camera_info is read, none is warned about.
    result = run_check(REPO_ROOT / "config" / "sim.yaml")
    assert result.returncode == 0, result.stderr
    assert "warning" not in result.stderr, result.stderr
    assert "regions: the depth image's own thirds, observations.depth.view not set)" in result.stdout


@pytest.mark.ros
def test_source_registers_depth_regions_to_the_view(ros_context: Any, ros_env: dict[str, str]) -> None:
    pytest.importorskip("rclpy")
    from support.spinning_node import spinning_node

    from harness_ros.ros.observations import RosObservationSource

    config = ObservationConfig.model_validate(
        {
            "views": {
                "front": {
                    "topic": scene.VIEW_TOPICS["front"],
                    "camera_info": scene.CAMERA_INFO_TOPICS["front"],
                }
            },
            "depth": {
                "topic": scene.DEPTH_TOPIC,
                "camera_info": scene.CAMERA_INFO_TOPICS["depth"],
                "view": "front",
                "max_age_s": 5.0,
            },
        }
    )
    publisher = subprocess.Popen(
        [sys.executable, str(PUBLISHER), "--rate", "5"], env=ros_env, stdout=subprocess.DEVNULL
    )
    try:
        with spinning_node(ros_context, "camera_info_test") as node:
            source = RosObservationSource(node, config, footprint_radius_m=0.3, views=())
            assert source.wait_for_messages(20.0), f"not every topic delivered: {source.stats()}"
            observation = source.observe()
            assert observation.depth is not None and not observation.depth.stale
            regions = {region.name: region for region in observation.depth.regions}
            # registered: the box in the depth image's corner is outside the front view
            assert regions["top-left"].nearest_m == scene.PLANE_MM / 1000
            assert not [note for note in observation.notes if "camera_info" in note]
            source.destroy()
    finally:
        publisher.send_signal(signal.SIGINT)
        try:
            publisher.wait(timeout=10)
        except subprocess.TimeoutExpired:
            publisher.kill()
            publisher.wait(timeout=5)
