"""Cameras as robots mount them, read by RosObservationSource from a real publisher process
(test/support/camera_rig_publisher.py): a sideways camera turned upright with its depth, a
head camera that pans and tilts, two depth cameras, and a camera whose format text is hostile.
"""

from __future__ import annotations

import math
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest

pytest.importorskip("rclpy")

from support import camera_rig_publisher as rig
from support.spinning_node import spinning_node

from harness_ros.config import ObservationConfig
from harness_ros.context.observation import observation_images, observation_message, observation_summary
from harness_ros.observation.contracts import Observation

pytestmark = pytest.mark.ros

PUBLISHER = Path(__file__).resolve().parent / "support" / "camera_rig_publisher.py"
FIRST_MESSAGES_TIMEOUT_S = 20.0  # discovery plus the publisher's start-up on a loaded machine


@pytest.fixture
def rig_publisher(ros_env: dict[str, str]) -> Iterator[subprocess.Popen[str]]:
    process = subprocess.Popen(
        [sys.executable, str(PUBLISHER), "--rate", "10"],
        env=ros_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    assert "publishing" in line, line + (process.stdout.read() if process.poll() is not None else "")
    yield process
    process.send_signal(signal.SIGINT)
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=5)


def observe(context: Any, observations: dict[str, Any]) -> Observation:
    """One observation of a source over ``observations``, once every topic delivered."""
    from harness_ros.ros.observations import RosObservationSource

    config = ObservationConfig.model_validate(observations)
    with spinning_node(context, "camera_rig_test") as node:
        source = RosObservationSource(node, config, footprint_radius_m=0.3)
        try:
            assert source.wait_for_messages(FIRST_MESSAGES_TIMEOUT_S), source.stats()
            # and the pan/tilt joints' first positions (the lift's message carries neither)
            assert source.wait_for_first_frames(FIRST_MESSAGES_TIMEOUT_S)
            return source.observe()
        finally:
            source.destroy()


def text_of(observation: Observation) -> str:
    message = observation_message(observation)
    return next(part["text"] for part in message["content"] if part["type"] == "text")


def test_a_sideways_camera_is_turned_upright_with_its_depth_regions(
    ros_context: Any, rig_publisher: Any
) -> None:
    observation = observe(
        ros_context,
        {
            "views": {
                "side": {
                    "topic": "/rig/side/image",
                    "rotate": 90,
                    "max_age_s": 5.0,
                    "depth": {"topic": "/rig/side/depth", "max_age_s": 5.0},
                }
            }
        },
    )
    view = observation.view("side")
    assert view is not None and not view.missing
    # 640x480 turned a quarter: taller than wide, within the pixel budget
    assert view.height > view.width and view.width * view.height <= 320 * 240
    image = cv2.imdecode(np.frombuffer(view.jpeg, np.uint8), cv2.IMREAD_COLOR)
    assert image.shape[:2] == (view.height, view.width)
    third = view.width // 3
    right, left = image[:, -third + 4 :].mean(axis=(0, 1)), image[:, : third - 4].mean(axis=(0, 1))
    assert right[2] > 200 and right[1] < 40  # BGR: the red top of the camera is on the right
    assert left == pytest.approx([128, 128, 128], abs=12)
    (depth,) = observation.view_depths
    regions = {region.name: region.nearest_m for region in depth.regions}
    near, far = rig.SIDE_NEAR_MM / 1000, rig.SIDE_FAR_MM / 1000
    for row in ("top", "middle", "bottom"):
        assert regions[f"{row}-right"] == pytest.approx(near)
        assert regions[f"{row}-left"] == pytest.approx(far)
        assert regions[f"{row}-centre"] == pytest.approx(far)
    assert (
        "Depth side nearest/median m per image region, left to right: top 2.0/2.0 2.0/2.0 0.6/0.6;"
        in text_of(observation)
    )


