"""World memory: WORLD.md, where objects and places were last confirmed, by what evidence.

    # World
    ## Objects
    - red_cup | kind: cup | where: coffee_table | state: confirmed
      | confirmed: 2026-12-05T06:27:24Z | evidence: place_object step 4 run 7 verdict success
    (one line in the file)
    ## Places
    - robot | where: kitchen | pose: 1.00 2.00 0.00 map | state: confirmed | confirmed: ... | evidence: ...

Every bullet under ``## Objects`` or ``## Places`` is an entry: a name, then
``field: value`` pairs separated by ``|``. Everything else (other sections, text, lines
outside the bullets) is the operator's and kept byte for byte. A bullet that is not a
valid entry is reported (``WorldProblem``: the file, the line, the field) and kept as
it is, never dropped and never used.

Only evidence changes an entry (``fold_step``): an evaluator-confirmed pick puts the
object in the gripper, a confirmed place puts it on the surface, a confirmed navigation
records the robot's place (for a navigation by pose, the known place nearest to the pose
it stopped at, within ``WorldTools.place_radius_m``), a pick that failed where memory
said the object was marks it ``stale`` (kept, not deleted). The model's own text is never read.

The file is written whole, atomically (temporary file, fsync, rename), under the memory
folder's lock, by the caller (``FileMemory``).
"""

from __future__ import annotations

import datetime
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from harness_ros.memory.world_contracts import (
    GRIPPER,
    ROBOT,
    STATES,
    Pose,
    WorldChange,
    WorldEntry,
    WorldProblem,
    WorldTools,
)
from harness_ros.trajectory import TrajectoryStep

__all__ = [
    "WORLD_FILE",
    "WorldDocument",
    "fold_steps",
    "format_time",
    "nearest_place",
    "recall",
    "render_brief",
]

WORLD_FILE = "WORLD.md"
DEFAULT_TOOLS = WorldTools()
SECTION_OF = {"object": "Objects", "place": "Places"}
CATEGORY_OF = {"objects": "object", "places": "place"}
FIELDS = ("kind", "where", "pose", "state", "confirmed", "evidence")
_TEMPLATE = (
    "# World\n\n"
    "Where objects and places were last confirmed, and by what evidence (docs/memory.md).\n"
    "Edit an entry or write your own lines: only the bullets below are read.\n"
)
_HEADING = re.compile(r"^##\s+(.+?)\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")
_BULLET = re.compile(r"^\s*[-*]\s+(.*)$")
_NAME = re.compile(r"^[^|:\s][^|:]*$")
_SOURCE_CHARS = 24
"""The most characters of an operator's evidence the brief shows for an entry without a time."""


