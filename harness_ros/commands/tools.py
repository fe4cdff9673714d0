"""``harness-ros tools``: print exactly what the model sees for each tool of a config.

For every tool the model is offered each turn, in the order it sees them: the
config's tool bindings, plugin tools, then the built-in ones (``load_skill`` and
``load_skill_resource`` when skills exist, ``ask_operator`` and ``notify_operator``
when ``operator.enabled``, and ``finish_task`` always): its name, the description
(with the experience summary memory holds for it), the parameters and a token
estimate of the whole definition; the total counts them all. It reads the interface
types but needs no ROS graph: no server has to run. A binding that does not fit its
type or is over its max_definition_tokens ends the command with one ``error:`` line
naming it (exit 1), as start-up would.

It ends with what the first decision of a task sends, part by part (system prompt,
memory, profile, skill catalog, each tool, the instruction, an observation sample), and
the line ``first decision: N tokens (how counted)``: counted by the installed local
model's tokenizer and chat template (llama.cpp; loading it takes a few seconds), or
estimated (characters / 4) without one or with --estimate.
"""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

from harness_ros.commands._shared import add_example_config_option

if TYPE_CHECKING:
    from harness_ros.commands._prompt_size import PromptCount
    from harness_ros.config import HarnessConfig

__all__ = ["model_tool_definitions", "model_tools", "register", "run_tools"]


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "tools",
        help="print the tool definitions the model sees, with token estimates (no ROS graph needed)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_example_config_option(parser)
    parser.add_argument("--json", action="store_true", help="one JSON document instead of text")
    parser.add_argument(
        "--estimate",
        action="store_true",
        help="count the first decision with the estimate (characters / 4), not the local model's tokenizer",
    )
    parser.set_defaults(handler=run_tools)


class _DefinitionOnly:
    """A tool that only carries its spec: enough for the registry's definitions."""

    def __init__(self, spec: Any) -> None:
        self.spec = spec

    def execute(self, arguments: dict[str, Any], *, cancel: Any, feedback: Any = None) -> dict[str, Any]:
        from harness_ros.tools.contracts import failure

        return failure("definition only: no ROS graph")


