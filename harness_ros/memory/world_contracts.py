"""World memory contracts: entries of WORLD.md, what changed, what is wrong with a line.

Pure data (no I/O, no rclpy). ``harness_ros.memory.world`` reads, folds and writes them.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Literal

__all__ = [
    "CATEGORIES",
    "GRIPPER",
    "PLACE_RADIUS_M",
    "RECALL_OBJECT",
    "ROBOT",
    "STATES",
    "Pose",
    "WorldChange",
    "WorldEntry",
    "WorldFactEntry",
    "WorldProblem",
    "WorldTools",
]

STATES = ("confirmed", "stale", "unverified")
"""``confirmed``: an evaluator-confirmed action (or the operator's words) put it there;
``stale``: evidence that it is no longer there; ``unverified``: a sighting, or the robot
moved without a confirmed stop."""
CATEGORIES = ("object", "place")
GRIPPER = "gripper"
"""The ``where`` of an object the robot holds."""
ROBOT = "robot"
"""The place entry that says where the robot's base is."""
RECALL_OBJECT = "recall_object"
"""The built-in tool that reads the world memory: a read of memory, never a ledger's tool."""

PLACE_RADIUS_M = 0.5
"""How near (metres, in x and y) a confirmed pose navigation must stop to a ``## Places``
entry's pose to be at that place (``WorldTools.place_radius_m``)."""

State = Literal["confirmed", "stale", "unverified"]


@dataclass(frozen=True)
class Pose:
    """A position (and heading) in a named frame, as a tool result reported it."""

    x: float
    y: float
    yaw: float | None = None
    frame: str = "map"

    def render(self) -> str:
        values = [f"{self.x:.2f}", f"{self.y:.2f}"] + ([] if self.yaw is None else [f"{self.yaw:.2f}"])
        return " ".join([*values, self.frame])


@dataclass(frozen=True)
class WorldEntry:
    """One object or place of WORLD.md."""

    category: str
    """``object`` or ``place`` (the section it is in)."""
    name: str
    kind: str = ""
    """What it is (``cup``, ``surface``, ``area``): a goal naming a kind matches it."""
    where: str = ""
    """The surface or place it is on or in (``gripper`` while held); for ``robot`` its place."""
    pose: Pose | None = None
    state: str = "unverified"
    confirmed: float | None = None
    """When the evidence was recorded (seconds since the epoch, UTC)."""
    evidence: str = ""
    """Which tool run and verdict, the operator's words, or a sighting."""
    line: int | None = None
    """1-based line in WORLD.md it was read from (None: not written yet)."""

    def with_(self, **changes: Any) -> WorldEntry:
        return replace(self, **changes)


@dataclass(frozen=True)
class WorldProblem:
    """A WORLD.md line that is not a valid entry: reported, kept byte for byte, not used."""

    path: str
    line: int
    field: str
    message: str

    def describe(self) -> str:
        return f"{self.path} line {self.line}: field {self.field!r}: {self.message} (line kept, not used)"


@dataclass(frozen=True)
class WorldChange:
    """What one piece of evidence changed (the report and the model are told)."""

    name: str
    change: str
    """``added``, ``moved``, ``confirmed``, ``stale`` or ``unverified``."""
    where: str
    state: str
    evidence: str
    step: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "change": self.change,
            "where": self.where,
            "state": self.state,
            "evidence": self.evidence,
            "step": self.step,
        }


@dataclass(frozen=True)
class WorldTools:
    """Which tools (and which of their arguments and result fields) are evidence."""

    navigate: str = "navigate_to"
    navigate_target: str = "target"
    pick: str = "pick_object"
    pick_object: str = "object_id"
    place: str = "place_object"
    place_surface: str = "surface_id"
    placed_field: str = "placed_object_id"
    pose_fields: tuple[str, str, str] = ("final_x", "final_y", "final_yaw")
    """A navigation result's final pose: x, y in metres, yaw in radians (the sim's
    ``navigate_to``; a pose navigation's server when it gives them)."""
    frame: str = "map"
    navigate_pose: str = "navigate_to_pose"
    """Navigation by pose (Nav2's NavigateToPose: the ``navigate_to_pose`` preset of the real
    and the physics Stretch 3, and ``config/robot_nav2.yaml``)."""
    navigate_pose_arguments: tuple[str, str, str] = ("x", "y", "yaw")
    """Its requested pose: x, y in metres in ``frame``; yaw in ``navigate_pose_yaw_unit``."""
    navigate_pose_yaw_unit: Literal["deg", "rad"] = "deg"
    """The preset's ``yaw`` is in degrees; WORLD.md's poses are in radians."""
    place_radius_m: float = PLACE_RADIUS_M
    """A confirmed pose navigation is at the nearest place with a pose within this radius."""


@dataclass(frozen=True)
class WorldFactEntry:
    """A world entry the consolidator proposes from the operator's words (as given: the
    model may send anything; ``world_operator.decide_world_entries`` names what is wrong)."""

    name: Any
    where: Any
    source: Any
    """The operator's words, quoted exactly (instruction, revision or answer)."""
    confidence: Any
    kind: Any = None
