"""What `make typecheck` covers, read from `[tool.mypy]` in pyproject.toml the way mypy reads it.

`harness_ros/ros/` and `harness_ros/commands/` (the ROS node, its tools and the CLI) are
checked in strict mode like the core (issue 46, item 5): no module of theirs is excluded or
relaxed by a per-module override, and rclpy (typed: it ships py.typed) is never among the
modules whose missing types are ignored. Generated ROS message modules are (rosidl writes
no stubs), so an override may name them.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest

# make typecheck's own tool (requirements.txt); a colcon test run without it skips this file.
pytest.importorskip("mypy", reason="mypy (make typecheck's type checker) is not installed")

from mypy.config_parser import parse_config_file
from mypy.find_sources import create_source_list
from mypy.options import Options

REPO = Path(__file__).resolve().parents[1]
PYPROJECT = REPO / "pyproject.toml"
ROS_PARTS = ("ros", "commands")
RELAXING = ("ignore_errors", "follow_imports", "disallow_untyped_defs", "disallow_any_generics")


def _mypy_options() -> tuple[Options, bool]:
    options = Options()
    strict: list[bool] = []
    stdout, stderr = io.StringIO(), io.StringIO()
    parse_config_file(options, lambda: strict.append(True), str(PYPROJECT), stdout, stderr)
    assert not stderr.getvalue(), f"{PYPROJECT}: [tool.mypy]: {stderr.getvalue()}"
    return options, bool(strict)


def _modules_under(folder: Path) -> set[str]:
    return {
        ".".join(path.relative_to(REPO).with_suffix("").parts).removesuffix(".__init__")
        for path in folder.rglob("*.py")
    }


def test_make_typecheck_covers_ros_and_commands_in_strict_mode() -> None:
    options, strict = _mypy_options()
    assert strict, f"{PYPROJECT}: [tool.mypy] strict: expected true"
    checked = {source.module for source in create_source_list(options.files, options)}
    for part in ROS_PARTS:
        expected = _modules_under(REPO / "harness_ros" / part)
        assert expected, part
        missing = sorted(expected - checked)
        assert not missing, (
            f"{PYPROJECT}: [tool.mypy] leaves out {missing} "
            f"(files {options.files}, exclude {options.exclude})"
        )
    assert "harness_ros.config" in checked  # the core, as before


def test_no_override_relaxes_ros_commands_or_rclpy() -> None:
    options, _ = _mypy_options()
    for pattern, settings in options.per_module_options.items():
        if pattern.startswith(("harness_ros.ros", "harness_ros.commands", "harness_ros.*")):
            relaxed = {key: settings[key] for key in RELAXING if key in settings}
            assert not relaxed, f"{PYPROJECT}: [[tool.mypy.overrides]] {pattern!r} relaxes {relaxed}"
        if pattern.split(".")[0] == "rclpy":
            assert not settings.get("ignore_missing_imports"), (
                f"{PYPROJECT}: [[tool.mypy.overrides]] {pattern!r}: rclpy ships its types (py.typed); "
                "do not ignore them"
            )
