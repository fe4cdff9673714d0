"""build_harness: memory, profile, skills, hooks and run folder from the configuration."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness_ros.config import HarnessConfig, MemoryConfig, SkillsConfig
from harness_ros.errors import ProfileParseError
from harness_ros.events import EventType
from harness_ros.harness import build_harness
from harness_ros.hooks import ApprovalHook, BaseMotionSafetyFilter
from harness_ros.memory import ModelMemoryConsolidator
from harness_ros.model.contracts import ModelReply, ToolCall
from harness_ros.observation.contracts import Clearance, Observation
from harness_ros.tools import success, tool

REPO = Path(__file__).resolve().parents[1]


class Model:
    name = "scripted/factory"

    def __init__(self, replies: list[ModelReply]) -> None:
        self.replies = replies
        self.requests: list[list[dict[str, Any]]] = []

    def complete(
        self, messages: list[dict[str, Any]], *, tools: Any = None, json_mode: bool = False
    ) -> ModelReply:
        self.requests.append(messages)
        if self.replies:
            return self.replies.pop(0)
        finish = {"outcome": "succeeded", "summary": "done"}
        return ModelReply(
            text=None, tool_calls=(ToolCall("c_end", "finish_task", json.dumps(finish), finish),)
        )


class Observations:
    def __init__(self) -> None:
        self.clearance_reads = 0

    def now(self) -> float:
        return 5.0

    def observe(self) -> Observation:
        return Observation(time=5.0)

    def observe_after(self, after: float, timeout_s: float) -> Observation:
        return Observation(time=5.0)

    def clearance(self) -> Clearance | None:
        self.clearance_reads += 1
        return None  # no reading: base motion must be blocked


@tool(description="Drive.", physical=True, base_motion=True, distance_argument="distance_m")
def drive(distance_m: float) -> dict[str, Any]:
    return success(moved_m=distance_m)


@tool(description="Open the door.", physical=True, requires_approval=True)
def open_door() -> dict[str, Any]:
    return success(opened=True)


def _config(tmp_path: Path, **updates: Any) -> HarnessConfig:
    base = HarnessConfig(
        embodiment_profile_file=REPO / "profiles" / "mobile_manipulator.md",
        skills=SkillsConfig(dir=REPO / "skills"),
        memory=MemoryConfig(dir=tmp_path / "memory"),
    )
    config = base.model_copy(update=updates)
    return config.model_copy(
        update={"harness": config.harness.model_copy(update={"runs_dir": tmp_path / "runs"})}
    )


def test_build_harness_wires_every_part(tmp_path: Path) -> None:
    model = Model(
        [
            ModelReply(
                text=None, tool_calls=(ToolCall("c1", "drive", '{"distance_m": 0.5}', {"distance_m": 0.5}),)
            )
        ]
    )
    observations = Observations()
    harness = build_harness(
        _config(tmp_path), tools=[drive, open_door], observations=observations, model=model
    )
    assert harness.model is model
    assert harness.memory is not None and isinstance(harness.memory.consolidator, ModelMemoryConsolidator)
    assert harness.profile is not None
    assert [type(h) for h in harness.hooks] == [ApprovalHook, BaseMotionSafetyFilter]
    assert "load_skill" in harness.registry.names()
    events = list(harness.run("drive a bit", task_id="f1"))
    system = model.requests[0][0]["content"]
    assert "<embodiment_profile>" in system and "<skill_catalog>" in system
    assert "<memory>" not in system  # a new memory folder has no entries: no empty block
    assert "fetch-object" in system
    # The profile's text outside the seven items reaches the model too (the frame convention).
    assert "x forward, y left, z up" in system.split("<embodiment_profile>", 1)[1]
    # The safety filter read clearance from the observation source and blocked.
    assert observations.clearance_reads == 1
    block = [e.payload.to_data() for e in events if e.type is EventType.SAFETY][-1]
    assert block["action"] == "block"
    folder = tmp_path / "runs" / "f1"
    assert json.loads((folder / "trajectory.json").read_text())["status"] == "completed"
    # The node's harness waits observations.first_frame_timeout_s for the first frames.
    assert harness.first_frame_timeout_s == 5.0
    config = _config(tmp_path)
    config = config.model_copy(
        update={"observations": config.observations.model_copy(update={"first_frame_timeout_s": 12.5})}
    )
    assert build_harness(config, model=model).first_frame_timeout_s == 12.5


def test_consolidator_none_and_no_approval_hook(tmp_path: Path) -> None:
    config = _config(tmp_path, memory=MemoryConfig(dir=tmp_path / "memory", consolidator="none"))
    harness = build_harness(config, tools=[drive], model=Model([]))
    assert harness.memory is not None and harness.memory.consolidator is None
    assert [type(h) for h in harness.hooks] == [BaseMotionSafetyFilter]
    events = list(harness.run("say hi"))
    consolidation = next(e for e in events if e.type is EventType.MEMORY_CONSOLIDATION).payload.to_data()
    assert consolidation["skipped"] is True


def test_invalid_profile_is_a_start_up_error(tmp_path: Path) -> None:
    bad = tmp_path / "profile.md"
    bad.write_text("# Embodiment Profile\n\n## Operational Envelope\n")
    with pytest.raises(ProfileParseError):
        build_harness(_config(tmp_path, embodiment_profile_file=bad), model=Model([]))


def _memory_settings(memory: Any) -> tuple[Any, ...]:
    return (
        memory.root,
        memory.min_confidence,
        memory.pending_limit,
        memory.max_pending_attempts,
        memory.resident_budget_chars,
        memory.audit_max_bytes,
        memory.audit_keep,
        memory.transient_rules,
        memory.poisoning_rules,
    )


def test_every_memory_opened_from_the_config_has_the_node_settings(tmp_path: Path) -> None:
    """The node's harness and replay, the demo and the CLI (``FileMemory.from_config``) judge
    and store entries by the same settings: none is left at FileMemory's defaults."""
    from harness_ros.memory import DEFAULT_POISONING_RULES, DEFAULT_TRANSIENT_RULES, FileMemory

    settings = {
        "min_confidence": 0.6,
        "pending_limit": 3,
        "resident_budget_chars": 900,
        "audit_max_bytes": 2048,
        "audit_keep": 1,
    }
    memory_config = MemoryConfig(dir=tmp_path / "memory", **settings)
    model = Model([])
    node = build_harness(_config(tmp_path, memory=memory_config), model=model).memory
    expected = (
        tmp_path / "memory",
        0.6,
        3,
        5,
        900,
        2048,
        1,
        DEFAULT_TRANSIENT_RULES,
        DEFAULT_POISONING_RULES,
    )
    assert node is not None and _memory_settings(node) == expected
    replay = FileMemory.from_config(memory_config, consolidator=ModelMemoryConsolidator(model))
    assert _memory_settings(replay) == expected
    assert isinstance(node.consolidator, ModelMemoryConsolidator) and node.consolidator.min_confidence == 0.6
    assert node.summarizer is not None  # the consolidating model also summarises the ledgers
    elsewhere = tmp_path / "elsewhere"
    assert FileMemory.from_config(memory_config, root=elsewhere).root == elsewhere
    assert FileMemory.from_config(memory_config).consolidator is None  # read-only: no model
    none = memory_config.model_copy(update={"consolidator": "none"})
    assert FileMemory.from_config(none, model=model).consolidator is None
