"""The Refreshed context: one Observation as a user message, and its event summary.

Images go in a user message as ``image_url`` parts (providers reject images in
tool results). The message is rebuilt before every decision and never stored in
history, so only the newest observation is ever sent.
"""

from __future__ import annotations

import base64
from typing import Any

from harness_ros.context.contracts import Message
from harness_ros.model.markers import OBSERVATION_HEADER
from harness_ros.observation.contracts import (
    DEPTH_COLUMNS,
    DEPTH_REGION_NAMES,
    DEPTH_ROWS,
    DIRECTIONS,
    Clearance,
    DepthRegion,
    DepthSummary,
    Observation,
)

__all__ = [
    "OBSERVATION_HEADER",
    "OBSERVATION_UNCHANGED",
    "observation_images",
    "observation_message",
    "observation_summary",
    "observation_update",
]

_NOT_SHOWN = "Views not shown (text-only model):"
OBSERVATION_UNCHANGED = "Unchanged since the last observation (fresh)."
_OTHERS_UNCHANGED = "(Other readings unchanged, fresh.)"


def _clearance_line(clearance: Clearance | None) -> str:
    if clearance is None:
        return "Base clearance: not available (base motion will be blocked)"
    # "m" once in the heading, not after each value: every token of this line is in every
    # decision's new (uncached) text.
    values = ", ".join(
        f"{direction} {_short_metres(clearance.get(direction), 2)}" for direction in DIRECTIONS
    )
    return f"Base clearance m from the footprint edge{_freshness(clearance.age_s, clearance.stale)}: {values}"


def _freshness(age_s: float | None, stale: bool) -> str:
    # A fresh reading carries no age: the harness only shows it because it is fresh (the
    # safety filter checks the raw age itself), and the age cost 8 tokens a line in every
    # decision. A stale or missing one says so, with its age.
    if age_s is None:
        return " (missing)"
    if stale:
        return f" (STALE, age {age_s:.2f} s: base motion will be blocked)"
    return ""


def _depth_lines(depth: DepthSummary | None) -> list[str]:
    """The depth line of ``observations.depth``, or of a view's own depth camera (its label
    names the view: "Depth wrist ...")."""
    # One line, "nearest/median" per region. The 3x3 grid goes row by row (top; middle;
    # bottom, each left to right) rather than naming all nine regions: the names cost a
    # third of the line's tokens, and a model reads the grid as well.
    if depth is None:
        return []
    if depth.age_s is None:
        freshness = " (missing)"
    else:
        freshness = f" (STALE, age {depth.age_s:.2f} s)" if depth.stale else ""
    label = "Depth" if depth.view is None else f"Depth {depth.view}"
    by_name = {region.name: region for region in depth.regions}
    if set(by_name) == set(DEPTH_REGION_NAMES):
        rows = []
        for row in DEPTH_ROWS:
            cells = " ".join(_pair(by_name[f"{row}-{column}"]) for column in DEPTH_COLUMNS)
            rows.append(f"{row} {cells}")
        return [f"{label} nearest/median m per image region, left to right{freshness}: {'; '.join(rows)}"]
    regions = ", ".join(f"{region.name} {_pair(region)}" for region in depth.regions)
    return [f"{label} per image region, nearest/median m{freshness}: {regions}"]


def _pair(region: DepthRegion) -> str:
    return f"{_short_metres(region.nearest_m)}/{_short_metres(region.median_m)}"


def _short_metres(value: float | None, decimals: int = 1) -> str:
    # Depth regions to the decimetre: a region's nearest and median point guide an
    # approach, they are not a safety reading (clearance keeps centimetres, and the
    # safety filter reads the raw values). A digit is a token to a local model.
    return "unknown" if value is None else f"{value:.{decimals}f}"


def observation_images(observation: Observation) -> list[tuple[str, bytes]]:
    """The JPEG images that go to the model, as (name, bytes), in message order."""
    images = [(view.name, view.jpeg) for view in observation.views if view.jpeg and not view.missing]
    if observation.depth is not None and observation.depth.preview_jpeg:
        images.append(("depth_preview", observation.depth.preview_jpeg))
    images.extend(
        (f"{depth.view}_depth_preview", depth.preview_jpeg)
        for depth in observation.view_depths
        if depth.preview_jpeg
    )
    return images


