"""Interface import, JSON Schema derivation and dict <-> message on test_msgs types."""

from __future__ import annotations

import math
from typing import Any

import pytest

pytest.importorskip("test_msgs")

from jsonschema import Draft202012Validator

from harness_ros.errors import ToolError
from harness_ros.ros.interfaces import (
    FieldError,
    field_type,
    fill_message,
    get_field,
    import_interface,
    message_to_jsonable,
    schema_for_message,
    type_name,
)

INT32 = {"type": "integer", "minimum": -(2**31), "maximum": 2**31 - 1}
UINT32 = {"type": "integer", "minimum": 0, "maximum": 2**32 - 1}


def valid(schema: dict[str, Any], instance: Any) -> bool:
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema).is_valid(instance)


def test_import_interface_for_each_kind() -> None:
    from test_msgs.action import Fibonacci
    from test_msgs.msg import Nested
    from test_msgs.srv import BasicTypes

    assert import_interface("test_msgs/action/Fibonacci") is Fibonacci
    assert import_interface("test_msgs/srv/BasicTypes") is BasicTypes
    assert import_interface("test_msgs/msg/Nested") is Nested
    assert type_name(Nested) == "test_msgs/msg/Nested"


@pytest.mark.parametrize(
    ("type_string", "message"),
    [
        ("test_msgs/Fibonacci", r"invalid interface type 'test_msgs/Fibonacci': expected pkg/msg/Name"),
        ("test_msgs/topic/X", r"invalid interface type 'test_msgs/topic/X'"),
        ("no_such_msgs/action/Go", r"'no_such_msgs/action/Go': package 'no_such_msgs' is not installed"),
        ("test_msgs/action/Missing", r"package 'test_msgs' has no action named 'Missing'"),
        ("test_msgs/srv/Nested", r"package 'test_msgs' has no srv named 'Nested'"),
    ],
)
def test_import_interface_errors_name_the_type(type_string: str, message: str) -> None:
    with pytest.raises(ToolError, match=message):
        import_interface(type_string)


def test_fibonacci_goal_schema() -> None:
    from test_msgs.action import Fibonacci

    assert schema_for_message(Fibonacci.Goal) == {
        "type": "object",
        "properties": {"order": {**INT32, "default": 0}},
        "additionalProperties": False,
    }
    assert schema_for_message(Fibonacci.Goal, required=["order"])["required"] == ["order"]
    with pytest.raises(
        ToolError, match=r"required field\(s\) \['size'\] not in test_msgs/action/Fibonacci_Goal"
    ):
        schema_for_message(Fibonacci.Goal, required=["size"])


def test_basic_types_request_schema_has_exact_ranges() -> None:
    from test_msgs.srv import BasicTypes

    props = schema_for_message(BasicTypes.Request)["properties"]
    expected_ranges = {
        "int8_value": (-128, 127),
        "uint8_value": (0, 255),
        "char_value": (0, 255),
        "byte_value": (0, 255),
        "int16_value": (-32768, 32767),
        "uint16_value": (0, 65535),
        "int32_value": (-(2**31), 2**31 - 1),
        "uint32_value": (0, 2**32 - 1),
        "int64_value": (-(2**63), 2**63 - 1),
        "uint64_value": (0, 2**64 - 1),
    }
    for name, (low, high) in expected_ranges.items():
        assert (props[name]["type"], props[name]["minimum"], props[name]["maximum"]) == ("integer", low, high)
    assert props["float32_value"] == {"type": "number", "default": 0.0}
    assert props["float64_value"] == {"type": "number", "default": 0.0}
    assert props["bool_value"] == {"type": "boolean", "default": False}
    assert props["string_value"] == {"type": "string", "default": ""}

    schema = schema_for_message(BasicTypes.Request)
    assert valid(schema, {"int8_value": 127, "string_value": "x"})
    assert not valid(schema, {"int8_value": 128})
    assert not valid(schema, {"uint64_value": -1})
    assert not valid(schema, {"int8_velue": 1})


