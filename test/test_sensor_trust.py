"""Sensor input that must not be trusted: stamps from the future, decompression bombs."""

from __future__ import annotations

import tracemalloc
from types import SimpleNamespace
from typing import Any

import cv2
import numpy as np
import pytest

from harness_ros.observation.pipeline import FrameDecodeError, compressed_dimensions, decode_image

# --------------------------------------------------------------------------- decode budget


@pytest.fixture(scope="module")
def bombs() -> dict[str, bytes]:
    """Tiny files that declare 6000x6000 pixels (about 108 MB as BGR)."""
    grey = np.zeros((6000, 6000), np.uint8)
    png = cv2.imencode(".png", grey)[1].tobytes()
    jpeg = cv2.imencode(".jpg", grey, [cv2.IMWRITE_JPEG_QUALITY, 50])[1].tobytes()
    return {"png": png, "jpeg": jpeg}


def frame(data: bytes, fmt: str) -> Any:
    return SimpleNamespace(format=fmt, data=data)


def test_headers_are_read_without_decoding(bombs: dict[str, bytes]) -> None:
    assert len(bombs["png"]) < 100_000
    assert compressed_dimensions(bombs["png"]) == ("png", 6000, 6000)
    assert compressed_dimensions(bombs["jpeg"]) == ("jpeg", 6000, 6000)
    assert compressed_dimensions(b"GIF89a....") is None
    assert compressed_dimensions(b"\xff\xd8\xff") is None  # truncated JPEG


def test_a_png_bomb_is_refused_without_allocating_it(bombs: dict[str, bytes]) -> None:
    # Finding: a 35 KB PNG of 6000x6000 cost 143 MB at decision time.
    tracemalloc.start()
    try:
        with pytest.raises(
            FrameDecodeError, match=r"6000x6000 = 36000000 pixels, more than observations.max_decode_pixels"
        ):
            decode_image(frame(bombs["png"], "png"))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 5_000_000, f"refusing allocated {peak} bytes"


def test_a_large_jpeg_is_decoded_reduced(bombs: dict[str, bytes]) -> None:
    tracemalloc.start()
    try:
        image = decode_image(frame(bombs["jpeg"], "jpeg"), max_pixels=1_000_000)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert image.shape == (750, 750, 3)  # 1/8 per side: the first reduction under the budget
    assert peak < 20_000_000, f"a reduced decode allocated {peak} bytes"


def test_frames_within_the_budget_decode_at_full_size() -> None:
    small = cv2.imencode(".png", np.full((48, 64, 3), 200, np.uint8))[1].tobytes()
    assert decode_image(frame(small, "png")).shape == (48, 64, 3)


def test_unknown_compressed_formats_are_refused() -> None:
    bmp = cv2.imencode(".bmp", np.zeros((8, 8, 3), np.uint8))[1].tobytes()
    with pytest.raises(FrameDecodeError, match="neither PNG nor JPEG"):
        decode_image(frame(bmp, "bmp"))


# --------------------------------------------------------------------------- freshness


@pytest.mark.parametrize(
    ("ahead_s", "stale"),
    [(0.0, False), (0.04, False), (0.06, True), (0.45, True), (30.0, True)],
)
def test_a_stamp_from_the_future_is_stale_beyond_a_small_tolerance(ahead_s: float, stale: bool) -> None:
    # Finding: a stamp up to max_age_s ahead was clamped to age 0, so the reading stayed
    # "fresh" for almost twice max_age_s.
    from harness_ros.ros.observations import _freshness

    notes: list[str] = []
    fresh = _freshness("clearance", 100.0 + ahead_s, 100.0, 0.5, notes)
    assert fresh.stale is stale
    assert fresh.age_s >= 0.0
    assert any("ahead of the node clock" in note for note in notes) is stale


@pytest.mark.ros
def test_future_stamped_scan_blocks_base_motion(ros_context: Any, ros_env: dict[str, str]) -> None:
    """A real scan publisher whose stamps are 0.4 s ahead: clearance is stale, motion blocked."""
    import signal
    import subprocess
    import sys
    from pathlib import Path

    from support.spinning_node import spinning_node

    from harness_ros.config import ObservationConfig, SafetyConfig
    from harness_ros.hooks import BaseMotionSafetyFilter, HookAction
    from harness_ros.ros.observations import RosObservationSource
    from harness_ros.tools import ToolSpec

    publisher = subprocess.Popen(
        [
            sys.executable,
            str(Path(__file__).parent / "support" / "frame_publisher.py"),
            "--stamp-age",
            "-0.4",
        ],
        env=ros_env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
    )
    try:
        with spinning_node(ros_context, "future_stamp_test") as node:
            from support import frame_publisher as scene

            config = ObservationConfig.model_validate(
                {"clearance": {"scan_topic": scene.SCAN_TOPIC, "max_age_s": 0.5}}
            )
            source = RosObservationSource(node, config, footprint_radius_m=0.3, views=())
            assert source.wait_for_messages(20.0), "no scan arrived"
            clearance = source.clearance()
            assert clearance is not None and clearance.stale
            spec = ToolSpec(name="drive", description="Drive.", base_motion=True)
            decision = BaseMotionSafetyFilter(SafetyConfig(), source.clearance).before_execution(
                spec, {}, None
            )
            assert decision.action is HookAction.BLOCK
            assert "stale" in decision.reason
            source.destroy()
    finally:
        publisher.send_signal(signal.SIGINT)
        try:
            publisher.wait(timeout=10)
        except subprocess.TimeoutExpired:
            publisher.kill()
            publisher.wait(timeout=5)
