"""``harness-ros check``: validate a config and what it points at, then print a summary.

Checks, in order: the config file, the Embodiment Profile, its views against the
configured camera topics, the skills folder, the tool definitions (every binding
against its interface type, plus the built-in tools), the plugins and the evaluator
kind, the memory folder, and the model settings (a model is set; litellm knows its
provider; the provider's environment variables and ``model.api_key_env`` are set;
the scripted demo policy only with the simulator's tools). The same for
``evaluator.model`` when it differs. What the node refuses to start with, ``check``
refuses with the same message: both call the functions of ``harness_ros.startup``,
``harness_ros.ros.interfaces.tool_spec`` and ``validate_model_settings``.

Nothing is sent to a model unless ``--online``: then each model answers one minimal
request (and one with a small image when it is sent camera images) and the
round-trip time is printed. A problem with the config, profile, views, skills, tools
or memory ends the command with one ``error:`` message (exit 1). A model problem (no
model configured, a key not set) is reported last: everything else is checked and
printed first, then ``error:`` names the model problem (exit 1). A clean run prints
what the harness would start with and ``check: OK`` (exit 0).
"""

from __future__ import annotations

import argparse
import re
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
    if setting.kind == "scripted":
        return f"{setting.name}{origin}: {setting.note}"
    details = f"provider {setting.provider}" + (f", {setting.note}" if setting.note else "")
    return f"{setting.name}{origin} [{details}]"


def _probe_lines(config: HarnessConfig, settings: list[ModelSetting]) -> list[str]:
    """``--online``: one timed request per model (and one with an image where images go)."""
    from harness_ros.model import LiteLLMModel, build_model, probe_model
    from harness_ros.plugins import model_provider

    lines = []
    for setting in settings:
        if setting.provider == "replay":
            lines.append(f"online:  {setting.role} {setting.name}: recorded replies, nothing to call")
            continue
        model = build_model(config, model=setting.name, providers=model_provider)
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


def _topic_lines(config: HarnessConfig, views: dict[str, str]) -> list[str]:
    """The topics the node subscribes to for the model's views, depth and clearance."""
    observations = config.observations
    lines = []
    for name, key in views.items():
        view = observations.views[key]
        kind = "CompressedImage" if view.compressed else "Image"
        turned = f", turned {view.rotate} deg clockwise" if view.rotate else ""
        lines.append(
            f"topics:  view {name}: {view.topic} ({kind}, qos {view.qos}, "
            f"max age {view.max_age_s:g} s{turned})"
        )
        for axis, joint in (("pan", view.pan), ("tilt", view.tilt)):
            if joint is not None:
                lines.append(
                    f"topics:  view {name} {axis}: joint {joint.joint!r} on {joint.topic} "
                    f"(JointState, positive {joint.positive})"
                )
        if view.depth is not None:
            depth_kind = "CompressedImage" if view.depth.compressed else "Image"
            layout = (
                "registered by camera_info"
                if view.camera_info is not None and view.depth.camera_info is not None
                else "the depth image's own thirds"
            )
            lines.append(
                f"topics:  view {name} depth: {view.depth.topic} ({depth_kind}, qos {view.depth.qos}; "
                f"regions: {layout})"
            )
    if not views:
        lines.append("topics:  no camera view (observations.views): the model sees no image")
    depth = observations.depth
    if depth is None:
        if not any(view.depth for view in observations.views.values()):  # else listed under its view
            lines.append("topics:  no depth topic (observations.depth.topic)")
    else:
        kind = "CompressedImage" if depth.compressed else "Image"
        # Only the registration reads camera_info (depth.view's and depth's own, both
        # required by the config then): a view without one costs nothing, so no warning.
        regions = (
            f"regions: registered to view {depth.view} by camera_info"
            if depth.view is not None
            else "regions: the depth image's own thirds, observations.depth.view not set"
        )
        lines.append(f"topics:  depth: {depth.topic} ({kind}, qos {depth.qos}; {regions})")
    clearance = observations.clearance
    if clearance is None:
        lines.append("topics:  no clearance source (observations.clearance): base motion is blocked")
    elif clearance.scan_topic is not None:
        lines.append(f"topics:  clearance: {clearance.scan_topic} (LaserScan, qos {clearance.qos})")
    else:
        ranges = ", ".join(f"{d} {t}" for d, t in (clearance.range_topics or {}).items())
        lines.append(f"topics:  clearance: {ranges} (Range, qos {clearance.qos})")
    return lines


