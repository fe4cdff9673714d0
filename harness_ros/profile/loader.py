"""Parse and validate an Embodiment Profile (Markdown, via markdown-it-py).

Matching rules:
- headings count at any level (``#`` to ``######``, ATX or setext) when they are
  top-level blocks (a heading inside a list or quote is content);
- a heading matches a section or item name case- and punctuation-insensitively
  (``#### base-footprint:`` is the item Base Footprint);
- an item belongs to the nearest recognised section heading above it; an
  unrecognised heading at or above that section's level closes the section, so
  extra sections and whatever they hold are ignored;
- an item's content runs until the next heading at or above the item's level, or
  the next recognised heading; deeper headings inside it are content;
- HTML comments alone do not count as content (a template's ``<!-- fill in -->``
  is still an empty item);
- the text in no item is kept, unvalidated: before the first section as the
  ``preamble`` (the robot's name in the title, the frame convention), the rest as
  ``other_notes``; its HTML comments are dropped and headings re-levelled under ``###``.

Every problem is collected and reported at once, in canonical order.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING

from markdown_it import MarkdownIt

from harness_ros.errors import ProfileParseError
from harness_ros.paths import display_path
from harness_ros.profile.contracts import (
    CAMERA_POSITIONS_ITEM,
    MODEL_VISIBLE_VIEWS_ITEM,
    PROFILE_TITLE,
    REQUIRED_STRUCTURE,
    EmbodimentProfile,
)

if TYPE_CHECKING:
    from markdown_it.token import Token

    from harness_ros.config import HarnessConfig

__all__ = [
    "check_camera_joints",
    "check_views_named",
    "load_embodiment_profile",
    "load_embodiment_profile_document_from_config",
    "parse_embodiment_profile",
]

_VIEW_NAME = re.compile(r"[a-z][a-z0-9_-]*")
_LIST_MARKER = re.compile(r"^(?:[-*+]|\d+[.)])(?:\s+|$)")
_COMMENT_ONLY = re.compile(r"\s*(?:<!--.*?-->\s*)+", re.DOTALL)
_SECTION_OF_ITEM = {item: section for section, items in REQUIRED_STRUCTURE for item in items}


def _key(heading: str) -> str:
    """Case- and punctuation-insensitive form of a heading: lowercase words joined by one space."""
    return " ".join(re.findall(r"[a-z0-9]+", heading.lower()))


_SECTION_KEYS = {_key(section): section for section, _ in REQUIRED_STRUCTURE}
_ITEM_KEYS = {_key(item): item for item in _SECTION_OF_ITEM}


@dataclass(frozen=True)
class _Heading:
    level: int
    text: str
    start: int  # first source line of the heading
    end: int  # first source line after it

    @property
    def recognised(self) -> bool:
        key = _key(self.text)
        return key in _SECTION_KEYS or key in _ITEM_KEYS


def _error(path: Path, problems: list[str]) -> ProfileParseError:
    first, *rest = problems
    message = "\n".join(
        [f"Invalid Embodiment Profile ({display_path(path)}): {first}", *(f"  {p}" for p in rest)]
    )
    return ProfileParseError(message)


class _Document:
    """The source lines and top-level block tokens of one Markdown file."""

    def __init__(self, text: str) -> None:
        # markdown-it maps tokens onto lines of the normalised source.
        text = text.replace("\r\n", "\n").replace("\r", "\n")
        self.lines = text.split("\n")
        tokens = MarkdownIt("commonmark").parse(text)
        self.headings: list[_Heading] = []
        for index, token in enumerate(tokens):
            if token.type == "heading_open" and token.level == 0 and token.map is not None:
                inline = tokens[index + 1]
                self.headings.append(_Heading(int(token.tag[1:]), inline.content, *token.map))
        self.blocks: list[Token] = [t for t in tokens if t.level == 0 and t.map is not None]

    def item_stop(self, index: int) -> int:
        """The first source line after the content of the item ``headings[index]``."""
        heading = self.headings[index]
        for following in self.headings[index + 1 :]:
            if following.level <= heading.level or following.recognised:
                return following.start
        return len(self.lines)

    def outside(self, used: list[tuple[int, int]]) -> tuple[str, str]:
        """(preamble, other notes): the lines in none of the ``used`` ranges, before and
        after the first of them, comments dropped, headings re-levelled under ``###``,
        a title heading naming only the profile dropped."""
        taken = [False] * len(self.lines)
        for start, stop in used:
            for number in range(start, min(stop, len(self.lines))):
                taken[number] = True
        first_used = min((start for start, _ in used), default=len(self.lines))
        lines: list[str | None] = [None if taken[n] else line for n, line in enumerate(self.lines)]
        for heading in self.headings:
            if taken[heading.start]:
                continue
            for number in range(heading.start, heading.end):
                lines[number] = None
            if (
                heading.start < first_used
                and heading.level == 1
                and _key(heading.text) == _key(PROFILE_TITLE)
            ):
                continue  # the rendered profile has its own title
            lines[heading.start] = f"{'#' * min(6, max(3, heading.level + 1))} {heading.text}"
        return _tidy(lines[:first_used]), _tidy(lines[first_used:])

    def item_content(self, index: int) -> str:
        """Normalised Markdown under ``headings[index]``: deeper headings re-levelled under ``###``."""
        heading = self.headings[index]
        stop = self.item_stop(index)
        lines: list[str | None] = list(self.lines[heading.end : stop])

        def blank(start: int, end: int) -> None:
            for number in range(max(start, heading.end), min(end, stop)):
                lines[number - heading.end] = None

        for block in self.blocks:
            assert block.map is not None
            start, end = block.map
            if not heading.end <= start < stop:
                continue
            if block.type == "html_block" and _COMMENT_ONLY.fullmatch(block.content):
                blank(start, end)
        for sub in self.headings[index + 1 :]:
            if sub.start >= stop:
                break
            # Keep the nesting relative to the item, which renders as ``###``.
            level = min(6, 3 + sub.level - heading.level)
            blank(sub.start, sub.end)
            lines[sub.start - heading.end] = f"{'#' * level} {sub.text}"
        kept = [line.rstrip() for line in lines if line is not None]
        while kept and not kept[0]:
            kept.pop(0)
        while kept and not kept[-1]:
            kept.pop()
        return "\n".join(kept)


