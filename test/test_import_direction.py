"""The direction of harness_ros's imports, read statically from the source (``ast``).

Every ``import`` counts wherever it stands: module level, inside a function (a lazy import
still makes one module depend on the other) and under ``if TYPE_CHECKING:`` (a type-only
import still ties two modules' definitions together, and the type checker follows it).
No import is exempt except the ``ALLOWED_FOR_NOW`` entries below, each with its reason.

Rules:

- the repository holds two packages: ``harness_ros`` (the harness) and ``harness_ros_sim``
  (its simulated robots, in ``sim/``), which depends on it; the harness never imports the
  sim package, and no module of the harness names the sim or the demo;
- no cycle between a package's parts (its subpackages and top-level modules), nor between
  two modules;
- ROS (rclpy, rosidl, the generated message packages, launch, ament, anything a ROS
  distribution ships) is imported only in each package's ``ros/`` and ``commands/``: the
  core runs without ROS;
- a part imports only parts of its own layer or of a lower one (``LAYERS``, lowest first):
  the model never reaches up into the plugins, the simulated robots never import the demo.

Each failure names the importing file, the line and the imported module.
"""

from __future__ import annotations

import ast
import importlib.metadata
import itertools
import textwrap
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGE = "harness_ros"
SIM_PACKAGE = "harness_ros_sim"

LAYERS: list[tuple[str, frozenset[str]]] = [
    (
        "foundation",
        frozenset(
            {
                PACKAGE,  # the package's __init__ (its public names are imported lazily)
                "errors",
                "paths",
                "terminal",
                "events",
                "task_api",
                "retention",
                "config",
                "state_dir",
                "testing",
                "validators",
                "dds",
                "yaml_safe",
                "moveit_contract",  # MoveGroup's names and frames, read by the config and the tools
            }
        ),
    ),
    (
        "core",
        frozenset(
            {
                "local_model",
                "model",
                "memory",
                "context",
                "observation",
                "operator",
                "tools",
                "skills",
                "hooks",
                "evaluation",
                "profile",
                "replay",
                "report",
                "startup",
                "trajectory",
                "progress",  # reads the typed trajectory's envelope
                "console",  # the operator console's state and web app (its ROS side is in ros/)
            }
        ),
    ),
    # Builds a harness from the parts below: the plugin registry and the harness itself.
    ("assembly", frozenset({"plugins", "harness"})),
    ("ros", frozenset({"ros"})),
    ("commands", frozenset({"commands"})),
    ("entry point", frozenset({"cli"})),
]
"""harness_ros's parts by layer, lowest first. A part may import its own layer and those below."""

SIM_LAYERS: list[tuple[str, frozenset[str]]] = [
    ("package", frozenset({SIM_PACKAGE, "names"})),
    ("simulated world", frozenset({"sim", "gazebo", "physics", "learning_eval"})),
    ("simulated robots on ROS", frozenset({"ros"})),
    ("demo", frozenset({"demo"})),
    ("commands", frozenset({"commands"})),
]
"""harness_ros_sim's parts by layer (it may import all of harness_ros, which never imports it)."""

PACKAGES: Mapping[str, tuple[Path, list[tuple[str, frozenset[str]]]]] = {
    PACKAGE: (REPO, LAYERS),
    SIM_PACKAGE: (REPO / "sim", SIM_LAYERS),
}
"""Each package of the repository: the folder that holds it, and its layers."""

ROS_LAYERS = ("ros/", "commands/")
"""Folders of each package whose modules may import ROS."""

ALLOWED_FOR_NOW: Mapping[tuple[str, str], str] = {
    ("sim/harness_ros_sim/demo/runner.py", "domain_coordinator"): (
        "the demo reserves a private ROS domain for its child processes, in the runner support code"
    ),
}
"""(importing file, imported module) -> why it is tolerated today. Remove an entry with its import."""