def test_nested_message_goal_schema_recurses_with_time_as_object() -> None:
    from test_msgs.action import NestedMessage

    schema = schema_for_message(NestedMessage.Goal)
    props = schema["properties"]
    time_schema = props["nested_different_pkg"]
    assert time_schema == {
        "type": "object",
        "description": "builtin_interfaces/msg/Time",
        "properties": {"sec": INT32, "nanosec": UINT32},
        "additionalProperties": False,
    }
    duration = props["nested_field_no_pkg"]["properties"]["duration_value"]
    assert duration["description"] == "builtin_interfaces/msg/Duration"
    assert props["nested_field"]["properties"]["int16_value"]["maximum"] == 32767
    assert props["nested_field"]["additionalProperties"] is False
    assert valid(schema, {"nested_field": {"bool_value": True}, "nested_different_pkg": {"sec": 3}})
    assert not valid(schema, {"nested_field": {"bogus": 1}})


def test_nested_msg_and_exclude() -> None:
    from test_msgs.msg import Nested

    schema = schema_for_message(Nested)
    assert schema["properties"]["basic_types_value"]["description"] == "test_msgs/msg/BasicTypes"
    assert schema_for_message(Nested, exclude=["basic_types_value"])["properties"] == {}


def test_array_and_string_bounds() -> None:
    from test_msgs.msg import Arrays, BoundedSequences, Strings, UnboundedSequences

    fixed = schema_for_message(Arrays)["properties"]
    assert fixed["int32_values"] == {"type": "array", "items": INT32, "minItems": 3, "maxItems": 3}
    assert fixed["basic_types_values"]["items"]["description"] == "test_msgs/msg/BasicTypes"
    bounded = schema_for_message(BoundedSequences)["properties"]
    assert bounded["float64_values"] == {"type": "array", "items": {"type": "number"}, "maxItems": 3}
    assert bounded["string_values"]["maxItems"] == 3
    unbounded = schema_for_message(UnboundedSequences)["properties"]["uint8_values"]
    assert unbounded["type"] == "array" and "maxItems" not in unbounded
    strings = schema_for_message(Strings)["properties"]
    assert strings["bounded_string_value"] == {"type": "string", "maxLength": 22, "default": ""}
    assert strings["string_value_default1"]["default"] == "Hello world!"


def test_fill_message_round_trip_nested_and_arrays() -> None:
    from test_msgs.action import NestedMessage
    from test_msgs.msg import Arrays

    data = {
        "nested_field": {"int8_value": -3, "uint64_value": 2**64 - 1, "byte_value": 200, "bool_value": True},
        "nested_different_pkg": {"sec": 12, "nanosec": 500},
        "nested_field_no_pkg": {"duration_value": {"sec": -1, "nanosec": 7}},
    }
    goal = fill_message(NestedMessage.Goal, data)
    assert goal.nested_field.byte_value == bytes([200])
    assert goal.nested_different_pkg.sec == 12
    back = message_to_jsonable(goal)
    for key, value in data["nested_field"].items():
        assert back["nested_field"][key] == value
    assert back["nested_different_pkg"] == {"sec": 12, "nanosec": 500}
    assert back["nested_field_no_pkg"]["duration_value"] == {"sec": -1, "nanosec": 7}

    arrays = fill_message(
        Arrays,
        {
            "int32_values": [1, 2.0, -3],
            "byte_values": [0, 1, 255],
            "string_values": ["a", "b", "c"],
            "basic_types_values": [{"float64_value": 0.5}, {}, {"uint8_value": 9}],
        },
    )
    back = message_to_jsonable(arrays)
    assert back["int32_values"] == [1, 2, -3]
    assert back["byte_values"] == [0, 1, 255]
    assert back["string_values"] == ["a", "b", "c"]
    assert back["basic_types_values"][0]["float64_value"] == 0.5
    assert back["basic_types_values"][2]["uint8_value"] == 9


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            {"nested_field": {"int8_value": "3"}},
            r"field 'nested_field.int8_value': expected an integer \(int8\), got str",
        ),
        ({"nested_field": {"int8_value": 200}}, r"'nested_field.int8_value': 200 is outside the int8 range"),
        ({"nested_field": {"int32_value": 2.5}}, r"expected an integer \(int32\), got float 2.5"),
        ({"nested_field": {"bool_value": 1}}, r"'nested_field.bool_value': expected a boolean, got int 1"),
        ({"nested_field": {"float64_value": True}}, r"expected a number \(double\), got bool True"),
        ({"nested_field": {"float32_value": 1e39}}, r"does not fit a float32"),
        ({"nested_field": 5}, r"nested_field: expected an object, got int 5"),
        ({"nested_fild": {}}, r"unknown field 'nested_fild' of test_msgs/action/NestedMessage_Goal"),
        ({"nested_different_pkg": {"sec": 1, "nsec": 2}}, r"unknown field 'nested_different_pkg.nsec'"),
    ],
)
def test_fill_message_errors_name_the_field(data: dict[str, Any], message: str) -> None:
    from test_msgs.action import NestedMessage

    with pytest.raises(FieldError, match=message):
        fill_message(NestedMessage.Goal, data)