def format_time(seconds: float) -> str:
    return datetime.datetime.fromtimestamp(seconds, tz=datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _parse_time(text: str) -> float:
    parsed = datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ")
    return parsed.replace(tzinfo=datetime.timezone.utc).timestamp()


def _clean(value: str) -> str:
    """One line, no field separator: a value written into an entry cannot start another."""
    return " ".join(str(value).replace("|", "/").split())


def render_entry(entry: WorldEntry) -> str:
    parts = [_clean(entry.name)]
    if entry.kind:
        parts.append(f"kind: {_clean(entry.kind)}")
    if entry.where:
        parts.append(f"where: {_clean(entry.where)}")
    if entry.pose is not None:
        parts.append(f"pose: {entry.pose.render()}")
    parts.append(f"state: {entry.state}")
    if entry.confirmed is not None:
        parts.append(f"confirmed: {format_time(entry.confirmed)}")
    if entry.evidence:
        parts.append(f"evidence: {_clean(entry.evidence)[:300]}")
    return "- " + " | ".join(parts)


def _parse_pose(text: str) -> Pose:
    words = text.split()
    if len(words) not in (3, 4):
        raise ValueError("expected 'x y [yaw] frame'")
    numbers = [float(word) for word in words[:-1]]
    if not all(math.isfinite(n) for n in numbers):
        raise ValueError("not a finite number")
    if re.fullmatch(r"[A-Za-z_/][A-Za-z0-9_/]*", words[-1]) is None:
        raise ValueError(f"{words[-1]!r} is no frame name")
    return Pose(numbers[0], numbers[1], numbers[2] if len(numbers) == 3 else None, words[-1])


def parse_entry(text: str, category: str, line: int, path: str) -> WorldEntry | WorldProblem:
    """One bullet's text (without the bullet) as an entry, or what is wrong with it."""
    parts = [part.strip() for part in text.split("|")]
    name = parts[0]
    if not name or _NAME.match(name) is None:
        return WorldProblem(path, line, "name", f"{name!r} is no name (the first part, before '|')")
    values: dict[str, str] = {}
    for part in parts[1:]:
        key, sep, value = part.partition(":")
        key = key.strip().lower()
        if not sep or key not in FIELDS:
            return WorldProblem(path, line, key or part, f"unknown field; fields are {', '.join(FIELDS)}")
        if key in values:
            return WorldProblem(path, line, key, "given twice")
        values[key] = value.strip()
    state = values.get("state", "unverified")
    if state not in STATES:
        return WorldProblem(path, line, "state", f"{state!r} is not one of {', '.join(STATES)}")
    pose = None
    if "pose" in values:
        try:
            pose = _parse_pose(values["pose"])
        except ValueError as err:
            return WorldProblem(path, line, "pose", f"{values['pose']!r}: {err}")
    confirmed = None
    if values.get("confirmed"):
        try:
            confirmed = _parse_time(values["confirmed"])
        except ValueError:
            return WorldProblem(
                path,
                line,
                "confirmed",
                f"{values['confirmed']!r} is not a UTC time like 2026-01-31T12:00:00Z",
            )
    return WorldEntry(
        category=category,
        name=name,
        kind=values.get("kind", ""),
        where=values.get("where", ""),
        pose=pose,
        state=state,
        confirmed=confirmed,
        evidence=values.get("evidence", ""),
        line=line,
    )


@dataclass
class WorldDocument:
    """WORLD.md as lines: entries where they are, the operator's lines untouched."""

    path: str
    lines: list[str] = field(default_factory=list)
    entries: dict[tuple[str, str], WorldEntry] = field(default_factory=dict)
    """Valid entries by (category, name); the last of a name wins."""
    problems: list[WorldProblem] = field(default_factory=list)
    _sections: dict[str, int] = field(default_factory=dict)
    """Section heading (``Objects``/``Places``) -> index of its last line."""

    @classmethod
    def parse(cls, text: str | None, path: str = WORLD_FILE) -> WorldDocument:
        doc = cls(path, (text if text else "").splitlines(keepends=True))
        category: str | None = None
        fenced = False
        for index, raw in enumerate(doc.lines):
            line = raw.rstrip("\r\n")
            if _FENCE.match(line):
                fenced = not fenced
                continue
            if fenced:
                continue
            heading = _HEADING.match(line)
            if heading is not None:
                category = CATEGORY_OF.get(heading.group(1).strip().lower())
                if category is not None:
                    doc._sections[SECTION_OF[category]] = index
                continue
            if category is None:
                continue
            doc._sections[SECTION_OF[category]] = (
                index if line.strip() else doc._sections[SECTION_OF[category]]
            )
            bullet = _BULLET.match(line)
            if bullet is None:
                continue
            parsed = parse_entry(bullet.group(1), category, index + 1, path)
            if isinstance(parsed, WorldProblem):
                doc.problems.append(parsed)
            else:
                doc.entries[(category, parsed.name)] = parsed
        return doc

    def text(self) -> str:
        return "".join(self.lines)

    def get(self, category: str, name: str) -> WorldEntry | None:
        return self.entries.get((category, name))

    def objects(self) -> list[WorldEntry]:
        return [entry for (category, _), entry in self.entries.items() if category == "object"]

    def places(self) -> list[WorldEntry]:
        return [entry for (category, _), entry in self.entries.items() if category == "place"]

    def put(self, entry: WorldEntry) -> None:
        """Write ``entry``: over its own line when it has one, else at its section's end."""
        old = self.entries.get((entry.category, entry.name))
        text = render_entry(entry) + "\n"
        if old is not None and old.line is not None:
            self.lines[old.line - 1] = text
            self.entries[(entry.category, entry.name)] = entry.with_(line=old.line)
            return
        section = SECTION_OF[entry.category]
        if section not in self._sections:
            if not self.lines:
                self.lines.append(_TEMPLATE)
            if not self.lines[-1].endswith("\n"):
                self.lines[-1] += "\n"
            if self.lines[-1].strip():
                self.lines.append("\n")
            self.lines.append(f"## {section}\n")
            self._sections[section] = len(self.lines) - 1
        at = self._sections[section] + 1
        if at - 1 < len(self.lines) and not self.lines[at - 1].endswith("\n"):
            self.lines[at - 1] += "\n"
        self.lines.insert(at, text)
        self._shift(at)
        self._sections[section] = at
        self.entries[(entry.category, entry.name)] = entry.with_(line=at + 1)

    def _shift(self, inserted_at: int) -> None:
        for key, entry in self.entries.items():
            if entry.line is not None and entry.line - 1 >= inserted_at:
                self.entries[key] = entry.with_(line=entry.line + 1)
        for name, index in self._sections.items():
            if index >= inserted_at:
                self._sections[name] = index + 1
        self.problems = [
            WorldProblem(p.path, p.line + 1, p.field, p.message) if p.line - 1 >= inserted_at else p
            for p in self.problems
        ]

    def copy(self) -> WorldDocument:
        return WorldDocument.parse(self.text(), self.path)


# ---------------------------------------------------------------------- evidence


def default_kind(name: str) -> str:
    """The kind an object id names by the sim's convention (``red_cup`` -> ``cup``)."""
    return name.rsplit("_", 1)[-1] if "_" in name else name


def _run_of(step: TrajectoryStep) -> str:
    run = step.verdict.run_id if step.verdict is not None else None
    if run is None:
        run = step.result.data.get("run_id")
    status = step.verdict.status if step.verdict is not None else "none"
    return f"{step.tool} step {step.index} run {run if run is not None else '-'} verdict {status}"


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(float(value)) else None


def _pose(step: TrajectoryStep, tools: WorldTools) -> Pose | None:
    values = [_number(step.result.data.get(name)) for name in tools.pose_fields]
    if values[0] is None or values[1] is None:
        return None
    return Pose(values[0], values[1], values[2], tools.frame)


def _requested_pose(step: TrajectoryStep, tools: WorldTools) -> Pose | None:
    """The pose a pose navigation asked for, from its arguments (yaw converted to radians,
    as WORLD.md keeps it; none when the call gave no yaw)."""
    x_name, y_name, yaw_name = tools.navigate_pose_arguments
    x, y = _number(step.arguments.get(x_name)), _number(step.arguments.get(y_name))
    if x is None or y is None:
        return None
    yaw = _number(step.arguments.get(yaw_name))
    if yaw is not None and tools.navigate_pose_yaw_unit == "deg":
        yaw = math.radians(yaw)
    return Pose(x, y, None if yaw is None else math.remainder(yaw, math.tau), tools.frame)


def nearest_place(doc: WorldDocument, pose: Pose, radius_m: float) -> WorldEntry | None:
    """The place (a ``## Places`` entry with a pose in ``pose``'s frame, not the robot)
    nearest to ``pose`` within ``radius_m``, in x and y; None when there is none."""
    best: tuple[float, str, WorldEntry] | None = None
    for place in doc.places():
        if place.name == ROBOT or place.pose is None or place.pose.frame != pose.frame:
            continue
        distance = math.hypot(place.pose.x - pose.x, place.pose.y - pose.y)
        if distance <= radius_m and (best is None or (distance, place.name) < best[:2]):
            best = (distance, place.name, place)
    return best[2] if best is not None else None


def _argument(step: TrajectoryStep, name: str) -> str:
    value = step.arguments.get(name)
    return value.strip() if isinstance(value, str) else ""


def fold_step(
    doc: WorldDocument, step: TrajectoryStep, at: float, tools: WorldTools = DEFAULT_TOOLS
) -> list[WorldChange]:
    """Apply one step's evidence to ``doc``; what changed. Refused calls are no evidence;
    only an evaluator's confirmation moves an entry (a tool's own success never does)."""
    if step.refused:
        return []
    evidence = _run_of(step)
    changes: list[WorldChange] = []

    def put(entry: WorldEntry, change: str) -> None:
        doc.put(entry)
        changes.append(WorldChange(entry.name, change, entry.where, entry.state, evidence, step.index))

    robot = doc.get("place", ROBOT)
    if step.tool == tools.navigate:
        target = _argument(step, tools.navigate_target)
        if not target:
            return []
        if step.confirmed:
            pose = _pose(step, tools)
            # Only the robot's place: a target may be an object (the sim drives to one), and
            # surfaces become places when something is confirmed placed on them.
            put(WorldEntry("place", ROBOT, "robot", target, pose, "confirmed", at, evidence), "moved")
        elif robot is not None and robot.state != "unverified":
            # The base moved (or may have) without a confirmed stop: its place is unknown.
            put(robot.with_(state="unverified", evidence=evidence), "unverified")
        return changes
    if step.tool == tools.navigate_pose:
        # Where the base stopped: the server's final pose when its result gives one, else
        # the pose asked for (the evaluator's pose check measured it there); its place is
        # the known place nearest to it, within the radius, or none (the pose alone).
        pose = (_pose(step, tools) or _requested_pose(step, tools)) if step.confirmed else None
        if pose is not None:
            place = nearest_place(doc, pose, tools.place_radius_m)
            where = place.name if place is not None else ""
            put(WorldEntry("place", ROBOT, "robot", where, pose, "confirmed", at, evidence), "moved")
        elif robot is not None and robot.state != "unverified":
            # It ran (a refused call never gets here) without a confirmed stop, or confirmed
            # with no pose to read: the base may have moved, so its place is unknown.
            put(robot.with_(state="unverified", evidence=evidence), "unverified")
        return changes
    if step.tool == tools.pick:
        name = _argument(step, tools.pick_object)
        if not name:
            return []
        old = doc.get("object", name)
        if step.confirmed:
            entry = old or WorldEntry("object", name, default_kind(name))
            put(
                entry.with_(where=GRIPPER, pose=None, state="confirmed", confirmed=at, evidence=evidence),
                "moved",
            )
        elif step.failed and old is not None and old.state != "stale" and old.where not in ("", GRIPPER):
            # A pick that failed where memory said the object is: the robot's confirmed place
            # is that surface (or the object itself). Structured fields only: the call's
            # arguments, the verdict, and the robot entry this fold wrote.
            here = robot is not None and robot.state == "confirmed" and robot.where in (old.where, name)
            if here:
                put(old.with_(state="stale", evidence=f"not found at {old.where}: {evidence}"), "stale")
        return changes
    if step.tool == tools.place and step.confirmed:
        surface = _argument(step, tools.place_surface)
        placed = step.result.data.get(tools.placed_field)
        name = placed.strip() if isinstance(placed, str) and placed.strip() else ""
        if not name:
            held = [entry for entry in doc.objects() if entry.where == GRIPPER and entry.state == "confirmed"]
            name = held[0].name if len(held) == 1 else ""
        if not surface or not name:
            return []
        entry = doc.get("object", name) or WorldEntry("object", name, default_kind(name))
        put(
            entry.with_(where=surface, pose=None, state="confirmed", confirmed=at, evidence=evidence), "moved"
        )
        place = doc.get("place", surface) or WorldEntry("place", surface, "surface")
        put(place.with_(state="confirmed", confirmed=at, evidence=evidence), "confirmed")
    return changes


def fold_steps(
    doc: WorldDocument, steps: Iterable[TrajectoryStep], at: float, tools: WorldTools = DEFAULT_TOOLS
) -> list[WorldChange]:
    changes: list[WorldChange] = []
    for step in steps:
        changes.extend(fold_step(doc, step, at, tools))
    return changes


# ---------------------------------------------------------------------- what the model sees


def _age(now: float, then: float | None) -> str:
    if then is None:
        return "age unknown"
    seconds = max(0.0, now - then)
    if seconds < 90:
        return "now"
    if seconds < 5400:
        return f"{round(seconds / 60)} min ago"
    if seconds < 172800:
        return f"{round(seconds / 3600)} h ago"
    return f"{round(seconds / 86400)} d ago"


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]+", text.lower()))