# The rig sends the head's joints and the lift's in two messages per cycle on one topic; with a
# keep-last-1 subscription the lift's message overwrote the head's whenever the executor was
# busy with frames, and the aim was never known (stop 49's flaky failure, 1 run in 3).
def test_the_model_is_told_where_a_panning_and_tilting_camera_looks(
    ros_context: Any, rig_publisher: Any
) -> None:
    head = {
        "topic": "/rig/head/image",
        "max_age_s": 5.0,
        "pan": {"joint": rig.PAN_JOINT, "positive": "left"},
        "tilt": {"joint": rig.TILT_JOINT, "positive": "up"},
    }
    wrist = {"topic": "/rig/wrist/image", "max_age_s": 5.0}
    observation = observe(ros_context, {"views": {"head": head, "wrist": wrist}})
    text = text_of(observation)
    assert "Camera head aim: pan 30 deg left, tilt 20 deg down\n" in text
    assert "Camera wrist" not in text  # a camera that does not move gets no line
    assert observation_summary(observation)["aims"]["head"]["pan_deg"] == pytest.approx(30.0)

    # the sign convention is the config's: a joint whose positive turns right
    head["pan"] = {"joint": rig.PAN_JOINT, "positive": "right", "zero_deg": 10.0}
    head["tilt"] = {"joint": rig.TILT_JOINT, "positive": "down"}
    text = text_of(observe(ros_context, {"views": {"head": head}}))
    assert "Camera head aim: pan 20 deg right, tilt 20 deg up\n" in text


def test_a_joint_that_is_not_published_is_said_to_be_unknown(ros_context: Any, rig_publisher: Any) -> None:
    from harness_ros.ros.observations import RosObservationSource

    config = ObservationConfig.model_validate(
        {
            "views": {
                "head": {
                    "topic": "/rig/head/image",
                    "max_age_s": 5.0,
                    "pan": {"joint": "no_such_joint", "positive": "left"},
                }
            }
        }
    )
    with spinning_node(ros_context, "camera_rig_test") as node:
        source = RosObservationSource(node, config, footprint_radius_m=0.3)
        try:
            assert source.wait_for_messages(FIRST_MESSAGES_TIMEOUT_S), source.stats()
            text = text_of(source.observe())
        finally:
            source.destroy()
    assert "Camera head aim: pan unknown (no 'no_such_joint' on '/joint_states' yet)" in text


def test_two_depth_cameras_are_summarised_per_view(ros_context: Any, rig_publisher: Any) -> None:
    observation = observe(
        ros_context,
        {
            "views": {
                "head": {
                    "topic": "/rig/head/image",
                    "max_age_s": 5.0,
                    "depth": {"topic": "/rig/head/depth", "max_age_s": 5.0, "render_preview": True},
                },
                "wrist": {
                    "topic": "/rig/wrist/image",
                    "max_age_s": 5.0,
                    "depth": {"topic": "/rig/wrist/depth", "max_age_s": 5.0},
                },
            }
        },
    )
    assert [depth.view for depth in observation.view_depths] == ["head", "wrist"]
    head, wrist = observation.view_depths
    assert {region.median_m for region in head.regions} == {rig.HEAD_PLANE_MM / 1000}
    assert {region.median_m for region in wrist.regions} == {rig.WRIST_PLANE_MM / 1000}
    text = text_of(observation)
    assert "Depth head nearest/median m per image region, left to right: top 1.5/1.5 1.5/1.5 1.5/1.5;" in text
    assert (
        "Depth wrist nearest/median m per image region, left to right: top 0.3/0.3 0.3/0.3 0.3/0.3;" in text
    )
    assert [name for name, _ in observation_images(observation)] == ["head", "wrist", "head_depth_preview"]


def test_a_hostile_format_text_reaches_the_model_bounded_on_one_line(
    ros_context: Any, rig_publisher: Any
) -> None:
    observation = observe(
        ros_context,
        {"views": {"cam": {"topic": "/rig/hostile/compressed", "compressed": True, "max_age_s": 5.0}}},
    )
    (note,) = observation.notes
    assert note.startswith("cam: frame on '/rig/hostile/compressed' unusable: ")
    assert len(note) < 400, len(note)
    assert "more characters)" in note
    text = text_of(observation)
    assert len(text) < 1000
    # the format's own line breaks never start a line of their own
    assert [line for line in text.splitlines() if line.startswith("Note:")] == [f"Note: {note}"]
    assert "\n" not in note and "Note: the operator" not in text.replace(f"Note: {note}", "")


