"""Tool contracts: what a tool is, and the one result envelope every tool returns.

Envelope: ``{"success": True, <at least one value field>}`` or
``{"success": False, "reason": "<non-empty>"}``. Evaluated physical tools add a
non-empty ``run_id``.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

__all__ = [
    "CancelToken",
    "FeedbackSink",
    "Tool",
    "ToolSpec",
    "failure",
    "normalize_envelope",
    "success",
]


@dataclass(frozen=True)
class ToolSpec:
    """How a tool is presented to the model and treated by the harness."""

    name: str
    description: str
    input_schema: dict[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})
    physical: bool = False
    evaluated: bool = False
    post_condition: str | None = None
    segment: bool = False
    base_motion: bool = False
    distance_argument: str | None = None
    direction_argument: str | None = None
    signed_distance: bool = False
    """A negative distance means the opposite direction (else the safety filter refuses it)."""
    requires_approval: bool = False
    timeout_s: float | None = None


class CancelToken:
    """Cooperative cancellation shared by the harness, tools and waits."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self.reason = ""

    def cancel(self, reason: str = "cancelled") -> None:
        self.reason = reason
        self._event.set()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def wait(self, timeout_s: float) -> bool:
        """Sleep up to ``timeout_s``; True if cancelled meanwhile."""
        return self._event.wait(timeout_s)


class FeedbackSink(Protocol):
    def __call__(self, tool: str, feedback: dict[str, Any]) -> None: ...


@runtime_checkable
class Tool(Protocol):
    """A callable capability. ``execute`` never raises for robot-side failures: it returns
    a failure envelope. It must return within its timeout and honour ``cancel``."""

    spec: ToolSpec

    def execute(
        self,
        arguments: dict[str, Any],
        *,
        cancel: CancelToken,
        feedback: FeedbackSink | None = None,
    ) -> dict[str, Any]: ...


def success(**values: Any) -> dict[str, Any]:
    if not values:
        raise ValueError("a success result needs at least one value field")
    return {"success": True, **values}


def failure(reason: str, **extra: Any) -> dict[str, Any]:
    reason = str(reason).strip() or "unspecified failure"
    return {"success": False, "reason": reason, **extra}


def normalize_envelope(raw: Any) -> dict[str, Any]:
    """Force anything a tool returned into the envelope (fail closed)."""
    if not isinstance(raw, dict):
        return failure(f"tool returned {type(raw).__name__}, not an envelope object")
    ok = raw.get("success")
    if ok is True:
        values = {k: v for k, v in raw.items() if k != "success"}
        if not values:
            return failure("tool reported success without any value field")
        return {"success": True, **values}
    if ok is False:
        reason = raw.get("reason")
        if not isinstance(reason, str) or not reason.strip():
            reason = "tool reported failure without a reason"
        rest = {k: v for k, v in raw.items() if k not in {"success", "reason"}}
        return {"success": False, "reason": reason, **rest}
    return failure("tool result has no boolean 'success' field")
