"""Text from the robot, the model or another client, made safe to print on a terminal.

Questions, notices, server failure reasons, other clients' answers and event lines
reach the operator's terminal from sources the operator does not control. Control
characters in them can recolour or rewrite the screen (ESC sequences, CR, BS), ring
the bell, set the window title (OSC) or reorder what the operator reads (bidi
overrides and isolates, e.g. U+202E). ``terminal_safe`` writes each such character
as a visible escape (``\\x1b``, ``\\u202e``), so nothing is lost and nothing acts.
"""

from __future__ import annotations

import re

__all__ = ["terminal_safe"]

_BIDI = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
"""Arabic letter mark, LRM, RLM, the embeddings/overrides (U+202A-202E) and the
isolates (U+2066-2069)."""

_UNSAFE_LINE = re.compile(f"[\x00-\x1f\x7f-\x9f\u2028\u2029{_BIDI}]")
"""C0 (newline and tab included), DEL, C1, line/paragraph separators, bidi controls."""
_UNSAFE_BLOCK = re.compile(f"[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029{_BIDI}]")
"""The same, but a newline is kept: a multi-line block."""


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def terminal_safe(text: str, *, multiline: bool = False) -> str:
    """``text`` with every terminal control character written as a visible escape.

    An ESC sequence loses its ESC (``\\x1b[31m`` prints as the text ``\\x1b[31m``), so
    it can no longer act. ``multiline=True`` keeps newlines, for a block meant to span
    lines; carriage returns are escaped either way.
    """
    pattern = _UNSAFE_BLOCK if multiline else _UNSAFE_LINE
    return pattern.sub(_escape, text)