_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_BLANK_RUN = re.compile(r"\n{3,}")


def _tidy(lines: Sequence[str | None]) -> str:
    """Kept lines as Markdown: no HTML comments, no trailing spaces, blank runs of one line."""
    text = "\n".join(line for line in lines if line is not None)
    text = "\n".join(line.rstrip() for line in _COMMENT.sub("", text).split("\n"))
    return _BLANK_RUN.sub("\n\n", text).strip("\n")


_FENCE = re.compile(r"^[ \t]{0,3}(`{3,}|~{3,})")


def _has_unclosed_fence(content: str) -> bool:
    fence: str | None = None
    for line in content.split("\n"):
        match = _FENCE.match(line)
        if not match:
            continue
        marker = match.group(1)
        if fence is None:
            fence = marker
        elif marker[0] == fence[0] and len(marker) >= len(fence):
            fence = None
    return fence is not None


_BULLET_NAME = re.compile(r"^`?([A-Za-z][A-Za-z0-9_-]*)`?\s*(?::|\u2014|\u2013|\s-\s|\()")
"""A described bullet: "`front`: head RGB camera", "wrist - gripper camera", "front (head)"."""


def _is_list_line(parts: list[str]) -> bool:
    """A comma list of names: at least one part is a bare name and none reads like a sentence."""
    names = [p for p in parts if _VIEW_NAME.fullmatch(p)]
    return bool(names) and all(len(p.split()) <= 3 and not p.endswith(".") for p in parts)


