"""ROS interface types as data: import by type string, JSON Schema, dict <-> message.

Everything here works from the generated Python classes alone (``SLOT_TYPES`` and
``get_fields_and_field_types()``), so it needs no ``rosidl_runtime_py``.

Schema policy (derived schemas):
- every field is optional, because ROS fills an omitted field with its default value;
  top-level scalar fields show that value as ``default`` so the model knows what
  omission means. ``required`` (``ToolBinding.required_arguments``) marks the fields
  the model must give;
- integers carry their exact range, bounded strings ``maxLength``, bounded sequences
  ``maxItems``, fixed arrays ``minItems == maxItems``; ``byte`` is an integer 0..255;
- nested messages are nested objects (``builtin_interfaces/Time`` is ``{sec, nanosec}``);
- ``additionalProperties`` is false at every level, so a misspelt field is an error.

The generated setters only check values when ``ROS_PYTHON_CHECK_FIELDS`` is set, so
``fill_message`` checks every value itself: a bad value must become a clear failure
result, not a serialisation error inside the executor.
"""

from __future__ import annotations

import importlib
import math
import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from rosidl_parser.definition import (
    AbstractNestedType,
    AbstractString,
    Array,
    BasicType,
    BoundedSequence,
    BoundedString,
    BoundedWString,
    NamespacedType,
)

from harness_ros.config import ToolBinding
from harness_ros.errors import FieldError, ToolError
from harness_ros.ros.distros import describe_installed
from harness_ros.tools.binding import (
    CompiledBinding,
    FieldInfo,
    binding_spec,
    check_binding_shape,
    check_definition_budget,
    compile_binding,
    parse_path,
)
from harness_ros.tools.contracts import ToolSpec

__all__ = [
    "FieldError",
    "MessageTypeInfo",
    "binding_schema",
    "distro_advice",
    "field_type",
    "fill_message",
    "fit_to_installed",
    "get_field",
    "import_interface",
    "message_to_jsonable",
    "request_class",
    "schema_for_message",
    "to_jsonable",
    "tool_spec",
    "type_name",
]

_KINDS = ("msg", "srv", "action")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