ROS_MODULES = frozenset(
    {"rclpy", "builtin_interfaces", "domain_coordinator", "rpyutils", "message_filters", "cv_bridge"}
)
ROS_PREFIXES = ("rcl", "rmw", "rosidl", "rosbag2", "rosgraph", "ros2", "launch", "ament", "tf2")
ROS_SUFFIXES = ("_msgs", "_srvs", "_interfaces", "_actions")


# ---------------------------------------------------------------------- the walker
@dataclass(frozen=True)
class Import:
    file: str
    """Relative to the repository root, with ``/``."""
    line: int
    importer: str
    imported: str
    """The module as Python resolves it (relative imports resolved; ``from a import b`` is
    ``a.b`` when ``b`` is a module of the package)."""
    type_only: bool

    def where(self) -> str:
        kind = " (under TYPE_CHECKING)" if self.type_only else ""
        return f"{self.file}:{self.line} imports {self.imported}{kind}"


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def collect_imports(
    root: Path, package: str = PACKAGE, shown_from: Path | None = None
) -> tuple[list[Import], set[str]]:
    """Every import statement under ``root/package`` and the package's module names; files
    are named relative to ``shown_from`` (default: ``root``)."""
    files = sorted((root / package).rglob("*.py"))
    modules = {_module_name(path, root) for path in files}
    found: list[Import] = []
    for path in files:
        importer = _module_name(path, root)
        is_package = path.name == "__init__.py"
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        type_only: set[int] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.If) and _is_type_checking(node.test):
                type_only.update(id(inner) for stmt in node.body for inner in ast.walk(stmt))
        rel = path.relative_to(shown_from or root).as_posix()
        for node in ast.walk(tree):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = importer.split(".") if is_package else importer.split(".")[:-1]
                    base = base[: len(base) - (node.level - 1)]
                    source = ".".join([*base, *([node.module] if node.module else [])])
                else:
                    source = node.module or ""
                for alias in node.names:
                    submodule = f"{source}.{alias.name}"
                    targets.append(submodule if submodule in modules else source)
            for target in dict.fromkeys(targets):
                found.append(Import(rel, node.lineno, importer, target, id(node) in type_only))
    return found, modules


def part_of(module: str) -> str:
    """The part of its package a module belongs to: its subpackage or top-level module."""
    parts = module.split(".")
    return parts[0] if len(parts) == 1 else parts[1]


def _ros_distributions() -> set[str]:
    """Top-level modules that a ``ros-*`` distribution installed in this environment provides."""
    provided = importlib.metadata.packages_distributions()
    return {
        module
        for module, dists in provided.items()
        if any(dist.lower().replace("_", "-").startswith("ros-") for dist in dists)
    }


def is_ros_module(module: str, installed_ros: Iterable[str] = ()) -> bool:
    top = module.split(".", maxsplit=1)[0]
    return (
        top in ROS_MODULES
        or top in set(installed_ros)
        or top.startswith(ROS_PREFIXES)
        or top.endswith(ROS_SUFFIXES)
    )


