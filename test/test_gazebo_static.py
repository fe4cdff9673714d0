"""Gazebo files checked statically (no Gazebo here) against facts from gazebosim's sources.

The facts live in test/data/gz_*.txt with the tag and commit they were read at
(test/data/gz_extract_facts.py re-derives them): the system plugins of gz-sim with the
parameters each reads, the SDFormat element pairs and sensor types, and ros_gz_bridge's
ROS/Gazebo type pairs. Every SDF must use only those; every sensor and system topic must
have a bridge entry of the right types and direction; the ROS side must be what
config/gazebo.yaml and gz_manipulation read; the model must match its profile.
"""

from __future__ import annotations

import math
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

from harness_ros.config import load_config
from harness_ros_sim.gazebo import bridge, robot_sdf, world_sdf
from harness_ros_sim.sim.spec import apartment_spec

REPO = Path(__file__).resolve().parents[1]
SIM = REPO / "sim"
"""harness_ros_sim: the generated Gazebo world, robot model, bridge file and launch file."""
DATA = Path(__file__).resolve().parent / "data"
SDF_FILES = sorted([*SIM.glob("worlds/*.sdf"), *SIM.glob("models/*/model.sdf")])
MODEL = SIM / "models" / "harness_robot" / "model.sdf"
WORLD = SIM / "worlds" / "apartment.sdf"
INTO_ROS, TO_GZ = "GZ_TO_ROS", "ROS_TO_GZ"
IMAGE = ("sensor_msgs/msg/Image", "gz.msgs.Image")
INFO = ("sensor_msgs/msg/CameraInfo", "gz.msgs.CameraInfo")


def facts(name: str) -> list[list[str]]:
    lines = (DATA / name).read_text(encoding="utf-8").splitlines()
    assert lines[0].startswith("# gazebosim/"), f"{name} must say where its facts come from"
    return [line.split() for line in lines[1:] if line.strip()]


def bridge_entries() -> list[dict[str, str]]:
    return yaml.safe_load((SIM / "config" / "gazebo_bridge.yaml").read_text(encoding="utf-8"))


def entry_for_gz(topic: str) -> dict[str, str]:
    matches = [e for e in bridge_entries() if e["gz_topic_name"] == topic]
    assert len(matches) == 1, f"Gazebo topic {topic} has {len(matches)} bridge entries"
    return matches[0]


def assert_bridged(topic: str, types: tuple[str, str], direction: str) -> None:
    entry = entry_for_gz(topic)
    assert (entry["ros_type_name"], entry["gz_type_name"]) == types, topic
    assert entry["direction"] == direction, topic


def test_the_facts_name_their_tags() -> None:
    assert "gz-sim8_8.14.0" in (DATA / "gz_sim_plugins.txt").read_text().splitlines()[0]
    assert "sdformat14_14.9.0" in (DATA / "gz_sdf_elements.txt").read_text().splitlines()[0]
    assert "ros_gz jazzy" in (DATA / "gz_bridge_types.txt").read_text().splitlines()[0]


@pytest.mark.parametrize("path", [*SDF_FILES, SIM / "models" / "harness_robot" / "model.config"], ids=str)
def test_every_gazebo_file_parses(path: Path) -> None:
    root = ET.parse(path).getroot()
    assert root.tag in {"sdf", "model"}
    if root.tag == "sdf":
        assert root.get("version") == world_sdf.SDF_VERSION


@pytest.mark.parametrize("path", SDF_FILES, ids=lambda p: p.name)
def test_sdf_uses_only_elements_of_sdformat(path: Path) -> None:
    known = {(row[0], row[1]) for row in facts("gz_sdf_elements.txt") if "@" not in row[0]}
    attributes = {row[0] for row in facts("gz_sdf_elements.txt") if row[1:] == ["attribute"]}
    sensor_types = {
        row[1] for row in facts("gz_sdf_elements.txt") if row[0] == "sensor@type" and row[1] != "attribute"
    }
    unknown = set()

    def walk(element: ET.Element) -> None:
        unknown.update(
            ("@", f"{element.tag}@{a}") for a in element.attrib if f"{element.tag}@{a}" not in attributes
        )
        if element.tag == "plugin":
            return  # its children are system parameters: see the next test
        for child in element:
            if (element.tag, child.tag) not in known:
                unknown.add((element.tag, child.tag))
            walk(child)

    root = ET.parse(path).getroot()
    walk(root)
    assert not unknown, f"elements not in SDFormat at the stated tag: {sorted(unknown)}"
    assert {s.get("type") for s in root.iter("sensor")} <= sensor_types


