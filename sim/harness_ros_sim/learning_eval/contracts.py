"""Values of the learning evaluation: arms, scenarios, success conditions, metrics, results.

All frozen dataclasses and Enums, JSON-ready through ``to_dict``; no ROS, no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any

from harness_ros_sim.sim.spec import WorldSpec

__all__ = [
    "Arm",
    "ArmSummary",
    "Challenge",
    "EpisodeMetrics",
    "EpisodeResult",
    "EvalReport",
    "ObjectOnSurface",
    "Scenario",
    "ScenarioKind",
    "TokenCount",
]


class Arm(str, Enum):
    """The two arms of the evaluation: the same scenarios, with and without carried memory."""

    MEMORY_ON = "memory_on"
    """One memory folder carried across the episodes (consolidated after each completed task)."""
    MEMORY_OFF = "memory_off"
    """A fresh, empty memory folder for every episode."""

    @property
    def label(self) -> str:
        return self.value.replace("_", " ")


class ScenarioKind(str, Enum):
    """What makes an episode hard for an agent without experience."""

    REACH = "reach"
    """The object is out of reach from the surface's default standoff: approach the object."""
    HIDDEN = "hidden"
    """The object is not visible from the surface's default standoff: approach the object."""
    SLIPPERY = "slippery"
    """The object is slippery and the first grasp slips: grasp again."""
    BLOCKED = "blocked"
    """The straight line to the target is blocked: drive through a waypoint (an area) first."""
    PLAIN = "plain"
    """Nothing goes wrong on the direct plan: the control case."""


class Challenge(str, Enum):
    """A failure the direct plan meets in the sim (found by rehearsing it on the pure world)."""

    OUT_OF_REACH = "out_of_reach"
    NOT_VISIBLE = "not_visible"
    SLIP = "slip"
    PATH_BLOCKED = "path_blocked"


@dataclass(frozen=True)
class ObjectOnSurface:
    """Success condition: at the end, ``object_id`` rests on ``surface_id`` (not in the gripper)."""

    object_id: str
    surface_id: str

    def describe(self) -> str:
        return f"{self.object_id} is on {self.surface_id} and not in the gripper"

    def check(self, ground_truth: Mapping[str, Any]) -> tuple[bool, str]:
        """(met, why) from the sim's ground-truth state (``World.ground_truth()``)."""
        objects = ground_truth.get("objects")
        entry = objects.get(self.object_id) if isinstance(objects, Mapping) else None
        if not isinstance(entry, Mapping):
            return False, f"the ground truth has no object {self.object_id!r}"
        holding = (ground_truth.get("gripper") or {}).get("holding")
        on = entry.get("on")
        if on == self.surface_id and holding != self.object_id:
            return True, f"{self.object_id} is on {self.surface_id}"
        if holding == self.object_id:
            return False, f"{self.object_id} is still in the gripper"
        return False, f"{self.object_id} is on {on!r}, not on {self.surface_id!r}"

    def to_dict(self) -> dict[str, str]:
        return {"kind": "object_on_surface", "object_id": self.object_id, "surface_id": self.surface_id}


@dataclass(frozen=True)
class Scenario:
    """One episode's task: the world it starts in, the words a person uses, what counts as done."""

    episode: int
    suite_seed: int
    kind: ScenarioKind
    world_seed: int
    """Seed of the sim for this episode (grasp slips); the sim is reset with it."""
    slip_probability: float
    instruction: str
    object_id: str
    source: str
    target: str
    challenges: tuple[Challenge, ...]
    """Failures the direct plan meets, in order (rehearsed on the pure world)."""
    reference_plan: tuple[str, ...]
    """A plan that succeeds in this world, with what each step returned."""
    world: WorldSpec = field(repr=False)
    success: ObjectOnSurface

    @property
    def id(self) -> str:
        return f"ep{self.episode:03d}-{self.kind.value}"

    def to_dict(self) -> dict[str, Any]:
        obj = next(o for o in self.world.objects if o.id == self.object_id)
        robot = self.world.robot
        return {
            "id": self.id,
            "episode": self.episode,
            "suite_seed": self.suite_seed,
            "kind": self.kind.value,
            "world_seed": self.world_seed,
            "slip_probability": self.slip_probability,
            "instruction": self.instruction,
            "object_id": self.object_id,
            "object_xy": [obj.x, obj.y],
            "object_slippery": obj.slippery,
            "source": self.source,
            "target": self.target,
            "robot_start": [robot.x, robot.y, robot.yaw],
            "challenges": [c.value for c in self.challenges],
            "reference_plan": list(self.reference_plan),
            "success_condition": self.success.to_dict(),
        }


