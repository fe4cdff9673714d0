"""The ``harness-ros`` command line.

Each sub-command lives in its own module under ``harness_ros.commands`` and exposes
``register(subparsers)``; the parser is assembled by discovering those modules, so a
new command never edits this file. An installed package adds commands the same way,
through the ``harness_ros.commands`` entry-point group (the repository's simulated-robot
package adds three this way): the command line never imports such a package. Handlers take the parsed args and return an int.
User errors (``HarnessError``) print one ``error:`` line and exit 1, no traceback.
Arguments after ``--ros-args`` are kept for ROS (``args.ros_args``).
"""

from __future__ import annotations

import argparse
import importlib
import logging
import pkgutil
import sys
from importlib import metadata
from types import ModuleType

from harness_ros import __version__
from harness_ros.errors import HarnessError
from harness_ros.terminal import terminal_safe

__all__ = ["COMMAND_ENTRY_POINTS", "build_parser", "main"]

COMMAND_ENTRY_POINTS = "harness_ros.commands"
"""Entry-point group of the sub-commands other packages add: ``name = package.module``."""


def _command_modules() -> list[tuple[str, ModuleType | str]]:
    """(name, module) of every sub-command, the package's own and the installed ones, by name.

    An installed command that cannot be imported stays listed, as the reason (a string):
    a broken optional package costs its own commands, never the whole command line."""
    from harness_ros import commands

    found: dict[str, ModuleType | str] = {
        info.name: importlib.import_module(f"harness_ros.commands.{info.name}")
        for info in pkgutil.iter_modules(commands.__path__)
        if not info.name.startswith("_")
    }
    for entry in metadata.entry_points(group=COMMAND_ENTRY_POINTS):
        if entry.name in found:
            continue  # the harness's own command keeps its name
        try:
            found[entry.name] = importlib.import_module(entry.value)
        except Exception as err:  # noqa: BLE001  a broken installed package: its command says so
            found[entry.name] = (
                f"cannot load {entry.value!r} ({entry.dist.name if entry.dist else '?'}): {err}"
            )
    return sorted(found.items())


def _broken_command(sub: argparse._SubParsersAction, name: str, reason: str) -> None:  # type: ignore[type-arg]
    def handler(_args: argparse.Namespace) -> int:
        raise HarnessError(f"command {name!r}: {reason}")

    sub.add_parser(name, help=f"(unavailable: {reason})").set_defaults(handler=handler)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="harness-ros",
        description="Run an LLM agent on a ROS 2 mobile manipulator, safely, learning from its tool outcomes.",
    )
    parser.add_argument("--version", action="version", version=f"harness-ros {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log at DEBUG level")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, module in _command_modules():
        if isinstance(module, str):
            _broken_command(sub, name, module)
        else:
            module.register(sub)
    return parser


def _error_text(message: str) -> str:
    """A multi-line error (a config's validation errors, one per line) keeps its lines, each
    continuation indented: a line a node or server put in the message never reads as a
    line of its own (``error: ...``, ``check: OK``). Control characters are escaped."""
    first, *rest = terminal_safe(message, multiline=True).split("\n")
    return "\n".join([first, *(line if line.startswith("  ") else f"  {line}" for line in rest)])


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    ros_args: list[str] = []
    if "--ros-args" in argv:
        index = argv.index("--ros-args")
        argv, ros_args = argv[:index], argv[index:]
    parser = build_parser()
    args = parser.parse_args(argv)
    args.ros_args = ros_args
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return 2
    try:
        return int(handler(args))
    except HarnessError as err:
        # The message can carry what a node or server said (a refusal, a status).
        print(f"error: {_error_text(str(err))}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
