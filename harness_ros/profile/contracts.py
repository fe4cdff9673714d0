"""Embodiment Profile contracts: the required structure and the validated document.

The profile is a deployment-owned Markdown file. It must hold three sections and
seven items (``REQUIRED_STRUCTURE``); everything else in the file is ignored.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "MODEL_VISIBLE_VIEWS_ITEM",
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


@dataclass(frozen=True)
class EmbodimentProfile:
    """A profile that passed validation.

    ``items`` maps each canonical item name (``"Camera Positions"``) to its
    normalised Markdown content (never empty). ``model_visible_views`` are the
    lowercased view names, in the order the profile lists them.
    """

    path: Path
    items: Mapping[str, str]
    model_visible_views: tuple[str, ...]

    def item(self, name: str) -> str:
        """Content of one item by its canonical name; KeyError for an unknown name."""
        return self.items[name]

    def render(self) -> str:
        """Canonical Markdown for the Resident context: same profile, same bytes.

        Canonical headings and order regardless of how the file spelled them;
        extra sections of the file are not included.
        """
        parts = [f"# {PROFILE_TITLE}"]
        for section, items in REQUIRED_STRUCTURE:
            parts.append(f"## {section}")
            parts.extend(f"### {item}\n{self.items[item]}" for item in items)
        return "\n\n".join(parts) + "\n"
