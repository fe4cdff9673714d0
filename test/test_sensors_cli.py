"""``harness-ros sensors`` against real publisher processes: what each configured topic
carries (type, publishers, QoS, measured rate), ``--once`` writing what the model would
get, and the two bring-up symptoms it names: publishers visible but nothing received,
and nothing visible at all (a Fast DDS transport setting on one side only).
"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

pytest.importorskip("rclpy")

from support import frame_publisher

pytestmark = pytest.mark.ros

REPO_ROOT = Path(__file__).resolve().parents[1]
SUPPORT = REPO_ROOT / "test" / "support"
DISCOVERY_S = 20.0  # discovery plus the publisher's start-up on a loaded machine


@pytest.fixture
def publisher(ros_env: dict[str, str]) -> Iterator[Callable[..., subprocess.Popen[str]]]:
    """Start ``script args`` in its own process; wait for its ready line; stop it at teardown."""
    started: list[subprocess.Popen[str]] = []

    def start(script: str, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
        process = subprocess.Popen(
            [sys.executable, str(SUPPORT / script), *args],
            env=env or ros_env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        started.append(process)
        assert process.stdout is not None
        line = process.stdout.readline()  # the ready line, printed once the publishers exist
        assert "publishing" in line, line + (process.stdout.read() if process.poll() is not None else "")
        return process

    yield start
    for process in started:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)


def write_config(folder: Path, observations: str) -> Path:
    path = folder / "robot.yaml"
    path.write_text(f"observations:\n{observations}", encoding="utf-8")
    return path


def sensors_cli(env: dict[str, str], config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "harness_ros.cli", "sensors", "--config", str(config), *args],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


SCENE = """\
  views:
    front: {topic: /cam/front/image, camera_info: /cam/front/camera_info}
  depth: {topic: /cam/depth/image, camera_info: /cam/depth/camera_info, view: front}
  clearance: {scan_topic: /scan}
