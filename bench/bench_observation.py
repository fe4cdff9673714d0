"""Observation build: three VGA rgb8 views + a VGA 16UC1 depth image + a scan -> the model message.

    .venv/bin/python bench/bench_observation.py [--quick] [--repeat N]

Three pipelines, measured in the same run on the same messages (real sensor_msgs types):

ours   what RosObservationSource does at decision time: decode the stored message,
       fit_to_budget (320x240 default), JPEG, depth summary in metres (3x3 regions, from
       the 16UC1 millimetres),
       four-sector clearance, then the user message (base64 data URLs) the model gets.
naive  what the surveyed ROS 2 agent projects do: decode every message in the
       subscription callback (counted once per view here, which flatters it: at 30 Hz
       it decodes 30 frames for every observation), full-resolution PNG + base64 per
       view, depth normalised to an 8-bit PNG, the scan ranges as JSON text.
floor  only cv2.resize + cv2.imencode(.jpg) of the three views, on arrays already
       decoded: the least any budgeted pipeline can do.

Headlines: ``naive/ours``, ``ours/floor`` (time per observation) and ``payload naive/ours``.
"""

from __future__ import annotations

import base64
import json
import math
import sys
from typing import Any

import cv2
import numpy as np
from _common import base_parser, fmt_ratio, headline, machine_line, median_ms, print_table

from harness_ros.config import ViewTopic
from harness_ros.context.observation import observation_message
from harness_ros.observation.contracts import Clearance, DepthSummary, Observation, ViewImage
from harness_ros.observation.pipeline import (
    clearance_from_scan,
    decode_image,
    depth_to_metres,
    depth_to_millimetres,
    encode_jpeg,
    fit_to_budget,
    summarize_depth_mm,
)

WIDTH, HEIGHT = 640, 480
VIEWS = ("front", "torso", "wrist")
BUDGET = ViewTopic(topic="/unused").pixel_budget  # the default pixel budget of a view
QUALITY = 80  # ObservationConfig.jpeg_quality default
FOOTPRINT_M = 0.3


def scene(seed: int) -> np.ndarray:
    """A camera-like rgb8 frame: lit gradient, a few objects, sensor noise (PNG and JPEG
    sizes depend on content, so a solid colour would flatter both)."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:HEIGHT, 0:WIDTH].astype(np.float32)
    img = np.stack([80 + 100 * x / WIDTH, 90 + 80 * y / HEIGHT, 120 + 40 * (x + y) / (WIDTH + HEIGHT)], -1)
    for _ in range(12):
        colour = rng.integers(0, 255, 3).tolist()
        centre = (int(rng.integers(0, WIDTH)), int(rng.integers(0, HEIGHT)))
        if rng.random() < 0.5:
            cv2.circle(img, centre, int(rng.integers(15, 80)), colour, -1)
        else:
            corner = (centre[0] + int(rng.integers(20, 150)), centre[1] + int(rng.integers(20, 120)))
            cv2.rectangle(img, centre, corner, colour, -1)
    img += rng.normal(0.0, 3.0, img.shape).astype(np.float32)
    return np.clip(img, 0, 255).astype(np.uint8)


def depth_scene() -> np.ndarray:
    """16UC1 millimetres: a floor ramp, a box, invalid (0) patches, a little noise."""
    rng = np.random.default_rng(7)
    rows = np.linspace(4000, 900, HEIGHT, dtype=np.float32)[:, None]
    depth = np.repeat(rows, WIDTH, axis=1) + rng.normal(0, 4, (HEIGHT, WIDTH)).astype(np.float32)
    depth[150:300, 200:380] = 650
    depth[400:, 500:] = 0
    depth[rng.random((HEIGHT, WIDTH)) < 0.03] = 0
    return np.clip(depth, 0, 65535).astype(np.uint16)


def build_messages() -> tuple[dict[str, Any], Any, Any]:
    from sensor_msgs.msg import Image, LaserScan

    views = {}
    for index, name in enumerate(VIEWS):
        msg = Image(height=HEIGHT, width=WIDTH, encoding="rgb8", step=WIDTH * 3)
        msg.header.stamp.sec = 100
        msg.data = scene(index).tobytes()
        views[name] = msg
    depth = Image(height=HEIGHT, width=WIDTH, encoding="16UC1", step=WIDTH * 2)
    depth.header.stamp.sec = 100
    depth.data = depth_scene().tobytes()
    increment = 2 * math.pi / 360
    ranges = [1.0 + 0.5 * math.sin(i * increment * 3) for i in range(360)]
    scan = LaserScan(
        angle_min=-math.pi,
        angle_max=-math.pi + increment * 359,
        angle_increment=increment,
        range_min=0.1,
        range_max=10.0,
        ranges=ranges,
    )
    scan.header.stamp.sec = 100
    return views, depth, scan


# --------------------------------------------------------------------------- pipelines


def ours_views(views: dict[str, Any], now: float = 100.2) -> tuple[ViewImage, ...]:
    """The camera part of ours: decode, budget, JPEG."""
    images = []
    for name, msg in views.items():
        image = fit_to_budget(decode_image(msg), BUDGET)
        height, width = image.shape[:2]
        images.append(ViewImage(name, encode_jpeg(image, QUALITY), width, height, 100.0, now - 100.0, False))
    return tuple(images)


def ours_views_message(views: dict[str, Any]) -> dict[str, Any]:
    """Only the views, as the model message: what the floor does plus decoding and base64."""
    return observation_message(Observation(time=100.2, views=ours_views(views)))


def ours(views: dict[str, Any], depth: Any, scan: Any) -> dict[str, Any]:
    """RosObservationSource's decision-time build, then the model message."""
    now = 100.2
    images = ours_views(views, now)
    regions = summarize_depth_mm(depth_to_millimetres(depth))
    values = clearance_from_scan(
        scan.ranges,
        scan.angle_min,
        scan.angle_increment,
        scan.range_min,
        scan.range_max,
        footprint_radius_m=FOOTPRINT_M,
    )
    observation = Observation(
        time=now,
        views=images,
        depth=DepthSummary(regions, 100.0, now - 100.0, False),
        clearance=Clearance(**values, stamp=100.0, age_s=now - 100.0, stale=False),
    )
    return observation_message(observation)


