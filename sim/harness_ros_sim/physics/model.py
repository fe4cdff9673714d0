"""The MuJoCo model of Stretch 3: Hello Robot's own URDF and meshes, compiled by MuJoCo,
plus what this module writes in MJCF: a free base on two driven wheels and a caster,
actuators on the lift, the telescoping arm, the wrist, the gripper and the head, cameras
at the head D435i and the gripper D405 optical frames, and an apartment-like scene.

The URDF and meshes come from the installed ``hello-robot-stretch-urdf`` package
(Copyright Hello Robot Inc., Clear BSD licence: see docs/physics-sim.md); the model is
generated at run time from it, so no mesh is copied into this repository.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import mujoco

__all__ = [
    "ARM_SEGMENTS",
    "GRIPPER_CAMERA",
    "HEAD_CAMERA",
    "OBJECTS",
    "SURFACES",
    "SceneObject",
    "Surface",
    "build_model",
    "stretch_urdf_path",
]

URDF_NAME = "stretch_description_SE3_eoa_wrist_dw3_tool_sg3.urdf"
HEAD_CAMERA = "head_d435i"
GRIPPER_CAMERA = "gripper_d405"
ARM_SEGMENTS = ("joint_arm_l3", "joint_arm_l2", "joint_arm_l1", "joint_arm_l0")

# Geom groups: the scene is group 0 (what the lidar sees), the robot group 1.
SCENE_GROUP = 0
ROBOT_GROUP = 1


@dataclass(frozen=True)
class Surface:
    """A box-shaped piece of furniture: centre (x, y) in the world, size, top height."""

    name: str
    x: float
    y: float
    half_x: float
    half_y: float
    height: float
    rgba: str


@dataclass(frozen=True)
class SceneObject:
    """A graspable cylinder standing on a surface (realistic mass and friction)."""

    name: str
    surface: str
    x: float
    y: float
    radius: float
    half_height: float
    mass_kg: float
    friction: float
    rgba: str


# The apartment: a kitchen counter, a dining table and a side table. The robot starts
# at the origin facing +x; Stretch's arm reaches out to its right (-y of the base).
SURFACES: tuple[Surface, ...] = (
    Surface("kitchen_counter", 1.6, -0.9, 0.9, 0.3, 0.90, "0.55 0.45 0.35 1"),
    Surface("dining_table", 0.0, -0.95, 0.45, 0.35, 0.74, "0.6 0.4 0.25 1"),
    Surface("side_table", -1.6, 0.9, 0.3, 0.3, 0.55, "0.4 0.4 0.45 1"),
)
OBJECTS: tuple[SceneObject, ...] = (
    SceneObject("red_cup", "dining_table", 0.0, -0.72, 0.035, 0.045, 0.15, 1.0, "0.85 0.1 0.1 1"),
    SceneObject("blue_bottle", "kitchen_counter", 1.4, -0.75, 0.03, 0.08, 0.25, 0.9, "0.1 0.2 0.85 1"),
    SceneObject("green_can", "side_table", -1.6, 0.75, 0.033, 0.06, 0.2, 0.8, "0.1 0.7 0.2 1"),
)


def stretch_urdf_path() -> Path:
    """The installed Stretch 3 URDF (DW3 wrist, SG3 gripper)."""
    try:
        import stretch_urdf
    except ImportError as err:  # pragma: no cover - a venv without the package
        raise RuntimeError(
            "the physics robot needs hello-robot-stretch-urdf: "
            "pip install -r requirements.txt -c constraints.txt"
        ) from err
    return Path(stretch_urdf.__file__).parent / "SE3" / URDF_NAME


_FINGER_RANGE = 0.6
"""Each gripper finger joint's range (rad), either way."""


def _robot_mjcf() -> ET.Element:
    """The maker's URDF compiled by MuJoCo and written back as MJCF (collision meshes only:
    they are what the physics uses, and 4 k triangles render fast on a CPU)."""
    urdf_path = stretch_urdf_path()
    text = urdf_path.read_text(encoding="utf-8")
    mesh_dir = urdf_path.parent / "meshes"
    compiler = (
        f'<mujoco><compiler meshdir="{mesh_dir}" balanceinertia="true" discardvisual="true" '
        'fusestatic="false" strippath="true"/></mujoco>'
    )
    text = re.sub(r"(<robot[^>]*>)", r"\1" + compiler, text, count=1)
    # The URDF pins each finger joint (lower = upper = 0: the driver commands the gripper as
    # one joint). MuJoCo would drop that limit with a warning, written to MUJOCO_LOG.TXT in the
    # working folder at every start: the fingers get the range _joint_properties gives them.
    text = re.sub(
        r'(<joint name="joint_gripper_finger_(?:left|right)" type="revolute">'
        r'(?:(?!</joint>).)*?<limit [^>]*?)lower="0" upper="0"',
        rf'\1lower="-{_FINGER_RANGE}" upper="{_FINGER_RANGE}"',
        text,
        flags=re.S,
    )
    # MuJoCo reads no COLLADA: the D435i's .dae shape is replaced by the URDF's own box.
    text = re.sub(r"<visual>(?:(?!</visual>).)*?\.dae\"/>.*?</visual>", "", text, flags=re.S)
    text = re.sub(r"<collision>(?:(?!</collision>).)*?\.dae\"/>.*?</collision>", "", text, flags=re.S)
    spec = mujoco.MjSpec.from_string(text)
    return ET.fromstring(spec.to_xml())  # noqa: S314 (MuJoCo wrote it from the installed URDF)


