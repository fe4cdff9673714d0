"""``harness-ros memory``: inspect durable memory, review held entries, consolidate offline.

harness-ros memory show                       what the model will see
harness-ros memory pending                    entries held for your review
harness-ros memory pending --accept ID        write a held entry into memory
harness-ros memory pending --reject ID        drop it
harness-ros memory consolidate --trajectory runs/<task>/trajectory.json [--dry-run]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness_ros.errors import MemoryStoreError
from harness_ros.terminal import terminal_safe
from harness_ros.validators import valid_tool_name

if TYPE_CHECKING:
    from harness_ros.config import HarnessConfig
    from harness_ros.trajectory import Trajectory

__all__ = ["register"]


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("memory", help="show durable memory, consolidate a saved trajectory")
    commands = parser.add_subparsers(dest="memory_command", metavar="ACTION", required=True)

    show = commands.add_parser("show", help="print the resident memory and the tool-experience summaries")
    _common(show)
    show.add_argument(
        "--no-model",
        action="store_true",
        help="never call a model: print ledger sizes for uncached summaries",
    )
    show.set_defaults(handler=_show)

    pending = commands.add_parser(
        "pending", help="list the entries held for review; accept or reject one (by its id)"
    )
    _common(pending)
    decision = pending.add_mutually_exclusive_group()
    decision.add_argument("--accept", metavar="ID", default=None, help="write the held entry into memory")
    decision.add_argument("--reject", metavar="ID", default=None, help="drop the held entry")
    pending.set_defaults(handler=_pending)

    consolidate = commands.add_parser("consolidate", help="consolidate a completed trajectory JSON file")
    _common(consolidate)
    consolidate.add_argument("--trajectory", required=True, type=Path, help="trajectory.json of a run")
    consolidate.add_argument("--dry-run", action="store_true", help="decide and print, write nothing")
    consolidate.add_argument(
        "--allowed-tools",
        default=None,
        help="comma-separated tool names (default: the configured tools and those in the trajectory)",
    )
    consolidate.set_defaults(handler=_consolidate)


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", type=Path, default=None, help="harness YAML config")
    parser.add_argument("--memory", type=Path, default=None, help="memory folder (default: the config's)")


def _out(text: str) -> None:
    # Memory holds model-written lessons: a block of lines, with no control that acts.
    sys.stdout.write(terminal_safe(text, multiline=True) + "\n")


def _config(args: argparse.Namespace) -> HarnessConfig:
    from harness_ros.config import HarnessConfig, load_config

    return load_config(args.config) if args.config is not None else HarnessConfig()


def _memory_dir(args: argparse.Namespace, config: HarnessConfig) -> Path:
    return Path(args.memory) if args.memory is not None else config.memory.dir


def _show(args: argparse.Namespace) -> int:
    from harness_ros.memory import FileMemory, ModelToolExperienceSummarizer

    config = _config(args)
    root = _memory_dir(args, config)
    if not root.is_dir():
        raise MemoryStoreError(f"Memory folder {str(root)!r} does not exist (no task has written memory yet)")
    memory = FileMemory.from_config(config.memory, root=root)
    _out(memory.resident_memory().rstrip("\n"))
    _show_world(memory)
    tools = memory.ledger_tools()
    _out("")
    _out("# Tool Experience")
    if not tools:
        _out("(no ledgers)")
        return 0
    uncached = [tool for tool in tools if memory.cached_summary(tool) is None]
    summaries = {tool: memory.cached_summary(tool) for tool in tools}
    if uncached and not args.no_model:
        from harness_ros.model import build_model

        summarizer = ModelToolExperienceSummarizer(build_model(config))
        with_model = FileMemory.from_config(config.memory, root=root, tool_experience_summarizer=summarizer)
        summaries.update(with_model.tool_experience_summaries(uncached))
        for tool, error in with_model.summary_errors.items():
            _out(f"warning: {tool}: no summary: {error}")
    for tool in tools:
        summary = summaries.get(tool)
        if summary:
            _out(f"- {tool}: {summary}")
            continue
        ledger = memory.ledger_entries(tool)
        counts = f"{len(ledger['success'])} success, {len(ledger['failure'])} failure entries"
        _out(f"- {tool}: {counts} (no summary)")
    return 0


def _show_world(memory: Any) -> None:
    """WORLD.md as the model would read it: each entry with its state and age; a
    malformed line as a warning naming the file, the line and the field."""
    import time

    from harness_ros.memory.world import describe

    doc = memory.world_document()
    memory.take_notices()  # printed here as warnings
    entries = [*doc.objects(), *doc.places()]
    if not entries and not doc.problems:
        return
    _out("")
    _out(f"# World ({memory.world_path})")
    for problem in doc.problems:
        _out(f"warning: {problem.describe()}")
    now = time.time()
    for entry in entries:
        _out(f"- {describe(entry, now)}")


def _shown(text: str) -> str:
    """One line with every invisible or control character spelled out (``\\u200b``): the
    operator reviewing a held entry sees exactly what the model would read."""
    return "".join(ch if ch.isprintable() else f"\\u{ord(ch):04x}" for ch in text)


def _where(record: dict[str, Any]) -> str:
    if record.get("kind") == "memory":
        return f"memory/{record.get('section')}"
    return f"{record.get('tool')}/{record.get('outcome')}"


def _pending(args: argparse.Namespace) -> int:
    from harness_ros.memory import FileMemory

    config = _config(args)
    root = _memory_dir(args, config)
    if not root.is_dir():
        raise MemoryStoreError(f"Memory folder {str(root)!r} does not exist (no task has written memory yet)")
    memory = FileMemory.from_config(config.memory, root=root)
    if args.accept is not None or args.reject is not None:
        accept = args.accept is not None
        record = memory.review_held(args.accept if accept else args.reject, accept=accept)
        verb = "ACCEPTED" if accept else "REJECTED"
        _out(_shown(f"{verb} {record['id']} {_where(record)}: {record.get('text', '')}"))
        return 0
    held = memory.held_entries()
    if not held:
        _out(f"no entries held for review in {root}")
    for record in held:
        reason = str(record.get("rule") or "held").removeprefix("held:")
        task = record.get("task_id") or "?"
        _out(_shown(f"{record['id']} {_where(record)} (task {task}, {reason}): {record.get('text', '')}"))
    if held:
        _out("accept one with --accept ID, drop it with --reject ID")
    retries = len(memory.pending_files())
    if retries:
        _out(
            f"({retries} failed consolidation(s) in {memory.pending_dir} wait for a retry "
            "after the next completed task)"
        )
    return 0


def _load_trajectory(path: Path) -> Trajectory:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except OSError as err:
        raise MemoryStoreError(f"Cannot read trajectory {str(path)!r}: {err.strerror}") from None
    except json.JSONDecodeError as err:
        raise MemoryStoreError(
            f"Trajectory {str(path)!r} is not JSON: {err.msg} (line {err.lineno})"
        ) from None
    if not isinstance(raw, dict):
        raise MemoryStoreError(f"Trajectory {str(path)!r} must be a JSON object")
    from harness_ros.trajectory import Trajectory

    # typed once, here at the file: a malformed one names the file and field before any model call
    return Trajectory.from_json(raw, source=str(path))


def _consolidate(args: argparse.Namespace) -> int:
    from harness_ros.memory import FileMemory, ModelMemoryConsolidator
    from harness_ros.model import build_model

    config = _config(args)
    trajectory = _load_trajectory(args.trajectory)
    if args.allowed_tools is not None:
        allowed = [name.strip() for name in args.allowed_tools.split(",") if name.strip()]
    else:
        used = {step.tool for step in trajectory.steps}
        allowed = sorted(
            name for name in {tool.name for tool in config.tools} | used if valid_tool_name(name)
        )
    consolidator = ModelMemoryConsolidator(build_model(config), min_confidence=config.memory.min_confidence)
    memory = FileMemory.from_config(config.memory, root=_memory_dir(args, config), consolidator=consolidator)
    result = memory.consolidate_trajectory(trajectory, allowed_tools=allowed, dry_run=args.dry_run)
    for decision in result["decisions"]:
        verdict = "ACCEPTED" if decision["accepted"] else "HELD" if decision.get("held") else "REJECTED"
        where = (
            f"memory/{decision['section']}"
            if decision["kind"] == "memory"
            else f"{decision['tool']}/{decision['outcome']}"
        )
        _out(f"{verdict} {where} ({decision['confidence']:.2f}, {decision['rule']}): {decision['text']}")
    suffix = " (dry run: nothing written)" if args.dry_run else ""
    _out(
        f"{result['memory_written']} memory and {result['tool_experience_written']} tool-experience "
        f"entries accepted, {result['rejected']} rejected, {result.get('held', 0)} held for review "
        f"(harness-ros memory pending){suffix}"
    )
    return 0
