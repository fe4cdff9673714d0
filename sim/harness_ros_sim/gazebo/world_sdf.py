"""Write a Gazebo world (SDF) from the Python sim's ``WorldSpec``, so the two never drift.

    python -m harness_ros_sim.gazebo.world_sdf                 # rewrite sim/worlds/apartment.sdf
    python -m harness_ros_sim.gazebo.world_sdf --check         # exit 1 if it is out of date
    python -m harness_ros_sim.gazebo.world_sdf --world my.yaml --output worlds/my.sdf

Every box of the spec (walls, obstacles, surfaces) becomes a static model named by its
id, standing on the floor; every object becomes a dynamic cylinder model named by its
id, resting on its surface, with a ``PosePublisher`` that reports its world pose on
``pose_topic(id)`` (bridged to ROS as geometry_msgs/PoseStamped in the world frame).
Areas have no geometry in Gazebo; they are names the manipulation node resolves.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from xml.sax.saxutils import escape

from harness_ros_sim.sim.spec import BoxSpec, ObjectSpec, WorldSpec, world_spec_by_name

__all__ = [
    "OBJECT_DENSITY_KG_M3",
    "REST_GAP_M",
    "SDF_VERSION",
    "WORLD_SYSTEMS",
    "main",
    "pose_topic",
    "world_sdf",
]

SDF_VERSION = "1.11"
"""SDFormat 1.11 is what sdformat14 (Gazebo Harmonic) parses natively."""


def pose_topic(model: str) -> str:
    """Gazebo topic of a model's world pose (PosePublisher, gz.msgs.Pose): one per model,
    because ROS has no pip wheel of tf2_msgs for a Pose_V -> TFMessage bridge to test."""
    return f"/harness/pose/{model}"


REST_GAP_M = 0.002
"""Objects start this far above their surface so they never start in contact and jump."""

OBJECT_DENSITY_KG_M3 = 400.0
"""A light, hollow-ish household object: a 0.04 x 0.1 m cup weighs ~0.2 kg."""

WORLD_SYSTEMS: tuple[tuple[str, str], ...] = (
    ("gz-sim-physics-system", "gz::sim::systems::Physics"),
    ("gz-sim-user-commands-system", "gz::sim::systems::UserCommands"),
    ("gz-sim-scene-broadcaster-system", "gz::sim::systems::SceneBroadcaster"),
    ("gz-sim-sensors-system", "gz::sim::systems::Sensors"),
)
"""(filename, name) of the world's systems; Sensors renders the cameras and the lidar."""

_FRICTION = {False: 1.0, True: 0.3}
"""Coulomb friction of an object (by ``slippery``): slippery objects slide more."""


def _f(value: float) -> str:
    """A number as SDF text: fixed precision, no '-0', no trailing zeros."""
    text = f"{value:.6f}".rstrip("0").rstrip(".")
    return "0" if text in {"-0", ""} else text


def _rgba(rgb: tuple[int, int, int]) -> str:
    return " ".join(_f(c / 255) for c in rgb) + " 1"


def _material(rgb: tuple[int, int, int], indent: str) -> str:
    colour = _rgba(rgb)
    return (
        f"{indent}<material>\n"
        f"{indent}  <ambient>{colour}</ambient>\n"
        f"{indent}  <diffuse>{colour}</diffuse>\n"
        f"{indent}</material>\n"
    )


def _box_model(box: BoxSpec) -> str:
    size = f"{_f(box.size_x)} {_f(box.size_y)} {_f(box.height)}"
    geometry = f"<geometry><box><size>{size}</size></box></geometry>"
    return (
        f'    <model name="{escape(box.id)}">\n'
        f"      <!-- {box.kind} -->\n"
        "      <static>true</static>\n"
        f"      <pose>{_f(box.x)} {_f(box.y)} {_f(box.height / 2)} 0 0 0</pose>\n"
        '      <link name="link">\n'
        f'        <collision name="collision">{geometry}</collision>\n'
        f'        <visual name="visual">\n'
        f"          {geometry}\n"
        f"{_material(box.rgb, '          ')}"
        "        </visual>\n"
        "      </link>\n"
        "    </model>\n"
    )


def _object_model(obj: ObjectSpec, surface: BoxSpec) -> str:
    r, h = obj.radius, obj.height
    mass = OBJECT_DENSITY_KG_M3 * math.pi * r * r * h
    ixx = mass * (3 * r * r + h * h) / 12
    izz = mass * r * r / 2
    geometry = f"<geometry><cylinder><radius>{_f(r)}</radius><length>{_f(h)}</length></cylinder></geometry>"
    mu = _f(_FRICTION[obj.slippery])
    return (
        f'    <model name="{escape(obj.id)}">\n'
        f"      <!-- {escape(obj.colour)} object on {surface.id}{', slippery' if obj.slippery else ''} -->\n"
        f"      <pose>{_f(obj.x)} {_f(obj.y)} {_f(surface.height + REST_GAP_M + h / 2)} 0 0 0</pose>\n"
        '      <link name="link">\n'
        "        <inertial>\n"
        f"          <mass>{_f(mass)}</mass>\n"
        f"          <inertia><ixx>{ixx:.3e}</ixx><iyy>{ixx:.3e}</iyy><izz>{izz:.3e}</izz>"
        "<ixy>0</ixy><ixz>0</ixz><iyz>0</iyz></inertia>\n"
        "        </inertial>\n"
        f'        <collision name="collision">\n'
        f"          {geometry}\n"
        f"          <surface><friction><ode><mu>{mu}</mu><mu2>{mu}</mu2></ode></friction></surface>\n"
        "        </collision>\n"
        f'        <visual name="visual">\n'
        f"          {geometry}\n"
        f"{_material(obj.rgb, '          ')}"
        "        </visual>\n"
        "      </link>\n"
        '      <plugin filename="gz-sim-pose-publisher-system" name="gz::sim::systems::PosePublisher">\n'
        f"        <topic>{pose_topic(obj.id)}</topic>\n"
        "        <publish_link_pose>false</publish_link_pose>\n"
        "        <publish_model_pose>true</publish_model_pose>\n"
        "        <use_pose_vector_msg>false</use_pose_vector_msg>\n"
        "        <update_frequency>10</update_frequency>\n"
        "      </plugin>\n"
        "    </model>\n"
    )


