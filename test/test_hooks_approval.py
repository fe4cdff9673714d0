"""ApprovalHook and its providers: approve, deny, time out, no channel, queue by id."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from harness_ros.hooks import (
    ApprovalHook,
    ApprovalRequest,
    CallbackApprovalProvider,
    HookAction,
    HookDecision,
    QueueApprovalProvider,
)
from harness_ros.tools import ToolSpec

ARM = ToolSpec(name="open_door", description="Open a door.", physical=True, requires_approval=True)
FREE = ToolSpec(name="look", description="Look around.")


@pytest.fixture
def release() -> Iterator[threading.Event]:
    """Set at teardown so callbacks that ignore their timeout still end."""
    event = threading.Event()
    yield event
    event.set()


def decide(provider: Any, spec: ToolSpec = ARM, timeout_s: float = 5.0) -> HookDecision:
    return ApprovalHook(provider, timeout_s).before_execution(spec, {"door": "front"}, None)


def test_tools_without_the_flag_pass_without_asking() -> None:
    asked: list[str] = []
    provider = CallbackApprovalProvider(lambda tool, args, t: asked.append(tool) or True)
    assert decide(provider, FREE).action is HookAction.PASS
    assert asked == []


def test_approved_call_passes_with_the_arguments() -> None:
    seen: list[tuple[str, dict[str, Any], float]] = []

    def approve(tool: str, arguments: dict[str, Any], timeout_s: float) -> bool:
        seen.append((tool, arguments, timeout_s))
        return True

    decision = decide(CallbackApprovalProvider(approve), timeout_s=7.5)
    assert decision.action is HookAction.PASS
    assert decision.hook == "operator_approval"
    assert seen == [("open_door", {"door": "front"}, 7.5)]


@pytest.mark.parametrize("answer", [False, None, "yes", 1])
def test_anything_but_true_is_a_denial(answer: Any) -> None:
    decision = decide(CallbackApprovalProvider(lambda tool, args, t: answer))
    assert decision.action is HookAction.BLOCK
    assert "operator approval denied/timed out for 'open_door'" in decision.reason


def test_no_provider_denies() -> None:
    decision = decide(None)
    assert decision.action is HookAction.BLOCK
    assert decision.reason == "operator approval denied for 'open_door': no approval channel is configured"


def test_provider_error_denies() -> None:
    def broken(tool: str, arguments: dict[str, Any], timeout_s: float) -> bool:
        raise ConnectionError("service down")

    decision = decide(CallbackApprovalProvider(broken))
    assert decision.action is HookAction.BLOCK
    assert "the request failed (ConnectionError)" in decision.reason


def test_unanswered_callback_times_out_as_denied(release: threading.Event) -> None:
    # The callback ignores its timeout; the hook's own bound must still end the wait.
    started = threading.Event()

    def never_answers(tool: str, arguments: dict[str, Any], timeout_s: float) -> bool:
        started.set()
        release.wait(30)
        return True

    decision = decide(CallbackApprovalProvider(never_answers), timeout_s=0.05)
    assert started.is_set()
    assert decision.action is HookAction.BLOCK
    assert "denied/timed out" in decision.reason and "0.05 s" in decision.reason


def test_invalid_timeout_is_rejected() -> None:
    with pytest.raises(ValueError, match="approval timeout must be positive"):
        ApprovalHook(None, 0)


# --- QueueApprovalProvider ------------------------------------------------------------


def test_queue_approves_by_id() -> None:
    announced: list[ApprovalRequest] = []
    provider = QueueApprovalProvider(on_request=announced.append)
    with ThreadPoolExecutor(max_workers=1) as pool:
        future = pool.submit(decide, provider, ARM, 5.0)
        request = provider.wait_for_request(5.0)
        assert request is not None
        assert (request.tool, request.arguments) == ("open_door", {"door": "front"})
        assert [r.id for r in provider.pending()] == [request.id]
        assert announced == [request]
        assert provider.answer("not-an-id", True) is False
        assert provider.answer(request.id, True) is True
        decision = future.result(timeout=5.0)
    assert decision.action is HookAction.PASS
    assert provider.pending() == []
    assert provider.answer(request.id, False) is False  # already settled


def test_queue_denies_by_id() -> None:
    provider = QueueApprovalProvider()
    with ThreadPoolExecutor(max_workers=1) as pool:
        future = pool.submit(decide, provider, ARM, 5.0)
        request = provider.wait_for_request(5.0)
        assert request is not None
        assert provider.answer(request.id, False) is True
        decision = future.result(timeout=5.0)
    assert decision.action is HookAction.BLOCK
    assert "denied/timed out" in decision.reason


def test_queue_times_out_and_forgets_the_request() -> None:
    provider = QueueApprovalProvider()
    decision = decide(provider, timeout_s=0.05)
    assert decision.action is HookAction.BLOCK
    assert provider.pending() == []
    assert provider.wait_for_request(0.01) is None


def test_queue_keeps_concurrent_requests_apart() -> None:
    posted: list[ApprovalRequest] = []
    both_posted = threading.Event()

    def announce(request: ApprovalRequest) -> None:
        posted.append(request)
        if len(posted) == 2:
            both_posted.set()

    provider = QueueApprovalProvider(on_request=announce)
    with ThreadPoolExecutor(max_workers=2) as pool:
        first = pool.submit(provider.request, "a", {}, 5.0)
        second = pool.submit(provider.request, "b", {}, 5.0)
        assert both_posted.wait(5.0)
        by_tool = {r.tool: r for r in provider.pending()}
        assert sorted(by_tool) == ["a", "b"]
        assert provider.answer(by_tool["b"].id, True)
        assert provider.answer(by_tool["a"].id, False)
        assert first.result(timeout=5.0) is False
        assert second.result(timeout=5.0) is True
