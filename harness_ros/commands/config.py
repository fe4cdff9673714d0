"""``harness-ros config``: the configuration reference and ROS parameter files, from the model.

    harness-ros config reference                    Markdown: every key, type, default, meaning
    harness-ros config params --config FILE         a ROS params file with the keys FILE sets

Both are generated from ``harness_ros.config.HarnessConfig``, so docs/configuration.md
and config/harness_params.yaml cannot drift from the model (test/test_docs.py checks).
"""

from __future__ import annotations

import argparse
import enum
import types
import typing
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import annotated_types
import yaml
from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from harness_ros.config import YAML_STRING_KEYS, HarnessConfig, flatten_config, load_config
from harness_ros.yaml_safe import safe_load

__all__ = [
    "DEFAULT_NODE_NAME",
    "ConfigKey",
    "config_keys",
    "params_document",
    "params_yaml",
    "reference_markdown",
    "register",
]

DEFAULT_NODE_NAME = "/**/harness"
"""Matches a node named ``harness`` in any namespace (``namespace:=robot1`` keeps working)."""

_YAML_STRING_KEYS = YAML_STRING_KEYS
"""Keys the ROS node takes as one YAML string (a list or a free-form mapping)."""

# Meanings of fields whose pydantic Field has no description yet. The model's own
# description wins when it has one; the reference test fails on a key with neither.
_FALLBACK_DOCS: dict[str, str] = {
    "SkillsConfig": "Agent Skills catalog (name and description resident, body loaded on demand).",
    "DepthConfig": "A depth image, summarised in metres per region before each decision.",
    "ObservationConfig": "Topics that become the Observation refreshed before every model decision.",
    "EvaluatorConfig": "Who judges post-conditions of evaluated tools.",
    "SafetyConfig": "Base-motion safety filter and operator approval limits.",
    "RecordConfig": "rosbag2 recording of sensors, instructions and events (for replay).",
}


@dataclass(frozen=True)
class ConfigKey:
    """One documented key: ``section`` is the dotted prefix of the model that holds it."""

    section: str
    key: str
    type: str
    default: str
    description: str


@dataclass(frozen=True)
class _Section:
    prefix: str
    model: type[BaseModel]


# ---------------------------------------------------------------------- reference
def _without_none(annotation: Any) -> tuple[Any, bool]:
    args = typing.get_args(annotation)
    if typing.get_origin(annotation) in (typing.Union, types.UnionType) and type(None) in args:
        rest = [a for a in args if a is not type(None)]
        return (rest[0] if len(rest) == 1 else typing.Union[tuple(rest)]), True  # noqa: UP007
    return annotation, False


def _model_of(annotation: Any) -> type[BaseModel] | None:
    return annotation if isinstance(annotation, type) and issubclass(annotation, BaseModel) else None


def _type_text(annotation: Any) -> str:
    inner, optional = _without_none(annotation)
    origin, args = typing.get_origin(inner), typing.get_args(inner)
    if origin is typing.Literal:
        text = " \\| ".join(f"`{value}`" for value in args)
    elif origin is list:
        text = "list, items below" if _model_of(args[0]) is not None else f"list of {_type_text(args[0])}"
    elif origin is dict:
        key, value = args
        keys = "/".join(typing.get_args(key)) if typing.get_origin(key) is typing.Literal else "name"
        item = "item below" if _model_of(value) is not None else _type_text(value)
        text = "mapping" if value is Any else f"mapping {keys} → {item}"
    elif inner is Path:
        text = "path"
    elif _model_of(inner) is not None:
        text = "section"
    elif inner is Any:
        text = "any"
    else:
        text = getattr(inner, "__name__", str(inner))
    return f"{text} or null" if optional else text


def _constraints(field: FieldInfo) -> str:
    parts: list[str] = []
    for item in field.metadata:
        for attr, symbol in (("gt", ">"), ("ge", "≥"), ("lt", "<"), ("le", "≤")):
            value = getattr(item, attr, None)
            if isinstance(item, annotated_types.BaseMetadata) and value is not None:
                parts.append(f"{symbol} {value}")
        if isinstance(item, annotated_types.MinLen):
            parts.append(f"length ≥ {item.min_length}")
        pattern = getattr(item, "pattern", None)
        if pattern:
            parts.append(f"matches `{pattern}`")
    return ", ".join(parts)