def run_check(args: argparse.Namespace) -> int:
    from harness_ros.commands.tools import model_tools
    from harness_ros.config import load_config
    from harness_ros.errors import ConfigError, HarnessError
    from harness_ros.model import validate_model_settings
    from harness_ros.paths import default_config_path, display_path
    from harness_ros.plugins import load_plugins, model_provider
    from harness_ros.profile import load_embodiment_profile_document_from_config
    from harness_ros.skills import SkillCatalog
    from harness_ros.startup import check_evaluator_kind, model_visible_views, select_views

    config_path: Path = args.config if args.config is not None else default_config_path()
    config = load_config(config_path)
    profile = load_embodiment_profile_document_from_config(config)
    # The node refuses a Model-Visible View without a camera topic with this very message.
    views = select_views(config.observations, model_visible_views(config, profile))
    catalog = SkillCatalog.discover(config.skills.dir)
    plugins = load_plugins(config.plugins)
    check_evaluator_kind(config, plugins.evaluators)
    # Every binding against its interface type, as the node builds its tools.
    registered, tools = model_tools(config)
    from harness_ros.evaluation.evidence import evidence_tool_problem

    evidence_problem = evidence_tool_problem(config.evaluator.evidence, registered)
    if evidence_problem is not None:  # the node refuses it with this message
        raise ConfigError(evidence_problem)
    memory = summarize_memory(config.memory.dir)
    # A model problem is reported after everything else was checked and printed.
    model_problem: str | None = None
    try:
        settings = validate_model_settings(config, require_model=True, providers=model_provider)
    except HarnessError as err:
        model_problem = str(err)
        settings = []

    lines = [f"config:  {display_path(config_path)}"]
    for setting in settings:
        label = "model:  " if setting.role == "model" else "evaluator model:"
        lines.append(f"{label} {_describe_model(setting)}")
    if model_problem is not None:
        lines.append("model:   NOT USABLE (see the error below)")
    if profile is None:
        lines.append("profile: none configured (embodiment_profile_file)")
    else:
        lines.append(
            f"profile: {display_path(profile.path)} (views: {', '.join(profile.model_visible_views)})"
        )
        if profile.unvalidated_chars:
            lines.append(
                f"         also sent, not validated: {profile.unvalidated_chars} characters outside the "
                "seven items (the text before the first section, and extra sections after the items)"
            )
    lines.extend(_topic_lines(config, views))
    if catalog.has_skills:
        resources = sum(len(skill.resources) for skill in catalog.skills.values())
        lines.append(
            f"skills:  {len(catalog.skills)} ({', '.join(catalog.names)}); {resources} declared resource(s)"
        )
    else:
        lines.append("skills:  none")
    configured = [row["name"] for row in tools if row["origin"] != "built-in"]
    built_in = [row["name"] for row in tools if row["origin"] == "built-in"]
    offered = {row["name"] for row in tools}
    # recall_object while WORLD.md is empty: registered (evidence may name it), not offered.
    built_in += [f"{name} (not offered now)" for name in registered if name not in offered]
    tokens = sum(row["tokens"] for row in tools)
    lines.append(f"tools:   {', '.join(configured) or 'none configured'}")
    lines.append(f"         built in: {', '.join(built_in)}; ~{tokens} tokens of definitions per turn")
    used_plugins = plugins.in_use(config.effective_model(), config.evaluator.kind)
    unused_plugins = [name for name in plugins.loaded if name not in used_plugins]
    unused = f" (installed, not used by this config: {', '.join(unused_plugins)})" if unused_plugins else ""
    lines.append(f"plugins: {', '.join(used_plugins) or 'none'}{unused}")
    counts = ", ".join(f"{name} {count}" for name, count in memory.entries.items())
    ledgers = f"{len(memory.ledgers)} tool ledger(s)"
    if memory.ledgers:
        ledgers += f" ({', '.join(memory.ledgers)})"
    lines.append(
        f"memory:  {display_path(memory.folder)} ({memory.total_entries} entries: {counts}; {ledgers})"
    )
    if args.online and model_problem is None:
        print("\n".join(lines), flush=True)
        lines = _probe_lines(config, settings)
    print("\n".join(lines), flush=True)

    if model_problem is not None:
        raise ConfigError(model_problem)
    print("check: OK")
    return 0
