"""The documentation cannot drift from the code.

- every ```yaml block in README.md and docs/ is tied to a file the code loads: a
  ``<!-- snippet: PATH[#REGION] -->`` block equals the file (or its marked region), an
  ``<!-- excerpt: PATH -->`` block is a verbatim run of the file's lines, and a
  ``<!-- config -->`` block is a complete config that ``load_config`` accepts;
- ``<!-- run -->`` bash blocks are executed (each ``harness-ros`` line must exit 0);
- every ``harness-ros`` command the docs mention exists, every relative link resolves;
- docs/configuration.md and config/harness_params.yaml are what ``harness-ros config``
  generates, and the params file round-trips to the config it came from.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from harness_ros.cli import build_parser, main
from harness_ros.commands.config import config_keys, params_document, params_yaml, reference_markdown
from harness_ros.config import HarnessConfig, config_from_flat, load_config

REPO_ROOT = Path(__file__).resolve().parents[1]
DOCS = sorted([REPO_ROOT / "README.md", *(REPO_ROOT / "docs").glob("*.md")])
ENTRY_POINT = REPO_ROOT / ".venv" / "bin" / "harness-ros"
EXAMPLE = REPO_ROOT / "config" / "example.yaml"
PARAMS_FILE = REPO_ROOT / "config" / "harness_params.yaml"

_MARKER = re.compile(r"^<!--\s*(snippet|excerpt|config|run)(?::\s*(\S+))?\s*-->$")
_FENCE = re.compile(r"^(\s*)```(\S*)\s*$")
_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
_COMMAND = re.compile(r"harness-ros ([a-z][a-z-]*)(?: ([a-z][a-z-]*))?")


@dataclass(frozen=True)
class Block:
    doc: Path
    line: int
    lang: str
    marker: str | None
    target: str | None
    text: str

    @property
    def where(self) -> str:
        return f"{self.doc.relative_to(REPO_ROOT)}:{self.line}"


def fenced_blocks(doc: Path) -> list[Block]:
    """Fenced code blocks with the marker comment on the last non-blank line before them."""
    lines = doc.read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    index = 0
    previous = ""
    while index < len(lines):
        match = _FENCE.match(lines[index])
        if match is None:
            if lines[index].strip():
                previous = lines[index].strip()
            index += 1
            continue
        indent, lang = match.group(1), match.group(2)
        end = index + 1
        while not re.match(rf"^{indent}```\s*$", lines[end]):
            end += 1
        body = "\n".join(line.removeprefix(indent) for line in lines[index + 1 : end])
        marker = _MARKER.match(previous)
        blocks.append(
            Block(
                doc,
                index + 1,
                lang,
                marker.group(1) if marker else None,
                marker.group(2) if marker else None,
                body,
            )
        )
        previous = ""
        index = end + 1
    return blocks


ALL_BLOCKS = [block for doc in DOCS for block in fenced_blocks(doc)]


def _blocks(*markers: str) -> list[Block]:
    return [b for b in ALL_BLOCKS if b.marker in markers]


def _region(path: Path, region: str) -> str:
    lines = path.read_text(encoding="utf-8").splitlines()
    begin, end = f"# [docs:begin {region}]", f"# [docs:end {region}]"
    stripped = [line.strip() for line in lines]
    assert begin in stripped and end in stripped, f"{path} has no region {region!r}"
    return "\n".join(lines[stripped.index(begin) + 1 : stripped.index(end)])


def harness_ros(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    command = [str(ENTRY_POINT)] if ENTRY_POINT.exists() else [sys.executable, "-m", "harness_ros.cli"]
    return subprocess.run(
        [*command, *args],
        cwd=REPO_ROOT,
        env=env if env is not None else dict(os.environ),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


# ---------------------------------------------------------------------- snippets
def test_the_docs_have_blocks_of_every_kind() -> None:
    # Guards the parser: a regex slip would otherwise make every test below vacuous.
    kinds = {b.marker for b in ALL_BLOCKS}
    assert {"snippet", "excerpt", "config", "run"} <= kinds
    assert {p.name for p in DOCS} >= {"README.md", "robot.md", "gazebo.md", "replay.md", "troubleshooting.md"}


@pytest.mark.parametrize("block", [b for b in ALL_BLOCKS if b.lang == "yaml"], ids=lambda b: b.where)
def test_every_yaml_block_comes_from_a_loaded_file(block: Block) -> None:
    assert block.marker in {"snippet", "excerpt", "config"}, (
        f"{block.where}: a ```yaml block needs <!-- snippet: PATH -->, <!-- excerpt: PATH --> "
        "or <!-- config --> on the line before it"
    )


@pytest.mark.parametrize("block", _blocks("snippet"), ids=lambda b: b.where)
def test_snippets_equal_their_source(block: Block) -> None:
    assert block.target, f"{block.where}: snippet without a path"
    path_text, _, region = block.target.partition("#")
    path = REPO_ROOT / path_text
    assert path.is_file(), f"{block.where}: {path_text} does not exist"
    source = _region(path, region) if region else path.read_text(encoding="utf-8")
    assert textwrap.dedent(block.text).strip() == textwrap.dedent(source).strip(), (
        f"{block.where} differs from {block.target}: copy the file's text into the doc"
    )


@pytest.mark.parametrize("block", _blocks("excerpt"), ids=lambda b: b.where)
def test_excerpts_are_verbatim_runs_of_their_source(block: Block) -> None:
    assert block.target, f"{block.where}: excerpt without a path"
    source = (REPO_ROOT / block.target).read_text(encoding="utf-8").splitlines()
    wanted = block.text.splitlines()
    runs = (source[i : i + len(wanted)] for i in range(len(source) - len(wanted) + 1))
    assert wanted in list(runs), f"{block.where} is not a verbatim excerpt of {block.target}"


def test_snippet_regions_of_the_robot_example_are_all_shown() -> None:
    example = REPO_ROOT / "docs" / "examples" / "robot.yaml"
    regions = set(re.findall(r"# \[docs:begin ([\w-]+)\]", example.read_text(encoding="utf-8")))
    shown = {
        b.target.partition("#")[2]
        for b in _blocks("snippet")
        if b.target.startswith("docs/examples/robot.yaml")
    }
    assert regions == shown


@pytest.mark.parametrize("block", _blocks("config"), ids=lambda b: b.where)
def test_config_blocks_load(block: Block, tmp_path: Path) -> None:
    path = tmp_path / "doc_config.yaml"
    path.write_text(block.text + "\n", encoding="utf-8")
    config = load_config(path)
    data = yaml.safe_load(block.text)
    assert set(data) <= set(HarnessConfig.model_fields)
    assert config.model_fields_set >= set(data)


@pytest.mark.parametrize(
    "path",
    ["config/example.yaml", "config/sim.yaml", "config/gazebo.yaml", "docs/examples/robot.yaml"],
)
def test_shipped_configs_load(path: str) -> None:
    assert load_config(REPO_ROOT / path).source == (REPO_ROOT / path).resolve()


# ---------------------------------------------------------------------- commands
def _run_lines() -> list[tuple[str, str]]:
    found = []
    for block in _blocks("run"):
        for line in block.text.splitlines():
            if line.strip().startswith("harness-ros "):
                found.append((block.where, line.strip()))
    return found


@pytest.mark.parametrize(("where", "line"), _run_lines(), ids=[w for w, _ in _run_lines()])
def test_runnable_commands_succeed(where: str, line: str, tmp_path: Path) -> None:
    env = dict(os.environ, HOME=str(tmp_path))  # configs with ~/... must not touch the real home
    # The docs have the reader export the key their model needs; an offline check never sends it.
    env.setdefault("OPENAI_API_KEY", "sk-docs-test")
    result = harness_ros(*shlex.split(line)[1:], env=env)
    assert result.returncode == 0, f"{where}: {line}\n{result.stdout}\n{result.stderr}"
    assert "Traceback" not in result.stderr


def _cli_commands() -> dict[str, set[str]]:
    """Sub-command -> its own sub-commands (empty when it has none)."""
    import argparse

    def choices(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                return dict(action.choices)
        return {}

    return {name: set(choices(sub)) for name, sub in choices(build_parser()).items()}


def test_every_command_the_docs_mention_exists() -> None:
    commands = _cli_commands()
    missing: list[str] = []
    for doc in DOCS:
        for match in _COMMAND.finditer(doc.read_text(encoding="utf-8")):
            name, action = match.group(1), match.group(2)
            if name not in commands:
                missing.append(f"{doc.name}: harness-ros {name}")
            elif commands[name] and action is not None and action not in commands[name]:
                missing.append(f"{doc.name}: harness-ros {name} {action}")
    assert not missing, f"commands the docs mention but `harness-ros --help` lacks: {sorted(set(missing))}"


def test_readme_commands_table_lists_every_command() -> None:
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    table = {m.group(1) for m in re.finditer(r"^\| `harness-ros ([a-z-]+)", readme, re.MULTILINE)}
    assert table == set(_cli_commands())


def test_help_lists_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--help"])
    assert exited.value.code == 0
    out = capsys.readouterr().out
    for name in _cli_commands():
        assert re.search(rf"^\s+{name}\s", out, re.MULTILINE), name


def test_quick_start_is_exactly_make_demo_and_make_test() -> None:
    readme = fenced_blocks(REPO_ROOT / "README.md")
    quick_start = next(b for b in readme if b.lang == "bash")
    commands = [line.split("#")[0].strip() for line in quick_start.text.splitlines()]
    assert commands == ["make demo", "make test"]


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_quick_start_targets_exist_and_call_real_commands() -> None:
    # -n prints the recipes without running them (make demo takes minutes, make test runs us).
    result = subprocess.run(
        ["make", "-n", "demo", "test"], cwd=REPO_ROOT, capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    assert "pytest" in result.stdout
    called = {m.group(1) for m in _COMMAND.finditer(result.stdout)}
    assert called, "make demo runs no harness-ros command"
    assert called <= set(_cli_commands())


# ---------------------------------------------------------------------- links
def _slug(heading: str) -> str:
    """GitHub's anchor for a heading."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _anchors(doc: Path) -> set[str]:
    text = doc.read_text(encoding="utf-8")
    text = re.sub(r"^```.*?^```", "", text, flags=re.MULTILINE | re.DOTALL)
    return {_slug(m.group(1)) for m in re.finditer(r"^#{1,6}\s+(.*)$", text, re.MULTILINE)}


