"""Write ``sim/models/harness_robot`` (model.config + model.sdf): the mobile manipulator in Gazebo.

    python -m harness_ros_sim.gazebo.robot_sdf            # rewrite sim/models/harness_robot/
    python -m harness_ros_sim.gazebo.robot_sdf --check    # exit 1 if it is out of date

Generated, like the world, because its grasp systems name the world's objects: one
``DetachableJoint`` per graspable object of the spec, each with its own attach, detach
and state topics. Geometry follows ``profiles/mobile_manipulator.md`` (base_link at the
base centre on the floor, x forward): a 0.60 x 0.50 m base with a 0.35 m deck, a 2D
lidar at (0.25, 0, 0.20), a torso camera at (0.18, 0, 0.95) pitched 55 degrees down, a
0.40 m torso lift carrying the RGB-D head camera at (0.22, 0, 1.05 + lift) pitched 30
degrees down and the arm, whose gripper is at the profile's ready pose (0.55, 0, 0.90 +
lift) with the wrist camera 0.08 m behind the fingertips. The base is a differential
drive (Gazebo's DiffDrive system), not the profile's holonomic base.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from harness_ros_sim.gazebo.world_sdf import SDF_VERSION, pose_topic
from harness_ros_sim.sim.spec import WorldSpec, world_spec_by_name

__all__ = [
    "GRIPPER_LINK",
    "LIDAR_MOUNT_M",
    "LIFT_MAX_M",
    "ROBOT_NAME",
    "SYSTEMS",
    "TOPICS",
    "grasp_topics",
    "main",
    "model_config",
    "model_sdf",
]

ROBOT_NAME = "harness_robot"
GRIPPER_LINK = "gripper_link"
LIFT_MAX_M = 0.40
LIDAR_MOUNT_M = (0.25, 0.0, 0.20)
"""The lidar in base_link (x ahead of the base centre, y, z), facing forward: drive checks
move its returns by this before judging the footprint's clearance."""
"""Travel of the torso lift (profile: 0.00 to 0.40 m)."""

TOPICS: dict[str, str] = {
    "cmd_vel": f"/{ROBOT_NAME}/cmd_vel",
    "odometry": f"/{ROBOT_NAME}/odometry",
    "tf": f"/{ROBOT_NAME}/tf",
    "joint_states": f"/{ROBOT_NAME}/joint_states",
    "lift": f"/{ROBOT_NAME}/lift/cmd_pos",
    "scan": f"/{ROBOT_NAME}/scan",
    # The RGB-D camera publishes <topic>/image, /depth_image, /points and /camera_info.
    "front": f"/{ROBOT_NAME}/front_camera",
    "torso": f"/{ROBOT_NAME}/torso_camera/image",
    "torso_info": f"/{ROBOT_NAME}/torso_camera/camera_info",
    "wrist": f"/{ROBOT_NAME}/wrist_camera/image",
    "wrist_info": f"/{ROBOT_NAME}/wrist_camera/camera_info",
    "pose": pose_topic(ROBOT_NAME),
}
"""Gazebo topics of the model, by role (sim/config/gazebo_bridge.yaml bridges each one)."""

SYSTEMS: tuple[tuple[str, str], ...] = (
    ("gz-sim-diff-drive-system", "gz::sim::systems::DiffDrive"),
    ("gz-sim-joint-position-controller-system", "gz::sim::systems::JointPositionController"),
    ("gz-sim-joint-state-publisher-system", "gz::sim::systems::JointStatePublisher"),
    ("gz-sim-pose-publisher-system", "gz::sim::systems::PosePublisher"),
    ("gz-sim-detachable-joint-system", "gz::sim::systems::DetachableJoint"),
)


def grasp_topics(object_id: str) -> dict[str, str]:
    """Gazebo topics of the DetachableJoint holding ``object_id``: attach, detach, state."""
    base = f"/{ROBOT_NAME}/grasp/{object_id}"
    return {"attach": f"{base}/attach", "detach": f"{base}/detach", "state": f"{base}/state"}


