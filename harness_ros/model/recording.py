"""Record model replies as JSONL and serve them back deterministically.

Each line: ``{"digest": sha256 of the canonical request, "request": a short summary,
"reply": the ModelReply}``. The digest covers the messages (image bytes replaced by a
placeholder, so a re-run with fresh camera frames still matches), the tool
definitions and JSON mode; not the model name, so a recording made with any
provider replays under ``ReplayModel``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
from pathlib import Path
from typing import Any

from harness_ros.errors import LLMError
from harness_ros.model.contracts import ModelReply, ToolCall, Usage
from harness_ros.model.text_calls import TextCallProblem

__all__ = [
    "ModelRecorder",
    "ReplayModel",
    "reply_from_dict",
    "reply_to_dict",
    "request_digest",
]

logger = logging.getLogger(__name__)

_IMAGE_PLACEHOLDER = "<image>"


def _strip_images(value: Any) -> Any:
    """Replace image payloads (``image_url`` parts, ``data:`` URLs) by a placeholder."""
    if isinstance(value, dict):
        if value.get("type") == "image_url":
            return {"type": "image_url", "image_url": _IMAGE_PLACEHOLDER}
        return {key: _strip_images(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_strip_images(item) for item in value]
    if isinstance(value, str) and value.startswith("data:") and ";base64," in value[:100]:
        return _IMAGE_PLACEHOLDER
    return value


def request_digest(
    messages: list[dict[str, Any]], *, tools: list[dict[str, Any]] | None, json_mode: bool
) -> str:
    canonical = json.dumps(
        {"messages": _strip_images(messages), "tools": tools or [], "json_mode": bool(json_mode)},
        sort_keys=True,
        ensure_ascii=False,
        separators=(",", ":"),
        default=str,
    )
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def _purpose(messages: list[dict[str, Any]]) -> str:
    """The ``# harness_ros: <purpose>`` line of the first system message, if any."""
    for message in messages:
        if message.get("role") == "system" and isinstance(message.get("content"), str):
            first = message["content"].split("\n", 1)[0].strip()
            return first.removeprefix("# harness_ros:").strip() if first.startswith("#") else ""
    return ""


def _request_summary(
    messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, json_mode: bool
) -> dict[str, Any]:
    names = [str(tool.get("function", {}).get("name", "")) for tool in tools or []]
    return {"purpose": _purpose(messages), "messages": len(messages), "tools": names, "json_mode": json_mode}


def reply_to_dict(reply: ModelReply) -> dict[str, Any]:
    data: dict[str, Any] = {
        "text": reply.text,
        "tool_calls": [
            {"id": call.id, "name": call.name, "arguments_json": call.arguments_json}
            | ({"recovered_from_text": True} if call.recovered_from_text else {})
            for call in reply.tool_calls
        ],
        "usage": reply.usage.to_dict(),
        "model": reply.model,
    }
    if reply.original_text is not None:
        data["original_text"] = reply.original_text
    if reply.text_call_problems:
        data["text_call_problems"] = [
            problem.to_json() if isinstance(problem, TextCallProblem) else str(problem)
            for problem in reply.text_call_problems
        ]
    return data


def _parse_arguments(arguments_json: str) -> dict[str, Any] | None:
    try:
        value = json.loads(arguments_json)
    except (json.JSONDecodeError, TypeError):
        return None
    return value if isinstance(value, dict) else None


def reply_from_dict(raw: dict[str, Any]) -> ModelReply:
    calls = tuple(
        ToolCall(
            id=str(call["id"]),
            name=str(call["name"]),
            arguments_json=str(call["arguments_json"]),
            arguments=_parse_arguments(str(call["arguments_json"])),
            recovered_from_text=call.get("recovered_from_text") is True,
        )
        for call in raw.get("tool_calls") or []
    )
    original = raw.get("original_text")
    usage = raw.get("usage") or {}
    return ModelReply(
        text=raw.get("text"),
        tool_calls=calls,
        usage=Usage(**{key: int(usage.get(key) or 0) for key in Usage().to_dict()}),
        model=str(raw.get("model", "")),
        original_text=original if isinstance(original, str) else None,
        text_call_problems=tuple(
            TextCallProblem.from_json(item) for item in raw.get("text_call_problems") or ()
        ),
    )


class ModelRecorder:
    """Appends one JSONL line per successful model call (thread-safe)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()

    def record(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None,
        json_mode: bool,
        reply: ModelReply,
    ) -> None:
        line = json.dumps(
            {
                "digest": request_digest(messages, tools=tools, json_mode=json_mode),
                "request": _request_summary(messages, tools, json_mode),
                "reply": reply_to_dict(reply),
            },
            ensure_ascii=False,
            sort_keys=True,
        )
        with self._lock:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                with self.path.open("a", encoding="utf-8") as handle:
                    handle.write(line + "\n")
                    handle.flush()
                    os.fsync(handle.fileno())
            except OSError as err:
                raise LLMError(f"Cannot append to model recording {str(self.path)!r}: {err}") from None


class ReplayModel:
    """A ``ChatModel`` serving the replies of a recording in order.

    With ``verify`` (the default) each request must hash to the recorded digest, so a
    replayed session that diverges from the recording fails loudly at the first
    different request instead of drifting.
    """

    def __init__(self, path: str | Path, *, verify: bool = True) -> None:
        self.path = Path(path)
        self.verify = verify
        self.name = f"replay:{self.path}"
        self._entries = self._load(self.path)
        self._next = 0
        self._lock = threading.Lock()

    @staticmethod
    def _load(path: Path) -> list[dict[str, Any]]:
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except OSError as err:
            raise LLMError(f"Cannot read model recording {str(path)!r}: {err.strerror}") from None
        entries: list[dict[str, Any]] = []
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                entry = json.loads(line)
            except json.JSONDecodeError as err:
                raise LLMError(f"Model recording {str(path)!r} line {number}: not JSON ({err.msg})") from None
            if not isinstance(entry, dict) or not isinstance(entry.get("reply"), dict):
                raise LLMError(f"Model recording {str(path)!r} line {number}: no 'reply' object")
            entries.append(entry)
        return entries

    @property
    def remaining(self) -> int:
        return len(self._entries) - self._next

    def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        json_mode: bool = False,
    ) -> ModelReply:
        with self._lock:
            index = self._next
            if index >= len(self._entries):
                msg = (
                    f"Model recording {str(self.path)!r} is exhausted: request {index + 1} "
                    f"({_purpose(messages) or 'no purpose'}) has no recorded reply"
                )
                raise LLMError(msg)
            entry = self._entries[index]
            if self.verify:
                digest = request_digest(messages, tools=tools, json_mode=json_mode)
                if digest != entry.get("digest"):
                    recorded = entry.get("request") or {}
                    msg = (
                        f"Model recording {str(self.path)!r}: request {index + 1} differs from the "
                        f"recording (recorded purpose {recorded.get('purpose')!r} with "
                        f"{recorded.get('messages')} messages, got {_purpose(messages)!r} with "
                        f"{len(messages)} messages)"
                    )
                    raise LLMError(msg)
            self._next += 1
        return reply_from_dict(entry["reply"])
