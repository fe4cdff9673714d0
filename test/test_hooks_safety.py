"""BaseMotionSafetyFilter and the hook chain: pass, clamp, block, fail closed, order."""

from __future__ import annotations

from typing import Any

import pytest

from harness_ros.config import SafetyConfig
from harness_ros.hooks import (
    ApprovalHook,
    BaseMotionSafetyFilter,
    CallbackApprovalProvider,
    HookAction,
    HookDecision,
    blocking_decision,
    describe_clearance,
    run_hooks,
    standard_hooks,
)
from harness_ros.observation.contracts import Clearance, Observation
from harness_ros.tools import ToolSpec

SAFETY = SafetyConfig(margin_m=0.1, max_translation_m=2.0)

TRANSLATE = ToolSpec(
    name="translate_base",
    description="Translate the base.",
    input_schema={
        "type": "object",
        "properties": {"distance_m": {"type": "number"}, "direction": {"type": "string"}},
    },
    physical=True,
    base_motion=True,
    distance_argument="distance_m",
    direction_argument="direction",
)
NAVIGATE = ToolSpec(name="navigate_to", description="Go to a named place.", physical=True, base_motion=True)
PICK = ToolSpec(name="pick", description="Pick an object.", physical=True)


def clearance(
    forward: float | None = 3.0,
    left: float | None = 3.0,
    backward: float | None = 3.0,
    right: float | None = 3.0,
    *,
    age_s: float | None = 0.05,
    stale: bool = False,
) -> Clearance:
    return Clearance(forward, left, backward, right, stamp=100.0, age_s=age_s, stale=stale)


class Reader:
    """Counts fresh reads; the filter must not trust the observation it is given."""

    def __init__(self, value: Clearance | None) -> None:
        self.value = value
        self.reads = 0

    def __call__(self) -> Clearance | None:
        self.reads += 1
        return self.value


def decide(spec: ToolSpec, arguments: dict[str, Any], value: Clearance | None) -> HookDecision:
    reader = Reader(value)
    # The observation carries a wide-open clearance: a filter using it would pass everything.
    seen = Observation(time=0.0, clearance=clearance(9, 9, 9, 9))
    decision = BaseMotionSafetyFilter(SAFETY, reader).before_execution(spec, arguments, seen)
    assert reader.reads == (1 if spec.base_motion else 0)
    assert decision.hook == "base_motion_safety"
    return decision


def test_non_motion_tools_pass_without_reading() -> None:
    assert decide(PICK, {}, None).action is HookAction.PASS


def test_translation_within_clearance_passes() -> None:
    decision = decide(TRANSLATE, {"distance_m": 0.5, "direction": "forward"}, clearance(forward=1.0))
    assert decision.action is HookAction.PASS
    assert decision.arguments is None


def test_translation_is_clamped_to_clearance_minus_margin() -> None:
    arguments = {"distance_m": 1.5, "direction": "left", "speed": "slow"}
    decision = decide(TRANSLATE, arguments, clearance(left=0.725))
    assert decision.action is HookAction.REWRITE
    assert decision.arguments == {"distance_m": 0.625, "direction": "left", "speed": "slow"}
    assert decision.reason == (
        "translation left clamped: requested 1.500 m, admitted 0.625 m (0.72 m free left minus 0.10 m margin)"
    )
    assert arguments["distance_m"] == 1.5  # the caller's dict is not mutated


def test_translation_is_clamped_to_max_translation() -> None:
    decision = decide(TRANSLATE, {"distance_m": 5.0, "direction": "forward"}, clearance(forward=10.0))
    assert decision.action is HookAction.REWRITE
    assert decision.arguments == {"distance_m": 2.0, "direction": "forward"}
    assert "requested 5.000 m, admitted 2.000 m (max_translation_m is 2.00 m)" in decision.reason


def test_clamp_never_exceeds_the_admissible_distance() -> None:
    decision = decide(TRANSLATE, {"distance_m": 1.0, "direction": "forward"}, clearance(forward=0.43379))
    assert decision.arguments is not None
    assert decision.arguments["distance_m"] == 0.333
    assert decision.arguments["distance_m"] <= 0.43379 - 0.1


SIGNED = ToolSpec(**{**TRANSLATE.__dict__, "signed_distance": True})
SIGNED_NO_DIRECTION = ToolSpec(**{**SIGNED.__dict__, "direction_argument": None})


def test_negative_distance_is_refused_unless_the_binding_declares_signed_distances() -> None:
    # Finding: a wall ahead, free space behind; {-1.0, "forward"} passed and a server that
    # drives |distance| toward ``direction`` hit the wall.
    decision = decide(
        TRANSLATE, {"distance_m": -1.0, "direction": "forward"}, clearance(forward=0.05, backward=5.0)
    )
    assert decision.action is HookAction.BLOCK
    assert "must not be negative" in decision.reason