def _camera(name: str, pose: str, topic: str, info_topic: str | None, *, depth: bool = False) -> str:
    kind = "rgbd_camera" if depth else "camera"
    info = f"\n          <camera_info_topic>{info_topic}</camera_info_topic>" if info_topic else ""
    depth_clip = (
        "\n          <depth_camera><clip><near>0.3</near><far>4.0</far></clip></depth_camera>"
        if depth
        else ""
    )
    return f"""      <sensor name="{name}" type="{kind}">
        <pose>{pose}</pose>
        <topic>{topic}</topic>
        <always_on>true</always_on>
        <update_rate>10</update_rate>
        <camera>{info}
          <horizontal_fov>1.396</horizontal_fov>
          <image><width>640</width><height>480</height><format>R8G8B8</format></image>
          <clip><near>0.05</near><far>10</far></clip>{depth_clip}
        </camera>
      </sensor>
"""


def _grasp(object_id: str) -> str:
    topics = grasp_topics(object_id)
    return f"""    <plugin filename="gz-sim-detachable-joint-system" name="gz::sim::systems::DetachableJoint">
      <parent_link>{GRIPPER_LINK}</parent_link>
      <child_model>{object_id}</child_model>
      <child_link>link</child_link>
      <attach_topic>{topics["attach"]}</attach_topic>
      <detach_topic>{topics["detach"]}</detach_topic>
      <output_topic>{topics["state"]}</output_topic>
      <suppress_child_warning>true</suppress_child_warning>
    </plugin>
"""


def _box_link_geometry(name: str, pose: str, size: str, rgba: str, *, collide: bool = True) -> str:
    geometry = f"<geometry><box><size>{size}</size></box></geometry>"
    collision = (
        f'      <collision name="{name}"><pose>{pose}</pose>{geometry}</collision>\n' if collide else ""
    )
    return (
        collision + f'      <visual name="{name}"><pose>{pose}</pose>{geometry}'
        f"<material><ambient>{rgba}</ambient><diffuse>{rgba}</diffuse></material></visual>\n"
    )


def _wheel(side: str, y: float) -> str:
    return f"""    <link name="{side}_wheel">
      <pose>0 {y} 0.08 -1.5707963 0 0</pose>
      <inertial><mass>2</mass><inertia><ixx>0.0035</ixx><iyy>0.0035</iyy><izz>0.0064</izz><ixy>0</ixy><ixz>0</ixz><iyz>0</iyz></inertia></inertial>
      <collision name="collision"><geometry><cylinder><radius>0.08</radius><length>0.04</length></cylinder></geometry></collision>
      <visual name="visual"><geometry><cylinder><radius>0.08</radius><length>0.04</length></cylinder></geometry><material><ambient>0.1 0.1 0.1 1</ambient><diffuse>0.1 0.1 0.1 1</diffuse></material></visual>
    </link>
    <joint name="{side}_wheel_joint" type="revolute">
      <parent>base_link</parent>
      <child>{side}_wheel</child>
      <axis><xyz>0 0 1</xyz><limit><lower>-1e16</lower><upper>1e16</upper></limit></axis>
    </joint>
"""  # noqa: E501


