"""Bindings: a small model-facing argument list mapped onto a real goal or request.

Pure Python: the ROS layer describes the interface type through ``TypeInfo`` (one
``FieldInfo`` per field path) and turns the goal this module builds (a JSON object)
into the message with ``fill_message``.

A binding has model-facing ``arguments`` and a ``goal`` mapping of field paths
(``pose.pose.position.x``, ``trajectory.points[0].positions``) to sources:

- a constant: a scalar or list, or ``{value: V}`` for any value (a whole message);
- ``{arg: NAME}``: an argument; with ``field: KEY`` one value of the entry a lookup
  argument names;
- ``{convert: now}``: the node clock's time when the goal is sent.

``value`` and ``arg`` sources take an optional ``convert`` (see ``CONVERSIONS``).
Fields neither mapped nor constant keep the message default and are never shown.

``compile_binding`` checks everything at start-up and raises a ``BindingError``
naming the tool, the field path and the problem.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from harness_ros.errors import BindingError
from harness_ros.moveit_contract import JOINT_CONSTRAINT, joint_positions_to_constraints
from harness_ros.tools.contracts import ToolSpec
from harness_ros.validators import parse_path

__all__ = [
    "CONVERSIONS",
    "DEFAULT_MAX_DEFINITION_TOKENS",
    "BindingError",
    "CompiledBinding",
    "Conversion",
    "FieldInfo",
    "TypeInfo",
    "binding_spec",
    "check_binding_shape",
    "check_definition_budget",
    "compile_binding",
    "definition_tokens",
    "model_definition",
    "parse_path",
]

DEFAULT_MAX_DEFINITION_TOKENS = 400
_CHARS_PER_TOKEN = 4  # the same estimate as harness_ros.context.compaction

FieldKind = Literal["bool", "int", "float", "string", "message", "sequence"]

DURATION = "builtin_interfaces/msg/Duration"
TIME = "builtin_interfaces/msg/Time"
QUATERNION = "geometry_msgs/msg/Quaternion"
HEADER = "std_msgs/msg/Header"


@dataclass(frozen=True)
class FieldInfo:
    """What the ROS layer tells about one field path."""

    kind: FieldKind
    type_name: str
    """``double``, ``string``, ``geometry_msgs/msg/Quaternion``; for a sequence, its items'."""
    item: FieldInfo | None = None
    """The item type of a sequence or array."""
    size: int | None = None
    """Fixed size of an array, or the bound of a bounded sequence (then ``bounded``)."""
    bounded: bool = False


class TypeInfo(Protocol):
    """The interface type a binding is checked against (goal or request)."""

    type_name: str

    def field(self, path: str) -> FieldInfo | None:
        """The field at ``path`` (dots, ``[i]`` into sequences); None when there is none."""
        ...

    def children(self, path: str) -> list[tuple[str, FieldInfo]]:
        """The fields of the message at ``path`` ('' = the top level)."""
        ...


# --------------------------------------------------------------------------- conversions


@dataclass(frozen=True)
class Conversion:
    """A conversion from a model-facing value to a goal field value."""

    name: str
    unit: str | None
    """Unit the input must be in; None for a conversion that takes no input (``now``)."""
    targets: tuple[str, ...]
    """Field types it can fill (``float``/``double`` or a message type)."""
    apply: Callable[[Any], Any]
    doc: str


def _quaternion(yaw_rad: float) -> dict[str, float]:
    # A rotation about z only: always normalised, unlike a hand-written {z: ...}.
    return {"x": 0.0, "y": 0.0, "z": math.sin(yaw_rad / 2.0), "w": math.cos(yaw_rad / 2.0)}


def _duration(seconds: float) -> dict[str, int]:
    if not math.isfinite(seconds):
        raise ValueError(f"{seconds!r} s is not a finite duration")
    total = round(seconds * 1_000_000_000)
    sec, nanosec = divmod(total, 1_000_000_000)  # nanosec stays in [0, 1e9) for negatives too
    return {"sec": int(sec), "nanosec": int(nanosec)}


_FLOAT_TARGETS = ("float", "double")


