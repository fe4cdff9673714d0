"""Property-based fuzzing of tool-argument handling: model reply -> validation -> execution.

Whatever the model sends as a tool call, the model gets a failure envelope back or
the tool runs with arguments that fit its schema: no exception escapes
``ToolRegistry.validate`` / ``execute``. The schemas are shaped like the ones
``harness_ros.ros.interfaces.schema_for_message`` derives (exact integer ranges,
bounded and fixed arrays, nested objects, ``additionalProperties: false``); where
the ROS test messages are installed the derived schemas themselves are fuzzed too,
and arguments that pass validation must fill the message.
"""

from __future__ import annotations

import importlib.util
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness_ros.errors import ToolError
from harness_ros.tools import CancelToken, ToolRegistry, ToolSpec, normalize_envelope
from harness_ros.tools.validation import check_spec

FUZZ = settings(
    deadline=None,
    derandomize=True,
    database=None,
    max_examples=200,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def fuzz(max_examples: int) -> settings:
    """``FUZZ`` with this test's example budget."""
    return settings(FUZZ, max_examples=max_examples)


HAS_TEST_MSGS = importlib.util.find_spec("test_msgs") is not None

# --------------------------------------------------------------------------- schemas

INT32 = {"type": "integer", "minimum": -(2**31), "maximum": 2**31 - 1}
UINT8 = {"type": "integer", "minimum": 0, "maximum": 255}
POINT = {
    "type": "object",
    "description": "geometry_msgs/msg/Point",
    "properties": {"x": {"type": "number"}, "y": {"type": "number"}, "z": {"type": "number"}},
    "additionalProperties": False,
}
SCHEMAS: dict[str, dict[str, Any]] = {
    # A navigation goal: nested message, string, bounded integer (like NavigateToPose).
    "navigate": {
        "type": "object",
        "properties": {
            "frame_id": {"type": "string", "default": "map"},
            "position": POINT,
            "behavior_tree": {"type": "string", "maxLength": 64},
            "retries": {**INT32, "default": 0},
        },
        "required": ["position"],
        "additionalProperties": False,
    },
    # Arrays: fixed size, bounded sequence of bytes, one wide character, a flag.
    "arm": {
        "type": "object",
        "properties": {
            "joints": {"type": "array", "items": {"type": "number"}, "minItems": 6, "maxItems": 6},
            "payload": {"type": "array", "items": {**UINT8, "description": "byte"}, "maxItems": 8},
            "mode": {"type": "string", "minLength": 1, "maxLength": 1},
            "dry_run": {"type": "boolean", "default": False},
        },
        "additionalProperties": False,
    },
    # A base translation with the argument roles the safety hook reads.
    "translate": {
        "type": "object",
        "properties": {
            "distance": {"type": "number", "minimum": -2.0, "maximum": 2.0},
            "direction": {"type": "string", "enum": ["forward", "backward", "left", "right"]},
        },
        "required": ["distance", "direction"],
        "additionalProperties": False,
    },
    "noargs": {"type": "object", "properties": {}, "additionalProperties": False},
}


class RecordingTool:
    """Returns whatever it was told to; records the arguments it ran with."""

    def __init__(self, name: str, schema: dict[str, Any]) -> None:
        extra: dict[str, Any] = {}
        if name == "translate":
            extra = {"base_motion": True, "distance_argument": "distance", "direction_argument": "direction"}
        self.spec = ToolSpec(name=name, description=f"fuzz tool {name}", input_schema=schema, **extra)
        self.calls: list[dict[str, Any]] = []
        self.reply: Any = {"success": True, "done": True}

    def execute(self, arguments: dict[str, Any], *, cancel: CancelToken, feedback: Any = None) -> Any:
        self.calls.append(arguments)
        if isinstance(self.reply, BaseException):
            raise self.reply
        return self.reply


# --------------------------------------------------------------------------- argument strategies

# Numbers a JSON decoder can produce, big integers included (larger ones have their own
# tests). NaN and infinity, which Python's json accepts, are refused by validation: see
# test_non_finite_numbers_are_refused.
json_number = st.one_of(
    st.integers(-(2**70), 2**70),
    st.integers(-(10**300), 10**300),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([0, -1, 255, 256, 2**31, -(2**31) - 1, 2**64, 3.0, 0.5, -0.0, 1e308]),
)
json_scalar = st.one_of(st.none(), st.booleans(), json_number, st.text(max_size=20))
json_value = st.recursive(
    json_scalar,
    lambda inner: st.one_of(
        st.lists(inner, max_size=8), st.dictionaries(st.text(max_size=12), inner, max_size=5)
    ),
    max_leaves=20,
)
known_keys = st.sampled_from(
    [
        "frame_id",
        "position",
        "x",
        "y",
        "z",
        "retries",
        "joints",
        "payload",
        "mode",
        "dry_run",
        "distance",
        "direction",
    ]
)
# Objects that use the schemas' own keys, so many calls are almost valid.
near_arguments = st.dictionaries(st.one_of(known_keys, st.text(max_size=8)), json_value, max_size=5)


def from_schema(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Values valid under the subset of JSON Schema that the derived schemas use."""
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    kind = schema.get("type")
    if kind == "object":
        properties = schema.get("properties", {})
        required = set(schema.get("required", ()))
        return st.fixed_dictionaries(
            {name: from_schema(sub) for name, sub in properties.items() if name in required},
            optional={name: from_schema(sub) for name, sub in properties.items() if name not in required},
        )
    if kind == "array":
        return st.lists(
            from_schema(schema["items"]),
            min_size=schema.get("minItems", 0),
            max_size=min(schema.get("maxItems", 6), 6),
        )
    if kind == "integer":
        return st.integers(schema.get("minimum"), schema.get("maximum"))
    if kind == "number":
        if "minimum" in schema:
            return st.floats(schema["minimum"], schema["maximum"])
        return st.one_of(
            st.floats(allow_nan=False, allow_infinity=False, width=32), st.integers(-(2**53), 2**53)
        )
    if kind == "boolean":
        return st.booleans()
    if kind == "string":
        return st.text(min_size=schema.get("minLength", 0), max_size=min(schema.get("maxLength", 20), 20))
    raise AssertionError(f"schema kind {kind!r} not covered")


# --------------------------------------------------------------------------- registry


def make_registry() -> tuple[ToolRegistry, dict[str, RecordingTool]]:
    tools = {name: RecordingTool(name, schema) for name, schema in SCHEMAS.items()}
    return ToolRegistry(list(tools.values())), tools


REGISTRY, TOOLS = make_registry()


def _is_envelope(result: Any) -> bool:
    if not isinstance(result, dict) or not isinstance(result.get("success"), bool):
        return False
    if result["success"]:
        return len(result) > 1
    return isinstance(result.get("reason"), str) and bool(result["reason"].strip())


@fuzz(300)
@given(
    name=st.sampled_from(sorted(SCHEMAS)),
    arguments=st.one_of(
        near_arguments,
        json_value,
        st.sampled_from(sorted(SCHEMAS)).flatmap(lambda n: from_schema(SCHEMAS[n])),
    ),
)
def test_validate_returns_none_or_one_message_never_raises(name: str, arguments: Any) -> None:
    problem = REGISTRY.validate(name, arguments)
    if problem is not None:
        assert problem.startswith(f"invalid arguments for {name!r}: ")
        assert "Traceback" not in problem
        assert len(problem) < 2000  # five short problems at most
    else:
        assert isinstance(arguments, dict)


@fuzz(300)
@given(data=st.data(), name=st.sampled_from(sorted(SCHEMAS)))
def test_arguments_drawn_from_the_schema_are_accepted_and_reach_the_tool(
    data: st.DataObject, name: str
) -> None:
    arguments = data.draw(from_schema(SCHEMAS[name]))
    assert REGISTRY.validate(name, arguments) is None
    tool = TOOLS[name]
    tool.reply = {"success": True, "done": True}
    before = len(tool.calls)
    result = REGISTRY.execute(name, arguments, cancel=CancelToken())
    assert result == {"success": True, "done": True}
    assert tool.calls[before:] == [arguments]


@fuzz(300)
@given(
    name=st.sampled_from(sorted(SCHEMAS)),
    arguments=st.one_of(near_arguments, json_value),
    reply=st.one_of(
        json_value,
        st.dictionaries(st.sampled_from(["success", "reason", "run_id", "value"]), json_value, max_size=4),
        st.sampled_from([RuntimeError("boom"), ValueError(""), KeyError("k"), OverflowError("big")]),
    ),
)
def test_execute_always_returns_an_envelope(name: str, arguments: Any, reply: Any) -> None:
    tool = TOOLS[name]
    tool.reply = reply
    before = len(tool.calls)
    problem = REGISTRY.validate(name, arguments)
    result = REGISTRY.execute(name, arguments, cancel=CancelToken())
    assert _is_envelope(result), result
    if problem is not None:
        assert result == {"success": False, "reason": problem}
        assert len(tool.calls) == before  # an invalid call never reaches the tool
    else:
        assert len(tool.calls) == before + 1
        if isinstance(reply, BaseException):
            assert result["success"] is False
            assert result["reason"].startswith(f"tool {name!r} raised {type(reply).__name__}")
        else:
            assert result == normalize_envelope(reply)
    json.dumps(result, default=str)


@fuzz(200)
@given(name=st.text(max_size=30), arguments=json_value)
def test_unknown_tool_names_fail_with_the_known_tools(name: str, arguments: Any) -> None:
    if name in SCHEMAS:
        return
    result = REGISTRY.execute(name, arguments, cancel=CancelToken())
    assert result["success"] is False
    assert result["reason"].startswith(f"unknown tool {name!r}; known tools: ")
    assert REGISTRY.validate(name, arguments) == result["reason"]


@fuzz(200)
@given(arguments=from_schema(SCHEMAS["translate"]))
def test_cancelled_call_never_reaches_the_tool(arguments: dict[str, Any]) -> None:
    token = CancelToken()
    token.cancel("operator stop")
    before = len(TOOLS["translate"].calls)
    result = REGISTRY.execute("translate", arguments, cancel=token)
    assert result == {"success": False, "reason": "tool 'translate' not started: operator stop"}
    assert len(TOOLS["translate"].calls) == before


# --------------------------------------------------------------------------- tool specs

schema_keyword = st.sampled_from(
    [
        "type",
        "properties",
        "required",
        "additionalProperties",
        "minimum",
        "maximum",
        "items",
        "enum",
        "pattern",
        "maxLength",
        "minItems",
        "format",
        "default",
        "description",
    ]
)
schema_fragment = st.recursive(
    st.one_of(
        json_scalar, st.sampled_from(["object", "string", "number", "integer", "array", "^a+$", "(", "[a-"])
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.one_of(schema_keyword, st.text(max_size=6)), inner, max_size=4),
    ),
    max_leaves=10,
)


@fuzz(200)
@given(
    name=st.one_of(st.sampled_from(["ok_tool", "a.b-c", "", "bad name", "x" * 65]), st.text(max_size=10)),
    properties=st.dictionaries(st.text(max_size=8), schema_fragment, max_size=3),
    extra=st.dictionaries(schema_keyword, schema_fragment, max_size=2),
    arguments=st.one_of(near_arguments, json_value),
)
def test_tool_spec_is_refused_with_tool_error_or_validates_any_arguments(
    name: str, properties: dict[str, Any], extra: dict[str, Any], arguments: Any
) -> None:
    schema = {**extra, "type": "object", "properties": properties}
    spec = ToolSpec(name=name, description="fuzzed spec", input_schema=schema)
    try:
        check_spec(spec)
        registry = ToolRegistry([RecordingTool(name, schema)])
    except ToolError as err:
        assert repr(name) in str(err)
        return
    problem = registry.validate(name, arguments)
    assert problem is None or problem.startswith(f"invalid arguments for {name!r}: ")


@pytest.mark.parametrize("ref", ["#/$defs/missing", "https://example.invalid/schema.json"])
def test_unresolvable_ref_is_refused_at_start_up(ref: str) -> None:
    schema = {"type": "object", "$ref": ref}
    try:
        registry = ToolRegistry([RecordingTool("ref_tool", schema)])
    except ToolError as err:
        assert "ref_tool" in str(err)
        return
    # Not refused at start-up: then a call must at least fail with a message.
    assert registry.validate("ref_tool", {}) is not None


def test_huge_integer_against_multiple_of_is_a_message() -> None:
    schema = {"type": "object", "properties": {"step": {"type": "number", "multipleOf": 0.1}}}
    registry = ToolRegistry([RecordingTool("step_tool", schema)])
    problem = registry.validate("step_tool", {"step": 10**400})
    assert problem is not None and problem.startswith("invalid arguments for 'step_tool': ")


# --------------------------------------------------------------------------- derived ROS schemas

ROS_TYPES = [
    "BasicTypes",
    "Arrays",
    "BoundedSequences",
    "UnboundedSequences",
    "Nested",
    "Strings",
    "Constants",
]


_ROS_CACHE: dict[str, Any] = {}


def _ros() -> tuple[dict[str, type], dict[str, dict[str, Any]], dict[str, ToolRegistry], Any, Any]:
    """Message classes, derived schemas and one registry per type (built once: it is slow)."""
    if not HAS_TEST_MSGS:
        pytest.skip("test_msgs (ROS 2 test messages) is not installed")
    if not _ROS_CACHE:
        import test_msgs.msg

        from harness_ros.ros.interfaces import FieldError, fill_message, schema_for_message

        classes = {name: getattr(test_msgs.msg, name) for name in ROS_TYPES}
        schemas = {name: schema_for_message(cls) for name, cls in classes.items()}
        registries = {name: ToolRegistry([RecordingTool("ros_call", schemas[name])]) for name in ROS_TYPES}
        _ROS_CACHE.update(
            classes=classes, schemas=schemas, registries=registries, error=FieldError, fill=fill_message
        )
    c = _ROS_CACHE
    return c["classes"], c["schemas"], c["registries"], c["error"], c["fill"]


@fuzz(250)
@given(data=st.data(), type_name=st.sampled_from(ROS_TYPES))
def test_arguments_valid_under_a_derived_schema_fill_the_message(data: st.DataObject, type_name: str) -> None:
    classes, schemas, registries, _field_error, fill_message = _ros()
    arguments = data.draw(from_schema(schemas[type_name]))
    assert registries[type_name].validate("ros_call", arguments) is None
    message = fill_message(classes[type_name], arguments)
    assert isinstance(message, classes[type_name])


@fuzz(300)
@given(data=st.data(), type_name=st.sampled_from(ROS_TYPES))
def test_any_arguments_fill_the_message_or_raise_field_error(data: st.DataObject, type_name: str) -> None:
    classes, schemas, registries, field_error, fill_message = _ros()
    keys = st.one_of(st.sampled_from(sorted(schemas[type_name]["properties"]) or ["x"]), st.text(max_size=6))
    arguments = data.draw(st.one_of(st.dictionaries(keys, json_value, max_size=4), json_value))
    problem = registries[type_name].validate("ros_call", arguments)
    try:
        fill_message(classes[type_name], arguments)
    except field_error as err:
        assert isinstance(err, ToolError)
        assert str(err).strip() and "Traceback" not in str(err)
        return
    # What fills the message passed the schema too, except where the schema is looser.
    assert problem is None or isinstance(arguments, dict)


@pytest.mark.parametrize("field", ["float64_value", "float32_value"])
def test_huge_integer_for_a_float_field_is_a_field_error(field: str) -> None:
    classes, _schemas, _registries, field_error, fill_message = _ros()
    with pytest.raises(field_error, match=field):
        fill_message(classes["BasicTypes"], {field: 10**400})


# --------------------------------------------------------------------------- model reply parsing

MOCK_MODEL = "openai/gpt-4o-mini"


def _reply_with_arguments(arguments_json: str) -> Any:
    from harness_ros.model import LiteLLMModel

    calls = [{"id": "c1", "type": "function", "function": {"name": "navigate", "arguments": arguments_json}}]
    model = LiteLLMModel(MOCK_MODEL, completion_kwargs={"mock_response": "", "mock_tool_calls": calls})
    system = {"role": "system", "content": "# harness_ros: decide\nfuzz"}
    return model.complete([system, {"role": "user", "content": "go"}], tools=[])


@fuzz(60)
@given(
    arguments_json=st.one_of(
        st.text(max_size=60),
        json_value.map(lambda v: json.dumps(v, allow_nan=True)),
        near_arguments.map(lambda v: json.dumps(v)[:-1]),  # torn object
    )
)
def test_model_tool_call_arguments_parse_to_an_object_or_none(arguments_json: str) -> None:
    reply = _reply_with_arguments(arguments_json)
    call = reply.tool_calls[0]
    assert call.arguments_json == arguments_json
    if call.arguments is None:
        return
    assert isinstance(call.arguments, dict)
    problem = REGISTRY.validate("navigate", call.arguments)
    assert problem is None or problem.startswith("invalid arguments for 'navigate': ")


@pytest.mark.parametrize(
    "arguments_json",
    ['{"retries": ' + "9" * 5000 + "}", '{"position": ' + "[" * 100_000 + "]" * 100_000 + "}"],
    ids=["5000-digit-integer", "100000-deep-array"],
)
def test_pathological_argument_json_is_a_malformed_call(arguments_json: str) -> None:
    call = _reply_with_arguments(arguments_json).tool_calls[0]
    assert call.arguments is None
    assert call.arguments_json == arguments_json


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
def test_non_finite_numbers_are_refused(value: float) -> None:
    # JSON Schema's minimum/maximum let NaN through; a robot argument must be a real number.
    schema = {"type": "object", "properties": {"d": {"type": "number", "minimum": -2, "maximum": 2}}}
    registry = ToolRegistry([RecordingTool("drive", schema)])
    assert registry.validate("drive", {"d": value}) == "invalid arguments for 'drive': d: not a finite number"
