"""Publish a synthetic robot scene for observation tests (run as its own process).

Three 640x480 rgb8 camera views, a JPEG CompressedImage of the front view, a
16UC1 depth image (raw, and as the compressedDepth transport sends it), camera_info of
the front view and of the depth camera, a LaserScan and four Range readings, all at
``--rate`` Hz with header stamps ``--stamp-age`` seconds behind the publisher's clock. The scene constants are
importable without ROS so tests can assert against them.

    python test/support/frame_publisher.py [--rate 10] [--stamp-age 5]
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Sequence
from typing import Any

import numpy as np

WIDTH, HEIGHT = 640, 480
VIEW_TOPICS: dict[str, str] = {
    "front": "/cam/front/image",
    "torso": "/cam/torso/image",
    "wrist": "/cam/wrist/image",
}
VIEW_RGB: dict[str, tuple[int, int, int]] = {
    "front": (200, 30, 30),
    "torso": (30, 200, 30),
    "wrist": (30, 30, 200),
}
COMPRESSED_TOPIC = "/cam/front/compressed"
DEPTH_TOPIC = "/cam/depth/image"
COMPRESSED_DEPTH_TOPIC = "/cam/depth/image/compressedDepth"
CAMERA_INFO_TOPICS: dict[str, str] = {"front": "/cam/front/camera_info", "depth": "/cam/depth/camera_info"}
FOCAL_PX: dict[str, float] = {"front": 500.0, "depth": 250.0}
"""Both 640x480 and centred; the depth camera sees twice the angle of the front view, so
the front view's thirds are the centre half of the depth image (the box is outside it)."""
SCAN_TOPIC = "/scan"

PLANE_MM = 1234
BOX_MM = 500
"""A plane at 1.234 m; a box at 0.5 m inside the top-left region; the bottom-right region is
all zeros (invalid) and the centre has a patch of zeros."""

SCAN_RANGE_MIN, SCAN_RANGE_MAX = 0.1, 10.0
SCAN_OBSTACLES_M: dict[float, float] = {0.0: 1.5, 90.0: 0.8, -90.0: 2.0}
"""Obstacle distance at each bearing (degrees, REP 103), 10 degrees either side; elsewhere
no return (+inf). A NaN and a below-minimum reading sit in the forward sector."""

RANGE_TOPICS: dict[str, str] = {d: f"/range/{d}" for d in ("forward", "left", "backward", "right")}
RANGE_MIN, RANGE_MAX = 0.02, 4.0
RANGE_VALUES_M: dict[str, float] = {"forward": 1.0, "left": 0.8, "backward": math.inf, "right": 2.0}
"""One sensor_msgs/Range per direction; +inf is REP 117 for "nothing within max_range"."""


def view_rgb(name: str) -> np.ndarray:
    """A solid-colour rgb8 frame of one view."""
    return np.full((HEIGHT, WIDTH, 3), VIEW_RGB[name], dtype=np.uint8)


def depth_mm() -> np.ndarray:
    depth = np.full((HEIGHT, WIDTH), PLANE_MM, dtype=np.uint16)
    depth[20:120, 20:180] = BOX_MM  # inside top-left (rows 0-160, columns 0-213)
    depth[320:, 427:] = 0  # bottom-right: no valid pixel
    depth[200:280, 280:360] = 0  # centre: some invalid pixels
    return depth


def compressed_depth(
    depth: np.ndarray, encoding: str, *, quantization: float = 100.0, max_m: float = 10.0
) -> bytes:
    """``data`` of a compressedDepth CompressedImage (image_transport's format): a 12-byte
    header (format, two float32 quantisation parameters), then a 16-bit PNG. 16UC1 is sent
    as is; 32FC1 metres as quantised inverse depth ``a / d + b`` (0 = no reading)."""
    import struct

    import cv2

    if encoding == "16UC1":
        header, pixels = struct.pack("<iff", 0, 0.0, 0.0), depth.astype(np.uint16)
    else:
        quant_a = np.float32(quantization * (quantization + 1.0))
        quant_b = np.float32(1.0 - quant_a / max_m)
        with np.errstate(divide="ignore", invalid="ignore"):
            valid = np.isfinite(depth) & (depth > 0) & (depth < max_m)
            inverse = np.where(valid, quant_a / depth + quant_b, 0.0)
        header, pixels = struct.pack("<iff", 0, quant_a, quant_b), inverse.astype(np.uint16)
    ok, png = cv2.imencode(".png", pixels)
    assert ok
    return header + png.tobytes()


