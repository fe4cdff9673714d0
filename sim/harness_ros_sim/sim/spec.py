"""What a simulated world is made of: areas, surfaces, obstacles, objects and the robot.

A world is data (``WorldSpec``): the built-in ``apartment_spec()`` or a YAML file
with the same keys (``load_world_spec``; ``config/sim_world.yaml`` is the apartment).
Frame: the map, x east, y north, metres, yaw counter-clockwise from +x (REP 103).
Every footprint is an axis-aligned box; objects are upright cylinders.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from harness_ros.errors import ConfigError

__all__ = [
    "AreaSpec",
    "BoxSpec",
    "ObjectSpec",
    "RobotSpec",
    "WorldSpec",
    "apartment_spec",
    "load_world_spec",
    "world_spec_by_name",
]

Rgb = tuple[int, int, int]


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class AreaSpec(_Spec):
    """A named place: a navigation pose and the region that counts as inside it."""

    name: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    x: float
    y: float
    yaw: float = 0.0
    region: tuple[float, float, float, float] = Field(description="x_min, y_min, x_max, y_max")
    floor_rgb: Rgb = (200, 200, 200)


class BoxSpec(_Spec):
    """A box standing on the floor: a wall, an obstacle, or a surface objects rest on."""

    id: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    kind: Literal["wall", "obstacle", "surface"]
    x: float
    y: float
    size_x: float = Field(gt=0)
    size_y: float = Field(gt=0)
    height: float = Field(gt=0)
    rgb: Rgb = (150, 150, 150)

    @property
    def bounds(self) -> tuple[float, float, float, float]:
        return (
            self.x - self.size_x / 2,
            self.y - self.size_y / 2,
            self.x + self.size_x / 2,
            self.y + self.size_y / 2,
        )


class ObjectSpec(_Spec):
    """A graspable upright cylinder resting on a surface."""

    id: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    colour: str = Field(description="Colour name as a person would say it.")
    rgb: Rgb
    x: float
    y: float
    radius: float = Field(gt=0, le=0.2)
    height: float = Field(gt=0, le=0.5)
    surface: str
    slippery: bool = Field(default=False, description="Grasps slip with the world's slip probability.")


class RobotSpec(_Spec):
    """The mobile manipulator: start pose, footprint, reach and speeds."""

    x: float
    y: float
    yaw: float = 0.0
    footprint_radius_m: float = Field(default=0.3, gt=0)
    reach_m: float = Field(default=0.75, gt=0, description="Arm reach from the base centre (2D).")
    gripper_x: float = Field(default=0.45, description="Gripper ahead of the base centre, arm ready.")
    gripper_z: float = Field(default=0.85, description="Gripper height, arm ready.")
    linear_speed: float = Field(default=0.5, gt=0, description="m/s")
    angular_speed: float = Field(default=1.2, gt=0, description="rad/s")
    view_range_m: float = Field(default=4.0, gt=0, description="Objects farther than this are not seen.")
    view_fov_deg: float = Field(default=80.0, gt=0, lt=180, description="Horizontal field of view.")


class WorldSpec(_Spec):
    name: str
    areas: tuple[AreaSpec, ...] = Field(description="Earlier areas win where regions overlap.")
    boxes: tuple[BoxSpec, ...]
    objects: tuple[ObjectSpec, ...]
    robot: RobotSpec

    @model_validator(mode="after")
    def _consistent(self) -> WorldSpec:
        names = [a.name for a in self.areas] + [b.id for b in self.boxes] + [o.id for o in self.objects]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"duplicate names: {', '.join(duplicates)}")
        surfaces = {b.id: b for b in self.boxes if b.kind == "surface"}
        for obj in self.objects:
            surface = surfaces.get(obj.surface)
            if surface is None:
                raise ValueError(f"object {obj.id!r}: unknown surface {obj.surface!r}")
            x0, y0, x1, y1 = surface.bounds
            if not (x0 < obj.x < x1 and y0 < obj.y < y1):
                raise ValueError(f"object {obj.id!r} is not on surface {obj.surface!r}")
        return self

    def surface(self, surface_id: str) -> BoxSpec | None:
        return next((b for b in self.boxes if b.kind == "surface" and b.id == surface_id), None)


def _wall(wall_id: str, x0: float, y0: float, x1: float, y1: float) -> BoxSpec:
    return BoxSpec(
        id=wall_id,
        kind="wall",
        # Rounded so the YAML form of the world stays readable.
        x=round((x0 + x1) / 2, 6),
        y=round((y0 + y1) / 2, 6),
        size_x=round(x1 - x0, 6),
        size_y=round(y1 - y0, 6),
        height=2.2,
        rgb=(226, 221, 208),
    )


def apartment_spec() -> WorldSpec:
    """The built-in world: a 10 x 6 m flat with an open kitchen, a living room and an office.

    The office is closed by walls with a 1 m doorway, so a straight drive from the
    kitchen to the office is blocked by ``office_wall_west`` (go to ``doorway`` first).
    ``red_cup`` sits 0.35 m inside the kitchen table's east edge: a robot parked at the
    table's default standoff sees it ~0.91 m away (out of reach); ``navigate_to('red_cup')``
    parks close enough. ``green_bottle`` is slippery.
    """
    walls = (
        _wall("wall_south", -0.05, -0.05, 10.05, 0.05),
        _wall("wall_north", -0.05, 5.95, 10.05, 6.05),
        _wall("wall_west", -0.05, 0.05, 0.05, 5.95),
        _wall("wall_east", 9.95, 0.05, 10.05, 5.95),
        _wall("office_wall_west", 5.95, 4.05, 6.05, 5.95),
        _wall("office_wall_south_a", 5.95, 3.95, 7.5, 4.05),
        _wall("office_wall_south_b", 8.5, 3.95, 9.95, 4.05),
    )
    furniture = (
        BoxSpec(
            id="kitchen_table",
            kind="surface",
            x=2.0,
            y=3.0,
            size_x=0.8,
            size_y=1.2,
            height=0.75,
            rgb=(139, 94, 60),
        ),
        BoxSpec(
            id="kitchen_counter",
            kind="surface",
            x=0.35,
            y=3.0,
            size_x=0.6,
            size_y=2.4,
            height=0.9,
            rgb=(235, 235, 240),
        ),
        BoxSpec(
            id="coffee_table",
            kind="surface",
            x=5.0,
            y=0.4,
            size_x=1.0,
            size_y=0.5,
            height=0.45,
            rgb=(90, 60, 40),
        ),
        BoxSpec(
            id="office_desk",
            kind="surface",
            x=7.0,
            y=5.6,
            size_x=1.2,
            size_y=0.6,
            height=0.75,
            rgb=(170, 130, 90),
        ),
        BoxSpec(
            id="office_shelf",
            kind="surface",
            x=9.75,
            y=5.0,
            size_x=0.4,
            size_y=1.2,
            height=1.0,
            rgb=(120, 120, 130),
        ),
        BoxSpec(
            id="storage_box",
            kind="obstacle",
            x=8.8,
            y=1.2,
            size_x=0.6,
            size_y=0.6,
            height=0.5,
            rgb=(196, 150, 92),
        ),
    )
    objects = (
        ObjectSpec(
            id="red_cup", colour="red", rgb=(220, 30, 30), x=2.05, y=3.1, radius=0.04, height=0.1,
            surface="kitchen_table",
        ),
        ObjectSpec(
            id="blue_mug", colour="blue", rgb=(30, 70, 220), x=0.45, y=2.4, radius=0.045, height=0.1,
            surface="kitchen_counter",
        ),
        ObjectSpec(
            id="green_bottle", colour="green", rgb=(30, 170, 60), x=5.3, y=0.45, radius=0.035,
            height=0.25, surface="coffee_table", slippery=True,
        ),
        ObjectSpec(
            id="yellow_sponge", colour="yellow", rgb=(240, 210, 30), x=7.2, y=5.45, radius=0.05,
            height=0.04, surface="office_desk",
        ),
    )  # fmt: skip
    # The kitchen's point lies south-west of the table, below the aisle between the counter
    # and the table, so a base parked in the aisle (beside the counter, west of the table)
    # can drive out in a straight line, and one east of the table can drive to it; at
    # (2.5, 1.5) the table's corner blocked every way out of the aisle (eval run L).
    areas = (
        AreaSpec(
            name="doorway", x=8.0, y=3.4, yaw=math.pi / 2, region=(7.5, 3.0, 8.5, 4.05),
            floor_rgb=(180, 170, 150),
        ),
        AreaSpec(
            name="office", x=8.0, y=4.9, yaw=0.0, region=(6.0, 4.0, 10.0, 6.0), floor_rgb=(120, 135, 160),
        ),
        AreaSpec(
            name="kitchen", x=1.2, y=1.0, yaw=math.pi / 2, region=(0.0, 0.0, 4.0, 6.0),
            floor_rgb=(225, 215, 190),
        ),
        AreaSpec(
            name="living_room", x=5.0, y=1.5, yaw=math.pi, region=(4.0, 0.0, 10.0, 6.0),
            floor_rgb=(176, 132, 92),
        ),
    )  # fmt: skip
    return WorldSpec(
        name="apartment",
        areas=areas,
        boxes=walls + furniture,
        objects=objects,
        robot=RobotSpec(x=5.0, y=1.5, yaw=math.pi),
    )


def load_world_spec(path: str | Path) -> WorldSpec:
    """Load a world from YAML (the keys of ``WorldSpec``); errors name the file and key."""
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as err:
        raise ConfigError(f"Cannot read world file {str(path)!r}: {err.strerror}") from None
    except yaml.YAMLError as err:
        raise ConfigError(f"Invalid world file {str(path)!r}: not valid YAML: {err}") from None
    try:
        return WorldSpec.model_validate(data)
    except ValidationError as err:
        lines = [f"Invalid world file {str(path)!r}:"]
        for item in err.errors():
            key = ".".join(str(part) for part in item["loc"]) or "<root>"
            lines.append(f"  {key}: {'unknown key' if item['type'] == 'extra_forbidden' else item['msg']}")
        raise ConfigError("\n".join(lines)) from None


_BUILTIN = {"apartment": apartment_spec}


def world_spec_by_name(name_or_path: str) -> WorldSpec:
    """A built-in world by name (``apartment``) or a YAML world file by path."""
    builder = _BUILTIN.get(name_or_path)
    if builder is not None:
        return builder()
    if name_or_path.endswith((".yaml", ".yml")) or Path(name_or_path).is_file():
        return load_world_spec(name_or_path)
    known = ", ".join(sorted(_BUILTIN))
    raise ConfigError(f"Unknown world {name_or_path!r}: use one of {known} or a path to a YAML world file")
