"""Compact tool results: what a tool returned, bounded, as a ``tool`` message.

Tool results stay in the Accumulated context for the whole task, so they are
capped (strings, lists, nesting) and never carry bytes or images. What the model
reads (``model_result``) is smaller still: the outcome first (``success``, ``reason``),
then the fields that matter, without run ids, refusal kinds or empty values (noise a
small model copies back), nothing said twice, floats to three decimals. The full
envelope stays in the ``tool_result`` event, the run log and the trajectory, which
memory's evidence rules read.
"""

from __future__ import annotations

import json
from typing import Any

from harness_ros.context.contracts import Message

__all__ = ["compact_value", "model_result", "tool_message"]

MAX_STRING_CHARS = 1000
MAX_ITEMS = 20
MAX_DEPTH = 4
MODEL_STRING_CHARS = 400
MODEL_ITEMS = 12
MODEL_DEPTH = 3
_OUTCOME_KEYS = ("success", "reason")
_NOISE_KEYS = frozenset({"run_id", "refusal"})
"""Bookkeeping for the harness and memory, not for deciding the next call."""
_VERDICT_KEYS = ("status", "failure_reason", "evidence")


def _cap(text: str, limit: int) -> str:
    return text if len(text) <= limit else f"{text[:limit]}... [{len(text) - limit} chars cut]"


def compact_value(
    value: Any, *, max_chars: int = MAX_STRING_CHARS, max_items: int = MAX_ITEMS, depth: int = MAX_DEPTH
) -> Any:
    """A JSON-safe, bounded copy of ``value`` (bytes are replaced by their size)."""
    if isinstance(value, bool | int | float) or value is None:
        return value
    if isinstance(value, str):
        return _cap(value, max_chars)
    if isinstance(value, bytes | bytearray | memoryview):
        return f"<{len(bytes(value))} bytes omitted>"
    if depth <= 0:
        return _cap(repr(value), 80)
    if isinstance(value, dict):
        items = list(value.items())
        out = {
            str(key): compact_value(item, max_chars=max_chars, max_items=max_items, depth=depth - 1)
            for key, item in items[:max_items]
        }
        if len(items) > max_items:
            out["_omitted_keys"] = len(items) - max_items
        return out
    if isinstance(value, list | tuple | set | frozenset):
        seq = list(value)
        out_list = [
            compact_value(item, max_chars=max_chars, max_items=max_items, depth=depth - 1)
            for item in seq[:max_items]
        ]
        if len(seq) > max_items:
            out_list.append(f"... {len(seq) - max_items} more items")
        return out_list
    return _cap(str(value), max_chars)


def _empty(value: Any) -> bool:
    return value is None or (isinstance(value, str | list | dict) and not value)


def _without_noise(value: Any) -> Any:
    # Floats to three decimals: a pose to the millimetre and a yaw to the milliradian say
    # all a decision needs, and every digit is a token to a local model.
    if isinstance(value, float):
        return round(value, 3)
    if isinstance(value, dict):
        return {key: _without_noise(item) for key, item in value.items() if key not in _NOISE_KEYS}
    if isinstance(value, list):
        return [_without_noise(item) for item in value]
    return value


def model_result(content: dict[str, Any]) -> dict[str, Any]:
    """The part of a tool result envelope the model reads: outcome and reason first, then
    the other fields (a verdict as its status, reason and evidence), bounded; run ids,
    refusal kinds and empty values left out.

    Said once, not twice: a nested ``success`` equal to the envelope's (an action result's
    own flag), and a success verdict's evidence (it confirms what ``success`` says; a
    failed verdict keeps its reason and evidence), and a failed action's own ``message``
    that its reason already quotes (``aborted the goal: <message>``). Each is new text of
    the next decision: about 40 tokens a confirmed call to a local model, 20 a failed
    action. The run log keeps them."""
    result: dict[str, Any] = {key: content[key] for key in _OUTCOME_KEYS if key in content}
    for key, raw in content.items():
        if key in result or key in _NOISE_KEYS:
            continue
        if key == "verdict" and isinstance(raw, dict):
            shown = ("status",) if raw.get("status") == "success" else _VERDICT_KEYS
            value: Any = {name: raw[name] for name in shown if not _empty(raw.get(name))}
        else:
            value = _without_noise(raw)
            said, reason = content.get("success"), content.get("reason")
            if isinstance(value, dict) and said is not None and value.get("success") == said:
                value = {name: item for name, item in value.items() if name != "success"}
            if isinstance(value, dict) and _said_in(value.get("message"), reason):
                value = {name: item for name, item in value.items() if name != "message"}
        if _empty(value):
            continue
        result[key] = compact_value(
            value, max_chars=MODEL_STRING_CHARS, max_items=MODEL_ITEMS, depth=MODEL_DEPTH
        )
    return result


def _said_in(message: Any, reason: Any) -> bool:
    return (
        isinstance(message, str) and bool(message.strip()) and isinstance(reason, str) and message in reason
    )


def tool_message(call_id: str, content: dict[str, Any]) -> Message:
    """A ``tool`` role message answering one tool call: ``model_result`` of the envelope as
    compact JSON, outcome first (the same envelope always gives the same bytes)."""
    return {
        "role": "tool",
        "tool_call_id": call_id,
        "content": json.dumps(model_result(content), ensure_ascii=False, separators=(", ", ": ")),
    }
