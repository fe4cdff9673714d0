"""The world-memory evaluation's pure core (issue 48, item 5): moved objects.

A suite is a sequence of fetches in one world. Before each, "someone else" may move an
object (the runner applies ``Fetch.moves`` through the sim's reset/placement service
between episodes); the instruction names the object and where to put it, never where
it is, so the robot must remember, ``recall_object``, notice a stale entry or search.
The two arms (world memory on / off) run the same suite (same seeds).

Per episode ``world_metrics`` reads the task's events, WORLD.md after it and the sim's
ground truth: the fetch done (ground truth), ``navigate_to`` calls and turns, stale
entries detected, and world facts contradicted by ground truth (a ``confirmed`` entry
whose place is not the object's, confirmed after someone else last moved it: must be
0; one confirmed before that move is ``outdated``, what stale detection is for).

Both arms start every episode from the same world (``placements_before``,
``placed_world``): the suite's moves so far and every earlier fetch done, whatever the
arm did; what differs from how the arm left the world was moved by someone else
(``moved_by_others``). No ROS, no I/O.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from harness_ros.memory.world import WorldDocument
from harness_ros.memory.world_contracts import GRIPPER
from harness_ros_sim.sim.spec import ObjectSpec, WorldSpec, apartment_spec
from harness_ros_sim.sim.world import SURFACE_STANDOFF_M, World

__all__ = [
    "WORLD_ARMS",
    "WORLD_OFF",
    "WORLD_ON",
    "Fetch",
    "WorldArmSummary",
    "WorldEpisode",
    "moved_by_others",
    "moved_object_suite",
    "placed_world",
    "placements_before",
    "render_world_table",
    "summarize_world_arm",
    "world_metrics",
]

WORLD_ON = "world_on"
WORLD_OFF = "world_off"
WORLD_ARMS = (WORLD_ON, WORLD_OFF)
"""The arms: ``memory.world`` true / false; both keep one memory folder of lessons."""
_SPACING_M = 0.15

SURFACES = ("kitchen_table", "kitchen_counter", "coffee_table", "office_desk", "office_shelf")
MOVE_PROBABILITY = 0.5
_TEMPLATES = (
    "Please bring the {object} to the {target}.",
    "Could you put the {object} on the {target}?",
    "Fetch the {object} and leave it on the {target}.",
)


@dataclass(frozen=True)
class Fetch:
    """One episode: the moves someone else makes first, then the instruction."""

    episode: int
    moves: tuple[tuple[str, str], ...]
    """(object id, surface id) placed by someone else before the task (not by the robot)."""
    object_id: str
    target: str
    instruction: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "episode": self.episode,
            "moves": [list(move) for move in self.moves],
            "object_id": self.object_id,
            "target": self.target,
            "instruction": self.instruction,
        }


def moved_object_suite(seed: int, episodes: int, base: WorldSpec | None = None) -> tuple[Fetch, ...]:
    """``episodes`` fetches, seeded: each names an object and a target surface other than
    where the object is; with ``MOVE_PROBABILITY`` someone else first moves the object the
    robot will be asked for (or another one) to a surface the robot did not put it on."""
    world = base or apartment_spec()
    where = {spec.id: spec.surface for spec in world.objects}
    rng = random.Random(seed)
    fetches = []
    for episode in range(episodes):
        moves: list[tuple[str, str]] = []
        if episode > 0 and rng.random() < MOVE_PROBABILITY:
            moved = rng.choice(sorted(where))
            surface = rng.choice([s for s in SURFACES if s != where[moved]])
            moves.append((moved, surface))
            where[moved] = surface
        object_id = rng.choice(sorted(where))
        target = rng.choice([s for s in SURFACES if s != where[object_id]])
        text = _TEMPLATES[episode % len(_TEMPLATES)]
        instruction = text.format(object=object_id.replace("_", " "), target=target.replace("_", " "))
        fetches.append(Fetch(episode, tuple(moves), object_id, target, instruction))
        where[object_id] = target  # where it is when the robot succeeds (the next one starts so)
    return tuple(fetches)


def placements_before(fetches: Sequence[Fetch], index: int, base: WorldSpec | None = None) -> dict[str, str]:
    """Each object's surface when fetch ``index`` starts: the base world, every earlier
    fetch done (by the robot or, where it failed, by someone else) and all moves up to
    and including this fetch's. The same for both arms."""
    world = base or apartment_spec()
    where = {spec.id: spec.surface for spec in world.objects}
    for fetch in fetches[:index]:
        where.update(fetch.moves)
        where[fetch.object_id] = fetch.target
    where.update(fetches[index].moves)
    return where


