"""Observation contracts: what the model sees before each decision.

Camera views arrive as budgeted JPEG bytes with their age; depth and clearance
are in metres. Sources (the ROS layer, a replayed bag, a test fake) implement
``ObservationSource``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

__all__ = [
    "DEPTH_COLUMNS",
    "DEPTH_REGION_NAMES",
    "DEPTH_ROWS",
    "DIRECTIONS",
    "CameraAim",
    "Clearance",
    "DepthRegion",
    "DepthSummary",
    "FirstFrameSource",
    "Observation",
    "ObservationSource",
    "ViewImage",
    "sensor_text",
]

DIRECTIONS: tuple[str, ...] = ("forward", "left", "backward", "right")

SENSOR_TEXT_MAX_CHARS = 64
"""Longest sensor-provided string (a CompressedImage format, an encoding, a frame id) quoted
in text that reaches the model, the evaluator or a log."""

_UNSAFE_QUOTED = re.compile(r"[^A-Za-z0-9 _./:;=+,()#\[\]-]")
_UNSAFE_PROSE = re.compile(r"[^\x20-\x7e]")


def sensor_text(value: object, limit: int = SENSOR_TEXT_MAX_CHARS, *, quote: bool = True) -> str:
    """A string that came in a sensor message, made safe to quote: at most ``limit``
    characters (the rest is counted, not shown) and no line break, control or non-ASCII
    character (each becomes '?'). ``quote``: in single quotes, with quotes inside replaced
    too, so the text cannot close its quotes; otherwise printable ASCII is kept as is (for
    an error text that quotes its own values)."""
    text = str(value)
    shown = (_UNSAFE_QUOTED if quote else _UNSAFE_PROSE).sub("?", text[:limit])
    if len(text) > limit:
        shown += f"...({len(text) - limit} more characters)"
    return f"'{shown}'" if quote else shown


DEPTH_ROWS: tuple[str, ...] = ("top", "middle", "bottom")
DEPTH_COLUMNS: tuple[str, ...] = ("left", "centre", "right")
DEPTH_REGION_NAMES: tuple[str, ...] = tuple(f"{row}-{col}" for row in DEPTH_ROWS for col in DEPTH_COLUMNS)
"""Names of the 3x3 depth regions, row-major, as seen in the image (top-left first)."""


@dataclass(frozen=True)
class CameraAim:
    """Where a camera that moves is looking, from its pan and tilt joints (degrees; pan
    positive to the robot's left, tilt positive up; None: that joint is not configured).
    ``problem`` says why a configured joint gives no reading, or that it is stale."""

    pan_deg: float | None
    tilt_deg: float | None
    age_s: float | None = None
    stale: bool = False
    problem: str | None = None

    def describe(self) -> str:
        """``pan 30 deg left, tilt 20 deg down`` (whole degrees), then any problem."""
        parts = []
        if self.pan_deg is not None:
            parts.append(_angle("pan", self.pan_deg, "left", "right", "straight ahead"))
        if self.tilt_deg is not None:
            parts.append(_angle("tilt", self.tilt_deg, "up", "down", "level"))
        if self.problem:
            parts.append(self.problem)
        return ", ".join(parts) or "unknown"


def _angle(name: str, degrees: float, positive: str, negative: str, zero: str) -> str:
    whole = round(degrees)
    if whole == 0:
        return f"{name} 0 deg ({zero})"
    return f"{name} {abs(whole)} deg {positive if whole > 0 else negative}"


@dataclass(frozen=True)
class ViewImage:
    """One Model-Visible View. ``jpeg`` is empty when the view is missing."""

    name: str
    jpeg: bytes
    width: int
    height: int
    stamp: float | None
    age_s: float | None
    stale: bool
    missing: bool = False
    aim: CameraAim | None = None
    """Where the camera looks, for a view whose pan or tilt joint is configured."""

    def freshness_label(self) -> str:
        if self.stamp is None and self.age_s is None:
            # Never had a frame: the camera has not started (or does not reach the harness),
            # which is not the same as one that stopped (stale).
            return "not started (no frame received yet)"
        if self.missing or self.age_s is None:
            return "missing (the last frame was unusable)"
        label = f"age {self.age_s:.2f} s"
        return f"STALE ({label})" if self.stale else label


@dataclass(frozen=True)
class Clearance:
    """Free distance from the base footprint edge in each direction, metres (None = unknown)."""

    forward: float | None
    left: float | None
    backward: float | None
    right: float | None
    stamp: float | None
    age_s: float | None
    stale: bool
    note: str | None = None
    """Sources that gave nothing usable, for messages: ``nothing received on '/scan' (since
    start-up 3.0 s ago)``, ``'/sonar' is stale (1.20 s old)``; None when all were fresh."""

    def get(self, direction: str) -> float | None:
        return getattr(self, direction) if direction in DIRECTIONS else None

    @property
    def usable(self) -> bool:
        """True when the reading may be trusted for base motion."""
        return not self.stale and self.age_s is not None


@dataclass(frozen=True)
class DepthRegion:
    name: str
    nearest_m: float | None
    median_m: float | None


@dataclass(frozen=True)
class DepthSummary:
    regions: tuple[DepthRegion, ...]
    stamp: float | None
    age_s: float | None
    stale: bool
    preview_jpeg: bytes = b""
    view: str | None = None
    """The view whose depth camera this is (``observations.views.<view>.depth``); None for
    ``observations.depth``."""


@dataclass(frozen=True)
class Observation:
    time: float
    views: tuple[ViewImage, ...] = ()
    depth: DepthSummary | None = None
    clearance: Clearance | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)
    view_depths: tuple[DepthSummary, ...] = ()
    """One depth summary per view that has its own depth camera, in view order."""

    def view(self, name: str) -> ViewImage | None:
        return next((v for v in self.views if v.name == name), None)


class ObservationSource(Protocol):
    def now(self) -> float:
        """Current time on the source's clock (ROS time under use_sim_time)."""
        ...

    def observe(self) -> Observation:
        """The latest observation, built at call time."""
        ...

    def observe_after(self, after: float, timeout_s: float) -> Observation:
        """An observation whose frames are newer than ``after`` (bounded wait; returns
        whatever is there at the deadline, with stale labels)."""
        ...

    def clearance(self) -> Clearance | None:
        """A fresh read of base clearance (for the safety filter)."""
        ...


@runtime_checkable
class FirstFrameSource(Protocol):
    """A source that can wait for its first frames (the ROS source: cameras start late)."""

    def wait_for_first_frames(self, timeout_s: float) -> bool:
        """Block until every view (and depth) delivered a first frame, at most until
        ``timeout_s`` after the source subscribed; False when one is still missing."""
        ...
