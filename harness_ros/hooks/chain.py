"""Applying pre-execution hooks in order: rewrites chain, the first block stops the chain."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Sequence
from typing import Any

from harness_ros.config import SafetyConfig, ToolBinding
from harness_ros.hooks.approval import ApprovalHook
from harness_ros.hooks.arm_workspace import ArmWorkspaceHook
from harness_ros.hooks.contracts import ApprovalProvider, HookAction, HookDecision, PreExecutionHook
from harness_ros.hooks.safety import BaseMotionSafetyFilter
from harness_ros.observation.contracts import Clearance, Observation
from harness_ros.tools.contracts import ToolSpec

__all__ = ["blocking_decision", "run_hooks", "standard_hooks"]

logger = logging.getLogger(__name__)


def run_hooks(
    hooks: Sequence[PreExecutionHook],
    spec: ToolSpec,
    arguments: dict[str, Any],
    observation: Observation | None,
) -> tuple[dict[str, Any], list[HookDecision]]:
    """Run ``hooks`` on one call. Returns the arguments to execute with and every decision
    taken (each names its hook). If the last decision is a block, do not execute."""
    current = dict(arguments)
    decisions: list[HookDecision] = []
    for hook in hooks:
        name = getattr(hook, "name", "") or type(hook).__name__
        try:
            decision = hook.before_execution(spec, dict(current), observation)
        except Exception as err:  # a faulty hook must block the call, not crash the task
            logger.exception("hook %r raised on tool %r", name, spec.name)
            decision = HookDecision(
                HookAction.BLOCK, reason=f"safety hook {name!r} failed ({type(err).__name__})"
            )
        if not decision.hook:
            decision = dataclasses.replace(decision, hook=name)
        if decision.action is HookAction.REWRITE and not isinstance(decision.arguments, dict):
            decision = HookDecision(
                HookAction.BLOCK, reason=f"hook {name!r} rewrote the call without arguments", hook=name
            )
        decisions.append(decision)
        if decision.action is HookAction.BLOCK:
            break
        if decision.action is HookAction.REWRITE:
            assert decision.arguments is not None  # checked above
            current = dict(decision.arguments)
    return current, decisions


def blocking_decision(decisions: Sequence[HookDecision]) -> HookDecision | None:
    """The decision that blocked the call, if any."""
    return next((d for d in decisions if d.action is HookAction.BLOCK), None)


def standard_hooks(
    safety: SafetyConfig,
    read_clearance: Callable[[], Clearance | None],
    approval_provider: ApprovalProvider | None,
    *,
    needs_approval: bool = True,
    extra: Sequence[PreExecutionHook] = (),
    bindings: Sequence[ToolBinding] = (),
) -> list[PreExecutionHook]:
    """The one hook chain, in its order: approval first (the operator may take a while, so
    the clearance is read after the wait, right before the motion), then the plugins'
    hooks, then the base-motion safety filter. The filter is always there (it passes
    non-motion tools) and always last: a plugin hook can block or rewrite a call, never
    skip the filter, and the filter only shortens or blocks what the operator approved.
    ``needs_approval=False`` (no tool requires approval) leaves the approval hook out.
    ``bindings`` (the configured tools): the arm workspace check of MoveGroup targets
    runs after the plugins' hooks, on the arguments that will be sent."""
    hooks: list[PreExecutionHook] = []
    if needs_approval:
        hooks.append(ApprovalHook(approval_provider, safety.approval_timeout_s))
    hooks.extend(extra)
    arm = ArmWorkspaceHook(safety, bindings)
    if arm.applies:  # only with a MoveGroup tool
        hooks.append(arm)
    hooks.append(BaseMotionSafetyFilter(safety, read_clearance))
    return hooks