@dataclass(frozen=True)
class TokenCount:
    prompt: int = 0
    completion: int = 0
    cached: int = 0
    """Prompt tokens served from the provider's prompt cache (part of ``prompt``)."""

    def __add__(self, other: TokenCount) -> TokenCount:
        return TokenCount(
            self.prompt + other.prompt, self.completion + other.completion, self.cached + other.cached
        )

    def to_dict(self) -> dict[str, int]:
        return {"in": self.prompt, "out": self.completion, "cached": self.cached}


@dataclass(frozen=True)
class EpisodeMetrics:
    """What one task's events say: how it ended, turns, tool calls, failures, tokens."""

    status: str
    """The harness's ``done`` status (the model's own account), or ``no done event``."""
    turns: int
    tool_calls: Mapping[str, int]
    failed_calls: Mapping[str, int]
    """tool_result events whose envelope is not ``success: true``, per tool."""
    decision_tokens: TokenCount
    """Summed ``usage`` of the ``model_response`` events (the decisions)."""
    task_elapsed_s: float
    outcome: str = "none"
    """The ``done`` event's outcome (succeeded, failed, unverified: the harness's account
    after its goal check), or ``none`` without one."""
    ended_by: str = "none"
    """What ended the task: ``finish_task``, ``operator question``, ``limit: <which>``
    (wall time, text replies, malformed replies, turns), ``cancelled``, or ``none``."""
    lessons_written: int = 0
    """Entries consolidation wrote (MEMORY.md and tool-experience ledgers)."""
    lessons_refused: Mapping[str, int] = field(default_factory=dict)
    """Entries consolidation refused, per rule (a transient reference, no confirmed success, ...)."""
    held_calls: Mapping[str, int] = field(default_factory=dict)
    """Calls the harness answered with the step their tool's ledger gives before a first
    call, per tool (refusal ``held_by_experience`` or ``held_finish``): not run, so neither calls
    nor failures."""

    @property
    def failed_total(self) -> int:
        return sum(self.failed_calls.values())

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "outcome": self.outcome,
            "ended_by": self.ended_by,
            "lessons_written": self.lessons_written,
            "lessons_refused": dict(sorted(self.lessons_refused.items())),
            "turns": self.turns,
            "tool_calls": dict(sorted(self.tool_calls.items())),
            "failed_calls": dict(sorted(self.failed_calls.items())),
            "failed_total": self.failed_total,
            "held_calls": dict(sorted(self.held_calls.items())),
            "decision_tokens": self.decision_tokens.to_dict(),
            "task_elapsed_s": self.task_elapsed_s,
        }


@dataclass(frozen=True)
class EpisodeResult:
    """One episode of one arm: the ground-truth verdict, the metrics and where its files are."""

    arm: Arm
    scenario: Scenario
    success: bool
    """From the sim's ground truth at the end, never from the model's report."""
    check: str
    metrics: EpisodeMetrics
    wall_s: float
    """Wall time from sending the instruction to the ``done`` event."""
    task_id: str = ""
    run_dir: Path | None = None
    report_html: Path | None = None
    memory_dir: Path | None = None
    support_tokens: Mapping[str, TokenCount] = field(default_factory=dict)
    """Tokens of the other model calls (consolidate, summarize, ...) by purpose."""

    @property
    def memory_tokens(self) -> TokenCount:
        total = TokenCount()
        for purpose in ("consolidate", "summarize"):
            total = total + self.support_tokens.get(purpose, TokenCount())
        return total

    def to_dict(self) -> dict[str, Any]:
        return {
            "arm": self.arm.value,
            "episode": self.scenario.episode,
            "scenario": self.scenario.id,
            "kind": self.scenario.kind.value,
            "world_seed": self.scenario.world_seed,
            "success": self.success,
            "check": self.check,
            **self.metrics.to_dict(),
            "support_tokens": {k: v.to_dict() for k, v in sorted(self.support_tokens.items())},
            "memory_tokens": self.memory_tokens.to_dict(),
            "wall_s": round(self.wall_s, 3),
            "task_id": self.task_id,
            "run_dir": str(self.run_dir) if self.run_dir else None,
            "report_html": str(self.report_html) if self.report_html else None,
            "memory_dir": str(self.memory_dir) if self.memory_dir else None,
        }


