"""Where a node keeps its writable state (memory, run logs) when the config does not say.

A package installed by colcon or a binary package ships its config, profiles, skills and
memory template in ``<prefix>/share/harness_ros``: read-only on a binary install and
overwritten by the next ``colcon build``. The shipped configs resolve ``memory.dir`` and
``harness.runs_dir`` into that folder (``../memory``, ``../runs``), and so does any config
kept there that leaves the keys unset (defaults resolve against the config's folder). The
node therefore moves any state folder that lies inside an install share to
``$ROS_HOME/harness_ros/<node>/`` (``ROS_HOME`` defaults to ``~/.ros``, as for ROS logs),
and seeds memory there from the shipped template on first use. Paths outside a share,
set in the YAML or as ROS parameters, are used as given.

This module is part of the core: it never imports rclpy.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from harness_ros.config import HarnessConfig
from harness_ros.errors import MemoryStoreError
from harness_ros.paths import PACKAGE

__all__ = [
    "StateDirs",
    "install_share_of",
    "relocate_state_dirs",
    "ros_home",
    "seed_memory",
    "state_root",
]


def ros_home() -> Path:
    """``$ROS_HOME``, else ``~/.ros`` (the rule rcl uses for its log folder)."""
    value = os.environ.get("ROS_HOME")
    return Path(os.path.expandvars(value)).expanduser() if value else Path.home() / ".ros"


def state_root(node_name: str) -> Path:
    """``$ROS_HOME/harness_ros/<node>/``; a namespaced node (``/robot1/harness``) gets its
    own folder (``robot1/harness``) so two robots on one machine never share memory."""
    parts = [part for part in node_name.split("/") if part and part not in (".", "..")]
    if not parts:
        raise ValueError(f"invalid node name {node_name!r}")
    return ros_home() / PACKAGE / Path(*parts)


def install_share_of(path: Path) -> Path | None:
    """The ``<prefix>/share/harness_ros`` folder containing ``path``, if any.

    Matched by name, not by the ament index marker: a share folder is install output
    whether or not its prefix is on AMENT_PREFIX_PATH right now."""
    for folder in (path, *path.parents):
        if folder.name == PACKAGE and folder.parent.name == "share":
            return folder
    return None


@dataclass(frozen=True)
class StateDirs:
    """The config to run with, and what was moved (for the start-up log)."""

    config: HarnessConfig
    moved: dict[str, tuple[Path, Path]]
    """Dotted key -> (configured path, path used)."""
    memory_template: Path | None
    """Shipped memory folder to seed from, when memory was moved."""


def relocate_state_dirs(config: HarnessConfig, node_name: str) -> StateDirs:
    """Move ``memory.dir`` and ``harness.runs_dir`` out of an install share folder.

    Pure: creates nothing (``seed_memory`` does the writing)."""
    root = state_root(node_name)
    moved: dict[str, tuple[Path, Path]] = {}
    memory = config.memory
    harness = config.harness
    template: Path | None = None
    memory_share = install_share_of(config.memory.dir)
    if memory_share is not None:
        moved["memory.dir"] = (config.memory.dir, root / "memory")
        memory = memory.model_copy(update={"dir": root / "memory"})
        # The configured folder is the template when it exists (example.yaml's ../memory);
        # an unset key resolves to config/memory, which does not: use the share's memory/.
        template = config.memory.dir if config.memory.dir.is_dir() else memory_share / "memory"
    if install_share_of(config.harness.runs_dir) is not None:
        moved["harness.runs_dir"] = (config.harness.runs_dir, root / "runs")
        harness = harness.model_copy(update={"runs_dir": root / "runs"})
    if not moved:
        return StateDirs(config=config, moved={}, memory_template=None)
    updated = config.model_copy(update={"memory": memory, "harness": harness})
    return StateDirs(config=updated, moved=moved, memory_template=template)


def seed_memory(target: Path, template: Path | None) -> list[Path]:
    """Copy the template's files into ``target`` when ``target`` holds no file yet.

    Only on first use: once the node has written memory, files the operator deleted stay
    deleted. Never overwrites a file (exclusive create), so two nodes starting at once
    cannot clobber each other. Returns the files written; raises ``MemoryStoreError`` when
    the target cannot be written (e.g. a read-only ROS_HOME)."""
    if template is None or not template.is_dir():
        return []
    if target.is_dir() and any(path.is_file() for path in target.rglob("*")):
        return []
    written: list[Path] = []
    for source in sorted(template.rglob("*")):
        if not source.is_file() or "__pycache__" in source.parts:
            continue
        destination = target / source.relative_to(template)
        try:
            destination.parent.mkdir(parents=True, exist_ok=True)
            with source.open("rb") as src, destination.open("xb") as dst:
                shutil.copyfileobj(src, dst)
        except FileExistsError:
            continue
        except OSError as err:
            raise MemoryStoreError(
                f"Cannot seed memory {str(destination)!r} from {str(source)!r}: {err.strerror}"
            ) from None
        written.append(destination)
    return written
