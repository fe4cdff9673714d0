"""``harness-ros check``: validate a config and what it points at, then print a summary.

Checks, in order: the config file, the Embodiment Profile, the skills folder, the
memory folder and the model settings (a model is set; litellm knows its provider;
the provider's environment variables and ``model.api_key_env`` are set; the scripted
demo policy only with the simulator's tools). The same for ``evaluator.model`` when it
differs. Nothing is sent to a model unless ``--online``: then each model answers one
minimal request (and one with a small image when it is sent camera images) and the
round-trip time is printed. The first problem ends the command with one ``error:``
message (exit 1); a clean run prints what the harness would start with (exit 0).
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from harness_ros.commands._shared import add_example_config_option

if TYPE_CHECKING:
    from harness_ros.config import HarnessConfig
    from harness_ros.model import ModelSetting

__all__ = ["MemorySummary", "register", "run_check", "summarize_memory"]

_MEMORY_SECTIONS = ("Preferences", "Conventions", "General Lessons")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "check",
        help="validate a config, its profile, skills and memory, and print a summary",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_example_config_option(parser)
    parser.add_argument(
        "--online",
        action="store_true",
        help="also call each model once (and once with a small image) and print the round-trip time",
    )
    parser.set_defaults(handler=run_check)


@dataclass(frozen=True)
class MemorySummary:
    """Counts read from a memory folder without changing it."""

    folder: Path
    entries: dict[str, int]
    ledgers: tuple[str, ...]

    @property
    def total_entries(self) -> int:
        return sum(self.entries.values())


def summarize_memory(folder: Path) -> MemorySummary:
    """Count ``- [`` entries in the three MEMORY.md sections and the tool ledgers.

    A missing folder or MEMORY.md is an empty memory (FileMemory creates them).
    """
    from harness_ros.errors import MemoryStoreError
    from harness_ros.paths import display_path

    entries = dict.fromkeys(_MEMORY_SECTIONS, 0)
    if folder.exists() and not folder.is_dir():
        raise MemoryStoreError(f"Memory folder {display_path(folder)!r} (memory.dir) is not a folder")
    memory_file = folder / "MEMORY.md"
    if memory_file.is_file():
        try:
            text = memory_file.read_bytes().decode("utf-8")
        except OSError as err:
            raise MemoryStoreError(f"Cannot read {display_path(memory_file)!r}: {err.strerror}") from None
        except UnicodeDecodeError as err:
            raise MemoryStoreError(
                f"Invalid memory file {display_path(memory_file)!r}: not UTF-8 text (offset {err.start})"
            ) from None
        section: str | None = None
        for line in text.splitlines():
            match = _HEADING.match(line)
            if match:
                title = match.group(2).strip().casefold()
                section = next((s for s in _MEMORY_SECTIONS if s.casefold() == title), None)
            elif section is not None and line.startswith("- ["):
                entries[section] += 1
    ledger_folder = folder / "tool_experience"
    ledgers: tuple[str, ...] = ()
    if ledger_folder.is_dir():
        ledgers = tuple(sorted(p.stem for p in ledger_folder.glob("*.md") if p.is_file()))
    return MemorySummary(folder=folder, entries=entries, ledgers=ledgers)


def _describe_model(setting: ModelSetting) -> str:
    origin = " (from HARNESS_MODEL)" if setting.key == "HARNESS_MODEL" else ""
    if setting.provider == "scripted":
        return f"{setting.name}{origin}: {setting.note}"
    details = f"provider {setting.provider}" + (f", {setting.note}" if setting.note else "")
    return f"{setting.name}{origin} [{details}]"


def _probe_lines(config: HarnessConfig, settings: list[ModelSetting]) -> list[str]:
    """``--online``: one timed request per model (and one with an image where images go)."""
    from harness_ros.model import LiteLLMModel, build_model, probe_model

    lines = []
    for setting in settings:
        if setting.provider == "replay":
            lines.append(f"online:  {setting.role} {setting.name}: recorded replies, nothing to call")
            continue
        model = build_model(config, model=setting.name)
        if isinstance(model, LiteLLMModel):
            # One attempt and no recording: the time printed is one round trip.
            model.max_retries = 0
            model.recorder = None
        for result in probe_model(model, image=setting.sees_images):
            lines.append(
                f"online:  {setting.role} {setting.name}, {result.what} request: "
                f"{result.seconds:.2f} s round trip, replied {result.reply!r}"
            )
    return lines


def run_check(args: argparse.Namespace) -> int:
    from harness_ros.config import load_config
    from harness_ros.model import validate_model_settings
    from harness_ros.paths import default_config_path, display_path
    from harness_ros.profile import load_embodiment_profile_document_from_config
    from harness_ros.skills import SkillCatalog

    config_path: Path = args.config if args.config is not None else default_config_path()
    config = load_config(config_path)
    profile = load_embodiment_profile_document_from_config(config)
    catalog = SkillCatalog.discover(config.skills.dir)
    memory = summarize_memory(config.memory.dir)
    settings = validate_model_settings(config, require_model=True)

    lines = [f"config:  {display_path(config_path)}"]
    for setting in settings:
        label = "model:  " if setting.role == "model" else "evaluator model:"
        lines.append(f"{label} {_describe_model(setting)}")
    if profile is None:
        lines.append("profile: none configured (embodiment_profile_file)")
    else:
        views = ", ".join(profile.model_visible_views)
        lines.append(f"profile: {display_path(profile.path)} (views: {views})")
    if catalog.has_skills:
        resources = sum(len(skill.resources) for skill in catalog.skills.values())
        lines.append(
            f"skills:  {len(catalog.skills)} ({', '.join(catalog.names)}); {resources} declared resource(s)"
        )
    else:
        lines.append("skills:  none")
    from harness_ros.errors import ConfigError
    from harness_ros.plugins import load_plugins

    plugins = load_plugins(config.plugins)
    kind = config.evaluator.kind
    if kind not in {"none", "model", *plugins.evaluators}:
        known = ", ".join(["none", "model", *sorted(plugins.evaluators)])
        raise ConfigError(f"evaluator.kind {kind!r} is not a known evaluator (known: {known})")
    tools = ", ".join([tool.name for tool in config.tools] + [t.spec.name for t in plugins.tools])
    lines.append(f"tools:   {tools or 'none configured'}")
    lines.append(f"plugins: {', '.join(plugins.loaded) or 'none'}")
    counts = ", ".join(f"{name} {count}" for name, count in memory.entries.items())
    ledgers = f"{len(memory.ledgers)} tool ledger(s)"
    if memory.ledgers:
        ledgers += f" ({', '.join(memory.ledgers)})"
    lines.append(
        f"memory:  {display_path(memory.folder)} ({memory.total_entries} entries: {counts}; {ledgers})"
    )
    if args.online:
        print("\n".join(lines), flush=True)
        lines = _probe_lines(config, settings)
    print("\n".join(lines))

    if profile is not None and config.observations.views:
        unmapped = [v for v in profile.model_visible_views if v not in config.observations.views]
        if unmapped:
            # The ROS node refuses to start like this; the core alone does not care.
            print(
                f"warning: profile views without a camera topic in observations.views: {', '.join(unmapped)}",
                file=sys.stderr,
            )
        views = config.observations.views
        uncalibrated = [v for v in profile.model_visible_views if v in views and views[v].camera_info is None]
        if uncalibrated:
            print(
                "warning: profile views without camera_info (observations.views.<name>.camera_info), "
                f"so depth regions cannot be matched to what they show: {', '.join(uncalibrated)}",
                file=sys.stderr,
            )
    print("check: OK")
    return 0