@pytest.mark.parametrize("path", SDF_FILES, ids=lambda p: p.name)
def test_sdf_plugins_are_gz_sim_systems_with_their_parameters(path: Path) -> None:
    systems = {(row[0], row[1]): set(row[2:]) for row in facts("gz_sim_plugins.txt")}
    plugins = list(ET.parse(path).getroot().iter("plugin"))
    assert plugins
    for plugin in plugins:
        key = (plugin.get("filename"), plugin.get("name"))
        assert key in systems, f"{key} is not a gz-sim system at the stated tag"
        unread = {child.tag for child in plugin} - systems[key]
        assert not unread, f"{key[1]} does not read {sorted(unread)}"


def test_the_facts_check_something() -> None:
    """The checks above would fail on a misspelt system or element (not vacuous)."""
    systems = {(row[0], row[1]) for row in facts("gz_sim_plugins.txt")}
    assert ("gz-sim-diff-drive-system", "gz::sim::systems::DiffDrive") in systems
    assert ("gz-sim-diffdrive-system", "gz::sim::systems::DiffDrive") not in systems
    pairs = {(row[0], row[1]) for row in facts("gz_sdf_elements.txt")}
    assert ("sensor", "lidar") in pairs and ("sensor", "ray_scan") not in pairs


def test_generated_model_and_bridge_are_up_to_date() -> None:
    spec = apartment_spec()
    assert MODEL.read_text(encoding="utf-8") == robot_sdf.model_sdf(spec)
    assert (MODEL.parent / "model.config").read_text(encoding="utf-8") == robot_sdf.model_config()
    assert (SIM / "config" / "gazebo_bridge.yaml").read_text(encoding="utf-8") == bridge.bridge_yaml(spec), (
        "run python -m harness_ros_sim.gazebo"
    )


def test_every_bridge_entry_pairs_types_ros_gz_bridge_converts() -> None:
    pairs = {(row[0], row[1]) for row in facts("gz_bridge_types.txt")}
    entries = bridge_entries()
    assert len({e["ros_topic_name"] for e in entries}) == len(entries), "a ROS topic bridged twice"
    for entry in entries:
        assert set(entry) == {"ros_topic_name", "gz_topic_name", "ros_type_name", "gz_type_name", "direction"}
        assert (entry["ros_type_name"], entry["gz_type_name"]) in pairs, entry
        assert entry["direction"] in {INTO_ROS, TO_GZ}


def sensor_topics() -> dict[str, tuple[tuple[str, str], str]]:
    """Every Gazebo topic the model's sensors publish, with the types the bridge must use."""
    topics: dict[str, tuple[tuple[str, str], str]] = {}
    for sensor in ET.parse(MODEL).getroot().iter("sensor"):
        topic = sensor.findtext("topic")
        assert topic, f"sensor {sensor.get('name')} has no explicit topic"
        kind = sensor.get("type")
        if kind == "rgbd_camera":
            # gz-sensors RgbdCameraSensor: <topic>/image, /depth_image, /points, /camera_info
            topics[f"{topic}/image"] = (IMAGE, sensor.get("name", ""))
            topics[f"{topic}/depth_image"] = (IMAGE, sensor.get("name", ""))
            topics[f"{topic}/camera_info"] = (INFO, sensor.get("name", ""))
        elif kind == "camera":
            # gz-sensors CameraSensor: camera_info_topic, else <topic's parent>/camera_info
            info = sensor.findtext("camera/camera_info_topic") or topic.rsplit("/", 1)[0] + "/camera_info"
            topics[topic] = (IMAGE, sensor.get("name", ""))
            topics[info] = (INFO, sensor.get("name", ""))
        elif kind == "gpu_lidar":
            topics[topic] = (("sensor_msgs/msg/LaserScan", "gz.msgs.LaserScan"), sensor.get("name", ""))
        else:
            pytest.fail(f"unchecked sensor type {kind}")
    return topics


