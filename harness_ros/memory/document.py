"""Markdown files with controlled sections: MEMORY.md and tool ledgers.

A controlled section (``## Preferences``, ``## Success`` ...) holds one bullet per
entry. Everything else (text before the first section, any other section, non-bullet
lines inside a controlled section) belongs to the operator: it is kept byte for byte
on every write and never projected to the model. Writes only insert lines, so an
edit can never lose what was already there.

A bullet may end with a data part the harness wrote, ``<!-- harness_ros lesson {...} -->``
(an HTML comment: invisible where the Markdown is rendered, on the entry's own line so it
goes with the entry when the line is deleted or moved). It is no part of the entry's text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["DATA_MARKER", "Bullet", "SectionedDocument", "normalize_heading", "with_data", "without_data"]

_HEADING = re.compile(r"^(#{1,2})[ \t]+(.*?)[ \t#]*$")
_FENCE = re.compile(r"^[ \t]{0,3}(`{3,}|~{3,})")
_BULLET = re.compile(r"^[ \t]{0,3}[-*+][ \t]+(.*?)\s*$")
_LABEL = re.compile(r"^\[([a-z-]+)\][ \t]*")
DATA_MARKER = "harness_ros lesson"
_DATA = re.compile(r"[ \t]*<!--[ \t]*" + re.escape(DATA_MARKER) + r"(?![\w-])(.*)$")


def without_data(text: str) -> str:
    """``text`` cut before anything that reads as a data part: an entry's words never carry
    one (a model's text with ``<!-- harness_ros lesson ...`` would otherwise forge a lesson)."""
    found = _DATA.search(text)
    return text if found is None else text[: found.start()].rstrip()


def with_data(text: str, data: Mapping[str, Any]) -> str:
    """``text`` with ``data`` as its data part: JSON on one line, ASCII (no character a
    line split would break at), ``<`` and ``>`` escaped so it cannot close the comment."""
    payload = json.dumps(dict(data), ensure_ascii=True, sort_keys=False, separators=(", ", ": "))
    payload = payload.replace("<", "\\u003c").replace(">", "\\u003e")
    return f"{text} <!-- {DATA_MARKER} {payload} -->"


@dataclass(frozen=True)
class Bullet:
    """One entry of a controlled section."""

    line: int
    """Its line number in the file (1-based)."""
    text: str
    """The entry's text: a known label and the data part removed."""
    data: str | None = None
    """What follows the data part's marker (``{...} -->`` when well formed); None without one."""


def normalize_heading(text: str) -> str:
    return " ".join(text.split()).casefold()


@dataclass(frozen=True)
class _Section:
    key: str
    """Normalised heading text."""
    start: int
    """Index of the heading line."""
    end: int
    """Index one past the section's last line."""


class SectionedDocument:
    """One Markdown file split at level-1/2 headings (outside code fences)."""

    def __init__(self, text: str) -> None:
        self.lines: list[str] = text.splitlines(keepends=True)
        self.open_fence: str | None = None
        """The marker of a code fence left open at the end of the file (operator text)."""
        self.sections: list[_Section] = self._split()

    def _split(self) -> list[_Section]:
        starts: list[tuple[str, int, int]] = []
        fence: str | None = None
        for index, line in enumerate(self.lines):
            fence_match = _FENCE.match(line)
            if fence_match:
                marker = fence_match.group(1)
                if fence is None:
                    fence = marker
                elif marker[0] == fence[0] and len(marker) >= len(fence):
                    fence = None
                continue
            if fence is not None:
                continue
            heading = _HEADING.match(line.rstrip("\r\n"))
            if heading:
                starts.append((normalize_heading(heading.group(2)), index, len(heading.group(1))))
        self.open_fence = fence
        sections: list[_Section] = []
        for position, (key, start, level) in enumerate(starts):
            end = starts[position + 1][1] if position + 1 < len(starts) else len(self.lines)
            if level == 2:
                sections.append(_Section(key, start, end))
        return sections

    def text(self) -> str:
        return "".join(self.lines)

    def _find(self, name: str) -> list[_Section]:
        key = normalize_heading(name)
        return [section for section in self.sections if section.key == key]

    def entries(self, name: str, *, labels: Sequence[str] = ()) -> list[str]:
        """Bullet texts of every section called ``name``, a leading known ``[label]`` removed."""
        return [bullet.text for bullet in self.bullets(name, labels=labels)]

    def bullets(self, name: str, *, labels: Sequence[str] = ()) -> list[Bullet]:
        """The entries of every section called ``name``, each with its line and data part."""
        found: list[Bullet] = []
        for section in self._find(name):
            for index in range(section.start + 1, section.end):
                match = _BULLET.match(self.lines[index].rstrip("\r\n"))
                if not match or not match.group(1):
                    continue
                text = match.group(1)
                label = _LABEL.match(text)
                if label and label.group(1) in labels:
                    text = text[label.end() :]
                data = _DATA.search(text)
                if data is not None:
                    text = text[: data.start()]
                if text.strip():
                    found.append(Bullet(index + 1, text.strip(), data.group(1).strip() if data else None))
        return found

    def _newline(self) -> str:
        crlf = sum(1 for line in self.lines if line.endswith("\r\n"))
        return "\r\n" if crlf * 2 > len(self.lines) else "\n"

    def _close_line(self, index: int) -> None:
        """Make sure the line before an insertion point ends with a newline."""
        if 0 <= index < len(self.lines) and not self.lines[index].endswith("\n"):
            self.lines[index] += self._newline()

    def add_entries(self, name: str, bullets: Sequence[str], *, order: Sequence[str]) -> None:
        """Insert ``- <bullet>`` lines into section ``name``; create it (in ``order``) if absent."""
        if not bullets:
            return
        newline = self._newline()
        new_lines = [f"- {bullet}{newline}" for bullet in bullets]
        existing = self._find(name)
        if existing:
            section = existing[0]
            insert_at = section.start + 1
            for index in range(section.start + 1, section.end):
                if _BULLET.match(self.lines[index].rstrip("\r\n")):
                    insert_at = index + 1
        else:
            insert_at = self._new_section_position(name, order)
            new_lines = [f"## {name}{newline}", *new_lines]
        self._close_line(insert_at - 1)
        if insert_at == len(self.lines) and self.open_fence is not None:
            # Appending after an operator's unclosed code fence would hide the entries
            # inside it: close the fence first (an insertion, like every other write).
            new_lines = [f"{self.open_fence}{newline}", *new_lines]
        self.lines[insert_at:insert_at] = new_lines
        self.sections = self._split()

    def _new_section_position(self, name: str, order: Sequence[str]) -> int:
        keys = [normalize_heading(item) for item in order]
        rank = keys.index(normalize_heading(name)) if normalize_heading(name) in keys else len(keys)
        before = [s for s in self.sections if s.key in keys[:rank]]
        if before:
            return before[-1].end
        after = [s for s in self.sections if s.key in keys[rank + 1 :]]
        if after:
            return after[0].start
        return len(self.lines)