def _named(entry: WorldEntry, words: set[str]) -> bool:
    parts = set(entry.name.lower().replace("-", "_").split("_"))
    return bool(parts) and parts <= words


def _kind_named(entry: WorldEntry, words: set[str]) -> bool:
    return bool(entry.kind) and entry.kind.lower() in words


def _when(entry: WorldEntry, now: float) -> str:
    """The entry's age; for one without a time (an operator's own line), its evidence,
    short (``operator's map``), as the operator wrote it."""
    if entry.confirmed is None and entry.evidence:
        words = _clean(entry.evidence)
        return words if len(words) <= _SOURCE_CHARS else words[: _SOURCE_CHARS - 3].rstrip() + "..."
    return _age(now, entry.confirmed)


def render_pose(pose: Pose) -> str:
    """A pose as the brief shows it: ``at x 1.20 y -0.40 yaw 90 deg map`` (WORLD.md's yaw
    is in radians; navigate_to_pose's in degrees)."""
    yaw = "" if pose.yaw is None else f" yaw {round(math.degrees(pose.yaw))} deg"
    return f"at x {pose.x:.2f} y {pose.y:.2f}{yaw} {pose.frame}"


def navigate_pose(pose: Pose) -> dict[str, Any]:
    """A pose as a ``navigate_to_pose`` call takes it: x, y in metres, yaw in degrees."""
    item: dict[str, Any] = {"x": round(pose.x, 2), "y": round(pose.y, 2)}
    if pose.yaw is not None:
        item["yaw"] = round(math.degrees(pose.yaw))
    item["frame"] = pose.frame
    return item