def _scene_xml() -> str:
    parts = [
        '<geom name="floor" type="plane" size="6 6 0.1" rgba="0.75 0.72 0.68 1" group="0"/>',
        # Walls of a 6 x 5 m room.
        '<body name="walls">',
        '<geom name="wall_n" type="box" pos="0 2.5 1.2" size="3 0.05 1.2" rgba="0.9 0.9 0.85 1"/>',
        '<geom name="wall_s" type="box" pos="0 -2.5 1.2" size="3 0.05 1.2" rgba="0.9 0.9 0.85 1"/>',
        '<geom name="wall_e" type="box" pos="3 0 1.2" size="0.05 2.5 1.2" rgba="0.88 0.88 0.82 1"/>',
        '<geom name="wall_w" type="box" pos="-3 0 1.2" size="0.05 2.5 1.2" rgba="0.88 0.88 0.82 1"/>',
        "</body>",
    ]
    for s in SURFACES:
        parts.append(
            f'<body name="{s.name}" pos="{s.x} {s.y} {s.height / 2}"><geom name="{s.name}" type="box" '
            f'size="{s.half_x} {s.half_y} {s.height / 2}" rgba="{s.rgba}" friction="0.8 0.01 0.001"/></body>'
        )
    for o in OBJECTS:
        top = next(s.height for s in SURFACES if s.name == o.surface)
        parts.append(
            f'<body name="{o.name}" pos="{o.x} {o.y} {top + o.half_height + 0.001}">'
            f'<freejoint name="{o.name}"/>'
            f'<geom name="{o.name}" type="cylinder" size="{o.radius} {o.half_height}" mass="{o.mass_kg}" '
            f'rgba="{o.rgba}" friction="{o.friction} 0.01 0.001" condim="4"/></body>'
        )
    return "".join(parts)


# Actuators: (name, joint, kp, kv, force limit N or N m, ctrl range).
_POSITION_ACTUATORS: tuple[tuple[str, str, float, float, float, str], ...] = (
    ("lift", "joint_lift", 4000.0, 400.0, 300.0, "0 1.1"),
    *((f"arm_{j[-2:]}", j, 2000.0, 150.0, 100.0, "0 0.13") for j in ARM_SEGMENTS),
    ("wrist_yaw", "joint_wrist_yaw", 60.0, 4.0, 20.0, "-1.75 4"),
    ("wrist_pitch", "joint_wrist_pitch", 60.0, 4.0, 20.0, "-1.57 0.56"),
    ("wrist_roll", "joint_wrist_roll", 30.0, 2.0, 10.0, "-3.14 3.14"),
    # A moderate close: a full-force close squeezes a cup out (docs/physics-sim.md).
    ("gripper_left", "joint_gripper_finger_left", 8.0, 0.4, 1.5, "-0.6 0.6"),
    ("gripper_right", "joint_gripper_finger_right", 8.0, 0.4, 1.5, "-0.6 0.6"),
    ("head_pan", "joint_head_pan", 20.0, 1.0, 10.0, "-3.9 1.5"),
    ("head_tilt", "joint_head_tilt", 20.0, 1.0, 10.0, "-1.53 0.79"),
)
# Wheel velocity gain: 20 holds the base still at a zero command (100 creeps).
WHEEL_KV = 20.0
WHEEL_RADIUS = 0.0508
WHEEL_SEPARATION = 0.3407