def _links() -> list[tuple[Path, str]]:
    found = []
    for doc in DOCS:
        text = re.sub(r"^```.*?^```", "", doc.read_text(encoding="utf-8"), flags=re.MULTILINE | re.DOTALL)
        found += [(doc, m.group(1)) for m in _LINK.finditer(text)]
    return found


def test_the_docs_link_to_each_other() -> None:
    targets = {link for _, link in _links()}
    for guide in ("docs/robot.md", "docs/gazebo.md", "docs/replay.md", "docs/configuration.md"):
        assert guide in targets
    assert "docs/troubleshooting.md" in targets


@pytest.mark.parametrize(("doc", "link"), _links(), ids=[f"{d.name}->{link}" for d, link in _links()])
def test_relative_links_resolve(doc: Path, link: str) -> None:
    if re.match(r"^[a-z]+:", link):
        return  # http(s), mailto: not checked offline
    path_text, _, anchor = link.partition("#")
    target = (doc.parent / path_text).resolve() if path_text else doc
    assert target.exists(), f"{doc.name}: link {link!r} points at a missing file"
    if anchor:
        assert target.suffix == ".md", f"{doc.name}: anchor on a non-Markdown file in {link!r}"
        assert anchor in _anchors(target), f"{doc.name}: no heading for #{anchor} in {target.name}"