def _default_text(field: FieldInfo) -> str:
    if field.default_factory is not None:
        value = field.default_factory()  # type: ignore[call-arg]
        return (
            "—"
            if isinstance(value, BaseModel)
            else f"`{yaml.safe_dump(value, default_flow_style=True).strip()}`"
        )
    if field.default is PydanticUndefined:
        return "**required**"
    value = field.default
    if value is None:
        return "`null`"
    if isinstance(value, enum.Enum):
        value = value.value
    if isinstance(value, Path):
        value = str(value)
    if isinstance(value, str):
        return f"`{value}`"
    return f"`{yaml.safe_dump(value, default_flow_style=True).strip().removesuffix('...').strip()}`"


def _description(model: type[BaseModel], name: str, field: FieldInfo) -> str:
    text = field.description or ""
    return " ".join(text.split()).replace("|", "\\|")


def _sections(prefix: str, model: type[BaseModel]) -> Iterator[_Section]:
    """``model`` and every model below it, depth first, each with its dotted prefix."""
    yield _Section(prefix, model)
    for name, field in model.model_fields.items():
        if field.exclude:
            continue
        inner, _ = _without_none(field.annotation)
        key = f"{prefix}.{name}" if prefix else name
        origin, args = typing.get_origin(inner), typing.get_args(inner)
        if _model_of(inner) is not None:
            yield from _sections(key, inner)
        elif origin is dict and _model_of(args[1]) is not None:
            yield from _sections(f"{key}.<name>", args[1])
        elif origin is list and _model_of(args[0]) is not None:
            yield from _sections(f"{key}[]", args[0])


def config_keys() -> list[ConfigKey]:
    """Every key of ``HarnessConfig`` (nested sections expanded), in model order."""
    keys: list[ConfigKey] = []
    for section in _sections("", HarnessConfig):
        for name, field in section.model.model_fields.items():
            if field.exclude:
                continue
            inner, optional = _without_none(field.annotation)
            if _model_of(inner) is not None and not optional:
                continue  # a required sub-section: documented by its own table
            type_text = _type_text(field.annotation)
            constraints = _constraints(field)
            keys.append(
                ConfigKey(
                    section=section.prefix,
                    key=f"{section.prefix}.{name}" if section.prefix else name,
                    type=f"{type_text} ({constraints})" if constraints else type_text,
                    default=_default_text(field),
                    description=_description(section.model, name, field),
                )
            )
    return keys


_REFERENCE_INTRO = """\
<!-- Generated by `harness-ros config reference` from harness_ros/config.py. Do not edit:
     regenerate with `harness-ros config reference > docs/configuration.md`. -->
# Configuration reference

Every key of the harness configuration, with its type, default and meaning. The same
keys are read from a YAML file (`--config`, `config_file:=`) and, as dotted names, from
ROS parameters: `memory.min_confidence`, `observations.depth.topic`. Three keys are single
parameters holding YAML text: `tools` and `observations.clearance.sources` (lists) and
`observations.views` (the mapping).
`harness-ros config params --config FILE` writes a params file for a config.

Unknown keys are errors that name the key. Relative paths resolve against the config
file's folder (for ROS parameters without a config file: the working folder); `~` and
`$VARS` are expanded. `<name>` stands for a key you choose (a view name); `[]` for each
item of a list. `HARNESS_MODEL` overrides `model.model`.

Rules checked when the config loads, besides the types: `observations.clearance` sets
at most one of `scan_topic` and `range_topics` (all four directions), and at least one
of them or `sources` (each with exactly one of `scan_topic` and `range_topic`, a Range
source with `mount.yaw_rad`; no topic used twice); a tool sets exactly
one of `action` and `service`, its `type` is `pkg/action/Name` or `pkg/srv/Name` to
match, an `evaluated` tool has a `post_condition`, and tool names are unique.
"""


def reference_markdown() -> str:
    """The Markdown configuration reference (docs/configuration.md)."""
    lines = [_REFERENCE_INTRO]
    sections = {s.prefix: s.model for s in _sections("", HarnessConfig)}
    by_section: dict[str, list[ConfigKey]] = {}
    for key in config_keys():
        by_section.setdefault(key.section, []).append(key)
    for prefix, keys in by_section.items():
        model = sections[prefix]
        title = f"`{prefix}`" if prefix else "Top level"
        lines.append(f"## {title}\n")
        doc = model.__doc__ if model.__doc__ and not model.__doc__.startswith(model.__name__ + "(") else None
        doc = doc or _FALLBACK_DOCS.get(model.__name__)
        if doc:
            lines.append(" ".join(doc.split()) + "\n")
        lines.append("| Key | Type | Default | Description |")
        lines.append("|---|---|---|---|")
        lines += [f"| `{k.key}` | {k.type} | {k.default} | {k.description} |" for k in keys]
        lines.append("")
    return "\n".join(lines)


