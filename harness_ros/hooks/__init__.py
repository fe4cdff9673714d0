"""Pre-execution hooks: the safety boundary between a model's tool call and the robot."""

from __future__ import annotations

from harness_ros.hooks.approval import (
    ApprovalHook,
    ApprovalRequest,
    CallbackApprovalProvider,
    QueueApprovalProvider,
)
from harness_ros.hooks.chain import blocking_decision, run_hooks, standard_hooks
from harness_ros.hooks.contracts import ApprovalProvider, HookAction, HookDecision, PreExecutionHook
from harness_ros.hooks.safety import BaseMotionSafetyFilter, describe_clearance

__all__ = [
    "ApprovalHook",
    "ApprovalProvider",
    "ApprovalRequest",
    "BaseMotionSafetyFilter",
    "CallbackApprovalProvider",
    "HookAction",
    "HookDecision",
    "PreExecutionHook",
    "QueueApprovalProvider",
    "blocking_decision",
    "describe_clearance",
    "run_hooks",
    "standard_hooks",
]