CONVERSIONS: dict[str, Conversion] = {
    conversion.name: conversion
    for conversion in (
        Conversion(
            "yaw_deg_to_quaternion",
            "deg",
            (QUATERNION,),
            lambda v: _quaternion(math.radians(float(v))),
            "a heading in degrees to a normalised quaternion about z",
        ),
        Conversion(
            "yaw_rad_to_quaternion",
            "rad",
            (QUATERNION,),
            lambda v: _quaternion(float(v)),
            "a heading in radians to a normalised quaternion about z",
        ),
        Conversion(
            "seconds_to_duration",
            "s",
            (DURATION,),
            lambda v: _duration(float(v)),
            "seconds to builtin_interfaces/Duration {sec, nanosec}",
        ),
        Conversion(
            "deg_to_rad",
            "deg",
            _FLOAT_TARGETS,
            lambda v: math.radians(float(v)),
            "degrees to the radians ROS fields hold (REP 103)",
        ),
        Conversion(
            "joint_positions_to_constraints",
            "rad",
            (JOINT_CONSTRAINT,),
            joint_positions_to_constraints,
            "a named state {joint: position} to MoveIt JointConstraints (tolerance 1e-4 rad)",
        ),
        Conversion(
            "now",
            None,
            (TIME,),
            lambda v: v,
            "the node clock's time when the goal is sent (sim time aware)",
        ),
    )
}


# --------------------------------------------------------------------------- paths


def _join(parts: Sequence[str | int]) -> str:
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
    return out


def _is_prefix(short: Sequence[str | int], long: Sequence[str | int]) -> bool:
    return len(short) <= len(long) and list(long[: len(short)]) == list(short)


# --------------------------------------------------------------------------- sources


@dataclass(frozen=True)
class _Source:
    path: str
    parts: tuple[str | int, ...]
    field: FieldInfo
    kind: Literal["value", "arg", "now"]
    value: Any = None
    arg: str | None = None
    key: str | None = None
    conversion: Conversion | None = None


@dataclass(frozen=True)
class CompiledBinding:
    """A checked binding: the model-facing schema and how to build the goal."""

    tool: str
    schema: dict[str, Any]
    sources: tuple[_Source, ...]
    arguments: Mapping[str, Any]
    lookups: Mapping[str, Mapping[str, Any]]

    def build(self, arguments: Mapping[str, Any], *, now: Callable[[], dict[str, int]]) -> dict[str, Any]:
        """The goal as a JSON object (for ``fill_message``); ``now`` gives ``{sec, nanosec}``.

        Raises BindingError naming the argument or field on a value that cannot convert."""
        values = dict(arguments)
        for name, spec in self.arguments.items():
            if name not in values and spec.default is not None:
                values[name] = spec.default
        goal: dict[str, Any] = {}
        for source in self.sources:
            if source.kind == "now":
                value: Any = now()
            elif source.kind == "value":
                value = source.value
            else:
                assert source.arg is not None
                if source.arg not in values:
                    continue  # an optional argument the model left out: the field keeps its default
                value = values[source.arg]
                spec = self.arguments[source.arg]
                if spec.lookup is not None:
                    table = self.lookups[spec.lookup]
                    if not isinstance(value, str) or value not in table:
                        known = ", ".join(map(str, table))
                        raise BindingError(
                            f"{source.arg}: unknown {spec.lookup} entry {value!r} (known: {known})"
                        )
                    value = table[value]
                    if source.key is not None:
                        value = value[source.key]
            if source.conversion is not None and source.kind != "now":
                try:
                    value = source.conversion.apply(value)
                except (TypeError, ValueError) as err:
                    raise BindingError(f"{source.path}: {source.conversion.name} failed: {err}") from None
            _put(goal, source.parts, value)
        return goal


def _put(goal: dict[str, Any], parts: Sequence[str | int], value: Any) -> None:
    node: Any = goal
    for index, part in enumerate(parts[:-1]):
        following = parts[index + 1]
        empty: Any = [] if isinstance(following, int) else {}
        if isinstance(part, int):
            while len(node) <= part:
                node.append(None)
            if node[part] is None:
                node[part] = empty
            node = node[part]
        else:
            node = node.setdefault(part, empty)
    last = parts[-1]
    if isinstance(last, int):
        while len(node) <= last:
            node.append(None)
        node[last] = value
    else:
        node[last] = value


# --------------------------------------------------------------------------- compile