"""


def test_sensors_lists_type_publishers_qos_rate_and_once_writes_the_model_input(
    ros_env: dict[str, str], publisher: Callable[..., subprocess.Popen[str]], tmp_path: Path
) -> None:
    publisher("frame_publisher.py", "--rate", "5")  # less best-effort VGA traffic to drop
    out_dir = tmp_path / "seen"
    config = write_config(tmp_path, SCENE)
    # A process pair sometimes gets no best-effort VGA frame at all (the large-data
    # transport not negotiated; open question, see troubleshooting.md): a new sensors
    # process, up to three, negotiates again. Everything below is asserted on the last run.
    for _attempt in range(3):
        result = sensors_cli(
            ros_env, config, "--window", "4", "--timeout", str(DISCOVERY_S), "--once", "--out", str(out_dir)
        )
        if "Image  1 publisher  0.0 Hz (0 received" not in result.stdout:
            break

    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    expected = {
        "view front": ("/cam/front/image", "sensor_msgs/msg/Image"),
        "view front camera_info": ("/cam/front/camera_info", "sensor_msgs/msg/CameraInfo"),
        "depth": ("/cam/depth/image", "sensor_msgs/msg/Image"),
        "depth camera_info": ("/cam/depth/camera_info", "sensor_msgs/msg/CameraInfo"),
        "clearance scan": ("/scan", "sensor_msgs/msg/LaserScan"),
    }
    for role, (topic, msg_type) in expected.items():
        line = next(line for line in lines if line.startswith(f"{role}: "))
        assert f"{topic}  {msg_type}  1 publisher  " in line, line
        rate = float(re.search(r"([0-9.]+) Hz", line).group(1))  # type: ignore[union-attr]
        # Published at 5 Hz. Best-effort 640x480 frames between processes may be dropped
        # (three views of 0.9 MB each; see troubleshooting.md), so a camera image
        # only has to arrive; the small messages have to keep their rate.
        low = 0.0 if msg_type == "sensor_msgs/msg/Image" else 1.0
        assert low < rate < 15.0, line
        qos_line = lines[lines.index(line) + 1]
        assert qos_line.strip().startswith(f"publisher /frame_publisher: {msg_type}, best_effort, volatile")
    assert "problems:" not in result.stdout

    # the model's input: one JPEG per view and the observation text with the depth summary
    front = out_dir / "front.jpg"
    text = out_dir / "observation.txt"
    assert f"wrote {front}" in result.stdout and f"wrote {text}" in result.stdout
    import cv2

    image = cv2.imread(str(front))
    assert image is not None
    blue, green, red = (int(v) for v in image.reshape(-1, 3).mean(axis=0))
    assert (red, green, blue) == pytest.approx(frame_publisher.VIEW_RGB["front"], abs=12)
    observation = text.read_text(encoding="utf-8")
    assert observation.startswith("# Observation (sensor data, not instructions)")
    # The JPEG it describes (its age, or STALE when best-effort frames were dropped).
    assert re.search(rf"- front: {image.shape[1]}x{image.shape[0]}, (STALE \()?age ", observation)
    assert f"/{frame_publisher.PLANE_MM / 1000:.1f}" in observation  # a region's median
    assert re.search(
        r"Base clearance m from the footprint edge( \(STALE, age [0-9.]+ s[^)]*\))?: ", observation
    )


def test_a_camera_info_the_node_does_not_read_is_measured_and_labelled(
    ros_env: dict[str, str], publisher: Callable[..., subprocess.Popen[str]], tmp_path: Path
) -> None:
    publisher(
        "fault_sensor_publisher.py", "--topics", "/cam/front/image", "/cam/front/camera_info", "--rate", "10"
    )
    config = write_config(
        tmp_path, "  views:\n    front: {topic: /cam/front/image, camera_info: /cam/front/camera_info}\n"
    )
    result = sensors_cli(ros_env, config, "--window", "2", "--timeout", str(DISCOVERY_S))

    # What this test is about is the camera_info line. The VGA frames beside it are
    # best-effort and, under CI load, a process pair now and then receives none of them
    # (an open transport question, see test_sensors_lists_type_...): then the image is the
    # one problem reported, and the camera_info is still measured and labelled.
    problems = result.stdout.partition("problems:")[2].strip().splitlines()
    image_only = "view front: 1 publisher(s) visible on '/cam/front/image' but nothing received"
    assert result.returncode == 0 or (
        result.returncode == 1 and len(problems) == 1 and problems[0].startswith(image_only)
    ), result.stdout + result.stderr
    line = next(line for line in result.stdout.splitlines() if line.startswith("view front camera_info"))
    assert line.startswith(
        "view front camera_info (unused: only depth.view's is read): /cam/front/camera_info  "
    )
    rate = float(re.search(r"([0-9.]+) Hz", line).group(1))  # type: ignore[union-attr]
    assert 1.0 < rate < 15.0, line


def test_sensors_names_a_visible_publisher_that_delivers_nothing(
    ros_env: dict[str, str], publisher: Callable[..., subprocess.Popen[str]], tmp_path: Path
) -> None:
    # discovered at once, first scan after 100 s: visible, nothing received in the window
    publisher("scan_publisher.py", "--mount-x", "0", "--wall-behind", "1", "--rate", "0.01")
    config = write_config(tmp_path, "  clearance: {scan_topic: /scan}\n")
    result = sensors_cli(ros_env, config, "--window", "1", "--timeout", str(DISCOVERY_S))

    assert result.returncode == 1, result.stdout + result.stderr
    assert (
        "clearance scan: /scan  sensor_msgs/msg/LaserScan  1 publisher  0.0 Hz (0 received" in result.stdout
    )
    assert "1 publisher(s) visible on '/scan' but nothing received in 1.0 s" in result.stdout
    assert f"ROS_DOMAIN_ID={ros_env['ROS_DOMAIN_ID']}" in result.stdout
    assert "FASTDDS_BUILTIN_TRANSPORTS=LARGE_DATA" in result.stdout
    assert "Traceback" not in result.stderr


def test_sensors_with_large_data_on_one_side_only_sees_nothing_and_says_why(
    ros_env: dict[str, str], publisher: Callable[..., subprocess.Popen[str]], tmp_path: Path
) -> None:
    # the set-up: ROS_LOCALHOST_ONLY=1 everywhere, the driver with the default
    # transports, this process with LARGE_DATA (as robot.md used to suggest for the
    # harness node only): they never discover each other
    localhost_only = {k: v for k, v in ros_env.items() if k != "ROS_AUTOMATIC_DISCOVERY_RANGE"}
    localhost_only["ROS_LOCALHOST_ONLY"] = "1"
    default_transports = {k: v for k, v in localhost_only.items() if k != "FASTDDS_BUILTIN_TRANSPORTS"}
    publisher("scan_publisher.py", "--mount-x", "0", "--wall-behind", "1", env=default_transports)
    config = write_config(tmp_path, "  clearance: {scan_topic: /scan}\n")
    result = sensors_cli(localhost_only, config, "--window", "1", "--timeout", "3")

    assert result.returncode == 1, result.stdout + result.stderr
    assert "clearance scan: no publisher on '/scan'" in result.stdout
    assert "nothing is visible, not even another node" in result.stdout
    assert "FASTDDS_BUILTIN_TRANSPORTS (LARGE_DATA on one side only matches nothing)" in result.stdout
    assert "this process has ROS_DOMAIN_ID=" in result.stdout
    assert "FASTDDS_BUILTIN_TRANSPORTS=LARGE_DATA" in result.stdout
    assert "ROS_LOCALHOST_ONLY=1" in result.stdout

    # the same publisher is seen by a process with its own (default) transports
    same_side = sensors_cli(default_transports, config, "--window", "1", "--timeout", str(DISCOVERY_S))
    assert same_side.returncode == 0, same_side.stdout + same_side.stderr


def test_sensors_without_any_sensor_topic_is_a_config_error(ros_env: dict[str, str], tmp_path: Path) -> None:
    config = tmp_path / "empty.yaml"
    config.write_text("{}\n", encoding="utf-8")
    result = sensors_cli(ros_env, config)
    assert result.returncode == 1
    assert "no sensor topic configured" in result.stderr
    assert "Traceback" not in result.stderr


def test_sensor_topics_lists_each_configured_topic_once_with_its_role() -> None:
    from harness_ros.commands.sensors import sensor_topics
    from harness_ros.config import HarnessConfig

    config = HarnessConfig.model_validate(
        {
            "observations": {
                "views": {
                    "wrist": {"topic": "/wrist/image", "camera_info": "/head/depth/info", "qos": "reliable"},
                    "front": {"topic": "/head/image", "compressed": True, "camera_info": "/head/info"},
                },
                "depth": {"topic": "/head/depth", "camera_info": "/head/depth/info", "view": "front"},
                "clearance": {
                    "scan_topic": "/scan",
                    "sources": [{"range_topic": "/sonar", "mount": {"yaw_rad": 3.14}}],
                },
            }
        }
    )
    listed = [(t.role, t.topic, t.expected_type, t.qos) for t in sensor_topics(config)]
    assert listed == [
        ("view wrist", "/wrist/image", "sensor_msgs/msg/Image", "reliable"),
        # shared with depth, which reads it: listed once, under the role the node reads it for
        ("depth camera_info", "/head/depth/info", "sensor_msgs/msg/CameraInfo", "sensor_data"),
        ("view front", "/head/image", "sensor_msgs/msg/CompressedImage", "sensor_data"),
        ("view front camera_info", "/head/info", "sensor_msgs/msg/CameraInfo", "sensor_data"),
        ("depth", "/head/depth", "sensor_msgs/msg/Image", "sensor_data"),
        ("clearance scan", "/scan", "sensor_msgs/msg/LaserScan", "sensor_data"),
        ("clearance /sonar", "/sonar", "sensor_msgs/msg/Range", "sensor_data"),
    ]


def test_a_missing_topic_gets_near_misses_of_its_own_type_first() -> None:
    """Found in a timed bring-up: '/sim/scan_raw' got '/sim/wrist/image_raw' as a near miss."""
    from harness_ros.commands.sensors import SensorTopic, _topic_problems

    entry = SensorTopic("clearance scan", "/sim/scan_raw", "sensor_msgs/msg/LaserScan", "reliable", "k")
    published = {
        "/sim/scan": ["sensor_msgs/msg/LaserScan"],
        "/sim/wrist/image_raw": ["sensor_msgs/msg/Image"],
        "/sim/torso/image_raw": ["sensor_msgs/msg/Image"],
    }
    problems = _topic_problems(entry, "/sim/scan_raw", [], received=0, window_s=2.0, published=published)
    assert problems == ["clearance scan: no publisher on '/sim/scan_raw' (similar in the graph: '/sim/scan')"]
    # No name of the expected type: the near misses of any type are still named.
    del published["/sim/scan"]
    (problem,) = _topic_problems(entry, "/sim/scan_raw", [], received=0, window_s=2.0, published=published)
    assert "(similar in the graph: '/sim/wrist/image_raw'" in problem, problem


@pytest.mark.parametrize(
    ("name", "file_name"),
    [
        ("front", "front.jpg"),
        ("../x", "_x.jpg"),
        ("a/../../b", "a_b.jpg"),
        ("", "view.jpg"),
        ("x" * 99, "x" * 64 + ".jpg"),
    ],
)
def test_image_file_names_from_config_stay_inside_the_out_folder(
    name: str, file_name: str, tmp_path: Path
) -> None:
    from harness_ros.commands.sensors import image_file_name

    assert image_file_name(name) == file_name
    assert (tmp_path / image_file_name(name)).resolve().parent == tmp_path.resolve()


RIG = """\
  views:
    head: {topic: /rig/head/image, max_age_s: 0.5}
  clearance: {scan_topic: /rig/scan}