def build_model(*, width: int = 320, height: int = 240) -> mujoco.MjModel:
    """Compile the robot in its scene; ``width`` x ``height`` is the largest offscreen image."""
    robot = _robot_mjcf()
    root = ET.Element("mujoco", model="stretch3_apartment")
    compiler = robot.find("compiler")
    assert compiler is not None
    root.append(compiler)
    ET.SubElement(root, "option", timestep="0.002", integrator="implicitfast", cone="elliptic", impratio="10")
    visual = ET.SubElement(root, "visual")
    ET.SubElement(visual, "global", offwidth=str(max(width, 640)), offheight=str(max(height, 480)))
    ET.SubElement(visual, "headlight", ambient="0.45 0.45 0.45", diffuse="0.5 0.5 0.5")
    asset = robot.find("asset")
    assert asset is not None
    root.append(asset)
    world = ET.SubElement(root, "worldbody")
    ET.SubElement(world, "light", pos="0 0 2.6", dir="0 0 -1", diffuse="0.5 0.5 0.5")
    for child in ET.fromstring(f"<w>{_scene_xml()}</w>"):  # noqa: S314 (our own text)
        world.append(child)
    robot_world = robot.find("worldbody")
    assert robot_world is not None
    base = robot_world.find("body[@name='base_link']")
    assert base is not None
    base.set("pos", "0 0 0.002")
    base.insert(0, ET.Element("freejoint", name="base"))
    for body in base.iter("body"):
        for geom in body.findall("geom"):
            # The robot's own parts never collide with each other; each with the scene.
            geom.set("group", str(ROBOT_GROUP))
            geom.set("contype", "2")
            geom.set("conaffinity", "1")
    _gripper_pads(base)
    _cameras(base)
    world.append(base)
    for geom in world.findall("geom"):
        geom.set("contype", "1")
        geom.set("conaffinity", "3")
    for body in world.findall("body"):
        for geom in body.iter("geom"):
            if geom.get("group") != str(ROBOT_GROUP):
                geom.set("contype", "1")
                geom.set("conaffinity", "3")
    _joint_properties(base)
    # The chassis shell rides above the floor on its wheels and caster: its convex hull
    # reaches the floor plane, which would drag it (the floor is the world body's only geom).
    contact = ET.SubElement(root, "contact")
    ET.SubElement(contact, "exclude", body1="world", body2="base_link")
    actuators = ET.SubElement(root, "actuator")
    for wheel in ("left", "right"):
        ET.SubElement(
            actuators,
            "velocity",
            name=f"wheel_{wheel}",
            joint=f"joint_{wheel}_wheel",
            kv=str(WHEEL_KV),
            ctrlrange="-12 12",
            forcerange="-20 20",
        )
    for name, joint, kp, kv, force, ctrl in _POSITION_ACTUATORS:
        ET.SubElement(
            actuators,
            "position",
            name=name,
            joint=joint,
            kp=str(kp),
            kv=str(kv),
            forcerange=f"-{force} {force}",
            ctrlrange=ctrl,
        )
    return mujoco.MjModel.from_xml_string(ET.tostring(root, encoding="unicode"))


def _find(base: ET.Element, name: str) -> ET.Element:
    found = base.find(f".//body[@name='{name}']")
    if found is None:
        raise RuntimeError(f"{stretch_urdf_path()}: no link {name!r} (another Stretch model?)")
    return found


def _joint_properties(base: ET.Element) -> None:
    for joint in base.iter("joint"):
        name = joint.get("name", "")
        if name.endswith("_wheel"):
            # The URDF's damping and friction are the gearbox's; the velocity servo holds it.
            joint.set("damping", "0.5")
            joint.set("frictionloss", "0.1")
            joint.set("armature", "0.05")
        elif name in ("joint_gripper_finger_left", "joint_gripper_finger_right"):
            joint.set("range", f"-{_FINGER_RANGE} {_FINGER_RANGE}")
            joint.set("limited", "true")
            joint.set("damping", "0.05")
        elif name.startswith("joint_arm") or name == "joint_lift":
            joint.set("damping", "20")
            joint.set("armature", "0.5")
        elif name.startswith(("joint_wrist", "joint_head")):
            joint.set("damping", "0.5")
            joint.set("armature", "0.01")
    # The caster: a sphere that slides (no friction), as a swivel caster rolls.
    caster = _find(base, "caster_link")
    for geom in caster.findall("geom"):
        geom.set("friction", "0.001 0.001 0.0001")
        geom.set("condim", "1")
    for wheel in ("link_left_wheel", "link_right_wheel"):
        for geom in _find(base, wheel).findall("geom"):
            # The tyre as a cylinder about the wheel's axle (the mesh hull rolls on corners).
            for key in ("mesh", "pos", "quat"):
                geom.attrib.pop(key, None)
            geom.set("type", "cylinder")
            geom.set("size", f"{WHEEL_RADIUS} 0.012")
            geom.set("friction", "1.2 0.01 0.001")


def _gripper_pads(base: ET.Element) -> None:
    for side in ("left", "right"):
        for geom in _find(base, f"link_gripper_fingertip_{side}").findall("geom"):
            geom.set("friction", "1.5 0.02 0.002")
            geom.set("condim", "4")
            geom.set("solref", "0.005 1")


def _cameras(base: ET.Element) -> None:
    """MuJoCo cameras look along -z with +y up; ROS optical frames look along +z with
    +y down: a half turn about x. The head D435i is mounted sideways on Stretch, so its
    image is sideways, as on the robot."""
    for body_name, camera, fovy in (
        ("camera_color_optical_frame", HEAD_CAMERA, 42.5),  # D435i colour: 69 x 42.5 degrees
        ("gripper_camera_color_optical_frame", GRIPPER_CAMERA, 58.0),  # D405: 87 x 58 degrees
    ):
        ET.SubElement(_find(base, body_name), "camera", name=camera, quat="0 1 0 0", fovy=str(fovy))
