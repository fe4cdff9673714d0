"""The demo's tasks and the names the scripted policy recognises in an instruction.

The two tasks are chosen against the built-in apartment world (``apartment_spec``):
the red cup sits 0.91 m from the default parking spot at the kitchen table (the arm
reaches 0.75 m), so fetching it from the table first fails and is then recovered by
approaching the cup itself; the green bottle is 0.81 m from where the robot stands
at the coffee table after task 1, so the same lesson saves the second task a failure.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

__all__ = [
    "DEMO_TASKS",
    "DemoTask",
    "FetchGoal",
    "Vocabulary",
    "apartment_vocabulary",
    "matching_objects",
    "parse_fetch_goal",
]


@dataclass(frozen=True)
class DemoTask:
    """One task of the demo: the instruction sent to the harness and what it should achieve."""

    title: str
    instruction: str
    object_id: str
    target: str
    operator_answer: str | None = None
    """What the demo runner answers when the robot asks (``harness-ros answer``)."""


DEMO_TASKS: tuple[DemoTask, ...] = (
    DemoTask(
        title="fetch a cup (two match, so the robot asks; the red one needs a closer approach)",
        instruction="Fetch a cup from the kitchen and put it on the coffee table.",
        object_id="red_cup",
        target="coffee_table",
        operator_answer="The red cup, from the kitchen table.",
    ),
    DemoTask(
        title="fetch the green bottle (a similar task that benefits from the lesson)",
        instruction="Fetch the green bottle from the coffee table and put it on the kitchen table.",
        object_id="green_bottle",
        target="kitchen_table",
    ),
)


@dataclass(frozen=True)
class Vocabulary:
    """Object and surface ids of a world (snake_case, as the sim's actions take them)."""

    objects: tuple[str, ...]
    surfaces: tuple[str, ...]
    places: tuple[tuple[str, str], ...] = ()
    """(object id, the surface it starts on)."""


_KINDS: dict[str, tuple[str, ...]] = {
    "cup": ("cup", "mug"),
    "mug": ("cup", "mug"),
    "drink": ("cup", "mug", "bottle"),
    "bottle": ("bottle",),
}
"""A word a person uses for a kind of object -> the id endings it can mean."""


def matching_objects(instruction: str, vocabulary: Vocabulary | None = None) -> list[str]:
    """Objects an instruction may mean by a kind ("a cup": red_cup and blue_mug) when it
    names none by id; several matches make the instruction ambiguous."""
    vocabulary = vocabulary or apartment_vocabulary()
    words = set(re.findall(r"[a-z]+", instruction.lower()))
    endings = {ending for word in words for ending in _KINDS.get(word, ())}
    return [obj for obj in vocabulary.objects if obj.rsplit("_", 1)[-1] in endings]


@cache
def apartment_vocabulary() -> Vocabulary:
    """The ids of the built-in apartment world."""
    from harness_ros_sim.sim.spec import apartment_spec

    spec = apartment_spec()
    return Vocabulary(
        objects=tuple(o.id for o in spec.objects),
        surfaces=tuple(b.id for b in spec.boxes if b.kind == "surface"),
        places=tuple((o.id, o.surface) for o in spec.objects),
    )


@dataclass(frozen=True)
class FetchGoal:
    """What a fetch instruction asks for. ``source``/``target`` are None when not said."""

    object_id: str
    source: str | None
    target: str | None


_FROM = re.compile(r"\bfrom\s+(?:the\s+)?$", re.IGNORECASE)
_TO = re.compile(r"\b(?:to|on|onto|in|into|at)\s+(?:the\s+)?$", re.IGNORECASE)


def _mentions(text: str, names: tuple[str, ...]) -> list[tuple[int, int, str]]:
    """(start, end, id) of every mention of an id, written as ``red_cup`` or ``red cup``;
    longest names first, so ``kitchen table`` is not also read as something shorter."""
    found: list[tuple[int, int, str]] = []
    taken: list[tuple[int, int]] = []
    for name in sorted(names, key=len, reverse=True):
        words = r"[\s_-]+".join(re.escape(part) for part in name.split("_"))
        for match in re.finditer(rf"\b{words}\b", text, re.IGNORECASE):
            span = match.span()
            if any(span[0] < end and start < span[1] for start, end in taken):
                continue
            taken.append(span)
            found.append((span[0], span[1], name))
    return sorted(found)


def parse_fetch_goal(instruction: str, vocabulary: Vocabulary | None = None) -> FetchGoal | None:
    """The object to fetch and the surfaces it comes from and goes to; None without an object.

    "from the X" names the source, "to/on/onto/in the Y" the target; two bare surfaces
    are read as source then target, and a single bare one as the target.
    """
    vocabulary = vocabulary or apartment_vocabulary()
    objects = _mentions(instruction, vocabulary.objects)
    if not objects:
        return None
    source: str | None = None
    target: str | None = None
    bare: list[str] = []
    for start, _end, name in _mentions(instruction, vocabulary.surfaces):
        before = instruction[:start]
        if source is None and _FROM.search(before):
            source = name
        elif target is None and _TO.search(before):
            target = name
        else:
            bare.append(name)
    for name in bare:
        if target is None and (source is not None or len(bare) == 1):
            target = name
        elif source is None:
            source = name
        elif target is None:
            target = name
    return FetchGoal(objects[0][2], source, target)