def _parse_views(content: str) -> tuple[tuple[str, ...], list[str]]:
    """View names where the item lists them; problems for bad list entries.

    Three forms: a comma-, newline- or bullet-separated list of names ("front, wrist");
    bullets that describe each view ("- `front`: head RGB camera, 640x480"); or prose
    ("Head and chest."), from which no names are taken: the configured views are then
    checked against the text instead (``check_views_named``).
    """
    where = f"Perception Configuration / {MODEL_VISIBLE_VIEWS_ITEM}"
    views: list[str] = []
    problems: list[str] = []
    for raw_line in content.split("\n"):
        stripped = raw_line.strip()
        bulleted = bool(_LIST_MARKER.match(stripped))
        line = _LIST_MARKER.sub("", stripped)
        described = _BULLET_NAME.match(line) if bulleted else None
        if described is not None:
            candidates = [described.group(1).lower()]
        else:
            parts = [part.strip().strip("`").strip().lower() for part in line.split(",")]
            parts = [part for part in parts if part]
            single_name = bulleted and len(parts) == 1 and _VIEW_NAME.fullmatch(parts[0]) is not None
            if not parts or not (_is_list_line(parts) or single_name):
                continue  # prose
            candidates = parts
        for name in candidates:
            if not _VIEW_NAME.fullmatch(name):
                problems.append(
                    f"invalid view name {name!r} in {where}: "
                    "use short names of letters, digits, '_' or '-' (e.g. front, torso, wrist)"
                )
            elif name in views:
                problems.append(f"duplicate view {name!r} in {where}")
            else:
                views.append(name)
    if not views and not problems and not re.search(r"[A-Za-z]", content):
        problems.append(f"no view names in {where}")
    return tuple(views), problems


_JOINTS = re.compile(r"\bjoints?\s*:\s*(.*)$", re.IGNORECASE)
_BACKTICKED = re.compile(r"`([^`\s]+)`")


def _parse_camera_joints(content: str) -> tuple[dict[str, tuple[str, ...]], list[str]]:
    """View -> joints from the Camera Positions bullets that say ``joints: `a`, `b```."""
    where = f"Base-Relative Positions / {CAMERA_POSITIONS_ITEM}"
    joints: dict[str, tuple[str, ...]] = {}
    problems: list[str] = []
    for raw_line in content.split("\n"):
        stripped = raw_line.strip()
        found = _JOINTS.search(stripped)
        if found is None:
            continue
        line = _LIST_MARKER.sub("", stripped)
        described = _BULLET_NAME.match(line) if _LIST_MARKER.match(stripped) else None
        names = tuple(_BACKTICKED.findall(found.group(1)))
        if described is None:
            problems.append(
                f"'joints:' outside a view's bullet in {where}: write '- `head`: ..., joints: `pan_joint`'"
            )
        elif not names:
            problems.append(
                f"'joints:' of view {described.group(1)!r} in {where} names no joint in backticks"
            )
        else:
            joints[described.group(1).lower()] = names
    return joints, problems


def check_camera_joints(profile: EmbodimentProfile, config: HarnessConfig) -> None:
    """Each joint Camera Positions says moves a view must be that view's pan or tilt joint in
    the config, or the model would not be told where the camera looks. ``ProfileParseError``
    names every joint that is not."""
    views = {name.casefold(): (name, view) for name, view in config.observations.views.items()}
    problems = []
    for view_name, joints in profile.camera_joints.items():
        key, view = views.get(view_name, (view_name, None))
        configured = set() if view is None else {j.joint for j in (view.pan, view.tilt) if j is not None}
        for joint in joints:
            if joint not in configured:
                problems.append(
                    f"{CAMERA_POSITIONS_ITEM} says joint {joint!r} moves view {view_name!r}, but neither "
                    f"observations.views.{key}.pan nor .tilt names it: the model would not be told "
                    "where that camera looks (set pan/tilt with the joint and its sign)"
                )
    if problems:
        raise _error(profile.path, problems)


def _named(view: str, text: str) -> bool:
    """Whether ``text`` names ``view`` as a word ('_', '-' and a space are interchangeable)."""
    words = [re.escape(word) for word in re.split(r"[-_\s]+", view.strip()) if word]
    if not words:
        return False
    pattern = r"(?<![A-Za-z0-9])" + r"[-_\s]*".join(words) + r"(?![A-Za-z0-9])"
    return re.search(pattern, text, re.IGNORECASE) is not None


def check_views_named(profile: EmbodimentProfile, configured: Sequence[str]) -> EmbodimentProfile:
    """A profile whose views item is prose (no names listed) must name every configured view.

    Returns the profile with ``model_visible_views`` set to the configured views (the
    node and ``harness-ros check`` read them from there); a profile that lists names is
    returned unchanged (the list selects views; the node checks each has a topic).
    ``ProfileParseError`` names every configured view the item does not mention.
    """
    if profile.model_visible_views or not configured:
        return profile
    text = profile.items[MODEL_VISIBLE_VIEWS_ITEM]
    where = f"Perception Configuration / {MODEL_VISIBLE_VIEWS_ITEM}"
    missing = [view for view in configured if not _named(view, text)]
    if missing:
        raise _error(
            profile.path,
            [
                f"{where} does not name configured view {view!r} (observations.views.{view}): "
                "describe every view the model sees, or list the view names"
                for view in missing
            ],
        )
    return dataclasses.replace(profile, model_visible_views=tuple(configured))