def depth_float_median(depth: Any) -> list[tuple[float, float] | None]:
    """The depth summary before issue #8's fix: np.median over the valid float32 metres of
    each region (kept here as the in-run reference for the millimetre histogram)."""
    metres = depth_to_metres(depth)
    height, width = metres.shape
    rows, cols = np.linspace(0, height, 4).round().astype(int), np.linspace(0, width, 4).round().astype(int)
    out: list[tuple[float, float] | None] = []
    for r in range(3):
        for c in range(3):
            cell = metres[rows[r] : rows[r + 1], cols[c] : cols[c + 1]]
            valid = cell[np.isfinite(cell)]
            out.append(
                (round(float(valid.min()), 3), round(float(np.median(valid)), 3)) if valid.size else None
            )
    return out


def _naive_decode(msg: Any) -> np.ndarray:
    # cv_bridge's imgmsg_to_cv2(msg, "bgr8"), as run in the subscription callback
    rgb = np.frombuffer(msg.data, dtype=np.uint8).reshape(msg.height, msg.width, 3)
    return cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR)


def naive(views: dict[str, Any], depth: Any, scan: Any) -> dict[str, Any]:
    decoded = {name: _naive_decode(msg) for name, msg in views.items()}  # "in the callback"
    content: list[dict[str, Any]] = [{"type": "text", "text": "Current camera images and sensors:"}]
    for name, image in decoded.items():
        ok, png = cv2.imencode(".png", image)
        assert ok
        encoded = base64.b64encode(png.tobytes()).decode("ascii")
        content.append({"type": "text", "text": f"Camera {name}:"})
        content.append({"type": "image_url", "image_url": {"url": f"data:image/png;base64,{encoded}"}})
    raw = np.frombuffer(depth.data, dtype=np.uint16).reshape(depth.height, depth.width)
    depth8 = cv2.normalize(raw, None, 0, 255, cv2.NORM_MINMAX, dtype=cv2.CV_8U)  # metres are lost
    ok, png = cv2.imencode(".png", depth8)
    assert ok
    encoded = base64.b64encode(png.tobytes()).decode("ascii")
    content.append({"type": "image_url", "image_url": {"url": f"data:image/png;base64,{encoded}"}})
    content.append({"type": "text", "text": "LaserScan ranges: " + json.dumps(list(scan.ranges))})
    return {"role": "user", "content": content}


def floor(decoded: list[np.ndarray]) -> list[bytes]:
    side = (
        int(math.sqrt(BUDGET / (WIDTH * HEIGHT)) * WIDTH),
        int(math.sqrt(BUDGET / (WIDTH * HEIGHT)) * HEIGHT),
    )
    out = []
    for image in decoded:
        small = cv2.resize(image, side, interpolation=cv2.INTER_AREA)
        ok, jpeg = cv2.imencode(".jpg", small, [cv2.IMWRITE_JPEG_QUALITY, QUALITY])
        assert ok
        out.append(jpeg.tobytes())
    return out