def observation_message(observation: Observation, *, images: bool = True) -> Message:
    """The user message carrying the observation: a text summary, then one image per view.

    ``images=False`` (a model without vision, ``model.vision``): no image part at all; the
    text names the views it does not show and keeps the depth and the clearance."""
    lines = [OBSERVATION_HEADER]
    if images:
        lines.append("Views:")
        lines.extend(
            f"- {view.name}: {view.width}x{view.height}, {view.freshness_label()}"
            for view in observation.views
        )
        if not observation.views:
            lines.append("- none")
    else:
        # One line of names: the age of a view the model cannot see tells it nothing (a
        # list item per view with its age cost a text-only model 60 tokens a decision).
        names = ", ".join(view.name for view in observation.views)
        lines.append(f"{_NOT_SHOWN} {names or 'none'}")
    # where a camera that moves is looking: its own line, shown with or without the images
    lines.extend(f"Camera {view.name} aim: {view.aim.describe()}" for view in observation.views if view.aim)
    lines.append(_clearance_line(observation.clearance))
    lines.extend(_depth_lines(observation.depth))
    for view_depth in observation.view_depths:
        lines.extend(_depth_lines(view_depth))
    lines.extend(f"Note: {note}" for note in observation.notes)
    content: list[dict[str, Any]] = [{"type": "text", "text": "\n".join(lines)}]
    for name, jpeg in observation_images(observation) if images else ():
        encoded = base64.b64encode(jpeg).decode("ascii")
        content.append({"type": "text", "text": f"View {name}:"})
        content.append({"type": "image_url", "image_url": {"url": f"data:image/jpeg;base64,{encoded}"}})
    return {"role": "user", "content": content}


def observation_update(previous: str | None, text: str) -> str:
    """What to add to a text-only model's history for an observation whose text is
    ``text``, when the last one it was shown is ``previous`` (None: none, or compacted away).

    The text of a model that takes no images is kept in its history, so each later one can
    hold only the lines that changed: an observation is new text at every decision (no
    cache reaches it), and after a pick or a place the robot's readings are the same to the
    centimetre (the sim's, eval run K). A line is known by its label (the text before its
    first colon): a label that appears, goes or changes (a reading that turns stale or
    missing says so in its label) shows the whole observation again."""
    if previous is None:
        return text
    lines, before = text.split("\n"), previous.split("\n")
    if [_label(line) for line in before] != [_label(line) for line in lines]:
        return text
    changed = [line for line, old in zip(lines[1:], before[1:], strict=True) if line != old]
    if not changed:
        return f"{lines[0]}\n{OBSERVATION_UNCHANGED}"
    return "\n".join([lines[0], *changed, _OTHERS_UNCHANGED])


def _label(line: str) -> str:
    return line.split(":", 1)[0]


def observation_summary(observation: Observation) -> dict[str, Any]:
    """JSON-safe event data: view names, sizes, freshness, clearance, depth. Never image bytes."""
    clearance = observation.clearance
    depth = observation.depth
    return {
        "time": observation.time,
        "views": [
            {
                "name": view.name,
                "width": view.width,
                "height": view.height,
                "jpeg_bytes": len(view.jpeg),
                "age_s": view.age_s,
                "stale": view.stale,
                "missing": view.missing,
                "freshness": view.freshness_label(),
            }
            for view in observation.views
        ],
        "clearance": None
        if clearance is None
        else {
            **{direction: clearance.get(direction) for direction in DIRECTIONS},
            "age_s": clearance.age_s,
            "stale": clearance.stale,
        },
        "depth": None
        if depth is None
        else {
            "regions": [
                {"name": r.name, "nearest_m": r.nearest_m, "median_m": r.median_m} for r in depth.regions
            ],
            "age_s": depth.age_s,
            "stale": depth.stale,
        },
        "view_depths": [
            {
                "view": d.view,
                "regions": [
                    {"name": r.name, "nearest_m": r.nearest_m, "median_m": r.median_m} for r in d.regions
                ],
                "age_s": d.age_s,
                "stale": d.stale,
            }
            for d in observation.view_depths
        ],
        "aims": {
            view.name: {"pan_deg": view.aim.pan_deg, "tilt_deg": view.aim.tilt_deg, "stale": view.aim.stale}
            for view in observation.views
            if view.aim is not None
        },
        "notes": list(observation.notes),
    }