# Goal fields a server rejects or misreads when left at their default, per upstream type.
_REQUIRED_BY_TYPE: dict[str, tuple[str, ...]] = {
    "nav2_msgs/action/NavigateToPose_Goal": ("pose.pose.position", "pose.pose.orientation"),
    "nav2_msgs/action/DriveOnHeading_Goal": ("target.x", "speed", "time_allowance"),
    "nav2_msgs/action/BackUp_Goal": ("target.x", "speed", "time_allowance"),
    "nav2_msgs/action/Spin_Goal": ("target_yaw", "time_allowance"),
    "control_msgs/action/FollowJointTrajectory_Goal": (
        "trajectory.joint_names",
        "trajectory.points",
    ),
    "control_msgs/action/GripperCommand_Goal": ("command.position",),
    "moveit_msgs/action/MoveGroup_Goal": ("request.group_name", "request.goal_constraints"),
}

_SCALAR_FOR_JSON = {
    "number": ("float",),
    "integer": ("int", "float"),
    "string": ("string",),
    "boolean": ("bool",),
}


def _failing(name: str) -> Callable[[str, str], BindingError]:
    def fail(where: str, problem: str) -> BindingError:
        return BindingError(f"tool {name!r}: {where}: {problem}")

    return fail


def check_binding_shape(binding: Any) -> None:
    """The checks of a binding (a ToolBinding with ``arguments``) that hold whatever the
    interface type: its arguments, its goal paths (each mapped once, indices from 0),
    every argument used, joint positions as many as the joint names. A BindingError here
    is a mistake of the binding itself, so it never carries advice about the installed
    ROS distribution (``ros.interfaces.tool_spec`` calls this before binding the type)."""
    if binding.arguments is None:
        return
    fail = _failing(binding.name)
    arguments: Mapping[str, Any] = binding.arguments
    _check_arguments(binding, arguments, fail)
    paths: list[tuple[str, tuple[str | int, ...]]] = []
    used: set[str] = set()
    for path, raw in binding.goal.items():
        where = f"goal field {path!r}"
        try:
            parts = tuple(parse_path(path))
        except ValueError as err:
            raise fail(where, str(err)) from None
        for other, other_parts in paths:
            if _is_prefix(other_parts, parts) or _is_prefix(parts, other_parts):
                raise fail(
                    where,
                    f"overlaps goal field {other!r}: map a field once (a tool's goal next to "
                    "preset: extends the preset's goal; to change how the preset fills a field, "
                    "give the preset's own path)",
                )
        paths.append((path, parts))
        if isinstance(raw, dict) and "arg" in raw:
            if raw["arg"] not in arguments:
                declared = ", ".join(arguments) or "none"
                raise fail(where, f"argument {raw['arg']!r} is not declared (arguments: {declared})")
            used.add(raw["arg"])
    # The direction argument may only inform the safety filter (BackUp's "backward").
    unused = [arg for arg in arguments if arg not in used and arg != binding.direction_argument]
    if unused:
        raise fail(f"argument {unused[0]!r}", "is not mapped to any goal field")
    _check_indices([parts for _, parts in paths], fail)
    _check_joint_counts(binding, paths, fail)


def compile_binding(binding: Any, info: TypeInfo) -> CompiledBinding:
    """Check ``binding`` (a ToolBinding with ``arguments``) against ``info``.

    Raises BindingError ``tool 'NAME': goal field 'PATH': PROBLEM`` (or ``argument``)."""
    name = binding.name
    arguments: Mapping[str, Any] = binding.arguments or {}
    fail = _failing(name)
    check_binding_shape(binding)
    sources: list[_Source] = []
    for path, raw in binding.goal.items():
        where = f"goal field {path!r}"
        parts = tuple(parse_path(path))
        field = info.field(path)
        if field is None:
            raise fail(where, f"no such field in {info.type_name} ({_hint(info, parts)})")
        sources.append(_source(path, parts, field, raw, arguments, binding.lookups, fail))
    _check_required(binding, info, sources, fail)
    schema = _schema(binding, arguments)
    return CompiledBinding(name, schema, tuple(sources), dict(arguments), binding.lookups)


