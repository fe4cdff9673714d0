"""What the first decision of a task sends the model, part by part, and what each part costs.

``first_decision`` builds the request the harness makes before the first decision of a
config: the system message (system prompt, memory, embodiment profile, skill catalog),
the tool definitions, the history (the task's instruction) and an observation of the
configured views, clearance and depth. The observation is a sample (the numbers are
made up; their length is what a real one has), and carries no images: a text-only
local model gets none, and image tokens are the provider's business, not text.

``count_first_decision`` counts it with the installed local model's tokenizer and chat
template (``LocalTokenizer``) when there is one, else with the harness's estimate
(characters / 4, as compaction counts). The parts do not add up to the total: the
chat template's own text (the tool-calling instructions, role markers) is the rest.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harness_ros.config import HarnessConfig
    from harness_ros.observation.contracts import Observation

__all__ = [
    "SAMPLE_INSTRUCTION",
    "FirstDecision",
    "PromptCount",
    "count_first_decision",
    "first_decision",
    "sample_observation",
]

SAMPLE_INSTRUCTION = "Fetch the red cup from the kitchen table and put it on the coffee table."
"""The demo's first task."""
_SAMPLE_FRAME = (640, 480)
"""The sim's camera frames (before the view's pixel budget)."""


@dataclass(frozen=True)
class FirstDecision:
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    parts: list[tuple[str, str]]
    """(part name, its text), in request order."""


@dataclass(frozen=True)
class PromptCount:
    total: int
    parts: list[tuple[str, int]]
    how: str
    """How it was counted: the tokenizer, or ``estimate ...``."""

    def line(self) -> str:
        return f"first decision: {self.total} tokens ({self.how})"


def sample_observation(config: HarnessConfig) -> Observation:
    """An observation with every configured view fresh, a clearance and a depth summary."""
    from harness_ros.observation.contracts import (
        CameraAim,
        Clearance,
        DepthRegion,
        DepthSummary,
        Observation,
        ViewImage,
    )
    from harness_ros.observation.pipeline import DEPTH_REGION_NAMES

    now = 1_000_000.0
    views = []
    for name, view in config.observations.views.items():
        width, height = _SAMPLE_FRAME
        if width * height > view.pixel_budget:
            scale = math.sqrt(view.pixel_budget / (width * height))
            width, height = max(1, math.floor(width * scale)), max(1, math.floor(height * scale))
        aim = None
        if view.pan is not None or view.tilt is not None:
            aim = CameraAim(
                None if view.pan is None else 30.0, None if view.tilt is None else -20.0, age_s=0.1
            )
        views.append(ViewImage(name, b"", width, height, now - 0.21, 0.21, False, aim=aim))
    clearance = None
    if config.observations.clearance is not None:
        clearance = Clearance(1.84, 0.62, 2.47, 0.93, now - 0.12, 0.12, False)
    regions = tuple(
        DepthRegion(name, 1.25 + 0.11 * index, 1.62 + 0.13 * index)
        for index, name in enumerate(DEPTH_REGION_NAMES)
    )
    depth = None
    if config.observations.depth is not None:
        depth = DepthSummary(regions=regions, stamp=now - 0.18, age_s=0.18, stale=False)
    # a view's own depth camera: one more depth line each, counted like observations.depth's
    view_depths = tuple(
        DepthSummary(regions=regions, stamp=now - 0.18, age_s=0.18, stale=False, view=name)
        for name, view in config.observations.views.items()
        if view.depth is not None
    )
    return Observation(
        time=now, views=tuple(views), clearance=clearance, depth=depth, view_depths=view_depths
    )


def first_decision(
    config: HarnessConfig, tool_definitions: Sequence[dict[str, Any]], instruction: str = SAMPLE_INSTRUCTION
) -> FirstDecision:
    """The first decision's request of ``config`` with these tool definitions (``harness-ros
    tools`` rows' definitions), and its parts."""
    from harness_ros.context import ContextBuilder, ResidentContext
    from harness_ros.context.observation import observation_message
    from harness_ros.context.resident import resident_sections
    from harness_ros.harness.prompts import decide_prompt
    from harness_ros.profile import load_embodiment_profile_document_from_config
    from harness_ros.skills import SkillCatalog
    from harness_ros.skills.contracts import LOAD_SKILL_RESOURCE

    memory = ""
    if config.memory.dir.is_dir():
        from harness_ros.memory import FileMemory

        memory = FileMemory.from_config(config.memory).resident_memory()
    profile = load_embodiment_profile_document_from_config(config)
    catalog = SkillCatalog.discover(config.skills.dir) if config.skills.dir is not None else None
    resident = ResidentContext(
        system_prompt=decide_prompt(config.harness.system_prompt),
        memory=memory,
        profile=profile.render() if profile is not None else "",
        tool_definitions=tuple(tool_definitions),
        skill_catalog=catalog.render_catalog() if catalog is not None and catalog.has_skills else "",
    )
    builder = ContextBuilder(resident)
    builder.withhold((LOAD_SKILL_RESOURCE,))  # as a task starts: no skill is loaded yet
    offered = builder.tools() or []
    builder.history.add_instruction(instruction)
    # As a text-only local model gets it (model.vision): no images, the views listed as not shown.
    observation = _text_only(observation_message(sample_observation(config), images=False))
    messages = builder.messages(observation)
    parts = list(resident_sections(resident))
    parts.extend((f"tool {d['function']['name']}", _tool_json(d)) for d in offered)
    parts.append(("history (the instruction)", "\n".join(m["content"] for m in builder.history.messages())))
    parts.append(("observation", "".join(p["text"] for p in observation["content"])))
    return FirstDecision(messages, offered, parts)


def _text_only(message: dict[str, Any]) -> dict[str, Any]:
    """The observation as a text-only model gets it: no image parts, nor their labels."""
    content = message["content"]
    text = [part for part in content[:1] if part.get("type") == "text"]
    return {**message, "content": text}


def _tool_json(definition: dict[str, Any]) -> str:
    # What the served chat template renders of a tool: its function object.
    import json

    return json.dumps(definition.get("function", definition), ensure_ascii=False)


def count_first_decision(
    request: FirstDecision, *, tokenizer: Callable[[], Any] | None = None, use_tokenizer: bool = True
) -> PromptCount:
    """Count with the installed local model's tokenizer (``tokenizer`` makes one; default:
    ``LocalTokenizer`` of the installed model) unless there is none, else the estimate."""
    if use_tokenizer:
        counter = tokenizer() if tokenizer is not None else _installed_tokenizer()
        if counter is not None:
            with counter:
                parts = [(name, counter.count_text(text)) for name, text in request.parts]
                total = counter.count_request(request.messages, request.tools)
            return PromptCount(total, parts, f"counted by the {counter.label}")
    from harness_ros.context.compaction import CHARS_PER_TOKEN, estimate_tokens

    parts = [(name, len(text) // CHARS_PER_TOKEN) for name, text in request.parts]
    total = estimate_tokens(request.messages, request.tools)
    return PromptCount(
        total,
        parts,
        f"estimate: characters / {CHARS_PER_TOKEN}"
        + ("" if not use_tokenizer else "; no local model installed (make local-model)"),
    )


def _installed_tokenizer() -> Any:
    from harness_ros.local_model.tokenizer import LocalTokenizer, installed_tokenizer_model

    path = installed_tokenizer_model()
    return LocalTokenizer(path) if path is not None else None
