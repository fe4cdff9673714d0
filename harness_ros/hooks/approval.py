"""Operator approval for tools flagged ``requires_approval``.

The hook waits, bounded, for an ``ApprovalProvider``; anything but an explicit
``True`` in time is a denial. Two providers: ``CallbackApprovalProvider`` wraps a
function (a ROS service client, a test), ``QueueApprovalProvider`` keeps pending
requests an operator answers by id (the ROS layer and the CLI).
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from harness_ros.hooks.contracts import ApprovalProvider, HookAction, HookDecision
from harness_ros.observation.contracts import Observation
from harness_ros.tools.contracts import ToolSpec

__all__ = [
    "ApprovalHook",
    "ApprovalRequest",
    "CallbackApprovalProvider",
    "QueueApprovalProvider",
]

logger = logging.getLogger(__name__)

_GRACE_S = 0.1
"""Extra wait past ``timeout_s`` so a provider's own timeout answer wins the race."""


class ApprovalHook:
    """``PreExecutionHook``: ask the operator before a ``requires_approval`` tool runs."""

    name = "operator_approval"

    def __init__(self, provider: ApprovalProvider | None, timeout_s: float) -> None:
        if timeout_s <= 0:
            raise ValueError(f"approval timeout must be positive, got {timeout_s!r}")
        self._provider = provider
        self._timeout_s = timeout_s

    def before_execution(
        self, spec: ToolSpec, arguments: dict[str, Any], observation: Observation | None
    ) -> HookDecision:
        if not spec.requires_approval:
            return HookDecision(HookAction.PASS, hook=self.name)
        if self._provider is None:
            return self._deny(
                f"operator approval denied for {spec.name!r}: no approval channel is configured"
            )
        approved, error = self._ask(self._provider, spec.name, dict(arguments))
        if error is not None:
            return self._deny(f"operator approval denied for {spec.name!r}: the request failed ({error})")
        if approved is not True:
            return self._deny(
                f"operator approval denied/timed out for {spec.name!r} "
                f"(no approval within {self._timeout_s:g} s)"
            )
        return HookDecision(HookAction.PASS, reason="approved by operator", hook=self.name)

    def _ask(
        self, provider: ApprovalProvider, tool: str, arguments: dict[str, Any]
    ) -> tuple[bool | None, str | None]:
        # The provider is asked in a daemon thread so that one which ignores its
        # timeout cannot hold the task: the wait here is the bound.
        outcome: dict[str, Any] = {}
        done = threading.Event()

        def ask() -> None:
            try:
                outcome["approved"] = provider.request(tool, arguments, self._timeout_s)
            except Exception as err:  # a failing provider means "denied"
                logger.exception("approval provider failed for tool %r", tool)
                outcome["error"] = type(err).__name__
            finally:
                done.set()

        threading.Thread(target=ask, name=f"approval-{tool}", daemon=True).start()
        if not done.wait(self._timeout_s + _GRACE_S):
            return None, None
        return outcome.get("approved"), outcome.get("error")

    def _deny(self, reason: str) -> HookDecision:
        logger.info("%s", reason)
        return HookDecision(HookAction.BLOCK, reason=reason, hook=self.name)


class CallbackApprovalProvider:
    """``fn(tool, arguments, timeout_s) -> bool``; only ``True`` approves."""

    def __init__(self, fn: Callable[[str, dict[str, Any], float], bool]) -> None:
        self._fn = fn

    def request(self, tool: str, arguments: dict[str, Any], timeout_s: float) -> bool:
        return self._fn(tool, arguments, timeout_s) is True


@dataclass(frozen=True)
class ApprovalRequest:
    """One call waiting for an operator; ``deadline`` is on ``time.monotonic()``."""

    id: str
    tool: str
    arguments: dict[str, Any]
    created: float
    deadline: float

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "tool": self.tool, "arguments": self.arguments, "created": self.created}


@dataclass
class _Pending:
    request: ApprovalRequest
    answered: threading.Event = field(default_factory=threading.Event)
    approved: bool = False


class QueueApprovalProvider:
    """Pending requests answered by id from another thread (a ROS service, the CLI).

    ``on_request`` is called (from the waiting thread) when a request is posted, so
    the ROS layer can announce it; it must not block.
    """

    def __init__(self, on_request: Callable[[ApprovalRequest], None] | None = None) -> None:
        self._on_request = on_request
        self._pending: dict[str, _Pending] = {}
        self._changed = threading.Condition()

    def request(self, tool: str, arguments: dict[str, Any], timeout_s: float) -> bool:
        now = time.monotonic()
        request = ApprovalRequest(
            id=uuid.uuid4().hex[:12],
            tool=tool,
            arguments=dict(arguments),
            created=time.time(),
            deadline=now + timeout_s,
        )
        pending = _Pending(request)
        with self._changed:
            self._pending[request.id] = pending
            self._changed.notify_all()
        try:
            if self._on_request is not None:
                self._on_request(request)
            answered = pending.answered.wait(timeout_s)
            return answered and pending.approved
        finally:
            with self._changed:
                self._pending.pop(request.id, None)
                self._changed.notify_all()

    def pending(self) -> list[ApprovalRequest]:
        """Requests still waiting, oldest first."""
        with self._changed:
            return sorted((p.request for p in self._pending.values()), key=lambda r: r.deadline)

    def answer(self, request_id: str, approved: bool) -> bool:
        """Answer one request; False when it is unknown or already expired."""
        with self._changed:
            pending = self._pending.get(request_id)
            if pending is None or pending.answered.is_set():
                return False
            pending.approved = approved is True
            pending.answered.set()
            return True

    def wait_for_request(self, timeout_s: float) -> ApprovalRequest | None:
        """Block until a request is pending (for an operator loop or a test); None on timeout."""
        deadline = time.monotonic() + timeout_s
        with self._changed:
            while not self._pending:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not self._changed.wait(remaining):
                    break
            return min((p.request for p in self._pending.values()), key=lambda r: r.deadline, default=None)
