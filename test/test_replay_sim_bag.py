"""A bag recorded from the project's own sim by ``harness-ros demo`` replays into the same lessons.

test/data/sim_fetch was recorded with config/sim.yaml plus throttled sensors (images at
0.02 Hz, scan at 0.2 Hz) so it stays under 1 MB; see test/data/README.md.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parent / "data"
BAG = DATA / "sim_fetch"
EXPECT = DATA / "sim_fetch.expect.yaml"
HARNESS_ROS = str(Path(sys.executable).with_name("harness-ros"))


def replay(*extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            HARNESS_ROS,
            "replay",
            str(BAG),
            "--mode",
            "consolidate",
            "--model",
            "harness_demo/scripted",
            *extra,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_sim_bag_replays_into_the_expected_lessons() -> None:
    done = replay("--expect", str(EXPECT))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 task(s)" in done.stdout
    assert "pick_object/failure" in done.stdout


def test_a_changed_expectation_fails_the_regression_check(tmp_path: Path) -> None:
    changed = tmp_path / "expect.yaml"
    changed.write_text(
        EXPECT.read_text(encoding="utf-8").replace(
            "call navigate_to with the object itself", "retry at once"
        ),
        encoding="utf-8",
    )
    done = replay("--expect", str(changed))
    assert done.returncode == 1
    assert "retry at once" in done.stdout + done.stderr


@pytest.mark.ros
def test_sim_bag_holds_real_sim_frames_and_the_trajectory() -> None:
    from rclpy.serialization import deserialize_message
    from sensor_msgs.msg import Image

    from harness_ros.ros.bag.reader import iter_events, iter_messages, open_bag

    bag = open_bag(BAG)
    frames = [m for m in iter_messages(bag, ["/sim/front/image_raw"])]
    assert frames, "the recording keeps (throttled) camera frames"
    image = deserialize_message(frames[0].data, Image)
    assert (image.width, image.height, image.encoding) == (320, 240, "rgb8")
    assert image.header.stamp.sec > 0
    kinds = [event["type"] for event in iter_events(bag)]
    assert kinds.count("done") == 2
    assert "verdict" in kinds
