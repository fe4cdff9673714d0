"""The world-memory evaluation's pure core (issue 48, item 5): moved objects.

A suite is a sequence of fetches in one world. Before each, "someone else" may move an
object (the runner applies ``Fetch.moves`` through the sim's reset/placement service
between episodes); the instruction names the object and where to put it, never where
it is, so the robot must remember, ``recall_object``, notice a stale entry or search.
The two arms (world memory on / off) run the same suite (same seeds).

Per episode ``world_metrics`` reads the task's events, WORLD.md after it and the sim's
ground truth: the fetch done (ground truth), ``navigate_to`` calls and turns, stale
entries detected, and world facts contradicted by ground truth (a ``confirmed`` entry
whose place is not the object's: must be 0). No ROS, no I/O.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from harness_ros.memory.world import WorldDocument
from harness_ros.memory.world_contracts import GRIPPER
from harness_ros_sim.sim.spec import WorldSpec, apartment_spec

__all__ = [
    "Fetch",
    "WorldArmSummary",
    "WorldEpisode",
    "moved_object_suite",
    "summarize_world_arm",
    "world_metrics",
]

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


@dataclass(frozen=True)
class WorldEpisode:
    fetch_done: bool
    navigate_calls: int
    turns: int
    stale_detected: int
    contradicted: tuple[str, ...]
    """``confirmed`` WORLD.md entries the ground truth contradicts (name: remembered vs true)."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "fetch_done": self.fetch_done,
            "navigate_calls": self.navigate_calls,
            "turns": self.turns,
            "stale_detected": self.stale_detected,
            "contradicted": list(self.contradicted),
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
    fetch: Fetch, events: Iterable[Mapping[str, Any]], world_text: str | None, ground_truth: Mapping[str, Any]
) -> WorldEpisode:
    """One episode's figures from its events, WORLD.md after it, and the ground truth at its end."""
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
    contradicted = []
    for entry in WorldDocument.parse(world_text).objects():
        true = _true_place(entry.name, ground_truth)
        if entry.state == "confirmed" and true is not None and entry.where != true:
            contradicted.append(f"{entry.name}: remembered {entry.where}, true {true}")
    done = _true_place(fetch.object_id, ground_truth) == fetch.target
    return WorldEpisode(done, navigate, turns, stale, tuple(contradicted))


@dataclass(frozen=True)
class WorldArmSummary:
    arm: str
    episodes: int
    fetches_done: int
    navigate_per_fetch: float | None
    turns_per_fetch: float | None
    stale_detected: int
    contradicted: int

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
    )