def test_signed_distance_is_rewritten_to_the_checked_direction() -> None:
    # Forward is wide open; a negative distance drives backward into the 0.3 m gap.
    decision = decide(
        SIGNED, {"distance_m": -1.0, "direction": "forward"}, clearance(forward=5.0, backward=0.3)
    )
    assert decision.action is HookAction.REWRITE
    assert decision.arguments == {"distance_m": 0.2, "direction": "backward"}
    assert "translation backward clamped" in decision.reason
    decision = decide(SIGNED, {"distance_m": -0.3, "direction": "left"}, clearance(left=0.2, right=0.5))
    assert decision.action is HookAction.REWRITE
    assert decision.arguments == {"distance_m": 0.3, "direction": "right"}
    # Without a direction argument the sign is the direction: kept, magnitude clamped.
    decision = decide(SIGNED_NO_DIRECTION, {"distance_m": -1.0}, clearance(forward=5.0, backward=0.3))
    assert decision.arguments == {"distance_m": -0.2}


def test_missing_direction_is_refused_when_the_binding_has_one() -> None:
    decision = decide(TRANSLATE, {"distance_m": 0.5}, clearance())
    assert decision.action is HookAction.BLOCK
    assert "'direction' is missing" in decision.reason


@pytest.mark.parametrize("spelling", ["back", "Back", "backwards\n", " BACKWARD "])
def test_direction_spellings_are_rewritten_to_the_word_that_was_checked(spelling: str) -> None:
    decision = decide(TRANSLATE, {"distance_m": 0.2, "direction": spelling}, clearance(backward=1.0))
    assert decision.action is HookAction.REWRITE
    assert decision.arguments == {"distance_m": 0.2, "direction": "backward"}


@pytest.mark.parametrize("spelling", ["backward.", "b", "zurück", "forward backward", ""])
def test_unrecognised_direction_spellings_are_refused(spelling: str) -> None:
    decision = decide(TRANSLATE, {"distance_m": 0.2, "direction": spelling}, clearance())
    assert decision.action is HookAction.BLOCK
    assert "unknown direction" in decision.reason


def test_integer_distance_stays_an_integer() -> None:
    decision = decide(TRANSLATE, {"distance_m": 3, "direction": "forward"}, clearance(forward=1.8))
    assert decision.arguments == {"distance_m": 1, "direction": "forward"}
    assert isinstance(decision.arguments["distance_m"], int)


@pytest.mark.parametrize("free", [0.1, 0.05, 0.0])
def test_translation_without_admissible_distance_is_blocked(free: float) -> None:
    decision = decide(TRANSLATE, {"distance_m": 0.5, "direction": "right"}, clearance(right=free))
    assert decision.action is HookAction.BLOCK
    assert f"{free:.2f} m free right" in decision.reason


@pytest.mark.parametrize("free", [None, float("nan")])
def test_translation_toward_unknown_clearance_is_blocked(free: float | None) -> None:
    decision = decide(TRANSLATE, {"distance_m": 0.5, "direction": "forward"}, clearance(forward=free))
    assert decision.action is HookAction.BLOCK
    assert "clearance forward is unknown" in decision.reason


def test_infinite_clearance_is_bounded_by_max_translation() -> None:
    decision = decide(TRANSLATE, {"distance_m": 9.0, "direction": "forward"}, clearance(forward=float("inf")))
    assert decision.arguments == {"distance_m": 2.0, "direction": "forward"}


@pytest.mark.parametrize(
    ("arguments", "reason"),
    [
        ({"distance_m": 0.5, "direction": "up"}, "unknown direction 'up'"),
        ({"distance_m": float("nan")}, "must be a finite number"),
        ({"distance_m": True}, "must be a finite number"),
    ],
)
def test_malformed_translation_is_blocked(arguments: dict[str, Any], reason: str) -> None:
    decision = decide(TRANSLATE, arguments, clearance())
    assert decision.action is HookAction.BLOCK
    assert reason in decision.reason


def test_direction_aliases_and_zero_distance() -> None:
    decision = decide(TRANSLATE, {"distance_m": 1.0, "direction": " Back "}, clearance(backward=0.6))
    assert decision.arguments == {"distance_m": 0.5, "direction": "backward"}
    zero = {"distance_m": 0, "direction": "forward"}
    assert decide(TRANSLATE, zero, clearance(forward=0.0)).action is HookAction.PASS


def test_stale_clearance_blocks_motion() -> None:
    decision = decide(TRANSLATE, {"distance_m": 0.2}, clearance(age_s=1.37, stale=True))
    assert decision.action is HookAction.BLOCK
    assert decision.reason == "base motion blocked: base clearance reading is stale (1.37 s old)"
    decision = decide(NAVIGATE, {}, clearance(age_s=None))
    assert decision.action is HookAction.BLOCK
    assert "stale (unknown age)" in decision.reason


def test_missing_clearance_blocks_motion() -> None:
    for spec in (TRANSLATE, NAVIGATE):
        decision = decide(spec, {"distance_m": 0.2}, None)
        assert decision.action is HookAction.BLOCK
        assert decision.reason == "base motion blocked: no base clearance reading is available"


def test_unreadable_clearance_blocks_motion() -> None:
    def broken() -> Clearance | None:
        raise OSError("scan topic gone")

    decision = BaseMotionSafetyFilter(SAFETY, broken).before_execution(NAVIGATE, {}, None)
    assert decision.action is HookAction.BLOCK
    assert "could not be read (OSError)" in decision.reason


