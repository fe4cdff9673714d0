"""``recall_object``: the world memory answers "where is X" (a name or a kind).

A built-in tool of a harness with memory. It is offered (its definition sent) only while
WORLD.md holds an entry: with nothing remembered it would cost every decision its
definition and answer nothing. It reads memory only; nothing it answers is evidence.
"""

from __future__ import annotations

from typing import Any, Protocol

from harness_ros.memory.world_contracts import RECALL_OBJECT
from harness_ros.tools.contracts import CancelToken, FeedbackSink, ToolSpec, failure

__all__ = ["RECALL_OBJECT", "RecallObjectTool", "WorldRecall"]


class WorldRecall(Protocol):
    def recall_object(self, query: str) -> dict[str, Any]: ...

    def has_world(self) -> bool: ...


class RecallObjectTool:
    def __init__(self, memory: WorldRecall) -> None:
        self._memory = memory
        self.spec = ToolSpec(
            name=RECALL_OBJECT,
            description=(
                "Where an object or place was last confirmed: place, state, age, navigate target "
                "(and navigate_pose, yaw in deg, when known)."
            ),
            input_schema={
                "type": "object",
                "properties": {"name": {"type": "string", "description": "object id or kind (cup)"}},
                "required": ["name"],
                "additionalProperties": False,
            },
        )

    def offered(self) -> bool:
        """Whether the model is offered the tool now (the world memory holds an entry)."""
        return self._memory.has_world()

    def execute(
        self,
        arguments: dict[str, Any],
        *,
        cancel: CancelToken,
        feedback: FeedbackSink | None = None,
    ) -> dict[str, Any]:
        name = arguments.get("name")
        if not isinstance(name, str) or not name.strip():
            return failure("name must be an object id or a kind")
        return self._memory.recall_object(name)