def cycles(edges: Mapping[str, Mapping[str, Import]]) -> list[list[str]]:
    """One cycle per strongly connected group of two or more nodes (Tarjan, then a shortest loop)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(edges.get(node, {})):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    found = []
    for group in groups:
        start, members = group[0], set(group)
        paths = {start: [start]}
        queue = [start]
        loop: list[str] = []
        while queue and not loop:
            here = queue.pop(0)
            for nxt in sorted(edges.get(here, {})):
                if nxt == start:
                    loop = [*paths[here], start]
                    break
                if nxt in members and nxt not in paths:
                    paths[nxt] = [*paths[here], nxt]
                    queue.append(nxt)
        found.append(loop)
    return found


def describe_cycle(loop: list[str], edges: Mapping[str, Mapping[str, Import]]) -> str:
    steps = [f"  {a} -> {b}: {edges[a][b].where()}" for a, b in itertools.pairwise(loop)]
    return " -> ".join(loop) + "\n" + "\n".join(steps)


def graph(imports: Iterable[Import], node_of: Callable[[str], str]) -> dict[str, dict[str, Import]]:
    """node -> imported node -> the first import (by file, line) that makes the edge."""
    edges: dict[str, dict[str, Import]] = defaultdict(dict)
    for item in sorted(imports, key=lambda i: (i.file, i.line)):
        a, b = node_of(item.importer), node_of(item.imported)
        if a != b:
            edges[a].setdefault(b, item)
    return edges


# ---------------------------------------------------------------------- the packages
@pytest.fixture(scope="module", params=list(PACKAGES))
def walked(request: pytest.FixtureRequest) -> tuple[str, list[Import], set[str]]:
    package = request.param
    root, _ = PACKAGES[package]
    return (package, *collect_imports(root, package, shown_from=REPO))


def _own(package: str, imports: list[Import]) -> list[Import]:
    """Imports of the package's own modules, less the ALLOWED_FOR_NOW ones."""
    return [
        item
        for item in imports
        if item.imported.split(".")[0] == package and (item.file, item.imported) not in ALLOWED_FOR_NOW
    ]


def test_every_part_of_the_package_has_a_layer(walked: tuple[str, list[Import], set[str]]) -> None:
    package, _, modules = walked
    parts = {part_of(module) for module in modules}
    layered = [part for _, members in PACKAGES[package][1] for part in members]
    assert len(layered) == len(set(layered)), "a part is named in two layers"
    assert not parts - set(layered), f"parts with no layer: {sorted(parts - set(layered))}"
    assert not set(layered) - parts, f"layers name parts that do not exist: {sorted(set(layered) - parts)}"


def test_no_cycle_between_parts_of_the_package(walked: tuple[str, list[Import], set[str]]) -> None:
    package, imports, _ = walked
    edges = graph(_own(package, imports), part_of)
    found = [describe_cycle(loop, edges) for loop in cycles(edges)]
    assert not found, f"import cycles between parts of {package}:\n" + "\n".join(found)


def test_no_cycle_between_modules(walked: tuple[str, list[Import], set[str]]) -> None:
    package, imports, modules = walked
    own = [item for item in _own(package, imports) if item.imported in modules]
    edges = graph(own, lambda module: module)
    found = [describe_cycle(loop, edges) for loop in cycles(edges)]
    assert not found, f"import cycles between modules of {package}:\n" + "\n".join(found)


def test_ros_is_imported_only_in_the_ros_and_command_layers(
    walked: tuple[str, list[Import], set[str]],
) -> None:
    package, imports, _ = walked
    installed = _ros_distributions()
    folder = PACKAGES[package][0].relative_to(REPO) / package
    allowed = tuple(f"{(folder / layer).as_posix()}/" for layer in ROS_LAYERS)
    wrong = [
        item.where()
        for item in imports
        if is_ros_module(item.imported, installed)
        and not item.file.startswith(allowed)
        and (item.file, item.imported.split(".")[0]) not in ALLOWED_FOR_NOW
    ]
    assert not wrong, f"ROS imported outside {' and '.join(allowed)}:\n" + "\n".join(wrong)


def test_no_layer_imports_a_higher_one(walked: tuple[str, list[Import], set[str]]) -> None:
    package, imports, _ = walked
    layers = PACKAGES[package][1]
    rank = {part: level for level, (_, members) in enumerate(layers) for part in members}
    name = {part: layer for layer, members in layers for part in members}
    wrong = []
    for item in _own(package, imports):
        low, high = part_of(item.importer), part_of(item.imported)
        if rank.get(high, -1) > rank.get(low, len(layers)):
            wrong.append(f"{item.where()}: {low} ({name[low]}) is below {high} ({name[high]})")
    assert not wrong, "imports from a lower layer into a higher one:\n" + "\n".join(wrong)