def model_sdf(spec: WorldSpec) -> str:
    """The robot's SDF; ``spec``'s objects get one DetachableJoint each."""
    grey, dark, orange = "0.7 0.7 0.72 1", "0.25 0.25 0.28 1", "0.95 0.55 0.1 1"
    casters = "".join(
        f'      <collision name="caster_{name}"><pose>{x} 0 0.05 0 0 0</pose>'
        "<geometry><sphere><radius>0.05</radius></sphere></geometry>"
        "<surface><friction><ode><mu>0</mu><mu2>0</mu2></ode></friction></surface></collision>\n"
        f'      <visual name="caster_{name}"><pose>{x} 0 0.05 0 0 0</pose>'
        "<geometry><sphere><radius>0.05</radius></sphere></geometry></visual>\n"
        for name, x in (("front", 0.22), ("back", -0.22))
    )
    grasps = "".join(_grasp(obj.id) for obj in spec.objects)
    # The body leaves a slot from z 0.15 to 0.25 for the lidar (z 0.20) open over its
    # 270 degrees: a lower and an upper plate joined by a core behind it.
    body = "".join(
        _box_link_geometry(name, pose, size, grey)
        for name, pose, size in (
            ("body_lower", "0 0 0.10 0 0 0", "0.6 0.5 0.1"),
            ("body_upper", "0 0 0.30 0 0 0", "0.6 0.5 0.1"),
            ("body_core", "-0.175 0 0.20 0 0 0", "0.25 0.5 0.1"),
        )
    )
    return f"""<?xml version="1.0"?>
<!-- Generated by harness_ros_sim.gazebo.robot_sdf from profiles/mobile_manipulator.md and the
     {spec.name} world's objects. Do not edit: run `python -m harness_ros_sim.gazebo.robot_sdf`. -->
<sdf version="{SDF_VERSION}">
  <model name="{ROBOT_NAME}" canonical_link="base_link">
    <!-- base_link: the base centre on the floor, x forward (REP 103). -->
    <link name="base_link">
      <inertial>
        <pose>0 0 0.2 0 0 0</pose>
        <mass>30</mass>
        <inertia><ixx>0.85</ixx><iyy>1.125</iyy><izz>1.525</izz><ixy>0</ixy><ixz>0</ixz><iyz>0</iyz></inertia>
      </inertial>
{body}{casters}      <sensor name="lidar" type="gpu_lidar">
        <pose>{LIDAR_MOUNT_M[0]:g} {LIDAR_MOUNT_M[1]:g} {LIDAR_MOUNT_M[2]:.2f} 0 0 0</pose>
        <topic>{TOPICS["scan"]}</topic>
        <always_on>true</always_on>
        <update_rate>10</update_rate>
        <lidar>
          <scan>
            <horizontal><samples>541</samples><resolution>1</resolution><min_angle>-2.356194</min_angle><max_angle>2.356194</max_angle></horizontal>
            <vertical><samples>1</samples><resolution>1</resolution><min_angle>0</min_angle><max_angle>0</max_angle></vertical>
          </scan>
          <range><min>0.05</min><max>10</max><resolution>0.01</resolution></range>
        </lidar>
      </sensor>
    </link>
{_wheel("left", 0.22)}{_wheel("right", -0.22)}
    <link name="torso_link">
      <pose>0 0 0.35 0 0 0</pose>
      <inertial><mass>4</mass><inertia><ixx>0.13</ixx><iyy>0.13</iyy><izz>0.02</izz><ixy>0</ixy><ixz>0</ixz><iyz>0</iyz></inertia></inertial>
{_box_link_geometry("column", "0 0 0.3 0 0 0", "0.16 0.2 0.6", dark)}{_camera("torso_camera", "0.18 0 0.60 0 0.959931 0", TOPICS["torso"], TOPICS["torso_info"])}    </link>
    <joint name="torso_fixed_joint" type="fixed">
      <parent>base_link</parent>
      <child>torso_link</child>
    </joint>
    <!-- The lift carries the head camera, the arm and the gripper (0 to {LIFT_MAX_M} m). -->
    <link name="lift_link">
      <pose>0 0 0.35 0 0 0</pose>
      <inertial><pose>0.2 0 0.6 0 0 0</pose><mass>3</mass><inertia><ixx>0.05</ixx><iyy>0.05</iyy><izz>0.05</izz><ixy>0</ixy><ixz>0</ixz><iyz>0</iyz></inertia></inertial>
{_box_link_geometry("head", "0.12 0 0.70 0 0 0", "0.16 0.24 0.12", dark, collide=False)}{_box_link_geometry("arm", "0.32 0 0.475 0 -0.4157 0", "0.37 0.06 0.06", orange, collide=False)}{_camera("front_camera", "0.22 0 0.70 0 0.523599 0", TOPICS["front"], None, depth=True)}    </link>
    <joint name="torso_lift_joint" type="prismatic">
      <parent>torso_link</parent>
      <child>lift_link</child>
      <axis><xyz>0 0 1</xyz><limit><lower>0</lower><upper>{LIFT_MAX_M}</upper><effort>500</effort><velocity>0.2</velocity></limit></axis>
    </joint>
    <!-- Gripper origin at the fingertips, the profile's ready pose; it holds objects through
         the DetachableJoint systems below (collision-free, so it never pushes them). -->
    <link name="{GRIPPER_LINK}">
      <pose>0.55 0 0.90 0 0 0</pose>
      <inertial><mass>0.5</mass><inertia><ixx>0.001</ixx><iyy>0.001</iyy><izz>0.001</izz><ixy>0</ixy><ixz>0</ixz><iyz>0</iyz></inertia></inertial>
{_box_link_geometry("palm", "-0.06 0 0 0 0 0", "0.04 0.1 0.04", dark, collide=False)}{_box_link_geometry("finger_left", "-0.02 0.045 0 0 0 0", "0.06 0.01 0.02", dark, collide=False)}{_box_link_geometry("finger_right", "-0.02 -0.045 0 0 0 0", "0.06 0.01 0.02", dark, collide=False)}{_camera("wrist_camera", "-0.08 0 0.03 0 0.349066 0", TOPICS["wrist"], TOPICS["wrist_info"])}    </link>
    <joint name="gripper_fixed_joint" type="fixed">
      <parent>lift_link</parent>
      <child>{GRIPPER_LINK}</child>
    </joint>

    <plugin filename="gz-sim-diff-drive-system" name="gz::sim::systems::DiffDrive">
      <left_joint>left_wheel_joint</left_joint>
      <right_joint>right_wheel_joint</right_joint>
      <wheel_separation>0.44</wheel_separation>
      <wheel_radius>0.08</wheel_radius>
      <max_linear_velocity>0.5</max_linear_velocity>
      <max_angular_velocity>1.0</max_angular_velocity>
      <topic>{TOPICS["cmd_vel"]}</topic>
      <odom_topic>{TOPICS["odometry"]}</odom_topic>
      <tf_topic>{TOPICS["tf"]}</tf_topic>
      <frame_id>odom</frame_id>
      <child_frame_id>base_link</child_frame_id>
      <odom_publish_frequency>20</odom_publish_frequency>
    </plugin>
    <plugin filename="gz-sim-joint-position-controller-system" name="gz::sim::systems::JointPositionController">
      <joint_name>torso_lift_joint</joint_name>
      <topic>{TOPICS["lift"]}</topic>
      <use_velocity_commands>true</use_velocity_commands>
      <p_gain>2</p_gain>
      <cmd_max>0.2</cmd_max>
      <cmd_min>-0.2</cmd_min>
    </plugin>
    <plugin filename="gz-sim-joint-state-publisher-system" name="gz::sim::systems::JointStatePublisher">
      <topic>{TOPICS["joint_states"]}</topic>
    </plugin>
    <plugin filename="gz-sim-pose-publisher-system" name="gz::sim::systems::PosePublisher">
      <topic>{TOPICS["pose"]}</topic>
      <publish_link_pose>false</publish_link_pose>
      <publish_model_pose>true</publish_model_pose>
      <use_pose_vector_msg>false</use_pose_vector_msg>
      <update_frequency>10</update_frequency>
    </plugin>
    <!-- Grasping: DetachableJoint attaches on start-up (gz-sim8), so gz_manipulation
         detaches every object once the bridge is up; pick_object attaches one. -->
{grasps}  </model>
</sdf>
"""  # noqa: E501