_INT_RANGES: dict[str, tuple[int, int]] = {
    "int8": (-(2**7), 2**7 - 1),
    "uint8": (0, 2**8 - 1),
    "char": (0, 2**8 - 1),
    "octet": (0, 2**8 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "uint16": (0, 2**16 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "uint32": (0, 2**32 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "uint64": (0, 2**64 - 1),
}
_FLOATS = frozenset({"float", "double", "long double"})
_FLOAT32_MAX = 3.4028234663852886e38


def import_interface(type_string: str) -> type:
    """The generated class of ``pkg/msg/Name``, ``pkg/srv/Name`` or ``pkg/action/Name``."""
    parts = type_string.split("/")
    if len(parts) != 3 or parts[1] not in _KINDS or not all(_NAME.match(p) for p in (parts[0], parts[2])):
        msg = (
            f"invalid interface type {type_string!r}: expected pkg/msg/Name, pkg/srv/Name or pkg/action/Name"
        )
        raise ToolError(msg)
    package, kind, name = parts
    try:
        module = importlib.import_module(f"{package}.{kind}")
    except ModuleNotFoundError as err:
        if err.name is not None and err.name.split(".")[0] == package:
            msg = (
                f"interface type {type_string!r}: package {package!r} is not installed "
                f"(no Python module {package}.{kind}; build its interfaces and source the workspace, "
                "or build them into the venv: docs/robot.md#one-route-per-distribution)"
            )
        else:
            msg = f"interface type {type_string!r}: cannot import {package}.{kind}: {err}"
        raise ToolError(msg) from None
    except ImportError as err:
        msg = f"interface type {type_string!r}: cannot import {package}.{kind}: {err}"
        raise ToolError(msg) from None
    cls = getattr(module, name, None)
    if not isinstance(cls, type) or not _has_kind_shape(cls, kind):
        msg = f"interface type {type_string!r}: package {package!r} has no {kind} named {name!r}"
        raise ToolError(msg)
    return cls


def _has_kind_shape(cls: type, kind: str) -> bool:
    if kind == "action":
        return all(hasattr(cls, part) for part in ("Goal", "Result", "Feedback"))
    if kind == "srv":
        return hasattr(cls, "Request") and hasattr(cls, "Response")
    return hasattr(cls, "get_fields_and_field_types") and hasattr(cls, "SLOT_TYPES")


def type_name(msg_class: type) -> str:
    """``pkg/msg/Name`` style name of a generated class (goals read ``pkg/action/Name_Goal``)."""
    parts = msg_class.__module__.split(".")
    return f"{parts[0]}/{parts[1]}/{msg_class.__name__}" if len(parts) >= 2 else msg_class.__name__


def _fields(msg_class: type) -> list[tuple[str, Any]]:
    names = list(msg_class.get_fields_and_field_types())  # type: ignore[attr-defined]
    return list(zip(names, msg_class.SLOT_TYPES, strict=True))  # type: ignore[attr-defined]


def _nested_class(slot: NamespacedType) -> type:
    return import_interface("/".join([*slot.namespaces, slot.name]))


def field_type(msg_class: type, dotted: str) -> Any | None:
    """The rosidl type of a (dotted) field path, or None when there is no such field."""
    current: Any = msg_class
    slot: Any = None
    for part in dotted.split("."):
        if current is None:
            return None
        slot = dict(_fields(current)).get(part)
        if slot is None:
            return None
        current = _nested_class(slot) if isinstance(slot, NamespacedType) else None
    return slot


def get_field(msg: Any, dotted: str) -> Any:
    """Value at a dotted field path (``status.success``); raises AttributeError when absent."""
    value = msg
    for part in dotted.split("."):
        value = getattr(value, part)
    return value


# --------------------------------------------------------------------------- bindings


def _field_info(slot: Any) -> FieldInfo:
    if isinstance(slot, BasicType):
        typename = slot.typename
        if typename == "boolean":
            return FieldInfo("bool", typename)
        if typename in _FLOATS:
            return FieldInfo("float", "float" if typename == "float" else "double")
        return FieldInfo("int", typename)
    if isinstance(slot, AbstractString):
        return FieldInfo("string", "string")
    if isinstance(slot, NamespacedType):
        return FieldInfo("message", "/".join([*slot.namespaces, slot.name]))
    if isinstance(slot, AbstractNestedType):
        item = _field_info(slot.value_type)
        size = slot.size if isinstance(slot, Array) else getattr(slot, "maximum_size", None)
        return FieldInfo(
            "sequence", item.type_name, item=item, size=size, bounded=isinstance(slot, BoundedSequence)
        )
    msg = f"unsupported ROS field type {slot!r}"
    raise ToolError(msg)


class MessageTypeInfo:
    """``TypeInfo`` (harness_ros.tools.binding) of a generated message class."""

    def __init__(self, msg_class: type) -> None:
        self._class = msg_class
        self.type_name = type_name(msg_class)

    def field(self, path: str) -> FieldInfo | None:
        try:
            parts = parse_path(path)
        except ValueError:
            return None
        current: type | None = self._class
        info: FieldInfo | None = None
        for part in parts:
            if isinstance(part, int):
                if info is None or info.kind != "sequence" or info.item is None:
                    return None
                if info.size is not None and part >= info.size:
                    return None
                info = info.item
            else:
                if current is None:
                    return None
                slot = dict(_fields(current)).get(part)
                if slot is None:
                    return None
                info = _field_info(slot)
                if isinstance(slot, AbstractNestedType) and isinstance(slot.value_type, NamespacedType):
                    current = _nested_class(slot.value_type)
                    continue
            current = import_interface(info.type_name) if info.kind == "message" else current
            if info.kind not in ("message", "sequence"):
                current = None
        return info

    def children(self, path: str) -> list[tuple[str, FieldInfo]]:
        if path:
            info = self.field(path)
            if info is None or info.kind != "message":
                return []
            cls = import_interface(info.type_name)
        else:
            cls = self._class
        return [(name, _field_info(slot)) for name, slot in _fields(cls)]


def fit_to_installed(binding: ToolBinding, *, log: Callable[[str], Any] | None = None) -> ToolBinding:
    """``binding`` less the ``optional_fields`` the installed types do not have: a goal
    constant is left out (the server's default applies), a result or feedback field is
    not read. What is left out is logged (``log``, info level at start-up) with the
    distribution the type looks like. The node, ``harness-ros tools`` and ``check`` all
    bind through this, so they agree on what a distribution's types allow."""
    if not binding.optional_fields:
        return binding
    try:
        interface = import_interface(binding.type)
    except ToolError as err:  # name the tool, as tool_spec does (check and tools come here first)
        raise ToolError(f"tool {binding.name!r}: {err}") from None
    action = binding.action is not None
    request = interface.Goal if action else interface.Request  # type: ignore[attr-defined]
    classes = {
        "result": interface.Result if action else interface.Response,  # type: ignore[attr-defined]
        "feedback": interface.Feedback if action else None,  # type: ignore[attr-defined]
    }
    goal_info = MessageTypeInfo(request)
    update: dict[str, Any] = {}
    goal = dict(binding.goal)
    projections = {
        "result": dict(binding.result_fields) if binding.result_fields is not None else None,
        "feedback": dict(binding.feedback_fields) if binding.feedback_fields is not None else None,
    }
    left_out = []
    for entry in binding.optional_fields:
        role, _, path = entry.partition(".")
        if role == "goal":
            if goal_info.field(path) is not None:
                continue
            goal.pop(path, None)
            update["goal"] = goal
        else:
            msg_class = classes[role]
            if msg_class is None or field_type(msg_class, path) is not None:
                continue
            if role == "result":
                for key in ("error_code_field", "message_field", "success_field"):
                    if getattr(binding, key) == path:
                        update[key] = None
            projection = projections[role]
            if projection is not None:
                for name in [n for n, dotted in projection.items() if dotted == path]:
                    del projection[name]
                update[f"{role}_fields"] = projection
        left_out.append(entry)
    if left_out and log is not None:
        looks = describe_installed(binding.type) or f"the installed {binding.type}"
        log(
            f"tool {binding.name!r}: {', '.join(left_out)} left out: not in the installed "
            f"{binding.type} ({looks}); optional_fields allows it"
        )
    return binding.model_copy(update=update) if update else binding


def request_class(binding: ToolBinding) -> type:
    """The Goal (action) or Request (service) class a binding fills."""
    interface = import_interface(binding.type)
    # the generated interface class carries Goal / Request as class attributes mypy cannot see
    filled: type = interface.Goal if binding.action is not None else interface.Request  # type: ignore[attr-defined]
    return filled


def binding_schema(binding: ToolBinding) -> tuple[dict[str, Any], CompiledBinding | None]:
    """What the model sees as the tool's parameters, and the compiled binding when the
    binding maps arguments. Needs the interface type, not a ROS graph."""
    cls = request_class(binding)
    if binding.arguments is not None:
        compiled = compile_binding(binding, MessageTypeInfo(cls))
        return compiled.schema, compiled
    if binding.input_schema is not None:
        return binding.input_schema, None
    return schema_for_message(cls, required=binding.required_arguments), None


def tool_spec(binding: ToolBinding) -> tuple[ToolSpec, CompiledBinding | None]:
    """The spec the model sees for a binding, and its compiled binding: a ToolError
    naming the tool when the binding does not fit its type or is over its
    max_definition_tokens. The node, ``harness-ros tools`` and ``harness-ros check`` all
    build a tool's definition here, so they accept and refuse the same bindings."""
    check_binding_shape(binding)  # a mistake whatever the type: no advice about the distribution
    try:
        schema, compiled = binding_schema(binding)
        spec = binding_spec(binding, schema)
        check_definition_budget(spec, binding.max_definition_tokens)
    except ToolError as err:
        text = str(err)
        prefix = f"tool {binding.name!r}"
        text = text if text.startswith(prefix) else f"{prefix}: {text}"
        raise ToolError(text + distro_advice(binding, text)) from None
    for index, prerequisite in enumerate(getattr(binding, "prerequisites", ())):
        try:  # the service the harness calls first binds as a tool of its own
            tool_spec(prerequisite.as_binding(binding.name, index))
        except ToolError as err:
            text = str(err).replace(
                f"tool '{binding.name}.prerequisites.{index}'", f"prerequisites[{index}]", 1
            )
            raise ToolError(f"tool {binding.name!r}: {text}") from None
    return spec, compiled


def distro_advice(binding: ToolBinding, text: str) -> str:
    """What the user can change, with the distribution the installed type looks like."""
    looks = describe_installed(binding.type)
    if not looks:
        return ""
    match = re.search(r"goal field '([^']+)': no such field", text)
    if match:
        change = (
            f"remove goal field {match.group(1)!r}, list 'goal.{match.group(1)}' in optional_fields "
            "(a constant whose absence is safe), or pick the preset for this distribution"
        )
    elif match := re.search(r"(message_field|error_code_field|success_field) '([^']+)'", text):
        change = f"list 'result.{match.group(2)}' in optional_fields or set {match.group(1)}: null"
    elif match := re.search(r"(result|feedback)_fields\.\w+: '([^']+)'", text):
        change = f"list '{match.group(1)}.{match.group(2)}' in optional_fields or remove the projection"
    else:
        change = "check the binding against this distribution's type (docs/robot.md, ROS distributions)"
    return f" [{looks}: {change}]"


# --------------------------------------------------------------------------- schema


def schema_for_message(
    msg_class: type, *, exclude: Iterable[str] = (), required: Sequence[str] = ()
) -> dict[str, Any]:
    """JSON Schema (draft 2020-12) of a message class; see the module docstring for the policy."""
    excluded = set(exclude)
    fields = [(name, slot) for name, slot in _fields(msg_class) if name not in excluded]
    known = {name for name, _ in fields}
    unknown = [name for name in required if name not in known]
    if unknown:
        msg = f"required field(s) {unknown!r} not in {type_name(msg_class)} (fields: {sorted(known)})"
        raise ToolError(msg)
    defaults = msg_class()
    properties: dict[str, Any] = {}
    for name, slot in fields:
        schema = _schema_for_type(slot)
        if isinstance(slot, BasicType | AbstractString):
            schema["default"] = _scalar_to_jsonable(getattr(defaults, name), slot, max_str=500)
        properties[name] = schema
    schema = {"type": "object", "properties": properties, "additionalProperties": False}
    if required:
        schema["required"] = list(required)
    return schema


def _schema_for_type(slot: Any) -> dict[str, Any]:
    if isinstance(slot, BasicType):
        return _schema_for_basic(slot.typename)
    if isinstance(slot, AbstractString):
        schema: dict[str, Any] = {"type": "string"}
        if isinstance(slot, BoundedString | BoundedWString):
            schema["maxLength"] = slot.maximum_size
        return schema
    if isinstance(slot, NamespacedType):
        nested = _nested_class(slot)
        schema = {
            "type": "object",
            "description": type_name(nested),
            "properties": {name: _schema_for_type(sub) for name, sub in _fields(nested)},
            "additionalProperties": False,
        }
        return schema
    if isinstance(slot, AbstractNestedType):
        schema = {"type": "array", "items": _schema_for_type(slot.value_type)}
        if isinstance(slot, Array):
            schema["minItems"] = schema["maxItems"] = slot.size
        elif isinstance(slot, BoundedSequence):
            schema["maxItems"] = slot.maximum_size
        return schema
    msg = f"unsupported ROS field type {slot!r}"
    raise ToolError(msg)


def _schema_for_basic(typename: str) -> dict[str, Any]:
    if typename == "boolean":
        return {"type": "boolean"}
    if typename in _INT_RANGES:
        low, high = _INT_RANGES[typename]
        schema: dict[str, Any] = {"type": "integer", "minimum": low, "maximum": high}
        if typename == "octet":
            schema["description"] = "byte"
        return schema
    if typename in _FLOATS:
        return {"type": "number"}
    if typename == "wchar":
        return {"type": "string", "minLength": 1, "maxLength": 1}
    msg = f"unsupported ROS basic type {typename!r}"
    raise ToolError(msg)


# --------------------------------------------------------------------------- dict -> message


def fill_message(msg_class: type, data: Any, *, path: str = "") -> Any:
    """A new ``msg_class`` with ``data`` (a JSON object) applied; unset fields keep defaults.

    Raises FieldError naming the field path on an unknown field or a bad value.
    """
    if not isinstance(data, dict):
        msg = f"{path or '<arguments>'}: expected an object, got {_kind(data)}"
        raise FieldError(msg)
    fields = dict(_fields(msg_class))
    message = msg_class()
    for key, value in data.items():
        where = f"{path}.{key}" if path else str(key)
        slot = fields.get(key)
        if slot is None:
            msg = f"unknown field {where!r} of {type_name(msg_class)} (fields: {', '.join(fields)})"
            raise FieldError(msg)
        converted = _convert(slot, value, where)
        try:
            setattr(message, key, converted)
        except (AssertionError, TypeError, ValueError) as err:
            msg = f"field {where!r}: {err or 'value rejected by the message class'}"
            raise FieldError(msg) from None
    return message


def _convert(slot: Any, value: Any, where: str) -> Any:
    if isinstance(slot, BasicType):
        return _convert_basic(slot.typename, value, where)
    if isinstance(slot, AbstractString):
        if not isinstance(value, str):
            raise FieldError(f"field {where!r}: expected a string, got {_kind(value)}")
        # rosidl_parser types BoundedWString's size as int | str (a constant's name while parsing);
        # generated message classes always carry the number
        if isinstance(slot, BoundedString | BoundedWString) and len(value) > int(slot.maximum_size):
            msg = f"field {where!r}: string longer than {slot.maximum_size} characters ({len(value)})"
            raise FieldError(msg)
        return value
    if isinstance(slot, NamespacedType):
        return fill_message(_nested_class(slot), value, path=where)
    if isinstance(slot, AbstractNestedType):
        if not isinstance(value, list | tuple):
            raise FieldError(f"field {where!r}: expected an array, got {_kind(value)}")
        if isinstance(slot, Array) and len(value) != slot.size:
            raise FieldError(f"field {where!r}: expected exactly {slot.size} items, got {len(value)}")
        if isinstance(slot, BoundedSequence) and len(value) > slot.maximum_size:
            msg = f"field {where!r}: at most {slot.maximum_size} items allowed, got {len(value)}"
            raise FieldError(msg)
        return [_convert(slot.value_type, item, f"{where}[{i}]") for i, item in enumerate(value)]
    raise FieldError(f"field {where!r}: unsupported ROS field type {slot!r}")


def _convert_basic(typename: str, value: Any, where: str) -> Any:
    if typename == "boolean":
        if not isinstance(value, bool):
            raise FieldError(f"field {where!r}: expected a boolean, got {_kind(value)}")
        return value
    if typename in _INT_RANGES:
        # JSON has one number type: accept 3.0 for an integer field, never 3.5 or true.
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise FieldError(f"field {where!r}: expected an integer ({typename}), got {_kind(value)}")
        low, high = _INT_RANGES[typename]
        if not low <= value <= high:
            raise FieldError(f"field {where!r}: {value} is outside the {typename} range [{low}, {high}]")
        return bytes([value]) if typename == "octet" else value
    if typename in _FLOATS:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise FieldError(f"field {where!r}: expected a number ({typename}), got {_kind(value)}")
        try:
            value = float(value)
        except OverflowError:
            raise FieldError(f"field {where!r}: {value} does not fit a {typename}") from None
        if typename == "float" and math.isfinite(value) and abs(value) > _FLOAT32_MAX:
            raise FieldError(f"field {where!r}: {value} does not fit a float32")
        return value
    if typename == "wchar":
        if not isinstance(value, str) or len(value) != 1:
            raise FieldError(f"field {where!r}: expected one character, got {_kind(value)}")
        return value
    raise FieldError(f"field {where!r}: unsupported ROS basic type {typename!r}")


def _kind(value: Any) -> str:
    text = repr(value)
    shown = text if len(text) <= 40 else text[:37] + "..."
    return f"{type(value).__name__} {shown}"


# --------------------------------------------------------------------------- message -> dict


def message_to_jsonable(msg: Any, *, max_array: int = 64, max_str: int = 500) -> dict[str, Any]:
    """A compact JSON-ready dict of a message.

    Arrays longer than ``max_array`` keep their first items plus a final note string
    (``"... 936 more items (1000 in all)"``); strings are cut at ``max_str`` characters.
    Floats that JSON cannot carry (nan, inf) become strings.
    """
    return {
        name: _to_jsonable(getattr(msg, name), slot, max_array, max_str) for name, slot in _fields(type(msg))
    }


_SECONDS_TYPES = ("builtin_interfaces/msg/Duration", "builtin_interfaces/msg/Time")


def to_jsonable(value: Any, slot: Any) -> Any:
    """One field's value for the model; a Duration or Time reads as seconds."""
    if isinstance(slot, NamespacedType) and "/".join([*slot.namespaces, slot.name]) in _SECONDS_TYPES:
        return round(value.sec + value.nanosec / 1e9, 3)
    return _to_jsonable(value, slot, 64, 500)


def _to_jsonable(value: Any, slot: Any, max_array: int, max_str: int) -> Any:
    if isinstance(slot, BasicType | AbstractString):
        return _scalar_to_jsonable(value, slot, max_str=max_str)
    if isinstance(slot, NamespacedType):
        return message_to_jsonable(value, max_array=max_array, max_str=max_str)
    if isinstance(slot, AbstractNestedType):
        items = list(value)
        out = [_to_jsonable(item, slot.value_type, max_array, max_str) for item in items[:max_array]]
        if len(items) > max_array:
            out.append(f"... {len(items) - max_array} more items ({len(items)} in all)")
        return out
    return str(value)[:max_str]


def _scalar_to_jsonable(value: Any, slot: Any, *, max_str: int) -> Any:
    if isinstance(slot, AbstractString):
        text = str(value)
        return text if len(text) <= max_str else f"{text[:max_str]}... ({len(text)} characters)"
    typename = slot.typename
    if typename == "boolean":
        return bool(value)
    if typename == "octet":
        return value[0] if isinstance(value, bytes | bytearray) else int(value)
    if typename in _INT_RANGES:
        return int(value)
    if typename in _FLOATS:
        number = float(value)
        if not math.isfinite(number):
            return str(number)
        # float32 values print as 0.10000000149011612; 7 significant digits is all they hold.
        return float(f"{number:.7g}") if typename == "float" else number
    return str(value)[:max_str]