def placed_world(where: Mapping[str, str], base: WorldSpec | None = None) -> WorldSpec:
    """``base`` with each object on ``where[object]``. An object on its base surface keeps
    its base position; another is put where the robot would place it: on the side of the
    surface the robot approaches from its start, inside the edge, ``_SPACING_M`` from the
    objects already there (deterministic, so both arms get the same world file)."""
    world = base or apartment_spec()
    unknown = sorted(set(where) - {spec.id for spec in world.objects})
    if unknown:
        raise ValueError(f"placements name unknown objects: {', '.join(unknown)}")
    rehearsal = World(world, slip_probability=0.0)
    kept = [spec for spec in world.objects if where.get(spec.id, spec.surface) == spec.surface]
    placed: dict[str, ObjectSpec] = {spec.id: spec for spec in kept}
    for spec in sorted(world.objects, key=lambda o: o.id):
        if spec.id in placed:
            continue
        surface = world.surface(where[spec.id])
        if surface is None:
            raise ValueError(f"object {spec.id!r}: unknown surface {where[spec.id]!r}")
        approach = rehearsal._surface_approach(surface, SURFACE_STANDOFF_M)
        ax, ay = (approach.x, approach.y) if approach is not None else (surface.x, surface.y)
        x0, y0, x1, y1 = surface.bounds
        inset = min(max(0.1, spec.radius + 0.02), surface.size_x / 2, surface.size_y / 2)
        px, py = min(max(ax, x0 + inset), x1 - inset), min(max(ay, y0 + inset), y1 - inset)
        along_x = approach is None or abs(ay - surface.y) > abs(ax - surface.x)  # the edge runs along x
        others = [o for o in placed.values() if o.surface == surface.id]
        for step in (0, 1, -1, 2, -2, 3, -3, 4, -4):
            x = px + step * _SPACING_M if along_x else px
            y = py if along_x else py + step * _SPACING_M
            inside = x0 + inset <= x <= x1 - inset and y0 + inset <= y <= y1 - inset
            if inside and all(math.hypot(o.x - x, o.y - y) >= _SPACING_M for o in others):
                px, py = x, y
                break
        placed[spec.id] = spec.model_copy(
            update={"x": round(px, 3), "y": round(py, 3), "surface": surface.id}
        )
    objects = tuple(placed[spec.id] for spec in world.objects)
    return WorldSpec.model_validate({**world.model_dump(), "objects": [o.model_dump() for o in objects]})


def moved_by_others(left: Mapping[str, Any], where: Mapping[str, str]) -> tuple[str, ...]:
    """Objects whose place in ``where`` (the next episode's world) differs from the ground
    truth ``left`` the previous episode ended with (in the gripper counts as a place)."""
    return tuple(sorted(name for name, surface in where.items() if _true_place(name, left) != surface))


