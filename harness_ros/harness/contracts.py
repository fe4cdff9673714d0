"""What a running task reads from the harness that runs it.

``TaskRunner`` (``harness.task``) takes a ``TaskHost``, and ``Harness`` (``harness.loop``)
is one: so the task module needs nothing of the loop module, and the loop imports the task
module one way only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from harness_ros.config import HarnessLimits
    from harness_ros.evaluation import EvaluationGate
    from harness_ros.harness.calls import ToolCallRunner
    from harness_ros.memory import FileMemory
    from harness_ros.model.contracts import ChatModel
    from harness_ros.observation.contracts import ObservationSource
    from harness_ros.profile import EmbodimentProfile
    from harness_ros.skills import SkillCatalog, SkillSession
    from harness_ros.tools import ToolRegistry

__all__ = ["TaskHost"]


class TaskHost(Protocol):
    """The session's parts a task uses; read-only from the task's side."""

    @property
    def model(self) -> ChatModel: ...

    @property
    def model_vision(self) -> bool: ...

    @property
    def memory(self) -> FileMemory | None: ...

    @property
    def profile(self) -> EmbodimentProfile | None: ...

    @property
    def skills(self) -> SkillCatalog | None: ...

    @property
    def skill_session(self) -> SkillSession | None: ...

    @property
    def observations(self) -> ObservationSource | None: ...

    @property
    def limits(self) -> HarnessLimits: ...

    @property
    def context_window_tokens(self) -> int: ...

    @property
    def first_frame_timeout_s(self) -> float: ...

    @property
    def system_prompt(self) -> str: ...

    @property
    def registry(self) -> ToolRegistry: ...

    @property
    def gate(self) -> EvaluationGate | None: ...

    @property
    def calls(self) -> ToolCallRunner: ...