def test_navigation_blocked_when_no_direction_is_clear() -> None:
    decision = decide(NAVIGATE, {"place": "kitchen"}, clearance(0.1, 0.05, None, 0.08))
    assert decision.action is HookAction.BLOCK
    assert "no direction has more than the 0.10 m safety margin free" in decision.reason
    assert "forward 0.10 m" in decision.reason


def test_navigation_passes_when_one_direction_is_clear() -> None:
    decision = decide(NAVIGATE, {"place": "kitchen"}, clearance(0.1, 0.05, 0.11, None))
    assert decision.action is HookAction.PASS


def test_translation_tool_without_distance_is_treated_as_navigation() -> None:
    assert decide(TRANSLATE, {"direction": "left"}, clearance(0, 0, 0, 0)).action is HookAction.BLOCK
    assert decide(TRANSLATE, {"direction": "left"}, clearance(0, 0, 0, 1)).action is HookAction.PASS


def test_describe_clearance() -> None:
    assert describe_clearance(None) == "base clearance: no reading"
    assert describe_clearance(clearance(1.2, 0.456, None, 2.0, age_s=0.12)) == (
        "base clearance from footprint edge: forward 1.20 m, left 0.46 m, backward unknown, "
        "right 2.00 m; age 0.12 s"
    )
    assert describe_clearance(clearance(age_s=3.0, stale=True)).endswith("; STALE (age 3.00 s)")


# --- the chain -------------------------------------------------------------------


class Recorder:
    def __init__(self, name: str, decision: HookDecision, log: list[tuple[str, dict[str, Any]]]) -> None:
        self.name = name
        self._decision = decision
        self._log = log

    def before_execution(
        self, spec: ToolSpec, arguments: dict[str, Any], observation: Observation | None
    ) -> HookDecision:
        self._log.append((self.name, arguments))
        return self._decision


def test_rewrites_chain_in_order_and_a_block_stops_the_chain() -> None:
    log: list[tuple[str, dict[str, Any]]] = []
    hooks = [
        Recorder("first", HookDecision(HookAction.REWRITE, {"distance_m": 1.0}, "halved"), log),
        Recorder("second", HookDecision(HookAction.PASS), log),
        Recorder("third", HookDecision(HookAction.BLOCK, reason="no"), log),
        Recorder("never", HookDecision(HookAction.PASS), log),
    ]
    final, decisions = run_hooks(hooks, TRANSLATE, {"distance_m": 2.0}, None)
    assert log == [
        ("first", {"distance_m": 2.0}),
        ("second", {"distance_m": 1.0}),
        ("third", {"distance_m": 1.0}),
    ]
    assert [d.hook for d in decisions] == ["first", "second", "third"]
    assert [d.action for d in decisions] == [HookAction.REWRITE, HookAction.PASS, HookAction.BLOCK]
    assert final == {"distance_m": 1.0}
    blocked = blocking_decision(decisions)
    assert blocked is not None and blocked.reason == "no"


def test_chain_without_block_returns_rewritten_arguments() -> None:
    reader = Reader(clearance(forward=0.6))
    hooks = [BaseMotionSafetyFilter(SAFETY, reader)]
    final, decisions = run_hooks(hooks, TRANSLATE, {"distance_m": 2.0, "direction": "forward"}, None)
    assert final == {"distance_m": 0.5, "direction": "forward"}
    assert blocking_decision(decisions) is None


def test_faulty_hook_and_rewrite_without_arguments_block() -> None:
    class Broken:
        name = "broken"

        def before_execution(self, *args: Any) -> HookDecision:
            raise RuntimeError("bug")

    _, decisions = run_hooks([Broken()], PICK, {}, None)
    assert decisions[-1].action is HookAction.BLOCK
    assert decisions[-1].reason == "safety hook 'broken' failed (RuntimeError)"
    _, decisions = run_hooks([Recorder("r", HookDecision(HookAction.REWRITE), [])], PICK, {}, None)
    assert decisions[-1].action is HookAction.BLOCK
    assert "rewrote the call without arguments" in decisions[-1].reason


def test_standard_chain_asks_the_operator_before_reading_clearance() -> None:
    order: list[str] = []

    def approve(tool: str, arguments: dict[str, Any], timeout_s: float) -> bool:
        order.append("approval")
        return True

    def read() -> Clearance | None:
        order.append("clearance")
        return clearance(forward=0.4)

    spec = ToolSpec(
        name="translate_base",
        description="Translate.",
        input_schema=TRANSLATE.input_schema,
        base_motion=True,
        distance_argument="distance_m",
        requires_approval=True,
    )
    hooks = standard_hooks(SAFETY, read, CallbackApprovalProvider(approve))
    assert isinstance(hooks[0], ApprovalHook)
    final, decisions = run_hooks(hooks, spec, {"distance_m": 1.0}, None)
    assert order == ["approval", "clearance"]
    assert final == {"distance_m": 0.3}
    assert [d.action for d in decisions] == [HookAction.PASS, HookAction.REWRITE]
