"""A model reply as the task reads and records it: call ids, the assistant message kept in
the history, the ``model_response`` event's data, and whether plain text asks the operator."""

from __future__ import annotations

import dataclasses
import json
import re
from typing import Any

from harness_ros.context import Message
from harness_ros.events import ModelResponsePayload
from harness_ros.model.contracts import ModelReply, ToolCall
from harness_ros.tools.finish_task import FINISH_TASK

__all__ = [
    "ECHO_REPLY_NOTE",
    "EMPTY_REPLY_NOTE",
    "assistant_message",
    "is_operator_question",
    "json_safe",
    "preview",
    "reply_data",
    "with_ids",
]

EMPTY_REPLY_NOTE = (
    f"Your last reply had neither a tool call nor any text. Call one tool, or call {FINISH_TASK} "
    "to end the task."
)
ECHO_REPLY_NOTE = (
    "Your last reply only repeated text the harness writes (Task Notes or an observation); "
    f"the harness writes those itself. Call one tool, or call {FINISH_TASK} to end the task."
)
PREVIEW_CHARS = 200
_QUESTION_END = re.compile(r"\?[\s*_\"')\]]*$")


def preview(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= PREVIEW_CHARS else flat[:PREVIEW_CHARS] + "..."


def is_operator_question(text: str) -> bool:
    """Whether a plain-text reply asks the operator something: its last line ends with '?'.

    Such a reply ends the task (the operator answers with a new instruction or revision);
    JSON (an echoed tool result) is never a question."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    if not lines or lines[-1].startswith(("{", "[", "<")):
        return False
    return _QUESTION_END.search(lines[-1]) is not None


def with_ids(calls: tuple[ToolCall, ...], turn: int) -> list[ToolCall]:
    """Every call needs a unique id so each gets exactly one tool result."""
    seen: set[str] = set()
    fixed = []
    for index, call in enumerate(calls):
        call_id = call.id if call.id and call.id not in seen else f"call_{turn}_{index}"
        seen.add(call_id)
        fixed.append(call if call_id == call.id else dataclasses.replace(call, id=call_id))
    return fixed


def assistant_message(text: str | None, calls: list[ToolCall]) -> Message:
    # Unparseable arguments are stored as "{}": providers re-parse history and would
    # reject the whole request; the tool result tells the model what was wrong.
    return {
        "role": "assistant",
        "content": text or None,
        "tool_calls": [
            {
                "id": call.id,
                "type": "function",
                "function": {
                    "name": call.name,
                    "arguments": call.arguments_json if call.arguments is not None else "{}",
                },
            }
            for call in calls
        ],
    }


def reply_data(reply: ModelReply, *, images: int = 0) -> ModelResponsePayload:
    """The model_response event's payload; ``images`` is what the harness sent in the request."""
    usage = reply.usage.to_dict()
    usage["images"] = images or reply.usage.images
    recovered = reply.original_text is not None  # keep what the model actually wrote
    return ModelResponsePayload(
        text=reply.text,
        tool_calls=tuple(
            {
                "id": call.id,
                "name": call.name,
                "arguments": call.arguments if call.arguments is not None else call.arguments_json[:500],
            }
            | ({"recovered_from_text": True} if call.recovered_from_text else {})
            for call in reply.tool_calls
        ),
        usage=usage,
        model=reply.model,
        recovered_from_text=sum(1 for call in reply.tool_calls if call.recovered_from_text)
        if recovered
        else None,
        original_text=reply.original_text,
        text_call_problems=tuple(str(problem) for problem in reply.text_call_problems) or None,
    )


def json_safe(value: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = json.loads(json.dumps(value, default=str))
    return result
