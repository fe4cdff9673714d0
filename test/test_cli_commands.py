"""The command line's sub-commands: the harness's own, and those an installed package adds
through the ``harness_ros.commands`` entry-point group (the sim package's demo, eval, sim)."""

from __future__ import annotations

from importlib import metadata
from typing import Any

import pytest

from harness_ros import cli


def test_the_sim_packages_commands_come_through_entry_points() -> None:
    names = {entry.name: entry.value for entry in metadata.entry_points(group=cli.COMMAND_ENTRY_POINTS)}
    assert names == {
        "demo": "harness_ros_sim.commands.demo",
        "eval": "harness_ros_sim.commands.eval",
        "sim": "harness_ros_sim.commands.sim",
    }
    choices = cli.build_parser()._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    assert {"demo", "eval", "sim", "node", "check", "task"} <= set(choices)


def test_a_broken_installed_command_costs_only_itself(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = metadata.EntryPoint("fly", "no_such_package.commands.fly", cli.COMMAND_ENTRY_POINTS)
    shadow = metadata.EntryPoint("check", "no_such_package.check", cli.COMMAND_ENTRY_POINTS)
    real = metadata.entry_points

    def entry_points(**kwargs: Any) -> Any:
        if kwargs.get("group") == cli.COMMAND_ENTRY_POINTS:
            return [broken, shadow]
        return real(**kwargs)

    monkeypatch.setattr(cli.metadata, "entry_points", entry_points)
    assert cli.main(["fly"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: command 'fly': cannot load 'no_such_package.commands.fly'")
    assert "No module named 'no_such_package'" in err
    # The harness's own command keeps its name; every other command still works.
    assert cli.main(["config", "reference"]) == 0
    assert "| `model.model` |" in capsys.readouterr().out