def test_the_harness_never_imports_the_sim_package() -> None:
    """harness_ros runs on a robot without harness_ros_sim: the sim reaches it only through
    entry points. The launch files and setup.py count too."""
    imports, _ = collect_imports(REPO, PACKAGE)
    for extra in [*sorted((REPO / "launch").glob("*.py")), REPO / "setup.py"]:
        tree = ast.parse(extra.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            rel = extra.relative_to(REPO).as_posix()
            imports += [Import(rel, node.lineno, rel, name, False) for name in names]
    wrong = [item.where() for item in imports if item.imported.split(".")[0] == SIM_PACKAGE]
    assert not wrong, "harness_ros imports the sim package:\n" + "\n".join(wrong)


def test_no_module_of_the_harness_names_the_sim_or_the_demo() -> None:
    """The harness's code knows nothing of the package's simulated robots: not their
    interface package, their topics, their model provider or their module paths. (Data
    files, docs and the example configs may name them.)"""
    names = ("harness_sim_msgs", "/sim/", "harness_demo", SIM_PACKAGE, "sim_robot", "gz_manipulation")
    wrong = [
        f"{path.relative_to(REPO)}:{number}: {line.strip()}"
        for path in sorted((REPO / PACKAGE).rglob("*.py"))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if any(name in line for name in names)
    ]
    assert not wrong, "the harness names the sim or the demo:\n" + "\n".join(wrong)


def test_every_allowance_is_still_needed() -> None:
    present: set[tuple[str, str]] = set()
    for package, (root, _) in PACKAGES.items():
        imports, _ = collect_imports(root, package, shown_from=REPO)
        present |= {(item.file, item.imported) for item in imports}
        present |= {(item.file, item.imported.split(".")[0]) for item in imports}
    stale = [f"{file} -> {module}" for file, module in ALLOWED_FOR_NOW if (file, module) not in present]
    assert not stale, "ALLOWED_FOR_NOW entries whose import is gone (remove them): " + ", ".join(stale)


# ---------------------------------------------------------------------- the walker itself
def _tree(root: Path, files: Mapping[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")


def test_the_walker_sees_lazy_relative_and_type_only_imports(tmp_path: Path) -> None:
    _tree(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/a/__init__.py": "from . import mod\n",
            "pkg/a/mod.py": "def f():\n    from pkg.b import thing\n    import rclpy.node\n",
            "pkg/b/__init__.py": "",
            "pkg/b/thing.py": (
                "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..a.mod import f\n"
            ),
        },
    )
    imports, modules = collect_imports(tmp_path, "pkg")
    seen = {(i.file, i.line, i.imported, i.type_only) for i in imports}
    assert ("pkg/a/__init__.py", 1, "pkg.a.mod", False) in seen
    assert ("pkg/a/mod.py", 2, "pkg.b.thing", False) in seen
    assert ("pkg/a/mod.py", 3, "rclpy.node", False) in seen
    assert ("pkg/b/thing.py", 3, "pkg.a.mod", True) in seen
    edges = graph([i for i in imports if i.imported in modules], lambda module: module)
    [loop] = cycles(edges)
    message = describe_cycle(loop, edges)
    assert loop == ["pkg.a.mod", "pkg.b.thing", "pkg.a.mod"]
    assert "pkg/a/mod.py:2 imports pkg.b.thing" in message
    assert "pkg/b/thing.py:3 imports pkg.a.mod (under TYPE_CHECKING)" in message


@pytest.mark.parametrize(
    ("module", "ros"),
    [
        ("rclpy.node", True),
        ("rosidl_runtime_py", True),
        ("rosbag2_py", True),
        ("launch_ros.actions", True),
        ("builtin_interfaces.msg", True),
        ("sensor_msgs.msg", True),
        ("std_srvs.srv", True),
        ("rcl_interfaces.msg", True),
        ("domain_coordinator", True),
        ("rosbags.rosbag2", False),
        ("numpy", False),
        ("litellm", False),
    ],
)
def test_what_counts_as_ros(module: str, ros: bool) -> None:
    assert is_ros_module(module) is ros
