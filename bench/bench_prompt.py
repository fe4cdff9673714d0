"""Cacheable prompt prefix per turn: 1,000 memory entries, 200 skills, 30 tools, 10 turns.

    .venv/bin/python bench/bench_prompt.py [--quick] [--turns N] [--views N]

A real Harness (real FileMemory with 1,000 MEMORY.md entries and 30 tool-experience
ledgers, a SkillCatalog of 200 skills, 30 tools) runs a synthesised task: each turn the
model calls the next tool, the harness writes Task Notes (a notes snapshot joins the
history when they change) and observes the simulator's apartment through the front,
torso and wrist cameras (640x480 frames from harness_ros_sim.sim, fitted to the default
320x240 pixel budget and JPEG-encoded at the default quality 80, as the node does), the
robot turning a little between turns so every frame is new.

Each request is serialised as litellm receives it from the adapter (``tools`` then
``messages``, JSON), once as sent to a provider that caches on its own (openai/...)
and once with the cache breakpoints sent to Claude (anthropic/...). Per turn:

- repeat: bytes of the longest prefix equal to the previous turn's request, as a
  share of all request bytes (images included as the base64 data URIs sent);
- text repeat: the same share with the image payloads left out of the total; images
  are billed by their pixels, not by their base64 length;
- images: the image payloads' share of the request bytes;
- est. tokens: the harness's estimate (characters / 4, a fixed cost per image), and the
  share of it in messages identical to the previous turn's (what a prefix cache re-reads).

``cacheable prefix`` is the mean text repeat from turn 2 on (goal >= 90%).
"""

from __future__ import annotations

import dataclasses
import json
import math
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
from _common import base_parser, headline, machine_line, print_table
from bench_turn_overhead import SKILLS, TOOLS, CountingSummarizer, make_tools, write_memory, write_skills

from harness_ros.context import OBSERVATION_HEADER
from harness_ros.context.compaction import IMAGE_TOKENS, estimate_tokens
from harness_ros.harness import Harness
from harness_ros.memory import FileMemory
from harness_ros.model import LiteLLMModel
from harness_ros.model.contracts import ModelReply, ToolCall, count_images
from harness_ros.model.litellm_model import import_litellm
from harness_ros.observation.contracts import Clearance, Observation, ViewImage
from harness_ros.observation.pipeline import encode_jpeg, fit_to_budget
from harness_ros.skills import SkillCatalog
from harness_ros_sim.sim import World
from harness_ros_sim.sim.render import Renderer
from harness_ros_sim.sim.spec import apartment_spec

GOAL = 90.0
PIXEL_BUDGET = 320 * 240
"""The default ``observations.views.*.pixel_budget``: what the node sends of each view."""
PROVIDER_IMAGE_TOKENS = {"openai": 255, "claude": 102}
"""Tokens a 320x240 image costs: gpt-4o at high detail (one 512 tile: 170 + 85), Claude (w x h / 750)."""
MODELS = {"openai": "openai/gpt-4o", "claude": "anthropic/claude-sonnet-4-20250514"}


class SimObservations:
    """Front, torso and wrist frames of the simulated apartment; the robot turns 4 degrees a turn."""

    def __init__(self, views: int) -> None:
        self.world = World(apartment_spec())
        self.renderer = Renderer(640, 480)
        self.names = ("front", "torso", "wrist")[:views]
        self.now = 1000.0

    def observe(self) -> Observation:
        pose = self.world.pose
        self.world.pose = dataclasses.replace(pose, yaw=pose.yaw + math.radians(4))
        self.now += 3.0
        frames = tuple(
            ViewImage(name, self._jpeg(name), 320, 240, self.now, 0.05, False) for name in self.names
        )
        return Observation(
            time=self.now, views=frames, clearance=Clearance(1.2, 0.5, 0.9, 0.5, self.now, 0.05, False)
        )

    def _jpeg(self, name: str) -> bytes:
        # As the node does: the camera's 640x480 frame fitted to the pixel budget, JPEG quality 80.
        rgb = fit_to_budget(self.renderer.render(self.world, name).rgb, PIXEL_BUDGET)
        return encode_jpeg(np.ascontiguousarray(rgb[:, :, ::-1]), 80)  # RGB from the renderer, BGR for OpenCV

    def observe_after(self, after: float, timeout_s: float) -> Observation:
        return self.observe()


