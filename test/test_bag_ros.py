"""Recording with a real node, and live replay into another process (ROS over DDS)."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from support.waiting import wait_for as _wait_for

pytestmark = pytest.mark.ros

REPO = Path(__file__).resolve().parents[1]
DATA = Path(__file__).resolve().parent / "data"
LISTENER = Path(__file__).resolve().parent / "support" / "bag_stamp_listener.py"


def test_recorder_writes_topics_events_and_instructions_readable_back(
    ros_context: Any, tmp_path: Path
) -> None:
    import rclpy
    from rclpy.executors import MultiThreadedExecutor
    from rclpy.serialization import deserialize_message
    from sensor_msgs.msg import Image, LaserScan
    from std_msgs.msg import String

    from harness_ros.events import EventType, HarnessEvent
    from harness_ros.ros.bag import iter_events, iter_messages, open_bag
    from harness_ros.ros.bag.recorder import BagRecorder
    from harness_ros.ros.node import HarnessNode

    node = HarnessNode(node_name="harness", context=ros_context)
    sender = rclpy.create_node("sensor_sender", context=ros_context)
    executor = MultiThreadedExecutor(context=ros_context)
    executor.add_node(node)
    executor.add_node(sender)
    spinner = threading.Thread(target=executor.spin, daemon=True)
    spinner.start()
    bag_path = tmp_path / "recorded"
    recorder = BagRecorder(
        node,
        bag_path,
        topics={"/cam/image_raw": "sensor_msgs/msg/Image", "/scan": "sensor_msgs/msg/LaserScan"},
        image_max_hz=1000.0,
    )
    try:
        image_pub = sender.create_publisher(Image, "/cam/image_raw", 10)
        scan_pub = sender.create_publisher(LaserScan, "/scan", 10)
        instruction_pub = sender.create_publisher(String, "/harness/instruction", 10)
        pubs = (image_pub, scan_pub, instruction_pub)
        assert _wait_for(lambda: all(p.get_subscription_count() > 0 for p in pubs), 15.0)
        sent_images: list[Image] = []
        for n in range(5):
            image = Image(height=2, width=3, encoding="mono8", step=3, data=bytes(range(n, n + 6)))
            image.header.stamp.sec, image.header.frame_id = 100 + n, "cam"
            expected = recorder.written + 1
            image_pub.publish(image)
            sent_images.append(image)
            assert _wait_for(lambda e=expected: recorder.written >= e, 10.0)
        scan = LaserScan(range_min=0.1, range_max=5.0, ranges=[1.0, 2.0, 3.5])
        expected = recorder.written + 1
        scan_pub.publish(scan)
        assert _wait_for(lambda: recorder.written >= expected, 10.0)
        instruction = json.dumps({"instruction": "pick the cup", "task_id": "t-rec"})
        expected = recorder.written + 1
        instruction_pub.publish(String(data=instruction))
        assert _wait_for(lambda: recorder.written >= expected, 10.0)
        events = [
            HarnessEvent(EventType.TASK_STARTED, "t-rec", data={"instruction": "pick the cup", "tools": []}),
            HarnessEvent(EventType.DONE, "t-rec", data={"status": "completed", "report": "done"}),
        ]
        for event in events:
            node.publish_event(event)
    finally:
        recorder.close()
        executor.shutdown()
        sender.destroy_node()
        node.destroy_node()
    assert recorder.dropped == 0

    bag = open_bag(bag_path)  # standard rosbag2 with metadata.yaml, read by rosbags
    assert (bag_path / "metadata.yaml").is_file()
    assert "type_description_hash" in (bag_path / "metadata.yaml").read_text(encoding="utf-8")
    assert bag.topics["/cam/image_raw"].count == 5
    images = [deserialize_message(m.data, Image) for m in iter_messages(bag, ["/cam/image_raw"])]
    assert [(i.header.stamp.sec, i.header.frame_id, bytes(i.data)) for i in images] == [
        (i.header.stamp.sec, i.header.frame_id, bytes(i.data)) for i in sent_images
    ]
    (scan_msg,) = [deserialize_message(m.data, LaserScan) for m in iter_messages(bag, ["/scan"])]
    assert list(scan_msg.ranges) == [1.0, 2.0, 3.5] and scan_msg.range_max == 5.0
    (recorded_instruction,) = iter_messages(bag, ["/harness/instruction"])
    assert deserialize_message(recorded_instruction.data, String).data == instruction
    assert [e["type"] for e in iter_events(bag)] == ["task_started", "done"]
    assert list(iter_events(bag))[1]["data"] == {"status": "completed", "report": "done"}
    # Retention recognises what the recorder wrote as its own (marker, metadata, storage).
    from harness_ros.retention import prune_recordings

    assert prune_recordings(bag_path, 0) == [bag_path]


def test_recorder_throttles_image_topics() -> None:
    from harness_ros.ros.bag.recorder import _Throttle

    throttle = _Throttle(2.0)
    admitted = [t for t in range(0, 2_000_000_000, 100_000_000) if throttle.admit(t)]
    assert admitted == [0, 500_000_000, 1_000_000_000, 1_500_000_000]
    assert throttle.admit(0)  # the clock jumped back (sim reset): recording restarts


def test_live_replay_delivers_recorded_frames_with_original_stamps(
    ros_env: dict[str, str], tmp_path: Path
) -> None:
    from rosbags.typesys import Stores, get_typestore

    from harness_ros.ros.bag import iter_messages, open_bag

    bag = open_bag(DATA / "replay_pick")
    typestore = get_typestore(Stores.ROS2_KILTED)
    recorded = [
        typestore.deserialize_cdr(m.data, "sensor_msgs/msg/Image").header.stamp
        for m in iter_messages(bag, ["/front_camera/image_raw"])
    ]
    stamps = [[s.sec, s.nanosec] for s in recorded]
    (instruction_msg, *_) = iter_messages(bag, ["/harness/instruction"])
    instruction = typestore.deserialize_cdr(instruction_msg.data, "std_msgs/msg/String").data

    listener = subprocess.Popen(
        [
            sys.executable,
            str(LISTENER),
            "/front_camera/image_raw",
            "/harness/instruction",
            str(len(stamps)),
            "40",
        ],
        env=ros_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert listener.stdout is not None
        assert json.loads(listener.stdout.readline()) == {"ready": True}
        replay = subprocess.run(
            [sys.executable, "-m", "harness_ros.cli", "replay", str(DATA / "replay_pick"), "--mode", "live",
             "--rate", "4", "--wait-subscribers", "20"],
            env=ros_env, cwd=REPO, capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        assert replay.returncode == 0, replay.stderr
        assert "no subscriber" not in replay.stderr
        out, err = listener.communicate(timeout=45)
    finally:
        if listener.poll() is None:
            listener.kill()
            listener.communicate()
    assert listener.returncode == 0, err
    lines = [json.loads(line) for line in out.splitlines() if line.strip()]
    assert [line["image"] for line in lines if "image" in line] == stamps
    assert [line["instruction"] for line in lines if "instruction" in line] == [instruction]
    (clock,) = [line["clock"] for line in lines if "clock" in line]
    assert divmod(bag.start_ns, 1_000_000_000)[0] <= clock[0] <= divmod(bag.end_ns, 1_000_000_000)[0]
    assert "published: /front_camera/image_raw 6" in replay.stdout


def test_live_replay_skips_a_corrupt_instruction_and_sends_the_rest(
    ros_env: dict[str, str], tmp_path: Path
) -> None:
    sys.path.insert(0, str(DATA))
    import make_bags

    started = {
        "type": "task_started",
        "task_id": "t1",
        "turn": None,
        "time": 0.0,
        "data": {"instruction": "Pick up the red cup.", "tools": []},
    }
    bag = tmp_path / "corrupt_instruction"
    # A string length past the end of the message: not a CDR std_msgs/String.
    make_bags.write_bag(bag, [started], frames=2, raw_instructions={0: b"\x00\x01\x00\x00\xff\xff\xff\x7fab"})
    listener = subprocess.Popen(
        [sys.executable, str(LISTENER), "/front_camera/image_raw", "/harness/instruction", "2", "40"],
        env=ros_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert listener.stdout is not None
        assert json.loads(listener.stdout.readline()) == {"ready": True}
        replay = subprocess.run(
            [sys.executable, "-m", "harness_ros.cli", "replay", str(bag), "--mode", "live",
             "--rate", "4", "--wait-subscribers", "20"],
            env=ros_env, cwd=REPO, capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        assert replay.returncode == 0, replay.stderr
        out, err = listener.communicate(timeout=45)
    finally:
        if listener.poll() is None:
            listener.kill()
            listener.communicate()
    assert listener.returncode == 0, err
    lines = [json.loads(line) for line in out.splitlines() if line.strip()]
    sent = json.dumps({"instruction": "Pick up the red cup.", "task_id": "t1"})
    assert [line["instruction"] for line in lines if "instruction" in line] == [sent]
    (skipped,) = [line for line in replay.stderr.splitlines() if line.startswith("skipped ")]
    assert skipped.startswith("skipped /harness/instruction message 0 (recorded at 1700000000.")
    assert "not a CDR std_msgs/msg/String" in skipped
    assert "instructions re-sent: 1;" in replay.stdout and "1 message(s) skipped" in replay.stdout


def test_recorded_topics_follow_the_observation_config() -> None:
    from harness_ros.config import config_from_dict
    from harness_ros.ros.bag.recorder import recorded_topics

    config = config_from_dict(
        {
            "observations": {
                "views": {
                    "front": {"topic": "/front/image_raw"},
                    "wrist": {"topic": "/wrist/c", "compressed": True},
                },
                "depth": {"topic": "/depth"},
                "clearance": {"scan_topic": "/scan"},
            }
        },
        base_dir=Path.cwd(),
        origin="test",
    )
    assert recorded_topics(config) == {
        "/front/image_raw": "sensor_msgs/msg/Image",
        "/wrist/c": "sensor_msgs/msg/CompressedImage",
        "/depth": "sensor_msgs/msg/Image",
        "/scan": "sensor_msgs/msg/LaserScan",
    }