def test_fill_message_array_and_string_bounds() -> None:
    from test_msgs.msg import Arrays, BoundedSequences, Strings

    with pytest.raises(FieldError, match=r"'int32_values': expected exactly 3 items, got 2"):
        fill_message(Arrays, {"int32_values": [1, 2]})
    with pytest.raises(FieldError, match=r"'int8_values': at most 3 items allowed, got 4"):
        fill_message(BoundedSequences, {"int8_values": [1, 2, 3, 4]})
    with pytest.raises(FieldError, match=r"'int8_values\[1\]': 999 is outside"):
        fill_message(BoundedSequences, {"int8_values": [1, 999]})
    with pytest.raises(FieldError, match=r"'bounded_string_value': string longer than 22 characters \(23\)"):
        fill_message(Strings, {"bounded_string_value": "x" * 23})
    with pytest.raises(FieldError, match=r"'int32_values': expected an array, got str"):
        fill_message(Arrays, {"int32_values": "123"})
    with pytest.raises(FieldError, match=r"<arguments>: expected an object, got list"):
        fill_message(Arrays, [1, 2])


def test_message_to_jsonable_is_compact() -> None:
    from test_msgs.msg import BasicTypes, Strings, UnboundedSequences

    seq = UnboundedSequences(int32_values=list(range(100)))
    out = message_to_jsonable(seq, max_array=10)
    assert out["int32_values"][:10] == list(range(10))
    assert out["int32_values"][10] == "... 90 more items (100 in all)"
    assert len(out["int32_values"]) == 11

    text = message_to_jsonable(Strings(string_value="y" * 30), max_str=8)["string_value"]
    assert text == "yyyyyyyy... (30 characters)"

    basic = message_to_jsonable(BasicTypes(float32_value=0.1, float64_value=math.nan, byte_value=b"\x07"))
    assert basic["float32_value"] == 0.1
    assert basic["float64_value"] == "nan"
    assert basic["byte_value"] == 7


def test_dotted_field_helpers() -> None:
    from test_msgs.action import NestedMessage

    slot = field_type(NestedMessage.Result, "nested_field.bool_value")
    assert slot is not None and slot.typename == "boolean"
    assert field_type(NestedMessage.Result, "nested_field.nope") is None
    assert field_type(NestedMessage.Result, "nested_field.bool_value.deeper") is None
    result = fill_message(NestedMessage.Result, {"nested_field": {"bool_value": True}})
    assert get_field(result, "nested_field.bool_value") is True