def scan_ranges() -> tuple[float, float, list[float]]:
    """(angle_min, angle_increment, ranges) of a 360-beam scan."""
    angle_min, increment = -math.pi, 2 * math.pi / 360
    ranges = [math.inf] * 360
    for i in range(360):
        bearing = math.degrees(angle_min + i * increment)
        for centre, distance in SCAN_OBSTACLES_M.items():
            if abs(bearing - centre) < 10.0:
                ranges[i] = distance
    ranges[180] = math.nan  # bearing 0
    ranges[185] = 0.05  # below range_min: ignored
    return angle_min, increment, ranges


def _build_messages() -> list[tuple[Any, str]]:
    """(message, topic) pairs; only the stamps change between publications."""
    import cv2
    from sensor_msgs.msg import CameraInfo, CompressedImage, Image, LaserScan, Range

    messages: list[tuple[Any, str]] = []
    for name, topic in VIEW_TOPICS.items():
        msg = Image(height=HEIGHT, width=WIDTH, encoding="rgb8", step=WIDTH * 3)
        msg.header.frame_id = f"{name}_camera"
        msg.data = view_rgb(name).tobytes()  # bytes: assigning an ndarray is ~100x slower
        messages.append((msg, topic))
    ok, jpeg = cv2.imencode(".jpg", cv2.cvtColor(view_rgb("front"), cv2.COLOR_RGB2BGR))
    assert ok
    compressed = CompressedImage(format="jpeg")
    compressed.header.frame_id = "front_camera"
    compressed.data = jpeg.tobytes()
    messages.append((compressed, COMPRESSED_TOPIC))
    depth = Image(height=HEIGHT, width=WIDTH, encoding="16UC1", step=WIDTH * 2)
    depth.header.frame_id = "depth_camera"
    depth.data = depth_mm().tobytes()
    messages.append((depth, DEPTH_TOPIC))
    for name, topic in CAMERA_INFO_TOPICS.items():
        info = CameraInfo(width=WIDTH, height=HEIGHT, distortion_model="plumb_bob")
        focal = FOCAL_PX[name]
        info.k = [focal, 0.0, WIDTH / 2, 0.0, focal, HEIGHT / 2, 0.0, 0.0, 1.0]
        info.header.frame_id = f"{name}_camera"
        messages.append((info, topic))
    packed = CompressedImage(format="16UC1; compressedDepth png")
    packed.header.frame_id = "depth_camera"
    packed.data = compressed_depth(depth_mm(), "16UC1")
    messages.append((packed, COMPRESSED_DEPTH_TOPIC))
    angle_min, increment, ranges = scan_ranges()
    scan = LaserScan(
        angle_min=angle_min,
        angle_max=angle_min + increment * 359,
        angle_increment=increment,
        range_min=SCAN_RANGE_MIN,
        range_max=SCAN_RANGE_MAX,
        ranges=ranges,
    )
    scan.header.frame_id = "base_scan"
    messages.append((scan, SCAN_TOPIC))
    for direction, topic in RANGE_TOPICS.items():
        reading = Range(
            radiation_type=Range.ULTRASOUND,
            field_of_view=0.5,
            min_range=RANGE_MIN,
            max_range=RANGE_MAX,
            range=RANGE_VALUES_M[direction],
        )
        reading.header.frame_id = f"range_{direction}"
        messages.append((reading, topic))
    return messages


def publish_until_shutdown(
    node_name: str, messages: Sequence[tuple[Any, str]], *, rate: float, stamp_age_s: float, ready: str
) -> None:
    """Publish ``messages`` at ``rate`` Hz with stamps ``stamp_age_s`` behind the node's
    clock; print ``ready`` once the publishers exist; spin until interrupted."""
    import rclpy
    from rclpy.duration import Duration
    from rclpy.executors import ExternalShutdownException
    from rclpy.qos import qos_profile_sensor_data

    try:
        with rclpy.init():
            node = rclpy.create_node(node_name)
            stamp_age = Duration(nanoseconds=int(stamp_age_s * 1e9))
            outgoing = [
                (msg, node.create_publisher(type(msg), topic, qos_profile_sensor_data))
                for msg, topic in messages
            ]

            def publish() -> None:
                stamp = (node.get_clock().now() - stamp_age).to_msg()
                for msg, publisher in outgoing:
                    msg.header.stamp = stamp
                    publisher.publish(msg)

            node.create_timer(1.0 / rate, publish)
            print(ready, flush=True)
            rclpy.spin(node)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, default=10.0, help="messages per second per topic")
    parser.add_argument("--stamp-age", type=float, default=0.0, help="stamps this many seconds old")
    args = parser.parse_args(argv)
    publish_until_shutdown(
        "frame_publisher",
        _build_messages(),
        rate=args.rate,
        stamp_age_s=args.stamp_age,
        ready="frame_publisher: publishing",
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