def model_config() -> str:
    return f"""<?xml version="1.0"?>
<model>
  <name>{ROBOT_NAME}</name>
  <version>1.0</version>
  <sdf version="{SDF_VERSION}">model.sdf</sdf>
  <author><name>harness_ros developers</name><email>dev@harness-ros.local</email></author>
  <description>Mobile manipulator of profiles/mobile_manipulator.md: diff-drive base, 2D lidar,
    RGB-D head camera, torso and wrist cameras, a torso lift and a gripper that grasps
    through DetachableJoint systems. Generated by harness_ros_sim.gazebo.robot_sdf.</description>
</model>
"""


def default_output() -> Path:
    return Path(__file__).resolve().parents[2] / "models" / ROBOT_NAME


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Write the harness_robot Gazebo model.")
    parser.add_argument("--world", default="apartment", help="world whose objects the gripper can grasp")
    parser.add_argument("--output", type=Path, help="model folder (default: sim/models/harness_robot)")
    parser.add_argument("--check", action="store_true", help="exit 1 if the files differ, write nothing")
    args = parser.parse_args(argv)
    folder = args.output or default_output()
    files = {"model.sdf": model_sdf(world_spec_by_name(args.world)), "model.config": model_config()}
    if args.check:
        stale = [
            name
            for name, text in files.items()
            if not (folder / name).is_file() or (folder / name).read_text(encoding="utf-8") != text
        ]
        if stale:
            sys.stderr.write(f"{folder}: {', '.join(stale)} out of date: run python -m {__name__}\n")
            return 1
        sys.stdout.write(f"{folder} is up to date\n")
        return 0
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    sys.stdout.write(f"wrote {folder}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