def payload_bytes(message: dict[str, Any]) -> int:
    """Bytes of the message as it goes over the wire (JSON)."""
    return len(json.dumps(message).encode("utf-8"))


def image_bytes(message: dict[str, Any]) -> int:
    """Bytes of the image data URLs alone."""
    return sum(len(part["image_url"]["url"]) for part in message["content"] if part["type"] == "image_url")


def main(argv: list[str] | None = None) -> int:
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, help="timed repetitions per pipeline (default 200, quick 40)")
    args = parser.parse_args(argv)
    repeat = args.repeat or (40 if args.quick else 200)
    cv2.setNumThreads(1)  # one core per pipeline: the harness shares the robot's CPU
    views, depth, scan = build_messages()
    decoded = [_naive_decode(msg) for msg in views.values()]

    print(__doc__.splitlines()[0])
    print(machine_line())
    print(f"{repeat} timed repetitions after 3 warm-up calls, OpenCV threads: 1, pixel budget {BUDGET}\n")
    # interleave the pipelines round by round so drift in machine load hits all of them alike
    results: dict[str, list[tuple[float, float]]] = {
        "ours": [], "naive": [], "floor": [], "views": [], "depth_mm": [], "depth_float": []
    }  # fmt: skip
    rounds = 4
    for _ in range(rounds):
        results["naive"].append(median_ms(lambda: naive(views, depth, scan), repeat=repeat // rounds))
        results["ours"].append(median_ms(lambda: ours(views, depth, scan), repeat=repeat // rounds))
        results["floor"].append(median_ms(lambda: floor(decoded), repeat=repeat // rounds))
        results["views"].append(median_ms(lambda: ours_views_message(views), repeat=repeat // rounds))
        results["depth_mm"].append(
            median_ms(lambda: summarize_depth_mm(depth_to_millimetres(depth)), repeat=repeat // rounds)
        )
        results["depth_float"].append(median_ms(lambda: depth_float_median(depth), repeat=repeat // rounds))
    timing = {name: sorted(r)[len(r) // 2] for name, r in results.items()}  # median of round medians

    ours_msg, naive_msg = ours(views, depth, scan), naive(views, depth, scan)
    floor_bytes = sum(len(base64.b64encode(j)) for j in floor(decoded))
    rows = [
        ("naive (PNG, full res)", f"{timing['naive'][0]:.2f}", f"{timing['naive'][1]:.2f}",
         payload_bytes(naive_msg), image_bytes(naive_msg), "no (8-bit PNG)"),
        ("ours (budget + JPEG)", f"{timing['ours'][0]:.2f}", f"{timing['ours'][1]:.2f}",
         payload_bytes(ours_msg), image_bytes(ours_msg), "yes (3x3 regions)"),
        ("ours, views only", f"{timing['views'][0]:.2f}", f"{timing['views'][1]:.2f}",
         payload_bytes(ours_views_message(views)), image_bytes(ours_views_message(views)), "-"),
        ("floor (resize + JPEG)", f"{timing['floor'][0]:.2f}", f"{timing['floor'][1]:.2f}",
         "-", floor_bytes, "-"),
    ]  # fmt: skip
    print_table(("pipeline", "ms/obs median", "p90", "payload B", "image B", "depth in metres"), rows)
    print()
    ours_ms, naive_ms, floor_ms = timing["ours"][0], timing["naive"][0], timing["floor"][0]
    headline("naive/ours", fmt_ratio(naive_ms, ours_ms), ">= 3x", naive_ms / ours_ms >= 3.0)
    headline("ours/floor", fmt_ratio(ours_ms, floor_ms), "<= 1.5x", ours_ms / floor_ms <= 1.5)
    # The floor has no depth or clearance work; the like-for-like comparison is the views alone.
    views_ms = timing["views"][0]
    print(f"ours(views only)/floor: {fmt_ratio(views_ms, floor_ms)}")
    print(f"  depth summary + clearance + text: {ours_ms - views_ms:.2f} ms of the {ours_ms:.2f} ms")
    mm_ms, float_ms = timing["depth_mm"][0], timing["depth_float"][0]
    print(
        f"depth summary alone: {mm_ms:.2f} ms (mm histogram) vs {float_ms:.2f} ms "
        f"(np.median on float metres, before): {fmt_ratio(float_ms, mm_ms)} faster"
    )
    payload_ratio = payload_bytes(naive_msg) / payload_bytes(ours_msg)
    headline("payload naive/ours", f"{payload_ratio:.1f}x", ">= 10x", payload_ratio >= 10.0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