def test_every_sensor_topic_has_a_bridge_entry_of_the_right_types() -> None:
    topics = sensor_topics()
    assert len(topics) == 8  # front image, depth, info; torso and wrist image, info; scan
    for topic, (types, _name) in topics.items():
        assert_bridged(topic, types, INTO_ROS)


def test_every_system_topic_has_a_bridge_entry_of_the_right_types() -> None:
    plugins = {}
    grasps = []
    for plugin in ET.parse(MODEL).getroot().iter("plugin"):
        name = plugin.get("name", "").rsplit("::", 1)[1]
        if name == "DetachableJoint":
            grasps.append(plugin)
        else:
            plugins[name] = plugin
    drive = plugins["DiffDrive"]
    assert_bridged(drive.findtext("topic", ""), ("geometry_msgs/msg/Twist", "gz.msgs.Twist"), TO_GZ)
    assert_bridged(drive.findtext("odom_topic", ""), ("nav_msgs/msg/Odometry", "gz.msgs.Odometry"), INTO_ROS)
    assert_bridged(drive.findtext("tf_topic", ""), ("tf2_msgs/msg/TFMessage", "gz.msgs.Pose_V"), INTO_ROS)
    assert (drive.findtext("frame_id"), drive.findtext("child_frame_id")) == ("odom", "base_link")
    lift = plugins["JointPositionController"]
    assert_bridged(lift.findtext("topic", ""), ("std_msgs/msg/Float64", "gz.msgs.Double"), TO_GZ)
    states = plugins["JointStatePublisher"].findtext("topic", "")
    assert_bridged(states, ("sensor_msgs/msg/JointState", "gz.msgs.Model"), INTO_ROS)
    # The robot and every object publish their world pose, one gz.msgs.Pose topic each.
    pose = ("geometry_msgs/msg/PoseStamped", "gz.msgs.Pose")
    publishers = [plugins["PosePublisher"]] + [
        p for p in ET.parse(WORLD).getroot().iter("plugin") if p.get("name", "").endswith("PosePublisher")
    ]
    assert len(publishers) == 1 + len(apartment_spec().objects)
    for publisher in publishers:
        assert publisher.findtext("use_pose_vector_msg") == "false"
        assert publisher.findtext("publish_model_pose") == "true"
        assert_bridged(publisher.findtext("topic", ""), pose, INTO_ROS)
    assert_bridged("/clock", ("rosgraph_msgs/msg/Clock", "gz.msgs.Clock"), INTO_ROS)

    # One DetachableJoint per graspable object of the spec, on the gripper, to a world model.
    world_models = {m.get("name"): m for m in ET.parse(WORLD).getroot().iter("model")}
    links = {link.get("name") for link in ET.parse(MODEL).getroot().iter("link")}
    assert sorted(g.findtext("child_model", "") for g in grasps) == sorted(
        o.id for o in apartment_spec().objects
    )
    for grasp in grasps:
        child = world_models[grasp.findtext("child_model")]
        assert grasp.findtext("child_link") in {link.get("name") for link in child.iter("link")}
        assert grasp.findtext("parent_link") in links
        empty = ("std_msgs/msg/Empty", "gz.msgs.Empty")
        assert_bridged(grasp.findtext("attach_topic", ""), empty, TO_GZ)
        assert_bridged(grasp.findtext("detach_topic", ""), empty, TO_GZ)
        assert_bridged(
            grasp.findtext("output_topic", ""), ("std_msgs/msg/String", "gz.msgs.StringMsg"), INTO_ROS
        )


def test_every_bridged_gazebo_topic_exists_in_the_sdf() -> None:
    text = MODEL.read_text(encoding="utf-8") + WORLD.read_text(encoding="utf-8")
    published = set(sensor_topics()) | {"/clock"}
    for entry in bridge_entries():
        topic = entry["gz_topic_name"]
        assert topic in published or f">{topic}<" in text, f"{topic} is bridged but no SDF element names it"


