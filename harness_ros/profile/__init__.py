"""Embodiment Profile: the robot's body, senses and base-relative geometry, as validated Markdown."""

from __future__ import annotations

from harness_ros.profile.contracts import (
    MODEL_VISIBLE_VIEWS_ITEM,
    REQUIRED_STRUCTURE,
    EmbodimentProfile,
)
from harness_ros.profile.loader import (
    load_embodiment_profile,
    load_embodiment_profile_document_from_config,
    parse_embodiment_profile,
)

__all__ = [
    "MODEL_VISIBLE_VIEWS_ITEM",
    "REQUIRED_STRUCTURE",
    "EmbodimentProfile",
    "load_embodiment_profile",
    "load_embodiment_profile_document_from_config",
    "parse_embodiment_profile",
]