def describe(entry: WorldEntry, now: float) -> str:
    age = _when(entry, now)
    if entry.name == ROBOT:
        # At its place; a robot that stopped away from every known place, at its pose.
        where = entry.where or (render_pose(entry.pose)[3:] if entry.pose is not None else "unknown place")
        where = where if entry.state == "confirmed" else f"{where}?"
        return f"robot at {where} ({age})"
    label = f"{entry.name} ({entry.kind})" if entry.kind and entry.kind != entry.name else entry.name
    if entry.category == "place":
        mark = "" if entry.state == "confirmed" else f" {entry.state.upper()}"
        pose = "" if entry.pose is None else f" {render_pose(entry.pose)}"
        return f"place {label}{mark}{pose} ({age})"
    if entry.where == GRIPPER:
        where = "in the gripper"
    else:
        where = f"on {entry.where}" if entry.where else "place unknown"
    if entry.state == "stale":
        return f"{label} STALE: gone from {entry.where} ({age})"
    mark = "" if entry.state == "confirmed" else " unverified"
    return f"{label} {where}{mark} ({age})"


def render_brief(
    doc: WorldDocument,
    instruction: str,
    now: float,
    *,
    max_tokens: int,
    count: Callable[[str], int],
    recent_s: float = 3600.0,
) -> str:
    """The objects and places that matter to the task, most relevant first, within
    ``max_tokens`` (``count`` is the token counter): held, named in the instruction, the
    places the instruction names (in its order) and those a named object is on, with their
    pose when known; objects named by their kind, recently touched; then the robot's place.
    Empty when nothing matters."""
    words = _words(instruction)
    order = re.findall(r"[a-z0-9]+", instruction.lower())
    ranked: list[tuple[int, float, str, WorldEntry]] = []
    named_on: set[str] = set()
    for entry in doc.objects():
        if entry.where == GRIPPER and entry.state == "confirmed":
            rank = 0
        elif _named(entry, words):
            rank = 1
            if entry.state != "stale" and entry.where:
                named_on.add(entry.where)
        elif _kind_named(entry, words):
            rank = 4
        elif entry.confirmed is not None and now - entry.confirmed <= recent_s:
            rank = 5
        else:
            continue
        ranked.append((rank, -(entry.confirmed or 0.0), entry.name, entry))
    for entry in doc.places():
        if entry.name == ROBOT:
            continue
        if _named(entry, words):
            first = entry.name.lower().replace("-", "_").split("_")[0]
            ranked.append((2, float(order.index(first)), entry.name, entry))
        elif entry.name in named_on and entry.pose is not None:
            ranked.append((3, 0.0, entry.name, entry))
    ranked.sort(key=lambda item: item[:3])
    robot = doc.get("place", ROBOT)
    items = [describe(entry, now) for *_, entry in ranked]
    if robot is not None:
        items.append(describe(robot, now))
    header = "World memory (from evidence; STALE: seen gone; recall_object for more):"
    kept: list[str] = []
    for item in items:
        candidate = header + " " + "; ".join([*kept, item]) + "."
        if count(candidate) > max_tokens:
            break
        kept.append(item)
    return header + " " + "; ".join(kept) + "." if kept else ""