# ---------------------------------------------------------------------- generated files
def test_configuration_md_is_generated_from_the_model() -> None:
    doc = (REPO_ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    assert doc == reference_markdown(), (
        "docs/configuration.md is out of date: harness-ros config reference > docs/configuration.md"
    )


def test_reference_documents_every_key() -> None:
    keys = {k.key: k for k in config_keys()}
    undocumented = [k for k, item in keys.items() if not item.description]
    assert not undocumented, f"config keys without a description: {undocumented}"
    for expected in (
        "model.api_key_env",
        "observations.views.<name>.pixel_budget",
        "observations.clearance.range_topics",
        "tools[].success_field",
        "tools[].required_arguments",
        "safety.approval_timeout_s",
        "record.path",
        "strict_graph",
    ):
        assert expected in keys
    assert "source" not in keys  # internal, excluded from the model's dump
    assert keys["tools[].timeout_s"].default == "`60.0`"
    assert keys["tools[].name"].default == "**required**"
    assert keys["model.max_retries"].type == "int (≥ 0, ≤ 10)"


def test_config_reference_command_prints_the_reference(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["config", "reference"]) == 0
    assert capsys.readouterr().out == reference_markdown()


def test_harness_params_file_is_generated_from_the_example() -> None:
    expected = params_yaml(EXAMPLE, shown_as="config/example.yaml")
    assert PARAMS_FILE.read_text(encoding="utf-8") == expected, (
        "config/harness_params.yaml is out of date: "
        "harness-ros config params --config config/example.yaml > config/harness_params.yaml"
    )


def _params(path: Path) -> dict[str, object]:
    document = yaml.safe_load(path.read_text(encoding="utf-8"))
    (node,) = document
    return document[node]["ros__parameters"]


def _same(a: HarnessConfig, b: HarnessConfig) -> bool:
    return a.model_dump(exclude={"source"}) == b.model_dump(exclude={"source"})


def test_harness_params_round_trip_to_the_example() -> None:
    flat = _params(PARAMS_FILE)
    config = config_from_flat(flat, base_dir=EXAMPLE.parent, origin=str(PARAMS_FILE))
    assert _same(config, load_config(EXAMPLE))
    assert config.embodiment_profile_file == (REPO_ROOT / "profiles" / "mobile_manipulator.md").resolve()


@pytest.mark.parametrize("path", ["config/sim.yaml", "config/gazebo.yaml", "docs/examples/robot.yaml"])
def test_params_round_trip_for_configs_with_tools(path: str, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))  # ~/... paths expand the same way both times
    source = load_config(REPO_ROOT / path)
    flat = params_document(source)["/**/harness"]["ros__parameters"]
    assert all(value is not None for value in flat.values())  # ROS parameters have no null
    again = config_from_flat(flat, base_dir=(REPO_ROOT / path).parent, origin=path)
    assert _same(again, source)


def test_params_command_reports_a_missing_config(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["config", "params", "--config", str(tmp_path / "nope.yaml")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: Cannot read configuration")
    assert "nope.yaml" in err


@pytest.mark.ros
def test_rcl_reads_the_params_file_into_the_same_config(ros_env: dict[str, str]) -> None:
    """The params file as ROS itself parses it (``--params-file``), for a namespaced node."""
    import rclpy
    from rclpy.context import Context

    context = Context()
    rclpy.init(
        args=["test_docs", "--ros-args", "--params-file", str(PARAMS_FILE)],
        context=context,
        domain_id=int(ros_env["ROS_DOMAIN_ID"]),
    )
    try:
        node = rclpy.create_node(
            "harness",
            namespace="robot1",
            context=context,
            automatically_declare_parameters_from_overrides=True,
        )
        try:
            names = set(_params(PARAMS_FILE))
            flat = {name: node.get_parameter(name).value for name in names}
        finally:
            node.destroy_node()
    finally:
        context.try_shutdown()
    assert flat["memory.min_confidence"] == 0.75
    config = config_from_flat(flat, base_dir=EXAMPLE.parent, origin="rcl")
    assert _same(config, load_config(EXAMPLE))