def world_sdf(spec: WorldSpec, *, source: str = "harness_ros_sim.sim.spec") -> str:
    """The SDF text of ``spec``'s world (deterministic: the same spec gives the same bytes)."""
    systems = "".join(
        f'    <plugin filename="{filename}" name="{name}"'
        + ("><render_engine>ogre2</render_engine></plugin>\n" if name.endswith("Sensors") else "/>\n")
        for filename, name in WORLD_SYSTEMS
    )
    half_x = max(b.bounds[2] for b in spec.boxes) + 1.0
    half_y = max(b.bounds[3] for b in spec.boxes) + 1.0
    parts = [
        '<?xml version="1.0"?>\n',
        f"<!-- Generated by harness_ros_sim.gazebo.world_sdf from {escape(source)} ({escape(spec.name)}).\n",
        "     Do not edit: run `python -m harness_ros_sim.gazebo.world_sdf` to regenerate. -->\n",
        f'<sdf version="{SDF_VERSION}">\n',
        f'  <world name="{escape(spec.name)}">\n',
        '    <physics name="1ms" type="ignored">\n',
        "      <max_step_size>0.001</max_step_size>\n",
        "      <real_time_factor>1.0</real_time_factor>\n",
        "    </physics>\n",
        systems,
        "    <gravity>0 0 -9.8</gravity>\n",
        "    <scene>\n",
        "      <ambient>0.6 0.6 0.6 1</ambient>\n",
        "      <background>0.8 0.8 0.8 1</background>\n",
        "    </scene>\n",
        '    <light type="directional" name="sun">\n',
        "      <cast_shadows>true</cast_shadows>\n",
        "      <pose>5 3 10 0 0 0</pose>\n",
        "      <diffuse>0.9 0.9 0.9 1</diffuse>\n",
        "      <specular>0.2 0.2 0.2 1</specular>\n",
        "      <direction>-0.3 0.2 -0.9</direction>\n",
        "    </light>\n",
        '    <model name="ground_plane">\n',
        "      <static>true</static>\n",
        '      <link name="link">\n',
        '        <collision name="collision"><geometry><plane><normal>0 0 1</normal>'
        f"<size>{_f(2 * half_x)} {_f(2 * half_y)}</size></plane></geometry></collision>\n",
        '        <visual name="visual">\n',
        "          <geometry><plane><normal>0 0 1</normal>"
        f"<size>{_f(2 * half_x)} {_f(2 * half_y)}</size></plane></geometry>\n",
        _material((200, 200, 200), "          "),
        "        </visual>\n",
        "      </link>\n",
        "    </model>\n",
    ]
    parts.extend(_box_model(box) for box in spec.boxes)
    for obj in spec.objects:
        surface = spec.surface(obj.surface)
        assert surface is not None  # WorldSpec validates every object's surface
        parts.append(_object_model(obj, surface))
    parts.append("  </world>\n</sdf>\n")
    return "".join(parts)


def default_output(world: str) -> Path:
    """``worlds/<name>.sdf`` in the source tree (next to ``config/``)."""
    name = Path(world).stem if world.endswith((".yaml", ".yml")) else world
    return Path(__file__).resolve().parents[2] / "worlds" / f"{name}.sdf"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Write a Gazebo SDF world from a harness_ros sim world.")
    parser.add_argument("--world", default="apartment", help="built-in world name or YAML world file")
    parser.add_argument("--output", type=Path, help="SDF file to write (default: worlds/<world>.sdf)")
    parser.add_argument("--check", action="store_true", help="exit 1 if the file differs, write nothing")
    args = parser.parse_args(argv)
    spec = world_spec_by_name(args.world)
    output = args.output or default_output(args.world)
    source = "harness_ros_sim.sim.spec" if args.world == spec.name else Path(args.world).name
    text = world_sdf(spec, source=source)
    if args.check:
        current = output.read_text(encoding="utf-8") if output.is_file() else ""
        if current != text:
            sys.stderr.write(f"{output} is out of date: run python -m harness_ros_sim.gazebo.world_sdf\n")
            return 1
        sys.stdout.write(f"{output} is up to date\n")
        return 0
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(text, encoding="utf-8")
    sys.stdout.write(f"wrote {output}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