def parse_embodiment_profile(text: str, path: Path) -> EmbodimentProfile:
    """Validate profile text; ``path`` is only used in the result and in error messages."""
    document = _Document(text)
    sections_seen: set[str] = set()
    contents: dict[str, str] = {}
    misplaced: dict[str, str | None] = {}
    duplicates: list[str] = []
    current: str | None = None
    current_level = 0
    item_level = 7  # level of the last item heading; deeper unrecognised headings are its content
    used: list[tuple[int, int]] = []  # source lines of the sections' headings and the items
    for index, heading in enumerate(document.headings):
        key = _key(heading.text)
        if key in _SECTION_KEYS:
            used.append((heading.start, heading.end))
            current, current_level, item_level = _SECTION_KEYS[key], heading.level, 7
            if current in sections_seen:
                duplicates.append(f"duplicate section: {current}")
            sections_seen.add(current)
        elif key in _ITEM_KEYS:
            item = _ITEM_KEYS[key]
            item_level = heading.level
            if _SECTION_OF_ITEM[item] != current:
                misplaced.setdefault(item, current)
            elif item in contents:
                duplicates.append(f"duplicate item: {current} / {item}")
            else:
                contents[item] = document.item_content(index)
                used.append((heading.start, document.item_stop(index)))
        elif current is not None and heading.level <= min(current_level, item_level):
            current = None

    problems: list[str] = []
    for section, items in REQUIRED_STRUCTURE:
        if section not in sections_seen:
            problems.append(f"missing section: {section}")
            continue
        for item in items:
            if item not in contents:
                hint = ""
                if item in misplaced:
                    owner = misplaced[item]
                    hint = f" (found under {owner!r})" if owner else " (found outside any section)"
                problems.append(f"missing item: {section} / {item}{hint}")
            elif not contents[item]:
                problems.append(f"missing item content: {section} / {item}")
            elif _has_unclosed_fence(contents[item]):
                # Rendered in canonical order, an open fence would swallow the items after it.
                problems.append(f"unclosed code fence in item content: {section} / {item}")
    problems.extend(duplicates)

    views: tuple[str, ...] = ()
    if contents.get(MODEL_VISIBLE_VIEWS_ITEM):
        views, view_problems = _parse_views(contents[MODEL_VISIBLE_VIEWS_ITEM])
        problems.extend(view_problems)
    camera_joints: dict[str, tuple[str, ...]] = {}
    if contents.get(CAMERA_POSITIONS_ITEM):
        camera_joints, joint_problems = _parse_camera_joints(contents[CAMERA_POSITIONS_ITEM])
        problems.extend(joint_problems)
    preamble, other_notes = document.outside(used)
    if _has_unclosed_fence(preamble) or _has_unclosed_fence(other_notes):
        problems.append("unclosed code fence in the text outside the seven items")
    if problems:
        raise _error(path, problems)
    return EmbodimentProfile(
        path=path,
        items=MappingProxyType(dict(contents)),
        model_visible_views=views,
        preamble=preamble,
        other_notes=other_notes,
        camera_joints=MappingProxyType(camera_joints),
    )


def load_embodiment_profile(path: str | Path) -> EmbodimentProfile:
    """Read and validate one profile file; ``ProfileParseError`` names every problem."""
    path = Path(path)
    try:
        text = path.read_bytes().decode("utf-8")
    except OSError as err:
        raise _error(path, [f"cannot read file: {err.strerror or err}"]) from None
    except UnicodeDecodeError as err:
        raise _error(path, [f"not UTF-8 text (invalid byte at offset {err.start})"]) from None
    return parse_embodiment_profile(text, path)


def load_embodiment_profile_document_from_config(config: HarnessConfig) -> EmbodimentProfile | None:
    """The configured profile, validated; ``None`` when ``embodiment_profile_file`` is unset.

    ``load_config`` already resolved a relative path against the config file's folder.
    """
    if config.embodiment_profile_file is None:
        return None
    profile = load_embodiment_profile(config.embodiment_profile_file)
    check_camera_joints(profile, config)
    return check_views_named(profile, list(config.observations.views))
