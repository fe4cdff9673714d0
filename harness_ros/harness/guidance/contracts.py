"""What a guidance part sees, what it may return, and the points it runs at.

Guidance coaches a small model (``ModelProfile.guided``) through a task: it holds a robot
call once, holds a ``finish_task`` that gives up, and puts a note on the last failure or
refused call as the last words of a decision's request. Each part runs at one declared
point of the task's loop, in the order ``harness_ros.harness.guidance.GUIDANCE`` declares
(the shape of openai-agents' input and output guardrails): the first part at a point that
returns something decides there, the later ones are not asked.

A part reads only a ``TaskView`` (the trajectory, the tools, the ledgers, the skill, the
holds so far and the model's profile) and returns a frozen answer; it changes nothing.
"""

from __future__ import annotations

import enum
import json
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from harness_ros.model.contracts import ModelProfile, ToolCall

if TYPE_CHECKING:
    from harness_ros.memory.contracts import LedgerLesson
    from harness_ros.memory.lessons import StepAhead
    from harness_ros.skills import SkillSession
    from harness_ros.tools import ToolRegistry
    from harness_ros.trajectory import TrajectoryStep

__all__ = ["Advice", "Focus", "GuidancePart", "GuidancePoint", "Hold", "Note", "TaskView", "call_key"]

logger = logging.getLogger(__name__)


class GuidancePoint(enum.Enum):
    """Where in a turn a part runs, and what it may return there."""

    BEFORE_DECISION = "before_decision"
    """Before each model call: a ``Focus`` (the request's last message) or nothing."""
    BEFORE_CALL = "before_call"
    """Before a robot call runs: a ``Hold`` (the call is answered, the robot does nothing) or nothing."""
    BEFORE_FINISH = "before_finish"
    """Before a valid ``finish_task`` ends the task: a ``Hold`` or nothing."""
    ON_NOTE = "on_note"
    """A note the harness answers a reply with (a reminder, an empty reply): a ``Note`` that
    replaces it, or nothing."""


def call_key(tool: str, arguments: Mapping[str, Any]) -> tuple[str, str]:
    """A call as a key: its tool and its arguments as sorted JSON."""
    return tool, json.dumps(dict(arguments), sort_keys=True, default=str)


@dataclass(frozen=True)
class Focus:
    """The last words before a decision: a user message, refreshed every turn, never stored."""

    part: str
    content: str

    def message(self) -> dict[str, Any]:
        return {"role": "user", "content": self.content}


@dataclass(frozen=True)
class Hold:
    """A call answered with ``answer`` instead of running (the robot does nothing)."""

    part: str
    answer: str
    tool: str
    arguments: Mapping[str, Any]
    refusal: str = "held_by_experience"
    """The tool result's ``refusal``: ``held_by_experience`` or ``held_finish``."""
    step: StepAhead | None = None
    """The step the tool's ledger gives to take first (a hold by experience); None otherwise."""
    steps_before: int = 0
    """Trajectory steps before the held call's own step."""

    @property
    def key(self) -> tuple[str, str]:
        return call_key(self.tool, self.arguments)


@dataclass(frozen=True)
class Note:
    """The note to answer a reply with, in place of the one the harness wrote."""

    part: str
    text: str


Advice = Focus | Hold | Note


@dataclass(frozen=True)
class TaskView:
    """What a guidance part sees of the running task, as of now."""

    profile: ModelProfile
    steps: Sequence[TrajectoryStep]
    """The trajectory's steps so far, oldest first."""
    registry: ToolRegistry
    check: Callable[[ToolCall], str | None]
    """Why a call is malformed (``ToolCallRunner.check``), or None."""
    ledger: Callable[[str], list[LedgerLesson]] | None
    """A tool's Failure lessons that pass the memory guard, each with its data (the
    recovery lesson the harness wrote, or None: words only); None: the task has no memory."""
    skills: SkillSession | None
    holds: tuple[Hold, ...] = ()
    """The calls held so far in this task, oldest first."""
    call: ToolCall | None = None
    """``BEFORE_CALL`` and ``BEFORE_FINISH``: the call about to run (arguments valid for a finish)."""
    note: str | None = None
    """``ON_NOTE``: the note the harness wrote."""

    def physical(self, tool: str) -> bool:
        """Whether ``tool`` moves the robot (its spec says ``physical``)."""
        found = self.registry.get(tool)
        return found is not None and found.spec.physical

    def robot_steps(self, *, refused: bool = False) -> list[TrajectoryStep]:
        """The robot calls of the trajectory; with ``refused`` the refused ones too."""
        return [s for s in self.steps if self.physical(s.tool) and (refused or not s.refused)]

    def failure_lessons(self, tool: str) -> list[LedgerLesson]:
        """``tool``'s Failure lessons; [] without memory or when its ledger cannot be read."""
        if self.ledger is None:
            return []
        try:
            return self.ledger(tool)
        except Exception:  # a ledger that cannot be read hides nothing the model needs now
            logger.exception("reading the %s ledger failed", tool)
            return []

    def steps_ahead(self, tool: str) -> list[StepAhead]:
        """The steps to take before ``tool``'s first call that its ledger's lessons give, from
        their data only: a lesson in words alone (a model's, an operator's, one written before
        lessons were data) gives none, however it is worded."""
        return [step for found in self.failure_lessons(tool) if found.lesson and (step := found.lesson.step)]

    @property
    def last_hold(self) -> Hold | None:
        """The latest call held for a step its ledger gives (what the held-call notes follow)."""
        return next((hold for hold in reversed(self.holds) if hold.step is not None), None)

    def was_held(self, tool: str, arguments: Mapping[str, Any]) -> bool:
        """Whether this call was held before in the task (each call is held once)."""
        key = call_key(tool, arguments)
        return any(hold.key == key for hold in self.holds if hold.refusal == "held_by_experience")

    def finish_was_held(self) -> bool:
        return any(hold.refusal == "held_finish" for hold in self.holds)


class GuidancePart(Protocol):
    """One named piece of guidance: where it runs, whom it is for, and what it says."""

    @property
    def name(self) -> str: ...

    @property
    def point(self) -> GuidancePoint: ...

    @property
    def small_models_only(self) -> bool:
        """True: runs only for a guided profile (``ModelProfile.guided``)."""
        ...

    def run(self, view: TaskView) -> Advice | None: ...
