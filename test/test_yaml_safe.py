"""YAML alias bombs are refused fast, naming the file (issue 47, item 12).

A "billion laughs" of a few hundred bytes loads at once with ``yaml.safe_load`` (aliases
are shared), then keeps whatever walks the result busy for minutes: ``harness-ros config
params`` and the node's start-up load did. Every YAML the harness reads from users goes
through ``harness_ros.yaml_safe.safe_load``, which counts the document with its aliases
expanded before building it.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from harness_ros.config import load_config
from harness_ros.errors import ConfigError, SkillError
from harness_ros.skills.catalog import SkillCatalog
from harness_ros.yaml_safe import MAX_NODES, YamlTooLarge, safe_load

BOUND_S = 5.0
"""Generous: the refusal takes milliseconds; the bomb took minutes."""


def laughs(levels: int = 9, width: int = 9, indent: str = "") -> str:
    lines = [f'{indent}a: &a ["lol"]']
    previous = "a"
    for level in range(levels - 1):
        name = chr(ord("b") + level)
        lines.append(f"{indent}{name}: &{name} [{', '.join(['*' + previous] * width)}]")
        previous = name
    return "\n".join(lines) + "\n"


def test_the_bomb_is_small_and_refused_fast() -> None:
    text = laughs()
    assert len(text) < 600
    started = time.monotonic()
    with pytest.raises(YamlTooLarge, match="aliases"):
        safe_load(text)
    assert time.monotonic() - started < BOUND_S


def test_ordinary_yaml_with_aliases_loads_as_yaml_safe_load_does() -> None:
    text = "base: &b {x: 1, y: [1, 2]}\none: *b\ntwo: {<<: *b, y: 3}\nempty:\n"
    assert safe_load(text) == yaml.safe_load(text)
    assert safe_load("") is None
    assert safe_load(laughs(levels=3, width=3)) == yaml.safe_load(laughs(levels=3, width=3))


def test_a_recursive_alias_is_refused() -> None:
    with pytest.raises(YamlTooLarge, match="recursive"):
        safe_load("a: &a [1, *a]\n")


def test_the_budget_counts_expanded_values() -> None:
    wide = (
        "a: &a [" + ", ".join(["1"] * 1000) + "]\nb: [" + ", ".join(["*a"] * (MAX_NODES // 1000 + 1)) + "]\n"
    )
    with pytest.raises(YamlTooLarge):
        safe_load(wide)


def test_a_config_bomb_fails_fast_naming_the_file(tmp_path: Path) -> None:
    config = tmp_path / "bomb.yaml"
    config.write_text("model:\n  extra:\n" + laughs(indent="    "), encoding="utf-8")
    started = time.monotonic()
    with pytest.raises(ConfigError) as raised:
        load_config(config)
    assert time.monotonic() - started < BOUND_S
    message = str(raised.value)
    assert str(config) in message
    assert "aliases" in message and "refused" in message


def test_config_params_refuses_the_bomb_fast(tmp_path: Path) -> None:
    config = tmp_path / "bomb.yaml"
    config.write_text(laughs() + "model:\n  model: openai/x\n", encoding="utf-8")
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "harness_ros.cli", "config", "params", "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    elapsed = time.monotonic() - started
    assert done.returncode != 0
    assert str(config) in done.stderr and "aliases" in done.stderr
    assert elapsed < 60  # the interpreter's start-up included; the bomb took minutes


def test_a_preset_bomb_is_refused_naming_the_preset(tmp_path: Path) -> None:
    preset = tmp_path / "bomb.yaml"
    preset.write_text(laughs(), encoding="utf-8")
    config = tmp_path / "config.yaml"
    config.write_text(f"tools:\n  - preset: {preset}\n", encoding="utf-8")
    with pytest.raises(ConfigError) as raised:
        load_config(config)
    assert str(preset) in str(raised.value) and "aliases" in str(raised.value)


def test_a_skill_frontmatter_bomb_is_refused_naming_the_skill(tmp_path: Path) -> None:
    folder = tmp_path / "skills" / "bomb"
    folder.mkdir(parents=True)
    front = "name: bomb\ndescription: laughs\n" + laughs()
    (folder / "SKILL.md").write_text(f"---\n{front}---\nBody.\n", encoding="utf-8")
    started = time.monotonic()
    with pytest.raises(SkillError) as raised:
        SkillCatalog.discover(tmp_path / "skills")
    assert time.monotonic() - started < BOUND_S
    assert "SKILL.md" in str(raised.value) and "aliases" in str(raised.value)