def _hint(info: TypeInfo, parts: Sequence[str | int]) -> str:
    # Name the fields of the deepest message the path reaches, so the fix is obvious.
    for cut in range(len(parts) - 1, -1, -1):
        prefix = _join(parts[:cut])
        if cut and (found := info.field(prefix)) is not None and found.kind != "message":
            continue
        names = [child for child, _ in info.children(prefix)]
        if not names:
            continue
        return f"fields of {prefix or 'the goal'}: {', '.join(names)}"
    return "no fields"


def _check_arguments(binding: Any, arguments: Mapping[str, Any], fail: Callable[..., BindingError]) -> None:
    for arg, spec in arguments.items():
        where = f"argument {arg!r}"
        if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", arg):
            raise fail(where, "must be an identifier")
        if spec.lookup is not None:
            if spec.lookup not in binding.lookups:
                raise fail(where, f"lookup {spec.lookup!r} is not a table in lookups")
            if not binding.lookups[spec.lookup]:
                raise fail(where, f"lookup table {spec.lookup!r} is empty")
            if spec.type != "string":
                raise fail(where, "a lookup argument has type string")
        if spec.minimum is not None or spec.maximum is not None:
            if spec.type not in ("number", "integer"):
                raise fail(where, "minimum/maximum need type number or integer")
            if spec.minimum is not None and spec.maximum is not None and spec.minimum > spec.maximum:
                raise fail(where, "minimum is above maximum")
        if spec.required and spec.default is not None:
            raise fail(where, "a required argument has no default (set required: false)")
    for role in ("distance_argument", "direction_argument"):
        named = getattr(binding, role, None)
        if named is not None and named not in arguments:
            raise fail(role, f"{named!r} is not one of the arguments ({', '.join(arguments) or 'none'})")
    if binding.distance_argument is not None:
        spec = arguments[binding.distance_argument]
        if spec.type not in ("number", "integer") or spec.unit not in (None, "m"):
            raise fail(f"argument {binding.distance_argument!r}", "a distance_argument is a number in m")


def _source(  # noqa: PLR0917 - one call site, every piece is needed
    path: str,
    parts: tuple[str | int, ...],
    field: FieldInfo,
    raw: Any,
    arguments: Mapping[str, Any],
    lookups: Mapping[str, Mapping[str, Any]],
    fail: Callable[..., BindingError],
) -> _Source:
    where = f"goal field {path!r}"
    if not isinstance(raw, dict):
        return _Source(path, parts, field, "value", value=raw)
    keys = set(raw)
    allowed = {"value", "arg", "field", "convert"}
    if keys - allowed:
        raise fail(where, f"unknown source key(s) {sorted(keys - allowed)} (use value, arg, field, convert)")
    conversion = None
    if "convert" in raw:
        conversion = CONVERSIONS.get(raw["convert"])
        if conversion is None:
            raise fail(where, f"unknown conversion {raw['convert']!r} (known: {', '.join(CONVERSIONS)})")
        if field.type_name not in conversion.targets:
            wanted = " or ".join(conversion.targets)
            raise fail(where, f"{conversion.name} fills {wanted}, but the field is {field.type_name}")
    if ("value" in keys) + ("arg" in keys) > 1:
        raise fail(where, "give value or arg, not both")
    if conversion is not None and conversion.unit is None:
        if keys != {"convert"}:
            raise fail(where, f"{conversion.name} takes no value or argument")
        return _Source(path, parts, field, "now", conversion=conversion)
    if "value" in keys:
        if "field" in keys:
            raise fail(where, "field selects from a lookup argument, not from a value")
        return _Source(path, parts, field, "value", value=raw["value"], conversion=conversion)
    if "arg" not in keys:
        raise fail(where, "a mapping needs value, arg or convert: now")
    arg = raw["arg"]
    if arg not in arguments:
        raise fail(where, f"argument {arg!r} is not declared (arguments: {', '.join(arguments) or 'none'})")
    spec = arguments[arg]
    key = raw.get("field")
    if spec.lookup is not None:
        table = lookups[spec.lookup]
        for entry, value in table.items():
            if key is not None and (not isinstance(value, dict) or key not in value):
                raise fail(where, f"{spec.lookup} entry {entry!r} has no {key!r}")
    elif key is not None:
        raise fail(where, f"field {key!r} needs a lookup argument; {arg!r} has no lookup")
    if conversion is not None:
        if spec.lookup is None and spec.unit != conversion.unit:
            raise fail(
                where,
                f"{conversion.name} takes {conversion.unit}, argument {arg!r} is in {spec.unit or 'no unit'}",
            )
        if spec.lookup is None and spec.type not in ("number", "integer"):
            raise fail(where, f"{conversion.name} takes a number, argument {arg!r} is a {spec.type}")
    elif spec.lookup is None:
        _check_plain(where, field, arg, spec, fail)
    return _Source(path, parts, field, "arg", arg=arg, key=key, conversion=conversion)


