"""Pre-execution hook contracts: pass, rewrite or block a tool call."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any, Protocol

from harness_ros.observation.contracts import Observation
from harness_ros.tools.contracts import ToolSpec

__all__ = ["ApprovalProvider", "HookAction", "HookDecision", "PreExecutionHook"]


class HookAction(str, Enum):
    PASS = "pass"
    REWRITE = "rewrite"
    BLOCK = "block"


@dataclass(frozen=True)
class HookDecision:
    action: HookAction
    arguments: dict[str, Any] | None = None
    reason: str = ""
    hook: str = ""

    @classmethod
    def allow(cls) -> HookDecision:
        return cls(HookAction.PASS)


class PreExecutionHook(Protocol):
    name: str

    def before_execution(
        self, spec: ToolSpec, arguments: dict[str, Any], observation: Observation | None
    ) -> HookDecision: ...


class ApprovalProvider(Protocol):
    """Asks an operator to approve one call. Must return within ``timeout_s``;
    no answer means denied (False)."""

    def request(self, tool: str, arguments: dict[str, Any], timeout_s: float) -> bool: ...