def test_gz_manipulation_topics_are_bridged_the_right_way() -> None:
    by_ros = {e["ros_topic_name"]: e for e in bridge_entries()}
    reads = [bridge.ROS_TOPICS[k] for k in ("odometry", "scan")]
    reads += [
        bridge.ros_pose_topic(m) for m in (robot_sdf.ROBOT_NAME, *(o.id for o in apartment_spec().objects))
    ]
    writes = [bridge.ROS_TOPICS[k] for k in ("cmd_vel", "lift")]
    for obj in apartment_spec().objects:
        topics = robot_sdf.grasp_topics(obj.id)
        reads.append(topics["state"])
        writes += [topics["attach"], topics["detach"]]
    for topic in reads:
        assert by_ros[topic]["direction"] == INTO_ROS, topic
    for topic in writes:
        assert by_ros[topic]["direction"] == TO_GZ, topic


def test_the_harness_config_reads_exactly_the_bridged_sensor_topics() -> None:
    config = load_config(REPO / "config" / "gazebo.yaml")
    observations = config.observations
    by_ros = {e["ros_topic_name"]: e for e in bridge_entries()}
    images = {t for t, e in by_ros.items() if e["ros_type_name"] == IMAGE[0]}
    scans = {t for t, e in by_ros.items() if e["ros_type_name"] == "sensor_msgs/msg/LaserScan"}
    assert observations.depth is not None and observations.clearance is not None
    read_images = {view.topic for view in observations.views.values()} | {observations.depth.topic}
    assert read_images == images
    assert {observations.clearance.scan_topic} == scans
    assert by_ros[observations.depth.topic]["gz_topic_name"].endswith("/depth_image")
    # One view per Model-Visible View of the profile.
    assert set(observations.views) == {"front", "torso", "wrist"}


def test_the_harness_config_binds_the_sims_actions_to_gz_manipulation() -> None:
    gazebo = {t.name: t for t in load_config(REPO / "config" / "gazebo.yaml").tools}
    sim = {t.name: t for t in load_config(REPO / "config" / "sim.yaml").tools}
    assert set(gazebo) == {"navigate_to", "pick_object", "place_object"}
    for name, tool in gazebo.items():
        assert tool.type == sim[name].type
        assert tool.required_arguments == sim[name].required_arguments
        assert tool.action == f"/gz/{name}"


def profile_positions() -> dict[str, tuple[float, float, float, float]]:
    """x, y, z and downward pitch (degrees) of each sensor in the profile's Camera Positions."""
    text = (REPO / "profiles" / "mobile_manipulator.md").read_text(encoding="utf-8")
    section = text.split("### Camera Positions", 1)[1].split("###", 1)[0]
    found = {}
    for item in re.split(r"\n- ", section):
        match = re.match(
            r"(\w+)[^:]*: x = (-?\d+\.\d+), y = (-?\d+\.\d+), z = (-?\d+\.\d+)", item.strip("- \n")
        )
        if match:
            pitch = re.search(r"pitched (\d+) degrees down", item.replace("\n  ", " "))
            found[match.group(1)] = (*map(float, match.groups()[1:]), float(pitch.group(1)) if pitch else 0.0)
    return found


def sensor_poses() -> dict[str, tuple[float, float, float, float]]:
    """Model-frame x, y, z and pitch (degrees) of each sensor (links are not rotated)."""
    poses = {}
    for link in ET.parse(MODEL).getroot().iter("link"):
        lx, ly, lz, *_ = map(float, (link.findtext("pose") or "0 0 0 0 0 0").split())
        for sensor in link.iter("sensor"):
            x, y, z, _roll, pitch, _yaw = map(float, sensor.findtext("pose", "").split())
            poses[sensor.get("name", "").removesuffix("_camera")] = (
                lx + x,
                ly + y,
                lz + z,
                math.degrees(pitch),
            )
    return poses


def base_boxes() -> list[tuple[float, float, float, float, float, float]]:
    """(x0, y0, z0, x1, y1, z1) of every box collision of base_link (unrotated)."""
    link = next(link for link in ET.parse(MODEL).getroot().iter("link") if link.get("name") == "base_link")
    boxes = []
    for collision in link.findall("collision"):
        size = collision.findtext("geometry/box/size")
        if size:
            sx, sy, sz = map(float, size.split())
            x, y, z = map(float, collision.findtext("pose", "0 0 0 0 0 0").split()[:3])
            boxes.append((x - sx / 2, y - sy / 2, z - sz / 2, x + sx / 2, y + sy / 2, z + sz / 2))
    return boxes


