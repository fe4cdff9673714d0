"""``harness-ros skills list``: the skills a config's catalog offers, name and description."""

from __future__ import annotations

import argparse
import textwrap

from harness_ros.commands._shared import add_example_config_option

__all__ = ["register", "run_list"]


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser("skills", help="inspect the skill catalog", description=__doc__)
    actions = parser.add_subparsers(dest="skills_command", metavar="ACTION", required=True)
    listing = actions.add_parser("list", help="list each skill's name and description")
    add_example_config_option(listing)
    listing.set_defaults(handler=run_list)


def run_list(args: argparse.Namespace) -> int:
    from harness_ros.config import load_config
    from harness_ros.paths import default_config_path, display_path
    from harness_ros.skills import SkillCatalog

    config = load_config(args.config if args.config is not None else default_config_path())
    catalog = SkillCatalog.discover(config.skills.dir)
    if not catalog.has_skills:
        where = display_path(config.skills.dir) if config.skills.dir else "skills.dir is not set"
        print(f"no skills ({where})")
        return 0
    for skill in catalog.skills.values():
        print(skill.name)
        print(textwrap.fill(skill.description, width=88, initial_indent="    ", subsequent_indent="    "))
        if skill.resources:
            print(f"    resources: {', '.join(skill.resources)}")
    return 0