@dataclass(frozen=True)
class ArmSummary:
    """One arm's totals over its episodes."""

    arm: Arm
    episodes: int
    successes: int
    completed: int
    """Tasks the harness reported ``completed`` (the model's word, for contrast)."""
    failed_calls: Mapping[str, int]
    turns: int
    decision_tokens: TokenCount
    memory_tokens: TokenCount
    wall_s: float
    pick_failures: tuple[int, ...]
    """Failed pick_object calls per episode, in episode order (the plot's series)."""
    outcomes: Mapping[str, int] = field(default_factory=dict)
    """Episodes per reported outcome (succeeded, failed, unverified, none)."""
    outcome_wrong: int = 0
    """Episodes whose reported outcome the ground truth contradicts (succeeded but not met,
    or failed but met); unverified is never wrong, only unconfirmed."""
    ended_by: Mapping[str, int] = field(default_factory=dict)
    """Episodes per way the task ended (``EpisodeMetrics.ended_by``)."""
    lessons_written: int = 0
    lessons_refused: Mapping[str, int] = field(default_factory=dict)
    """Entries consolidation refused over the arm's episodes, per rule."""
    held_calls: Mapping[str, int] = field(default_factory=dict)
    """Calls held by a step from their tool's ledger over the arm's episodes, per tool."""

    @property
    def failures(self) -> int:
        return self.episodes - self.successes

    @property
    def success_rate(self) -> float:
        return self.successes / self.episodes if self.episodes else 0.0

    @property
    def failed_total(self) -> int:
        return sum(self.failed_calls.values())

    @property
    def turns_per_task(self) -> float:
        return self.turns / self.episodes if self.episodes else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "episodes": self.episodes,
            "successes": self.successes,
            "failures": self.failures,
            "success_rate": round(self.success_rate, 4),
            "completed_by_report": self.completed,
            "outcomes": {k: self.outcomes.get(k, 0) for k in ("succeeded", "failed", "unverified", "none")},
            "outcome_contradicted_by_ground_truth": self.outcome_wrong,
            "failed_calls": dict(sorted(self.failed_calls.items())),
            "failed_total": self.failed_total,
            "turns": self.turns,
            "turns_per_task": round(self.turns_per_task, 3),
            "decision_tokens": self.decision_tokens.to_dict(),
            "memory_tokens": self.memory_tokens.to_dict(),
            "wall_s": round(self.wall_s, 3),
            "pick_failures": list(self.pick_failures),
            "ended_by": dict(sorted(self.ended_by.items())),
            "lessons_written": self.lessons_written,
            "lessons_refused": dict(sorted(self.lessons_refused.items())),
            "held_calls": dict(sorted(self.held_calls.items())),
        }


@dataclass(frozen=True)
class EvalReport:
    """The whole measurement: how it was run, the scenarios, and each arm's results."""

    seed: int
    episodes: int
    decisions: str
    """Who decided: the scripted policy's label, or the model string."""
    measures_learning: bool
    """False with the scripted demo policy: it follows experience summaries by rule."""
    disclaimer: str | None
    scenarios: tuple[Scenario, ...]
    results: tuple[EpisodeResult, ...]
    summaries: Mapping[Arm, ArmSummary]
    settings: Mapping[str, Any] = field(default_factory=dict)
    """How the run was made (model, api_base, sim speed, workdir, ...), as JSON values."""
