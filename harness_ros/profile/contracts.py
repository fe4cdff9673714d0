"""Embodiment Profile contracts: the required structure and the validated document.

The profile is a deployment-owned Markdown file. It must hold three sections and
seven items (``REQUIRED_STRUCTURE``). The rest of the file (the robot's name, the
frame convention, extra sections) is not validated but is sent too: the text before
the first section right after the title, everything else after the seven items.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "CAMERA_POSITIONS_ITEM",
    "MODEL_VISIBLE_VIEWS_ITEM",
    "OTHER_NOTES_HEADING",
    "PROFILE_TITLE",
    "REQUIRED_STRUCTURE",
    "EmbodimentProfile",
]

PROFILE_TITLE = "Embodiment Profile"

REQUIRED_STRUCTURE: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Operational Envelope", ("Base Footprint", "Base Mobility", "Reachable Workspace")),
    ("Perception Configuration", ("Sensor Modalities", "Model-Visible Views")),
    ("Base-Relative Positions", ("Camera Positions", "Initial Gripper Positions")),
)
"""(section, items) in canonical order; item names are unique across sections."""

MODEL_VISIBLE_VIEWS_ITEM = "Model-Visible Views"
CAMERA_POSITIONS_ITEM = "Camera Positions"
OTHER_NOTES_HEADING = "Other Notes From the Profile File"
"""The rendered section that holds the file's text after the seven items' sections."""


@dataclass(frozen=True)
class EmbodimentProfile:
    """A profile that passed validation.

    ``items`` maps each canonical item name (``"Camera Positions"``) to its
    normalised Markdown content (never empty). ``model_visible_views`` are the
    lowercased view names, in the order the profile lists them. ``preamble`` is the
    file's text before its first section (the title line aside), ``other_notes`` the
    rest of the file that is in no item (extra sections, text between a section heading
    and its first item), in file order; HTML comments are dropped from both and their
    headings re-levelled under ``###``.
    """

    path: Path
    items: Mapping[str, str]
    model_visible_views: tuple[str, ...]
    preamble: str = ""
    other_notes: str = ""
    camera_joints: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Lowercased view name -> the joints Camera Positions says move that camera (a bullet
    ``- `head`: ... joints: `joint_head_pan`, `joint_head_tilt```)."""

    @property
    def unvalidated_chars(self) -> int:
        """Characters sent from outside the seven items."""
        return len(self.preamble) + len(self.other_notes)

    def item(self, name: str) -> str:
        """Content of one item by its canonical name; KeyError for an unknown name."""
        return self.items[name]

    def render(self) -> str:
        """Canonical Markdown for the Resident context: same profile, same bytes.

        Canonical headings and order regardless of how the file spelled them; the
        file's preamble follows the title, and its other text the seven items.
        """
        parts = [f"# {PROFILE_TITLE}"]
        if self.preamble:
            parts.append(self.preamble)
        for section, items in REQUIRED_STRUCTURE:
            parts.append(f"## {section}")
            parts.extend(f"### {item}\n{self.items[item]}" for item in items)
        if self.other_notes:
            parts.append(f"## {OTHER_NOTES_HEADING}\n{self.other_notes}")
        return "\n\n".join(parts) + "\n"