STRETCH_LIKE = {
    "views": {
        "head": {
            "topic": "/camera/color/image_raw",
            "camera_info": "/camera/color/camera_info",
            "rotate": 90,
            "pan": {"joint": "joint_head_pan", "positive": "left"},
            "tilt": {"joint": "joint_head_tilt", "positive": "up"},
            "depth": {"topic": "/camera/depth", "camera_info": "/camera/depth_info", "qos": "reliable"},
        },
        "gripper": {"topic": "/gripper/image", "depth": {"topic": "/gripper/depth", "compressed": True}},
    }
}


def test_the_graph_check_and_check_know_each_views_depth_and_joints() -> None:
    from harness_ros.commands.check import _topic_lines
    from harness_ros.config import HarnessConfig
    from harness_ros.ros.graph_check import expected_topics, reliable_topics

    config = HarnessConfig.model_validate({"observations": STRETCH_LIKE})
    topics = expected_topics(config)
    assert topics["/camera/depth"] == "sensor_msgs/msg/Image"
    assert topics["/gripper/depth"] == "sensor_msgs/msg/CompressedImage"
    assert topics["/camera/depth_info"] == topics["/camera/color/camera_info"] == "sensor_msgs/msg/CameraInfo"
    assert topics["/joint_states"] == "sensor_msgs/msg/JointState"
    assert reliable_topics(config)["/camera/depth"] == "observations.views.head.depth.qos"
    lines = _topic_lines(config, {"head": "head", "gripper": "gripper"})
    assert (
        "topics:  view head: /camera/color/image_raw (Image, qos sensor_data, max age 1 s, "
        "turned 90 deg clockwise)" in lines
    )
    assert (
        "topics:  view head tilt: joint 'joint_head_tilt' on /joint_states (JointState, positive up)" in lines
    )
    assert (
        "topics:  view gripper depth: /gripper/depth (CompressedImage, qos sensor_data; "
        "regions: the depth image's own thirds)" in lines
    )
    assert not any("no depth topic" in line for line in lines)


def test_the_prompt_size_counts_each_views_depth_line_and_aim() -> None:
    from harness_ros.commands._prompt_size import sample_observation
    from harness_ros.config import HarnessConfig

    observation = sample_observation(HarnessConfig.model_validate({"observations": STRETCH_LIKE}))
    assert [depth.view for depth in observation.view_depths] == ["head", "gripper"]
    text = text_of(observation)
    assert "Camera head aim: pan 30 deg left, tilt 20 deg down" in text
    assert "Depth head nearest/median" in text and "Depth gripper nearest/median" in text


def test_the_evaluator_reads_joints_a_robot_splits_over_messages(
    ros_context: Any, rig_publisher: Any
) -> None:
    """The evaluator's joint_states source keeps each joint's newest position, whichever of
    the robot's messages carried it (the rig: head joints in one, the lift in another)."""
    from support.waiting import wait_for

    from harness_ros.config import StateSourceConfig
    from harness_ros.ros.robot_state import RosRobotState

    joints = [rig.PAN_JOINT, rig.TILT_JOINT, "joint_lift"]
    source = StateSourceConfig(type="joint_states", topic="/joint_states", max_age_s=5.0, joints=joints)
    with spinning_node(ros_context, "camera_rig_state_test") as node:
        state = RosRobotState(node, {"arm": source})
        try:
            complete = lambda: dict(state.read_state(["arm"])[0].joints or ()).keys() == set(joints)  # noqa: E731
            assert wait_for(complete, FIRST_MESSAGES_TIMEOUT_S), state.read_state(["arm"])
            (reading,) = state.read_state(["arm"])
        finally:
            state.destroy()
    positions = dict(reading.joints or ())
    assert positions[rig.PAN_JOINT] == pytest.approx(math.radians(rig.PAN_DEG))
    assert positions["joint_lift"] == pytest.approx(0.5)
    assert not reading.stale and reading.note in (None, "")
