"""Model contracts: the harness talks to any chat model through this Protocol.

Messages and tool definitions use the OpenAI chat format (what litellm speaks).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

__all__ = ["ChatModel", "ModelReply", "ToolCall", "Usage"]


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments_json: str
    arguments: dict[str, Any] | None
    """Parsed arguments, or None when ``arguments_json`` was not a JSON object."""


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0


@dataclass(frozen=True)
class ModelReply:
    text: str | None
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage = field(default_factory=Usage)
    model: str = ""


class ChatModel(Protocol):
    """One completion. Raises ``LLMError`` after bounded retries."""

    name: str

    def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        json_mode: bool = False,
    ) -> ModelReply: ...
