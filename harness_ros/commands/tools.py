"""``harness-ros tools``: print exactly what the model sees for each tool of a config.

For every tool: its name, the description (with the experience summary memory
holds for it), the parameters and a token estimate of the whole definition. It
reads the interface types but needs no ROS graph: no server has to run. A binding
that does not fit its type or is over its max_definition_tokens ends the command
with one ``error:`` line naming it (exit 1), as start-up would.
"""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

from harness_ros.commands._shared import add_example_config_option

if TYPE_CHECKING:
    from harness_ros.config import HarnessConfig

__all__ = ["model_tool_definitions", "register", "run_tools"]


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "tools",
        help="print the tool definitions the model sees, with token estimates (no ROS graph needed)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_example_config_option(parser)
    parser.add_argument("--json", action="store_true", help="one JSON document instead of text")
    parser.set_defaults(handler=run_tools)


class _DefinitionOnly:
    """A tool that only carries its spec: enough for the registry's definitions."""

    def __init__(self, spec: Any) -> None:
        self.spec = spec

    def execute(self, arguments: dict[str, Any], *, cancel: Any, feedback: Any = None) -> dict[str, Any]:
        from harness_ros.tools.contracts import failure

        return failure("definition only: no ROS graph")


def model_tool_definitions(config: HarnessConfig) -> list[dict[str, Any]]:
    """Per tool, in the order the model sees them: name, tokens, budget (None for the
    built-in skill tools) and the definition. Raises ToolError as start-up would."""
    from harness_ros.errors import ToolError
    from harness_ros.ros.interfaces import binding_schema, fit_to_installed
    from harness_ros.tools import ToolRegistry, skill_tools
    from harness_ros.tools.binding import binding_spec, check_definition_budget, definition_tokens

    tools: list[Any] = []
    budgets: dict[str, int] = {}
    for binding in config.tools:
        try:
            binding = fit_to_installed(binding)  # noqa: PLW2901 - as the node binds it
            schema, _compiled = binding_schema(binding)
            spec = binding_spec(binding, schema)
            check_definition_budget(spec, binding.max_definition_tokens)
        except ToolError as err:
            text = str(err)
            prefix = f"tool {binding.name!r}"
            raise ToolError(text if text.startswith(prefix) else f"{prefix}: {text}") from None
        tools.append(_DefinitionOnly(spec))
        budgets[binding.name] = binding.max_definition_tokens
    if config.skills.dir is not None:
        from harness_ros.skills import SkillCatalog, SkillSession

        catalog = SkillCatalog.discover(config.skills.dir)
        if catalog.has_skills:
            tools.extend(skill_tools(SkillSession(catalog), catalog))
    registry = ToolRegistry(tools)
    definitions = registry.definitions(_summaries(config, registry.names()))
    return [
        {
            "name": definition["function"]["name"],
            "tokens": definition_tokens(definition),
            "budget": budgets.get(definition["function"]["name"]),
            "definition": definition,
        }
        for definition in definitions
    ]


def _summaries(config: HarnessConfig, names: list[str]) -> dict[str, str]:
    """The experience summaries memory has cached; no model call, nothing written."""
    if not config.memory.dir.is_dir():
        return {}
    from harness_ros.memory import FileMemory

    memory = FileMemory(config.memory.dir)
    out = {}
    for name in names:
        summary = memory.cached_summary(name)
        if summary:
            out[name] = summary
    return out


def run_tools(args: argparse.Namespace) -> int:
    from harness_ros.config import load_config
    from harness_ros.paths import default_config_path

    config = load_config(args.config if args.config is not None else default_config_path())
    rows = model_tool_definitions(config)
    if args.json:
        print(json.dumps({"tools": rows, "total_tokens": sum(r["tokens"] for r in rows)}, indent=2))
        return 0
    for row in rows:
        function = row["definition"]["function"]
        budget = f" of {row['budget']}" if row["budget"] is not None else ""
        print(f"{row['name']}  (~{row['tokens']}{budget} tokens)")
        for line in function["description"].splitlines():
            print(f"    {line}")
        print(f"    parameters: {json.dumps(function['parameters'], ensure_ascii=False)}")
        print()
    print(f"{len(rows)} tools, ~{sum(r['tokens'] for r in rows)} tokens in all")
    return 0
