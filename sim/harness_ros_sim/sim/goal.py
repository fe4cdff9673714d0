"""Reading a placement goal completely, for the sim's goal check (no ROS).

The sim evaluator confirms a task only against a goal it has read in full: every object
the instruction names ends up with exactly one destination surface, and every word of
the instruction is one the reader understands. The language it reads is small on
purpose:

- placement verbs (put, bring, fetch, leave, ...), articles and politeness words;
- the world's object, surface and area names (``red cup`` or ``red_cup``);
- a destination: "to/on/onto/into/in/at (the) <surface>", "on top of the <surface>";
- a source: "from/off (the) <surface or area>" (read, not judged: the goal is where
  things end up);
- ``it`` for the object named last, and a kind word ("a cup") for the one object of
  that kind the text names;
- "a"/"an" and a kind word when the text names no object of that kind ("Fetch a cup
  from the kitchen ..."): any object of the world of that kind (``Placement.kinds``).

A destination applies to every object named since the last verb or destination
("Put the red cup and the green bottle on the coffee table"). Anything else (a word
it does not know, a negation, "or", "next to", an area as the destination, an object
without a destination or with two) makes the goal unreadable: ``read_goal`` says why,
and the check reports the goal as not judged (the outcome stays unverified), never met.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["GoalReading", "Placement", "read_goal"]

# fmt: off
_VERBS = frozenset({
    "put", "place", "set", "bring", "fetch", "take", "move", "carry", "leave", "keep", "deliver",
    "return", "get", "grab", "pick", "drop", "transfer",
})
"""Verbs that start a placement clause: objects named before one never take a later destination."""

_FILLER = frozenset({
    "the", "a", "an", "please", "kindly", "could", "would", "can", "will", "you", "me", "and",
    "then", "also", "back", "up", "down", "over", "now", "instead",
})
"""Words that carry nothing the check has to judge."""
# fmt: on

_TO = frozenset(["to", "on", "onto", "into", "in", "at"])
_FROM = frozenset(["from", "off"])
_ARTICLES = frozenset(["the", "a", "an"])
_PRONOUNS = frozenset({"it"})
_KIND_ENDINGS: dict[str, tuple[str, ...]] = {"cup": ("cup", "mug"), "mug": ("cup", "mug")}
"""Kind words that also mean another id ending; any other kind word means its own ending."""

_TOKEN = re.compile(r"\x00(\d+)\x00|[a-z0-9_']+|[.!?;]")
_SENTENCE_END = frozenset(".!?;")


@dataclass(frozen=True)
class Placement:
    """One part of a goal: ``object_id`` rests on ``surface_id`` (not in the gripper)."""

    object_id: str
    surface_id: str
    kinds: tuple[str, ...] = ()
    """For "a cup": the id endings any one of which meets the goal (``object_id`` is then
    ``a cup``, no id of the world)."""


@dataclass(frozen=True)
class GoalReading:
    """Every placement the goal asks for, or, when it cannot be read in full, why not."""

    placements: tuple[Placement, ...] = ()
    unreadable: str | None = None
    mentions: tuple[str, ...] = ()
    """Every object, surface and area name the text mentions, in order."""

    @property
    def complete(self) -> bool:
        return self.unreadable is None and bool(self.placements)


def _mark_names(text: str, names: dict[str, str]) -> tuple[str, list[str]]:
    """``text`` with each mention of a name (``red_cup`` or ``red cup``) replaced by a
    marker, longest names first so ``kitchen table`` is never read as ``kitchen``."""
    found: list[str] = []

    def marker(name: str) -> str:
        found.append(name)
        return f" \x00{len(found) - 1}\x00 "

    for name in sorted(names, key=len, reverse=True):
        words = r"[\s_-]+".join(re.escape(part) for part in name.split("_"))

        def replace(_match: re.Match[str], name: str = name) -> str:
            return marker(name)

        text = re.sub(rf"(?<![a-z0-9_]){words}(?![a-z0-9_])", replace, text)
    return text, found


def read_goal(
    text: str, objects: Sequence[str], surfaces: Sequence[str], areas: Sequence[str] = ()
) -> GoalReading:
    """The placements ``text`` asks for, read completely, or why it cannot be."""
    kinds = dict.fromkeys(objects, "object") | dict.fromkeys(surfaces, "surface")
    kinds = dict.fromkeys(areas, "area") | kinds
    lowered = re.sub(r"\bon\s+top\s+of\b", "onto", text.lower())
    lowered = re.sub(r"\boff\s+of\b", "off", lowered)
    marked, names = _mark_names(lowered, kinds)
    in_order = tuple(names[int(i)] for i in re.findall(r"\x00(\d+)\x00", marked))
    mentioned_objects = [n for n in dict.fromkeys(in_order) if kinds[n] == "object"]

    def _unreadable(why: str) -> GoalReading:
        return GoalReading((), why, in_order)

    destinations: dict[str, str] = {}
    pending: list[str] = []
    last_object: str | None = None
    preposition: str | None = None
    wanted: dict[str, tuple[str, ...]] = {}
    previous = ""
    for match in _TOKEN.finditer(marked):
        token = match.group(0)
        before, previous = previous, token
        if preposition is not None and match.group(1) is None and token not in _ARTICLES:
            return _unreadable(f"{preposition!r} is not followed by a surface or area of the world")
        if match.group(1) is not None:
            name = names[int(match.group(1))]
            kind = kinds[name]
            if kind == "object":
                if preposition is not None:
                    return _unreadable(f"{name} is named as a place ({preposition} {name})")
                pending.append(name)
                last_object = name
                continue
            if preposition is None:
                return _unreadable(f"{name} is named without saying whether it is a source or a destination")
            if preposition in _FROM:
                preposition = None
                continue
            if kind == "area":
                return _unreadable(f"the destination {name} is an area, not a surface the check can judge")
            if not pending:
                return _unreadable(f"the destination {name} is not said of any object")
            for obj in pending:
                if destinations.setdefault(obj, name) != name:
                    return _unreadable(f"{obj} is given two destinations ({destinations[obj]} and {name})")
            pending, preposition = [], None
        elif token in _SENTENCE_END or token in _VERBS:
            pending = []
        elif token in _TO or token in _FROM:
            preposition = token
        elif token in _PRONOUNS:
            if last_object is None:
                return _unreadable(f"{token!r} refers to no object named before it")
            pending.append(last_object)
        elif token in _FILLER:
            continue
        else:
            endings = _KIND_ENDINGS.get(token, (token,))
            meant = sorted({o for o in mentioned_objects if o.rsplit("_", 1)[-1] in endings})
            exists = any(o.rsplit("_", 1)[-1] in endings for o in objects)
            if not meant and before in {"a", "an"} and exists:
                # "a cup": any object of that kind (the text names none of them).
                placeholder = f"{before} {token}"
                wanted[placeholder] = endings
                if placeholder not in mentioned_objects:
                    mentioned_objects.append(placeholder)
                pending.append(placeholder)
                last_object = placeholder
                continue
            if len(meant) != 1:
                return _unreadable(f"the word {token!r} is not one the goal check reads")
            pending.append(meant[0])
            last_object = meant[0]
    if preposition is not None:
        return _unreadable(f"{preposition!r} is not followed by a surface or area of the world")
    if not mentioned_objects:
        return _unreadable("the goal names no object of the world")
    unplaced = sorted(set(mentioned_objects) - set(destinations))
    if unplaced:
        return _unreadable(f"no destination is said for {', '.join(unplaced)}")
    placements = tuple(Placement(obj, destinations[obj], wanted.get(obj, ())) for obj in mentioned_objects)
    return GoalReading(placements, None, in_order)