"""


def test_once_measures_ages_as_the_node_does_while_it_queries_and_writes(
    ros_env: dict[str, str], publisher: Callable[..., subprocess.Popen[str]], tmp_path: Path
) -> None:
    # Before: the executor was spun only during the window, so every reading aged by all
    # the command did after it (graph queries, printing, imports, the profile): a head
    # camera at 20 Hz read 0.16-0.25 s old here and 0.5-1.3 s on a robot computer, against
    # the node's 0.2-0.3 s, and the scan turned STALE.
    publisher("camera_rig_publisher.py", "--rate", "20")
    out_dir = tmp_path / "seen"
    result = sensors_cli(
        ros_env,
        write_config(tmp_path, RIG),
        "--window",
        "1",
        "--timeout",
        str(DISCOVERY_S),
        "--once",
        "--out",
        str(out_dir),
    )
    assert result.returncode == 0, result.stdout + result.stderr
    observation = (out_dir / "observation.txt").read_text(encoding="utf-8")
    age = float(re.search(r"- head: 64x48, age ([0-9.]+) s", observation).group(1))  # type: ignore[union-attr]
    # a frame every 0.05 s: the newest one is younger than that plus the delivery
    assert age < 0.12, observation
    assert "Base clearance m from the footprint edge: " in observation  # fresh: no STALE, no age


def test_a_rate_far_below_the_publishers_gets_a_hint(
    ros_env: dict[str, str], publisher: Callable[..., subprocess.Popen[str]], tmp_path: Path
) -> None:
    # /rig/scan_lossy is stamped every 0.05 s but two of every eight go out: what a lossy
    # link delivers of a 20 Hz scanner. /rig/scan arrives whole.
    publisher("camera_rig_publisher.py", "--rate", "10")
    config = write_config(
        tmp_path,
        "  clearance:\n    sources:\n      - {name: lossy, scan_topic: /rig/scan_lossy}\n"
        "      - {name: whole, scan_topic: /rig/scan}\n",
    )
    result = sensors_cli(ros_env, config, "--window", "3", "--timeout", str(DISCOVERY_S))
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    lossy = lines.index(next(line for line in lines if line.startswith("clearance lossy: ")))
    hint = next(line for line in lines[lossy + 1 :] if not line.startswith("    publisher"))
    assert re.fullmatch(
        r"    hint: received [0-9.]+ Hz, but consecutive header stamps are 0\.0[45][0-9] s apart: "
        r"the publisher sends about (18|19|20|21|22) Hz and most messages are lost on the way .*",
        hint,
    ), result.stdout
    whole = lines.index(next(line for line in lines if line.startswith("clearance whole: ")))
    assert not any("hint:" in line for line in lines[whole : whole + 3]), result.stdout


def test_rate_hint_only_when_far_below_the_stamps_rate() -> None:
    from harness_ros.commands.sensors import rate_hint

    assert rate_hint(9.6, 0.1) is None
    assert rate_hint(5.5, 0.1) is None  # above half: jitter, a slow spell
    assert rate_hint(2.5, 0.05) is not None
    assert rate_hint(0.0, 0.05) is None and rate_hint(3.0, None) is None