@dataclass(frozen=True)
class WorldEpisode:
    fetch_done: bool
    navigate_calls: int
    turns: int
    stale_detected: int
    contradicted: tuple[str, ...]
    """``confirmed`` WORLD.md entries the ground truth contradicts (name: remembered vs true)."""
    outdated: tuple[str, ...] = ()
    """``confirmed`` entries of objects someone else moved after they were confirmed."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "fetch_done": self.fetch_done,
            "navigate_calls": self.navigate_calls,
            "turns": self.turns,
            "stale_detected": self.stale_detected,
            "contradicted": list(self.contradicted),
            "outdated": list(self.outdated),
        }


def _true_place(name: str, ground_truth: Mapping[str, Any]) -> str | None:
    holding = (ground_truth.get("gripper") or {}).get("holding")
    if holding == name:
        return GRIPPER
    objects = ground_truth.get("objects")
    entry = objects.get(name) if isinstance(objects, Mapping) else None
    on = entry.get("on") if isinstance(entry, Mapping) else None
    return str(on) if on is not None else None


def world_metrics(
    fetch: Fetch,
    events: Iterable[Mapping[str, Any]],
    world_text: str | None,
    ground_truth: Mapping[str, Any],
    moved_at: Mapping[str, float] | None = None,
) -> WorldEpisode:
    """One episode's figures from its events, WORLD.md after it, and the ground truth at its
    end. ``moved_at``: when someone else last moved each object (seconds since the epoch);
    a wrong ``confirmed`` entry older than that move is outdated, not contradicted."""
    navigate = turns = stale = 0
    for event in events:
        kind, data = event.get("type"), event.get("data") or {}
        if kind == "turn":
            turns += 1
        elif kind == "tool_result" and data.get("tool") == "navigate_to" and not data.get("refusal"):
            navigate += 1
        elif kind == "memory_consolidation":
            world = data.get("world")
            changes = world.get("changes") if isinstance(world, Mapping) else None
            stale += sum(
                1
                for change in changes or []
                if isinstance(change, Mapping) and change.get("change") == "stale"
            )
    contradicted: list[str] = []
    outdated: list[str] = []
    for entry in WorldDocument.parse(world_text).objects():
        true = _true_place(entry.name, ground_truth)
        if entry.state == "confirmed" and true is not None and entry.where != true:
            fact = f"{entry.name}: remembered {entry.where}, true {true}"
            moved = (moved_at or {}).get(entry.name)
            # WORLD.md keeps whole seconds: an entry confirmed in the second of the move counts as after it
            older = moved is not None and entry.confirmed is not None and entry.confirmed < math.floor(moved)
            (outdated if older else contradicted).append(fact)
    done = _true_place(fetch.object_id, ground_truth) == fetch.target
    return WorldEpisode(done, navigate, turns, stale, tuple(contradicted), tuple(outdated))


@dataclass(frozen=True)
class WorldArmSummary:
    arm: str
    episodes: int
    fetches_done: int
    navigate_per_fetch: float | None
    turns_per_fetch: float | None
    stale_detected: int
    contradicted: int
    outdated: int = 0

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def summarize_world_arm(arm: str, episodes: Sequence[WorldEpisode]) -> WorldArmSummary:
    """Per arm: fetches done, navigate_to calls and turns per completed fetch (over all
    episodes' calls), stale entries detected, world facts contradicted (must be 0)."""
    done = sum(1 for episode in episodes if episode.fetch_done)
    navigate = sum(episode.navigate_calls for episode in episodes)
    turns = sum(episode.turns for episode in episodes)
    return WorldArmSummary(
        arm=arm,
        episodes=len(episodes),
        fetches_done=done,
        navigate_per_fetch=round(navigate / done, 2) if done else None,
        turns_per_fetch=round(turns / done, 2) if done else None,
        stale_detected=sum(episode.stale_detected for episode in episodes),
        contradicted=sum(len(episode.contradicted) for episode in episodes),
        outdated=sum(len(episode.outdated) for episode in episodes),
    )


def render_world_table(summaries: Sequence[WorldArmSummary]) -> str:
    """The per-arm table (Markdown): fetches, navigate_to and turns per completed fetch,
    stale entries detected, facts contradicted by ground truth (must be 0), outdated."""

    def number(value: float | None) -> str:
        return "-" if value is None else f"{value:g}"

    lines = [
        "| arm | episodes | fetches done | navigate_to / fetch | turns / fetch | stale detected "
        "| contradicted (must be 0) | outdated by others' moves |",
        "|---|---|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {s.arm} | {s.episodes} | {s.fetches_done} | {number(s.navigate_per_fetch)} | "
        f"{number(s.turns_per_fetch)} | {s.stale_detected} | {s.contradicted} | {s.outdated} |"
        for s in summaries
    ]
    return "\n".join(lines)