# ---------------------------------------------------------------------- params
def _path_keys(model: type[BaseModel] = HarnessConfig, prefix: str = "") -> set[str]:
    """Dotted keys of path-typed fields (emitted as written in the file, not resolved)."""
    keys: set[str] = set()
    for name, field in model.model_fields.items():
        inner, _ = _without_none(field.annotation)
        key = f"{prefix}{name}"
        if inner is Path and not field.exclude:
            keys.add(key)
        elif _model_of(inner) is not None:
            keys |= _path_keys(inner, f"{key}.")
    return keys


def _set_keys(model: BaseModel, prefix: str = "") -> list[str]:
    """Dotted keys the config file set explicitly (leaves; sub-sections recursed)."""
    keys: list[str] = []
    for name in type(model).model_fields:
        if name not in model.model_fields_set:
            continue
        key = f"{prefix}{name}"
        value = getattr(model, name)
        if isinstance(value, BaseModel) and key not in _YAML_STRING_KEYS:
            keys += _set_keys(value, f"{key}.")
        else:
            keys.append(key)
    return keys


def _raw_value(raw: Any, dotted: str) -> Any:
    node = raw
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def params_document(config: HarnessConfig, *, node_name: str = DEFAULT_NODE_NAME) -> dict[str, Any]:
    """``{node_name: {"ros__parameters": {dotted key: value}}}`` for the keys ``config`` sets.

    Null becomes "" (ROS parameters have no null; the node reads "" as unset). Paths are
    kept as written in the config file, so they resolve the same way against its folder.
    """
    flat = flatten_config(config)
    raw: Any = {}
    if config.source is not None:
        raw = safe_load(config.source.read_text(encoding="utf-8")) or {}
    paths = _path_keys()
    params: dict[str, Any] = {}
    for leaf in _set_keys(config):
        for key, value in flat.items():
            if key != leaf and not key.startswith(f"{leaf}."):
                continue
            written = _raw_value(raw, key)
            shown = value
            if key in paths and isinstance(written, str):
                shown = written
            elif key in _YAML_STRING_KEYS and written is not None:
                # The file's own text of the list/mapping: shorter than the model dump with
                # every default, and it validates to the same config.
                shown = yaml.safe_dump(written, sort_keys=False, allow_unicode=True, width=100)
            params[key] = "" if shown is None else shown
    return {node_name: {"ros__parameters": params}}


def params_yaml(config_path: Path, *, node_name: str = DEFAULT_NODE_NAME, shown_as: str | None = None) -> str:
    """The params file text for ``config_path`` (what ``config params`` prints)."""
    config = load_config(config_path)
    document = params_document(config, node_name=node_name)
    header = (
        f"# ROS parameters of the harness node, generated by\n"
        f"#   harness-ros config params --config {shown_as or config_path}\n"
        f"# Dotted names are keys of the harness config; `tools` and `observations.views` hold YAML\n"
        f"# text. Relative paths resolve against the node's config_file folder (or the working folder\n"
        f"# when no config_file is set). Reference: docs/configuration.md\n"
    )
    return header + yaml.dump(document, Dumper=_ParamsDumper, sort_keys=False, allow_unicode=True, width=100)


class _ParamsDumper(yaml.SafeDumper):
    """Multi-line strings (the YAML-text parameters) as literal blocks, readable in the file."""


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_ParamsDumper.add_representer(str, _represent_str)


# ---------------------------------------------------------------------- CLI
def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "config",
        help="print the configuration reference, or a ROS params file for a config",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    actions = parser.add_subparsers(dest="config_command", metavar="ACTION", required=True)
    reference = actions.add_parser("reference", help="Markdown reference of every config key")
    reference.set_defaults(handler=_run_reference)
    params = actions.add_parser("params", help="ROS params YAML (harness: ros__parameters) for a config")
    params.add_argument("--config", type=Path, required=True, metavar="FILE", help="config YAML")
    params.add_argument(
        "--node-name",
        default=DEFAULT_NODE_NAME,
        help=f"node key of the params file (default {DEFAULT_NODE_NAME!r}: 'harness' in any namespace)",
    )
    params.set_defaults(handler=_run_params)


def _run_reference(args: argparse.Namespace) -> int:
    print(reference_markdown(), end="")
    return 0


def _run_params(args: argparse.Namespace) -> int:
    print(params_yaml(args.config, node_name=args.node_name, shown_as=str(args.config)), end="")
    return 0