def test_the_lidar_does_not_see_its_own_base() -> None:
    """No base box crosses the lidar's scan plane anywhere in its field of view."""
    lidar = next(s for s in ET.parse(MODEL).getroot().iter("sensor") if s.get("type") == "gpu_lidar")
    lx, ly, lz = map(float, lidar.findtext("pose", "").split()[:3])
    horizontal = lidar.find("lidar/scan/horizontal")
    assert horizontal is not None
    low, high = float(horizontal.findtext("min_angle", "")), float(horizontal.findtext("max_angle", ""))
    in_plane = [b for b in base_boxes() if b[2] < lz < b[5]]
    assert in_plane, "the check would be vacuous"
    for i in range(181):
        angle = low + (high - low) * i / 180
        dx, dy = math.cos(angle), math.sin(angle)
        for x0, y0, _z0, x1, y1, _z1 in in_plane:
            near, far = 0.0, 10.0  # slab test of the ray against the box's footprint
            for origin, direction, lo, hi in ((lx, dx, x0, x1), (ly, dy, y0, y1)):
                if abs(direction) < 1e-12:
                    if not lo <= origin <= hi:
                        near, far = 1.0, 0.0
                    continue
                t0, t1 = sorted(((lo - origin) / direction, (hi - origin) / direction))
                near, far = max(near, t0), min(far, t1)
            assert near > far, f"the lidar ray at {math.degrees(angle):.0f} deg hits the base"


def test_the_harness_config_places_the_scan_where_the_lidar_sits() -> None:
    # Clearance corridors are measured from the base centre: a scan read as if it came
    # from there would be 0.25 m off.
    lidar = next(s for s in ET.parse(MODEL).getroot().iter("sensor") if s.get("type") == "gpu_lidar")
    x, y, _z, _roll, _pitch, yaw = map(float, lidar.findtext("pose", "").split())
    mount = load_config(REPO / "config" / "gazebo.yaml").observations.clearance.scan_mount
    assert (mount.x_m, mount.y_m, mount.yaw_rad or 0.0) == pytest.approx((x, y, yaw))
    assert x == pytest.approx(0.25)


def test_the_server_only_launch_renders_its_sensors_without_a_display() -> None:
    # gz sim -s has no window; its cameras and gpu_lidar need --headless-rendering
    # (gz-sim8 and gz-sim9 src/cmd/cmdsim.rb.in) on a machine without a display.
    launch = (SIM / "launch" / "gazebo.launch.py").read_text(encoding="utf-8")
    assert 'server_only = "-s --headless-rendering "' in launch
    assert '(server_only, UnlessCondition(arg["gui"]))' in launch


def test_the_model_matches_its_profile() -> None:
    profile = profile_positions()
    poses = sensor_poses()
    assert set(profile) == {"front", "torso", "lidar"}  # the wrist's is relative to the gripper
    for name in ("front", "torso", "lidar"):  # at the lift's lowest position
        assert poses[name] == pytest.approx(profile[name], abs=1e-3), name
    # The wrist camera rides on the gripper, 0.08 m behind its fingertips (the link origin).
    assert poses["wrist"][0] == pytest.approx(0.55 - 0.08)
    boxes = base_boxes()
    # The base's outline is the profile's 0.60 x 0.50 m, its deck 0.35 m high.
    assert min(b[0] for b in boxes) == pytest.approx(-0.3) and max(b[3] for b in boxes) == pytest.approx(0.3)
    assert min(b[1] for b in boxes) == pytest.approx(-0.25) and max(b[4] for b in boxes) == pytest.approx(
        0.25
    )
    assert max(b[5] for b in boxes) == pytest.approx(0.35)
    root = ET.parse(MODEL).getroot()
    lift = next(j for j in root.iter("joint") if j.get("name") == "torso_lift_joint")
    assert float(lift.findtext("axis/limit/upper", "")) == pytest.approx(robot_sdf.LIFT_MAX_M)