class RequestRecorder:
    """Calls tool_00, tool_01, ... then reports; keeps every decide request it was sent."""

    name = "bench/recorder"

    def __init__(self, turns: int) -> None:
        self.turns = turns
        self.requests: list[tuple[list[dict[str, Any]], list[dict[str, Any]] | None]] = []

    def complete(
        self, messages: list[dict[str, Any]], *, tools: Any = None, json_mode: bool = False
    ) -> ModelReply:
        turn = len(self.requests)
        self.requests.append((json.loads(json.dumps(messages)), json.loads(json.dumps(tools))))
        if turn + 1 >= self.turns:
            report = {"outcome": "succeeded", "summary": "The kitchen is tidy."}
            return ModelReply(None, (ToolCall(f"call_{turn}", "finish_task", json.dumps(report), report),))
        arguments = {"target": f"cup {turn}", "speed": 0.5}
        call = ToolCall(f"call_{turn}", f"tool_{turn % TOOLS:02d}", json.dumps(arguments), arguments)
        return ModelReply(None, (call,))


def common_prefix(a: bytes, b: bytes) -> int:
    """Length of the longest common prefix (binary search on slice equality: C-speed compares)."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        mid = (low + high + 1) // 2
        if a[:mid] == b[:mid]:
            low = mid
        else:
            high = mid - 1
    return low


def image_bytes(messages: list[dict[str, Any]]) -> int:
    return sum(
        len(part["image_url"]["url"])
        for message in messages
        if isinstance(message.get("content"), list)
        for part in message["content"]
        if isinstance(part, dict) and part.get("type") == "image_url"
    )


def wire(model: LiteLLMModel, messages: list[dict[str, Any]], tools: Any, markers: bool) -> bytes:
    """The request as the adapter hands it to litellm: tools, then messages."""
    request = model._request(messages, tools, False, cache_markers=markers)
    body = {"tools": request.get("tools"), "messages": request["messages"]}
    return json.dumps(body, ensure_ascii=False).encode()


def is_observation(message: dict[str, Any]) -> int:
    """1 when ``message`` is the Refreshed observation (sent once, never kept in history)."""
    content = message.get("content")
    first = content[0] if isinstance(content, list) and content else {}
    return int(str(first.get("text", "")).startswith(OBSERVATION_HEADER))


def same_messages(previous: list[dict[str, Any]], current: list[dict[str, Any]]) -> int:
    count = 0
    for old, new in zip(previous, current, strict=False):
        if old != new:
            break
        count += 1
    return count


def measure(
    requests: list[tuple[list[dict[str, Any]], Any]], model: LiteLLMModel, markers: bool
) -> list[dict[str, float]]:
    rows: list[dict[str, float]] = []
    previous: bytes | None = None
    previous_messages: list[dict[str, Any]] = []
    for messages, tools in requests:
        body = wire(model, messages, tools, markers)
        images = image_bytes(messages)
        repeat = common_prefix(previous, body) if previous is not None else 0
        tokens = estimate_tokens(messages, tools)
        kept = same_messages(previous_messages, messages) if previous is not None else 0
        cached_tokens = estimate_tokens(messages[:kept], tools) if kept else 0
        sent = count_images(messages)
        rows.append(
            {
                "bytes": len(body),
                "repeat": 100 * repeat / len(body),
                "text_repeat": 100 * repeat / (len(body) - images),
                "images": 100 * images / len(body),
                "tokens": tokens,
                "token_repeat": 100 * cached_tokens / tokens,
                "cached_tokens": cached_tokens,
                "image_count": sent,
                # Everything but the previous observation is re-sent unchanged: nothing was
                # inserted before or rewritten in the older history.
                "stable": float(
                    previous is None or kept == len(previous_messages) - is_observation(previous_messages[-1])
                ),
            }
        )
        previous, previous_messages = body, messages
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=10, help="model decisions in the task (default 10)")
    parser.add_argument(
        "--views", type=int, default=3, choices=(0, 1, 2, 3), help="camera views sent per turn"
    )
    args = parser.parse_args(argv)
    turns = min(args.turns, 5) if args.quick else args.turns

    with tempfile.TemporaryDirectory(prefix="harness_bench_") as tmp:
        root = Path(tmp)
        write_memory(root / "memory")
        write_skills(root / "skills")
        memory = FileMemory(root / "memory", tool_experience_summarizer=CountingSummarizer())
        skills = SkillCatalog.discover(root / "skills")
        assert len(skills.names) == SKILLS
        recorder = RequestRecorder(turns)
        observations = SimObservations(args.views) if args.views else None
        harness = Harness(
            model=recorder, tools=make_tools(), memory=memory, skills=skills, observations=observations
        )
        events = [event.to_dict() for event in harness.run("tidy the kitchen", task_id="bench-prompt")]
        assert events[-1]["data"]["status"] == "completed", events[-1]
    assert len(recorder.requests) == turns

    print(__doc__.splitlines()[0])
    print(machine_line())
    system_chars = len(recorder.requests[0][0][0]["content"])
    print(
        f"{turns} turns; {args.views} camera views per turn (320x240, JPEG q80); system message "
        f"{system_chars:,} characters; {TOOLS} tools; {SKILLS} skills; 1,000 memory entries\n"
    )
    results = {}
    for label, name in MODELS.items():
        model = LiteLLMModel(name)
        markers = model.cache_markers(import_litellm())  # auto: the adapter's own decision
        rows = measure(recorder.requests, model, markers)
        results[label] = rows
        how = "cache_control breakpoints" if markers else "no markers: the provider caches by itself"
        print(f"{name} ({how}):")
        table = [
            (
                str(n),
                f"{row['bytes'] / 1000:.1f}",
                f"{row['repeat']:.1f}%" if n > 1 else "-",
                f"{row['text_repeat']:.1f}%" if n > 1 else "-",
                f"{row['images']:.1f}%",
                f"{row['tokens']:,.0f}",
                f"{row['token_repeat']:.1f}%" if n > 1 else "-",
            )
            for n, row in enumerate(rows, start=1)
        ]
        print_table(("turn", "kB", "repeat", "text repeat", "images", "est. tokens", "tokens repeat"), table)
        later = rows[1:]
        cost = PROVIDER_IMAGE_TOKENS[label]
        priced = statistics.mean(
            100 * r["cached_tokens"] / (r["tokens"] + r["image_count"] * (cost - IMAGE_TOKENS)) for r in later
        )
        print(
            f"  from turn 2: repeat {statistics.mean(r['repeat'] for r in later):.1f}% of all bytes, "
            f"{statistics.mean(r['text_repeat'] for r in later):.1f}% of text bytes, "
            f"{statistics.mean(r['token_repeat'] for r in later):.1f}% of est. tokens "
            f"({priced:.1f}% with images at {cost} tokens each); "
            f"images {statistics.mean(r['images'] for r in later):.1f}% of bytes"
        )
        unstable = [n for n, r in enumerate(rows, start=1) if not r["stable"]]
        print(
            "  older history re-sent unchanged at every turn\n"
            if not unstable
            else f"  older history CHANGED at turns {unstable}\n"
        )

    later = results["openai"][1:]
    share = statistics.mean(row["text_repeat"] for row in later)
    every = statistics.mean(row["repeat"] for row in later)
    cost = PROVIDER_IMAGE_TOKENS["openai"]
    priced = statistics.mean(
        100 * r["cached_tokens"] / (r["tokens"] + r["image_count"] * (cost - IMAGE_TOKENS)) for r in later
    )
    print(
        f"cacheable prefix: {share:.0f}% (of the text bytes, turn 2 on, {MODELS['openai']}; "
        f"{every:.0f}% of all bytes with the images' base64; {priced:.0f}% of the tokens "
        f"with images at {cost} tokens)"
    )
    print(f"image share of the prompt bytes: {statistics.mean(row['images'] for row in later):.0f}%")
    print(
        f"estimated tokens per turn: {statistics.mean(row['tokens'] for row in results['openai']):,.0f} "
        f"(characters / 4, {IMAGE_TOKENS} per image)"
    )
    headline("cacheable prefix (text bytes, turn 2 on)", f"{share:.1f}%", f">= {GOAL:.0f}%", share >= GOAL)
    return 0


if __name__ == "__main__":
    sys.exit(main())