def _check_plain(
    where: str, field: FieldInfo, arg: str, spec: Any, fail: Callable[..., BindingError]
) -> None:
    if spec.unit == "deg":
        raise fail(
            where, f"argument {arg!r} is in deg and ROS fields are in radians: use convert: deg_to_rad"
        )
    if field.kind in ("message", "sequence"):
        if field.type_name in (DURATION, TIME):
            hint = "convert: seconds_to_duration" if field.type_name == DURATION else "convert: now"
            raise fail(where, f"is a {field.type_name}: use {hint}")
        raise fail(where, f"is a {field.kind} ({field.type_name}); map its fields one by one")
    if field.kind not in _SCALAR_FOR_JSON[spec.type]:
        raise fail(where, f"is a {field.type_name}, argument {arg!r} is a {spec.type}")


def _check_indices(paths: Sequence[tuple[str | int, ...]], fail: Callable[..., BindingError]) -> None:
    # trajectory.points[1] without points[0] would send a default point first.
    seen: dict[tuple[str | int, ...], set[int]] = {}
    for parts in paths:
        for cut, part in enumerate(parts):
            if isinstance(part, int):
                seen.setdefault(parts[:cut], set()).add(part)
    for prefix, indices in seen.items():
        if sorted(indices) != list(range(len(indices))):
            raise fail(
                f"goal field {_join(prefix)!r}", f"indices {sorted(indices)} must run from 0 without gaps"
            )


def _check_required(
    binding: Any, info: TypeInfo, sources: Sequence[_Source], fail: Callable[..., BindingError]
) -> None:
    required = list(_REQUIRED_BY_TYPE.get(info.type_name, ())) + list(binding.required_fields)
    # A stamped geometry message is read in header.frame_id: an empty frame fails at the TF lookup.
    required += _stamped_frames(info, sources)
    for path in required:
        try:
            parts = tuple(parse_path(path))
        except ValueError as err:
            raise fail(f"required field {path!r}", str(err)) from None
        if info.field(path) is None:
            raise fail(f"required field {path!r}", f"no such field in {info.type_name}")
        covering = [s for s in sources if _is_prefix(s.parts, parts) or _is_prefix(parts, s.parts)]
        if not covering:
            raise fail(f"goal field {path!r}", "is required: map it to an argument or give a constant")
        for source in covering:
            if source.parts == parts and source.kind == "value" and source.value in ("", None):
                raise fail(f"goal field {path!r}", "is required and its constant is empty")


def _stamped_frames(info: TypeInfo, sources: Sequence[_Source]) -> list[str]:
    frames = []
    parents = {_join(s.parts[:cut]) for s in sources for cut in range(len(s.parts))}
    for parent in sorted(parents):
        field = info.field(parent) if parent else None
        if field is None or field.kind != "message" or not field.type_name.endswith("Stamped"):
            continue
        children = dict(info.children(parent))
        header = children.get("header")
        if header is not None and header.type_name == HEADER:
            mapped_other = any(
                _is_prefix(tuple(parse_path(parent)), s.parts)
                and s.parts[len(parse_path(parent))] != "header"
                for s in sources
                if len(s.parts) > len(parse_path(parent))
            )
            if mapped_other:
                frames.append(f"{parent}.header.frame_id")
    return frames


def _check_joint_counts(
    binding: Any, paths: Sequence[tuple[str, tuple[str | int, ...]]], fail: Callable[..., BindingError]
) -> None:
    # Joint positions must match the joint names one for one (a controller rejects the goal).
    names: dict[tuple[str | int, ...], list[Any]] = {}
    for path, parts in paths:
        constant = _constant(binding.goal[path])
        if parts[-1] == "joint_names" and isinstance(constant, list):
            names[parts[:-1]] = constant
    for path, parts in paths:
        if parts[-1] not in ("positions", "velocities") or len(parts) < 4:
            continue
        joint_names = names.get(parts[:-3])  # trajectory . points [i] . positions
        if joint_names is None:
            continue
        for label, value in _possible_values(binding, binding.goal[path]):
            if not isinstance(value, list) or len(value) != len(joint_names):
                size = len(value) if isinstance(value, list) else "not a list"
                raise fail(
                    f"goal field {path!r}",
                    f"{label} has {size} positions for {len(joint_names)} joint_names {joint_names}",
                )