class _NoOperator:
    """Stands in for the node's operator channel: the operator tools' definitions only."""

    def ask(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("definition only: no operator channel")

    def notify(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("definition only: no operator channel")


class _WorldOnDisk:
    """recall_object's memory, for its definition: whether WORLD.md holds an entry now
    (read only, as the harness decides to offer the tool); it answers nothing."""

    def __init__(self, config: HarnessConfig) -> None:
        self._config = config

    def has_world(self) -> bool:
        if not self._config.memory.dir.is_dir():
            return False
        from harness_ros.memory import FileMemory

        return FileMemory.from_config(self._config.memory).has_world()

    def recall_object(self, query: str) -> dict[str, Any]:
        raise RuntimeError("definition only: no world memory")


def model_tool_definitions(config: HarnessConfig) -> list[dict[str, Any]]:
    """Per tool, in the order the model sees them: name, origin (``binding``, ``plugin``
    or ``built-in``), tokens, budget (None but for bindings) and the definition. The
    same tools as the harness offers (``Harness``: robot tools, skill tools, operator
    tools, recall_object while WORLD.md holds an entry, finish_task). Raises ToolError
    as start-up would."""
    return model_tools(config)[1]


def model_tools(config: HarnessConfig) -> tuple[list[str], list[dict[str, Any]]]:
    """The names of every tool the harness registers, offered now or not (what
    ``evaluator.evidence`` may name, as the harness checks it), and the rows of
    ``model_tool_definitions``."""
    from harness_ros.operator.tools import operator_tools
    from harness_ros.plugins import load_plugins
    from harness_ros.ros.interfaces import fit_to_installed, tool_spec
    from harness_ros.skills import skill_tools
    from harness_ros.tools import ToolRegistry
    from harness_ros.tools.binding import definition_tokens
    from harness_ros.tools.finish_task import FinishTaskTool

    tools: list[Any] = []
    origins: dict[str, str] = {}
    budgets: dict[str, int] = {}
    for binding in config.tools:
        binding = fit_to_installed(binding)  # noqa: PLW2901 - as the node binds it
        spec, _compiled = tool_spec(binding)
        tools.append(_DefinitionOnly(spec))
        origins[binding.name] = "binding"
        budgets[binding.name] = binding.max_definition_tokens
    for tool in load_plugins(config.plugins).tools:
        tools.append(tool)
        origins[tool.spec.name] = "plugin"
    if config.skills.dir is not None:
        from harness_ros.skills import SkillCatalog, SkillSession

        catalog = SkillCatalog.discover(config.skills.dir)
        if catalog.has_skills:
            tools.extend(skill_tools(SkillSession(catalog), catalog))
    if config.operator.enabled:
        channel: Any = _NoOperator()
        tools.extend(operator_tools(channel, lambda: None, config.operator.answer_timeout_s))
    if config.memory.world:  # registered as the Harness does; offered while WORLD.md has an entry
        from harness_ros.harness.recall_object import RecallObjectTool

        tools.append(RecallObjectTool(_WorldOnDisk(config)))
    tools.append(FinishTaskTool())
    registry = ToolRegistry(tools)
    definitions = registry.definitions(_summaries(config, registry.names()))
    rows = []
    for definition in definitions:
        name = definition["function"]["name"]
        rows.append(
            {
                "name": name,
                "origin": origins.get(name, "built-in"),
                "tokens": definition_tokens(definition),
                "budget": budgets.get(name),
                "definition": definition,
            }
        )
    return registry.names(), rows


def _summaries(config: HarnessConfig, names: list[str]) -> dict[str, str]:
    """The experience summaries memory has cached; no model call, nothing written."""
    if not config.memory.dir.is_dir():
        return {}
    from harness_ros.memory import FileMemory

    memory = FileMemory.from_config(config.memory)
    out = {}
    for name in names:
        summary = memory.cached_summary(name)
        if summary:
            out[name] = summary
    return out


def run_tools(args: argparse.Namespace) -> int:
    from harness_ros.config import load_config
    from harness_ros.paths import default_config_path
    from harness_ros.skills.contracts import LOAD_SKILL_RESOURCE

    config = load_config(args.config if args.config is not None else default_config_path())
    rows = model_tool_definitions(config)
    first = _first_decision(config, rows, estimate=args.estimate)
    if args.json:
        document = {"tools": rows, "total_tokens": sum(r["tokens"] for r in rows)}
        document["first_decision"] = {"tokens": first.total, "how": first.how, "parts": dict(first.parts)}
        print(json.dumps(document, indent=2))
        return 0
    for row in rows:
        function = row["definition"]["function"]
        budget = f" of {row['budget']}" if row["budget"] is not None else ""
        origin = ", built in: offered every turn" if row["origin"] == "built-in" else ""
        if row["name"] == LOAD_SKILL_RESOURCE:
            origin = ", built in: offered once a loaded skill lists resources"
        origin += ", from a plugin" if row["origin"] == "plugin" else ""
        print(f"{row['name']}  (~{row['tokens']}{budget} tokens{origin})")
        for line in function["description"].splitlines():
            print(f"    {line}")
        print(f"    parameters: {json.dumps(function['parameters'], ensure_ascii=False)}")
        print()
    built_in = sum(row["origin"] == "built-in" for row in rows)
    total = sum(r["tokens"] for r in rows)
    print(
        f"{len(rows)} tools ({len(rows) - built_in} configured, {built_in} built in), ~{total} tokens in all"
    )
    print()
    print("first decision, part by part (tokens; the chat template's own text is the rest):")
    for name, tokens in first.parts:
        print(f"  {tokens:6d}  {name}")
    print(first.line())
    return 0


def _first_decision(config: HarnessConfig, rows: list[dict[str, Any]], *, estimate: bool) -> PromptCount:
    from harness_ros.commands._prompt_size import count_first_decision, first_decision

    request = first_decision(config, [row["definition"] for row in rows])
    return count_first_decision(request, use_tokenizer=not estimate)