def recall(doc: WorldDocument, query: str, now: float) -> dict[str, Any]:
    """``recall_object``'s answer: entries whose name or kind is ``query`` (case and
    spaces ignored), newest first, each with the navigation target to use and, where that
    place's pose is known, ``navigate_pose`` (x, y in metres, yaw in degrees, frame: what a
    ``navigate_to_pose`` call takes)."""
    key = "_".join(query.lower().split())
    found = [
        entry
        for entry in [*doc.objects(), *doc.places()]
        if key and (entry.name.lower() == key or entry.kind.lower() == key)
    ]
    found.sort(key=lambda entry: -(entry.confirmed or 0.0))
    matches = []
    for entry in found[:5]:
        target: str | None
        if entry.category == "place":
            target = entry.name if entry.name != ROBOT else None
        elif entry.state == "stale" or entry.where in ("", GRIPPER):
            target = None
        else:
            target = entry.where
        item: dict[str, Any] = {
            "name": entry.name,
            "kind": entry.kind,
            "where": entry.where,
            "state": entry.state,
            "age": _age(now, entry.confirmed),
            "navigate_target": target,
        }
        # Where to drive, for a robot that navigates by pose: a place's own pose (where the
        # robot stops to work at it), or the pose of the place an object is on.
        place = entry if entry.category == "place" else doc.get("place", target) if target else None
        if target is not None and place is not None and place.pose is not None:
            item["navigate_pose"] = navigate_pose(place.pose)
        if entry.pose is not None and not (place is entry and "navigate_pose" in item):
            item["pose"] = entry.pose.render()
        matches.append(item)
    if not matches:
        return {"success": True, "found": [], "message": f"nothing remembered about {query!r}: search"}
    return {"success": True, "found": matches}


def problems_text(problems: Sequence[WorldProblem]) -> list[str]:
    return [problem.describe() for problem in problems]


def changes_json(changes: Sequence[WorldChange]) -> list[Mapping[str, Any]]:
    return [change.to_json() for change in changes]
