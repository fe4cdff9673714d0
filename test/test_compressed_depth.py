"""Depth over image_transport's compressedDepth (a 12-byte header and a 16-bit PNG).

The pure decoding against frames built like the plugin builds them
(test/support/frame_publisher.py's ``compressed_depth``), then RosObservationSource
reading the same frames from a publisher process over DDS.
"""

from __future__ import annotations

import math
import signal
import struct
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import cv2
import numpy as np
import pytest
from support import frame_publisher as scene

from harness_ros.observation.pipeline import (
    FrameDecodeError,
    decode_compressed_depth,
    depth_to_metres,
    depth_to_millimetres,
    summarize_depth_mm,
)

PUBLISHER = Path(__file__).resolve().parent / "support" / "frame_publisher.py"


def packed(depth: np.ndarray, encoding: str, fmt: str | None = None) -> SimpleNamespace:
    data = scene.compressed_depth(depth, encoding)
    return SimpleNamespace(format=fmt or f"{encoding}; compressedDepth png", data=data)


def test_16uc1_compressed_depth_gives_the_same_millimetres_as_the_raw_image() -> None:
    raw = scene.depth_mm()
    msg = packed(raw, "16UC1")
    assert len(msg.data) < raw.nbytes // 10  # what the transport is for
    np.testing.assert_array_equal(depth_to_millimetres(msg), raw)
    regions = summarize_depth_mm(depth_to_millimetres(msg))
    assert regions[0].nearest_m == scene.BOX_MM / 1000 and regions[4].median_m == scene.PLANE_MM / 1000
    assert regions[8].nearest_m is None  # bottom-right: all zeros, no reading
    # the older plugin wrote only the encoding and "compressedDepth"
    np.testing.assert_array_equal(depth_to_millimetres(packed(raw, "16UC1", "16UC1; compressedDepth")), raw)


def test_32fc1_compressed_depth_is_unquantised_to_metres() -> None:
    depth = np.full((48, 64), 2.0, dtype=np.float32)
    depth[:10, :10] = 0.5
    depth[40:, 50:] = np.nan  # no reading
    depth[0, 63] = 12.0  # beyond the publisher's depth_max: dropped as no reading
    metres = depth_to_metres(packed(depth, "32FC1"))
    assert metres.dtype == np.float32
    # quantised inverse depth: the error grows with d^2 / (q (q + 1)); under 1 mm at 2 m
    assert np.nanmax(np.abs(metres[10:40, 10:50] - 2.0)) < 0.001
    assert np.nanmax(np.abs(metres[:10, :10] - 0.5)) < 0.001
    assert np.isnan(metres[40:, 50:]).all() and math.isnan(metres[0, 63])
    assert depth_to_millimetres(packed(depth, "32FC1"))[20, 20] == 2000


def test_compressed_depth_that_cannot_be_read_is_refused_with_the_reason() -> None:
    raw = scene.depth_mm()
    with pytest.raises(FrameDecodeError, match="RVL is not supported"):
        decode_compressed_depth(packed(raw, "16UC1", "16UC1; compressedDepth rvl"))
    with pytest.raises(FrameDecodeError, match="encoding 'rgb8' is not supported"):
        decode_compressed_depth(packed(raw, "16UC1", "rgb8; compressedDepth png"))
    with pytest.raises(FrameDecodeError, match="holds no PNG"):
        decode_compressed_depth(SimpleNamespace(format="16UC1; compressedDepth png", data=b"\0" * 40))
    # a PNG header declaring 6000x6000 is refused before anything is decoded
    ihdr = b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + b"IHDR" + struct.pack(">II", 6000, 6000)
    huge = SimpleNamespace(
        format="16UC1; compressedDepth png", data=struct.pack("<iff", 0, 0, 0) + ihdr + b"\0" * 9
    )
    with pytest.raises(FrameDecodeError, match=r"6000x6000 pixels.*refused without decoding"):
        decode_compressed_depth(huge)
    eight_bit = SimpleNamespace(
        format="16UC1; compressedDepth png", data=scene.compressed_depth(raw, "16UC1")
    )
    eight_bit.data = eight_bit.data[:12] + cv2.imencode(".png", (raw // 256).astype(np.uint8))[1].tobytes()
    with pytest.raises(FrameDecodeError, match="not a one-channel 16-bit PNG"):
        decode_compressed_depth(eight_bit)


@pytest.mark.ros
def test_source_reads_compressed_depth_from_a_publisher_process(
    ros_context: Any, ros_env: dict[str, str]
) -> None:
    pytest.importorskip("rclpy")
    from support.spinning_node import spinning_node

    from harness_ros.config import ObservationConfig
    from harness_ros.ros.observations import RosObservationSource

    config = ObservationConfig.model_validate(
        {"depth": {"topic": scene.COMPRESSED_DEPTH_TOPIC, "compressed": True, "max_age_s": 5.0}}
    )
    publisher = subprocess.Popen(
        [sys.executable, str(PUBLISHER), "--rate", "5"], env=ros_env, stdout=subprocess.DEVNULL
    )
    try:
        with spinning_node(ros_context, "compressed_depth_test") as node:
            source = RosObservationSource(node, config, footprint_radius_m=0.3, views=())
            assert source.wait_for_messages(20.0), f"no compressedDepth frame: {source.stats()}"
            depth = source.observe().depth
            assert depth is not None and not depth.stale
            regions = {region.name: region for region in depth.regions}
            assert regions["top-left"].nearest_m == scene.BOX_MM / 1000
            assert regions["middle-centre"].median_m == scene.PLANE_MM / 1000
            assert regions["bottom-right"].nearest_m is None
            source.destroy()
    finally:
        publisher.send_signal(signal.SIGINT)
        try:
            publisher.wait(timeout=10)
        except subprocess.TimeoutExpired:
            publisher.kill()
            publisher.wait(timeout=5)