_NO_CONSTANT = object()


def _constant(raw: Any) -> Any:
    """The constant a goal source gives (``V`` or ``{value: V}``, unconverted), else _NO_CONSTANT."""
    if not isinstance(raw, dict):
        return raw
    if set(raw) == {"value"}:
        return raw["value"]
    return _NO_CONSTANT


def _possible_values(binding: Any, raw: Any) -> list[tuple[str, Any]]:
    constant = _constant(raw)
    if constant is not _NO_CONSTANT:
        return [("the constant", constant)]
    if not isinstance(raw, dict):
        return []
    spec = (binding.arguments or {}).get(raw.get("arg"))
    if spec is None or spec.lookup is None or spec.lookup not in binding.lookups:
        return []
    key = raw.get("field")
    out = []
    for entry, value in binding.lookups[spec.lookup].items():
        if key is None:
            out.append((f"{spec.lookup} entry {entry!r}", value))
        elif isinstance(value, dict) and key in value:  # else named by _source, with the type
            out.append((f"{spec.lookup} entry {entry!r}", value[key]))
    return out


def _schema(binding: Any, arguments: Mapping[str, Any]) -> dict[str, Any]:
    properties: dict[str, Any] = {}
    required = []
    for arg, spec in arguments.items():
        prop: dict[str, Any] = {"type": spec.type}
        text = spec.description.strip()
        if spec.unit:
            text = f"{text} ({spec.unit})" if text else spec.unit
        if text:
            prop["description"] = text
        if spec.lookup is not None:
            prop["enum"] = [str(key) for key in binding.lookups[spec.lookup]]
        elif spec.enum is not None:
            prop["enum"] = list(spec.enum)
        if spec.minimum is not None:
            prop["minimum"] = spec.minimum
        if spec.maximum is not None:
            prop["maximum"] = spec.maximum
        if spec.default is not None:
            prop["default"] = spec.default
        properties[arg] = prop
        if spec.required:
            required.append(arg)
    schema: dict[str, Any] = {"type": "object", "properties": properties, "additionalProperties": False}
    if required:
        schema["required"] = required
    return schema


def definition_tokens(definition: Mapping[str, Any]) -> int:
    """Token estimate of one model-facing tool definition (characters / 4, as the context)."""
    return -(-len(json.dumps(definition, ensure_ascii=False)) // _CHARS_PER_TOKEN)


def model_definition(spec: Any) -> dict[str, Any]:
    """The function definition the model reads for ``spec`` (as ToolRegistry gives it)."""
    from harness_ros.tools.registry import describe_spec

    return {
        "type": "function",
        "function": {"name": spec.name, "description": describe_spec(spec), "parameters": spec.input_schema},
    }


def check_definition_budget(spec: Any, limit: int) -> int:
    """The definition's token estimate; a BindingError pointing at the binding when over ``limit``."""
    tokens = definition_tokens(model_definition(spec))
    if tokens > limit:
        raise BindingError(
            f"tool {spec.name!r}: its model-facing definition is about {tokens} tokens, over "
            f"max_definition_tokens {limit}: map fewer arguments (tools[].arguments and goal), "
            "shorten the description, or raise max_definition_tokens in this binding"
        )
    return tokens


def binding_spec(binding: Any, schema: dict[str, Any]) -> ToolSpec:
    """The ToolSpec of a ToolBinding with its model-facing ``schema``."""
    return ToolSpec(
        name=binding.name,
        description=binding.description,
        input_schema=schema,
        physical=binding.physical,
        evaluated=binding.evaluated,
        post_condition=binding.post_condition,
        segment=binding.segment,
        base_motion=binding.base_motion,
        distance_argument=binding.distance_argument,
        direction_argument=binding.direction_argument,
        signed_distance=binding.signed_distance,
        requires_approval=binding.requires_approval,
        timeout_s=binding.timeout_s,
    )
