"""ToolRegistry: spec checks, definitions, argument validation, the envelope, faults."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest

from harness_ros.errors import ToolError
from harness_ros.tools import (
    EXPERIENCE_HEADING,
    CancelToken,
    FunctionTool,
    ToolRegistry,
    ToolSpec,
    success,
    tool,
)

MOVE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "distance_m": {"type": "number", "minimum": -2.0, "maximum": 2.0},
        "direction": {"type": "string", "enum": ["forward", "left", "backward", "right"]},
        "target": {
            "type": "object",
            "properties": {"xy": {"type": "array", "items": {"type": "number"}}},
        },
    },
    "required": ["distance_m"],
    "additionalProperties": False,
}


def _returning(value: Any, name: str = "probe", **flags: Any) -> FunctionTool:
    return FunctionTool(ToolSpec(name=name, description="A probe.", **flags), lambda: value)


def _move_registry(calls: list[dict[str, Any]]) -> ToolRegistry:
    def move(**arguments: Any) -> dict[str, Any]:
        calls.append(arguments)
        return success(moved_m=arguments["distance_m"])

    spec = ToolSpec(
        name="move_base",
        description="Translate the base.",
        input_schema=MOVE_SCHEMA,
        physical=True,
        base_motion=True,
        distance_argument="distance_m",
        direction_argument="direction",
        requires_approval=True,
        evaluated=True,
        post_condition="The base moved by the requested distance.",
    )
    return ToolRegistry([FunctionTool(spec, move)])


def _execute(registry: ToolRegistry, name: str, arguments: Any) -> dict[str, Any]:
    return registry.execute(name, arguments, cancel=CancelToken())


# --- construction -----------------------------------------------------------------


# "probe\n": a trailing newline passed ``^...$`` with ``match``; the one shared pattern is
# matched in full (the name is also a ledger file name).
@pytest.mark.parametrize("name", ["", "has space", "ümlaut", "x" * 65, "a/b", "probe\n"])
def test_invalid_tool_names_are_rejected(name: str) -> None:
    with pytest.raises(ToolError, match="invalid tool name"):
        ToolRegistry([_returning(success(ok=True), name=name)])


def test_longest_valid_name_is_accepted() -> None:
    registry = ToolRegistry([_returning(success(ok=True), name="a.b-c_" + "x" * 58)])
    assert len(registry.names()[0]) == 64


def test_duplicate_names_are_rejected() -> None:
    with pytest.raises(ToolError, match="duplicate tool name 'probe'"):
        ToolRegistry([_returning(success(ok=True)), _returning(success(ok=False))])


def test_misspelt_distance_argument_is_rejected() -> None:
    # A typo here would silently disable the translation clamp.
    spec = ToolSpec(
        name="move",
        description="Move.",
        input_schema=MOVE_SCHEMA,
        base_motion=True,
        distance_argument="distance",
    )
    with pytest.raises(ToolError, match="distance_argument 'distance' is not a property"):
        ToolRegistry([FunctionTool(spec, lambda **_: success(ok=True))])


def test_invalid_schema_and_missing_post_condition_are_rejected() -> None:
    bad_schema = ToolSpec(name="a", description="A.", input_schema={"type": "object", "properties": 3})
    with pytest.raises(ToolError, match="not a valid JSON Schema"):
        ToolRegistry([FunctionTool(bad_schema, lambda: success(ok=True))])
    not_object = ToolSpec(name="b", description="B.", input_schema={"type": "string"})
    with pytest.raises(ToolError, match="type 'object'"):
        ToolRegistry([FunctionTool(not_object, lambda: success(ok=True))])
    no_post = ToolSpec(name="c", description="C.", evaluated=True)
    with pytest.raises(ToolError, match="no post_condition"):
        ToolRegistry([FunctionTool(no_post, lambda: success(ok=True))])


def test_lookup_accessors() -> None:
    registry = ToolRegistry(
        [_returning(success(a=1), name="b_tool"), _returning(success(a=1), name="a_tool")]
    )
    assert registry.names() == ["b_tool", "a_tool"]
    assert [s.name for s in registry.specs()] == ["b_tool", "a_tool"]
    assert registry.get("a_tool") is not None
    assert registry.get("nope") is None
    assert "b_tool" in registry
    assert len(registry) == 2


# --- definitions -------------------------------------------------------------------


def test_definitions_are_openai_functions_with_flags() -> None:
    (definition,) = _move_registry([]).definitions()
    assert definition["type"] == "function"
    function = definition["function"]
    assert function["name"] == "move_base"
    # The model reads the schema without validation-only keywords (the validator keeps them).
    expected = {key: value for key, value in MOVE_SCHEMA.items() if key != "additionalProperties"}
    assert function["parameters"] == expected
    description = function["description"]
    assert description.startswith("Translate the base.\n")
    for flag in ("Physical:", "Base motion:", "Needs operator approval:", "Post-condition"):
        assert flag in description
    assert "The base moved by the requested distance." in description
    assert EXPERIENCE_HEADING not in description


def test_plain_tool_description_has_no_flags() -> None:
    (definition,) = ToolRegistry([_returning(success(a=1))]).definitions()
    assert definition["function"]["description"] == "A probe."


def test_definitions_are_byte_stable_and_carry_summaries() -> None:
    registry = ToolRegistry([_move_registry([]).get("move_base"), _returning(success(a=1))])  # type: ignore[list-item]
    summaries = {"move_base": "  Short moves near walls were clamped; ask for less.  ", "unknown": "x"}
    first = json.dumps(registry.definitions(summaries))
    # Mutating a returned definition must not leak into the next call.
    registry.definitions(summaries)[0]["function"]["parameters"]["properties"].clear()
    second = json.dumps(registry.definitions(summaries))
    assert first == second
    move, probe = registry.definitions(summaries)
    assert move["function"]["description"].endswith(
        f"\n\n{EXPERIENCE_HEADING}\nShort moves near walls were clamped; ask for less."
    )
    assert EXPERIENCE_HEADING not in probe["function"]["description"]
    assert json.dumps(registry.definitions()) != first


def test_definitions_detached_from_the_spec_schema() -> None:
    schema: dict[str, Any] = {"type": "object", "properties": {"a": {"type": "integer"}}}
    registry = ToolRegistry(
        [FunctionTool(ToolSpec("t", "T.", input_schema=schema), lambda **_: success(a=1))]
    )
    before = json.dumps(registry.definitions())
    schema["properties"]["b"] = {"type": "string"}
    assert json.dumps(registry.definitions()) == before


# --- validation --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({}, "<arguments>: 'distance_m' is a required property"),
        ({"distance_m": "far"}, "distance_m: 'far' is not of type 'number'"),
        ({"distance_m": 3.5}, "distance_m: 3.5 is greater than the maximum of 2.0"),
        ({"distance_m": 1.0, "speed": 2}, "Additional properties are not allowed ('speed' was unexpected)"),
        ({"distance_m": 1.0, "direction": "up"}, "direction: 'up' is not one of"),
        ({"distance_m": 1.0, "target": {"xy": [1, "a"]}}, "target.xy[1]: 'a' is not of type 'number'"),
    ],
)
def test_validation_failures_become_failure_results(arguments: dict[str, Any], expected: str) -> None:
    calls: list[dict[str, Any]] = []
    registry = _move_registry(calls)
    problem = registry.validate("move_base", arguments)
    assert problem is not None
    assert expected in problem
    result = _execute(registry, "move_base", arguments)
    assert result["success"] is False
    assert result["reason"] == problem
    assert problem.startswith("invalid arguments for 'move_base': ")
    assert calls == []


def test_a_call_with_only_extra_arguments_is_answered_with_the_call_without_them() -> None:
    registry = _move_registry([])
    problem = registry.validate("move_base", {"distance_m": 1.0, "speed": 2, "held_object_id": "red_cup"})
    assert problem is not None
    assert problem.endswith('; without them the call is valid: move_base {"distance_m": 1.0}')
    # another problem too: no such call is offered (it would not be valid either)
    for arguments in ({"distance_m": "far", "speed": 2}, {"speed": 2}):
        problem = registry.validate("move_base", arguments)
        assert problem is not None and "without them" not in problem


def test_the_valid_call_without_extras_is_the_one_the_refusal_names() -> None:
    registry = _move_registry([])
    arguments = {"distance_m": 1.0, "speed": 2, "held_object_id": "red_cup"}
    assert registry.valid_without_extras("move_base", arguments) == {"distance_m": 1.0}
    assert arguments == {"distance_m": 1.0, "speed": 2, "held_object_id": "red_cup"}  # not changed
    for other in ({"distance_m": "far", "speed": 2}, {"speed": 2}, {"distance_m": 1.0}, ["x"]):
        assert registry.valid_without_extras("move_base", other) is None
    assert registry.valid_without_extras("no_such_tool", arguments) is None


def test_several_problems_are_reported_together() -> None:
    problem = _move_registry([]).validate("move_base", {"distance_m": "x", "a": 1, "direction": 3})
    assert problem is not None
    assert "direction:" in problem and "distance_m:" in problem and "Additional properties" in problem


def test_valid_arguments_run_the_tool() -> None:
    calls: list[dict[str, Any]] = []
    registry = _move_registry(calls)
    assert registry.validate("move_base", {"distance_m": 0.5, "direction": "left"}) is None
    result = _execute(registry, "move_base", {"distance_m": 0.5, "direction": "left"})
    assert result == {"success": True, "moved_m": 0.5}
    assert calls == [{"distance_m": 0.5, "direction": "left"}]


@pytest.mark.parametrize("arguments", [None, [1, 2], "distance_m=1", 3])
def test_arguments_that_are_not_an_object_fail(arguments: Any) -> None:
    result = _execute(_move_registry([]), "move_base", arguments)
    assert result["success"] is False
    assert "expected a JSON object" in result["reason"]


def test_unknown_tool_lists_known_tools() -> None:
    registry = ToolRegistry([_returning(success(a=1), name="pick"), _returning(success(a=1), name="place")])
    result = _execute(registry, "fly", {})
    assert result == {"success": False, "reason": "unknown tool 'fly'; known tools: pick, place"}
    assert registry.validate("fly", {}) == result["reason"]


# --- envelope and faults -------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ({"success": True}, "tool reported success without any value field"),
        ({"success": False}, "tool reported failure without a reason"),
        ({"success": False, "reason": "   "}, "tool reported failure without a reason"),
        ({"ok": True}, "tool result has no boolean 'success' field"),
        ({"success": "yes", "value": 1}, "tool result has no boolean 'success' field"),
        (None, "tool returned NoneType, not an envelope object"),
        ("done", "tool returned str, not an envelope object"),
    ],
)
def test_results_are_forced_into_the_envelope(raw: Any, reason: str) -> None:
    result = _execute(ToolRegistry([_returning(raw)]), "probe", {})
    assert result == {"success": False, "reason": reason}


def test_well_formed_results_pass_through() -> None:
    registry = ToolRegistry([_returning({"success": False, "reason": "gripper empty", "code": 4})])
    assert _execute(registry, "probe", {}) == {"success": False, "reason": "gripper empty", "code": 4}
    registry = ToolRegistry([_returning({"success": True, "run_id": "r1"})])
    assert _execute(registry, "probe", {}) == {"success": True, "run_id": "r1"}


def test_exceptions_become_failures_naming_the_type(caplog: pytest.LogCaptureFixture) -> None:
    def explode() -> dict[str, Any]:
        raise ZeroDivisionError("division by zero")

    registry = ToolRegistry([FunctionTool(ToolSpec("boom", "Explodes."), explode)])
    with caplog.at_level(logging.ERROR, logger="harness_ros.tools.registry"):
        result = _execute(registry, "boom", {})
    assert result == {"success": False, "reason": "tool 'boom' raised ZeroDivisionError: division by zero"}
    assert any(record.exc_info for record in caplog.records)


def test_cancelled_token_prevents_the_start() -> None:
    calls: list[dict[str, Any]] = []
    token = CancelToken()
    token.cancel("operator stop")
    result = _move_registry(calls).execute("move_base", {"distance_m": 1.0}, cancel=token)
    assert result == {"success": False, "reason": "tool 'move_base' not started: operator stop"}
    assert calls == []


# --- FunctionTool and @tool ---------------------------------------------------------


def test_function_tool_injects_cancel_and_feedback() -> None:
    seen: dict[str, Any] = {}

    def wait(seconds: float, *, cancel: CancelToken, feedback: Any) -> dict[str, Any]:
        feedback("wait", {"progress": 0.5})
        seen["cancelled"] = cancel.wait(seconds)
        return success(waited=seconds)

    spec = ToolSpec("wait", "Waits.", input_schema={"type": "object", "properties": {"seconds": {}}})
    token = CancelToken()
    token.cancel()
    received: list[tuple[str, dict[str, Any]]] = []
    result = ToolRegistry([FunctionTool(spec, wait)]).execute(
        "wait", {"seconds": 0.0}, cancel=CancelToken(), feedback=lambda t, f: received.append((t, f))
    )
    assert result == {"success": True, "waited": 0.0}
    assert received == [("wait", {"progress": 0.5})]
    assert seen["cancelled"] is False


def test_function_tool_rejects_reserved_argument_names() -> None:
    spec = ToolSpec("t", "T.", input_schema={"type": "object", "properties": {"cancel": {"type": "boolean"}}})
    with pytest.raises(ToolError, match="reserved for the harness"):
        FunctionTool(spec, lambda *, cancel: success(a=1))


def test_tool_decorator_infers_a_strict_schema() -> None:
    @tool(physical=True)
    def open_gripper(width_m: float, force: int = 10, *, cancel: CancelToken) -> dict[str, Any]:
        """Open the gripper.

        Longer text.
        """
        return success(width_m=width_m, force=force)

    assert open_gripper.spec.name == "open_gripper"
    assert open_gripper.spec.physical is True
    assert open_gripper.spec.description.startswith("Open the gripper.")
    assert open_gripper.spec.input_schema == {
        "type": "object",
        "properties": {"width_m": {"type": "number"}, "force": {"type": "integer"}},
        "required": ["width_m"],
        "additionalProperties": False,
    }
    registry = ToolRegistry([open_gripper])
    assert _execute(registry, "open_gripper", {"width_m": 0.04}) == {
        "success": True,
        "width_m": 0.04,
        "force": 10,
    }
    assert _execute(registry, "open_gripper", {"width_m": 0.04, "force": 1.5})["success"] is False


def test_tool_decorator_refuses_untyped_parameters() -> None:
    with pytest.raises(ToolError, match="cannot infer a JSON type for parameter 'pose'"):

        @tool()
        def place(pose: dict[str, float]) -> dict[str, Any]:
            return success(pose=pose)
