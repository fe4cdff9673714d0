"""package.xml declares exactly what the code imports, with keys rosdep knows.

rosdep cannot run here (no ROS install, no rosdep database), so these checks are static:
every dependency key of the repository's package.xml files is in
test/data/rosdep_keys.txt (keys found in ros/rosdistro at the commit its header records),
every third-party module imported by harness_ros/, launch/ and setup.py maps to an
exec/buildtool dependency or to the pip remainder (requirements-ros.txt) and nothing is
declared that nothing imports; the same for test/ and test_depend.
"""

from __future__ import annotations

import ast
import re
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
KEYS_FILE = REPO / "test" / "data" / "rosdep_keys.txt"
PIP_FILE = REPO / "requirements-ros.txt"

MODULE_KEYS = {
    "numpy": "python3-numpy",
    "cv2": "python3-opencv",
    "yaml": "python3-yaml",
    "filelock": "python3-filelock",
    "tqdm": "python3-tqdm",
    "pydantic": "python3-pydantic",
    "pydantic_core": "python3-pydantic",
    "annotated_types": "python3-pydantic",
    "jsonschema": "python3-jsonschema",
    "referencing": "python3-jsonschema",  # jsonschema >= 4.18 depends on it
    "setuptools": "python3-setuptools",
    "pytest": "python3-pytest",
    "hypothesis": "python3-hypothesis",
}
"""Imported module -> rosdep key, for modules whose key is not the module's name."""

PIP_ONLY = {
    "markdown_it": "markdown-it-py",
    "litellm": "litellm",
    "rosbags": "rosbags",
    "rosbags.image": "rosbags-image",
    "starlette": "starlette",  # harness-ros console
    "uvicorn": "uvicorn",
}
"""Imported module -> pip distribution, for modules that have no rosdep key."""

PIP_WITHOUT_IMPORT = {"mcp": "litellm imports it whenever tools are passed"}
"""Pip remainder entries no module of ours imports, with the reason they are there."""

OPTIONAL_IMPORTS = {
    "xllamacpp": "the local model's runtime: `make local-model` / `harness-ros model install` "
    "installs it, never the base install or rosdep (imported only when a local model is served)",
    "jinja2": "only test/test_local_model.py renders the served chat template with it; litellm "
    "depends on it, and it is there whenever the local model is",
    "mujoco": "the physics robot's simulator (harness_ros_sim.physics, imported only when the physics "
    "robot runs: harness-ros sim --physics, stretch3_physics); docs/physics-sim.md installs it",
    "stretch_urdf": "the physics robot's model (hello-robot-stretch-urdf), imported with mujoco",
    "mypy": "the type checker of `make typecheck` (requirements.txt), a development tool: only "
    "test/test_typecheck_scope.py imports it, and skips where it is not installed (a colcon test run)",
}
"""Modules of optional extras (the local model, the physics robot), with why no rosdep key or
pip line declares them."""

TEST_DEPS_WITHOUT_IMPORT = {"python3-pytest-timeout": "pyproject.toml sets the pytest `timeout` option"}


# ---------------------------------------------------------------------- helpers
def known_keys() -> dict[str, str]:
    keys: dict[str, str] = {}
    for line in KEYS_FILE.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            key, source = line.split(maxsplit=1)
            assert key not in keys, f"{key} listed twice in {KEYS_FILE.name}"
            keys[key] = source
    return keys


def package_files() -> list[Path]:
    skip = {".venv", "build", "install", "log", ".git"}
    return sorted(path for path in REPO.rglob("package.xml") if not skip & set(path.relative_to(REPO).parts))


def workspace_packages() -> set[str]:
    """Packages rosdep skips with --ignore-src: colcon builds them from this repository
    (not the test stand-ins below a COLCON_IGNORE: the distribution's packages are used)."""
    found = set()
    for path in package_files():
        ignored = any((REPO / folder / "COLCON_IGNORE").exists() for folder in path.relative_to(REPO).parents)
        if not ignored:
            found.add(ET.parse(path).getroot().findtext("name", "").strip())
    return found


def dependencies(path: Path, *tags: str) -> dict[str, ET.Element]:
    root = ET.parse(path).getroot()
    return {el.text.strip(): el for tag in tags for el in root.findall(tag) if el.text}


def imported_modules(*roots: Path, own: tuple[str, ...] = ("harness_ros",)) -> dict[str, set[str]]:
    """Third-party modules (two-level for rosbags) -> files importing them; ``own`` are the
    packages the files belong to (another package of the workspace is a dependency)."""
    local = set(own)
    files: list[Path] = []
    for root in roots:
        found = [root] if root.is_file() else sorted(root.rglob("*.py"))
        files += found
        if root.name == "test":  # test scripts import each other by bare name (support, make_bags)
            # (not the interface stand-ins: test/interfaces holds .action files, no modules)
            folders = [p for p in root.rglob("*") if p.is_dir() and (root / "interfaces") not in p.parents]
            local |= {path.stem for path in found} | {path.name for path in folders}
    modules: dict[str, set[str]] = {}
    for path in files:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            for name in names:
                top = name.split(".")[0]
                if top in sys.stdlib_module_names or top in local or top in OPTIONAL_IMPORTS:
                    continue
                module = ".".join(name.split(".")[:2]) if top == "rosbags" else top
                if module not in PIP_ONLY:
                    module = top
                modules.setdefault(module, set()).add(str(path.relative_to(REPO)))
    return modules


def requirement(module: str, ros_keys: set[str]) -> tuple[str, str]:
    """('key', rosdep key) or ('pip', distribution) a module needs; fails on an unknown one."""
    if module in PIP_ONLY:
        return "pip", PIP_ONLY[module]
    if module in MODULE_KEYS:
        return "key", MODULE_KEYS[module]
    if module in ros_keys:  # ROS packages: the Python package is the package name
        return "key", module
    pytest.fail(
        f"unknown import {module!r}: add its rosdep key (or pip distribution) to "
        "test/test_package_deps.py, package.xml or requirements-ros.txt, and test/data/rosdep_keys.txt"
    )


def pip_requirements() -> dict[str, str]:
    """requirements-ros.txt: distribution name -> version specifier text."""
    out: dict[str, str] = {}
    for raw in PIP_FILE.read_text(encoding="utf-8").splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        match = re.fullmatch(r"([A-Za-z0-9][A-Za-z0-9._-]*)\s*((?:[<>=!~]=?\s*[\w.]+\s*,?\s*)*)", line)
        assert match, f"requirements-ros.txt: cannot read {line!r}"
        name = match.group(1).lower()
        assert name not in out, f"requirements-ros.txt lists {name} twice"
        out[name] = match.group(2).replace(" ", "")
    return out


def version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", text)[:3])


def satisfies(installed: str, spec: str) -> bool:
    for clause in filter(None, spec.split(",")):
        op, bound = re.fullmatch(r"([<>=!~]=?)(.+)", clause).groups()  # type: ignore[union-attr]
        have, want = version(installed), version(bound)
        ok = {
            ">=": have >= want,
            ">": have > want,
            "<": have < want,
            "<=": have <= want,
            "==": have == want,
            "!=": have != want,
        }.get(op)
        assert ok is not None, f"unsupported specifier {clause!r}"
        if not ok:
            return False
    return True


def ros_package_keys() -> set[str]:
    return {key for key, source in known_keys().items() if "distribution.yaml" in source}


# ---------------------------------------------------------------------- rosdep keys
def test_keys_file_records_the_rosdistro_commit_and_sources() -> None:
    header = KEYS_FILE.read_text(encoding="utf-8")
    assert re.search(r"ros/rosdistro commit [0-9a-f]{40}\b", header)
    keys = known_keys()
    assert list(keys) == sorted(keys)
    allowed = {
        "rosdep/base.yaml",
        "rosdep/python.yaml (ubuntu jammy, noble)",
        "humble,jazzy,kilted/distribution.yaml",
    }
    assert set(keys.values()) <= allowed
    # Python keys are python3-*, ROS package keys are package names: never mixed up.
    for key, source in keys.items():
        assert key.startswith("python3-") == source.startswith("rosdep/python.yaml"), key


@pytest.mark.parametrize("path", package_files(), ids=lambda p: str(p.relative_to(REPO)))
def test_package_xml_uses_only_known_rosdep_keys(path: Path) -> None:
    keys = set(known_keys()) | workspace_packages()
    root = ET.parse(path).getroot()
    used = [el.text.strip() for el in root if el.tag.endswith("depend") and el.text]
    assert used, f"{path} declares no dependency"
    unknown = sorted(set(used) - keys)
    assert not unknown, f"{path.relative_to(REPO)}: not rosdep keys (see {KEYS_FILE.name}): {unknown}"
    assert len(used) == len(set(used)), f"{path.relative_to(REPO)} declares a key twice"


def test_known_pip_only_names_are_not_rosdep_keys() -> None:
    # The keys the old package.xml used, which rosdep does not have.
    keys = set(known_keys())
    for name in ("python3-markdown-it", "python3-litellm-pip", "python3-rosbags-pip"):
        assert name not in keys
    declared = dependencies(REPO / "package.xml", "exec_depend", "depend", "build_depend", "test_depend")
    assert not {key for key in declared if key.endswith("-pip")}, "pip keys belong in requirements-ros.txt"


# ---------------------------------------------------------------------- imports
RUNTIME = {
    "harness_ros": (REPO / "package.xml", ["harness_ros", "launch", "setup.py"]),
    "harness_ros_sim": (REPO / "sim" / "package.xml", ["sim/harness_ros_sim", "sim/launch", "sim/setup.py"]),
}
"""Each Python package of the repository: its package.xml and what it installs."""


@pytest.mark.parametrize("package", list(RUNTIME))
def test_runtime_imports_are_declared_exactly(package: str) -> None:
    ros_keys = ros_package_keys() | workspace_packages()
    manifest, roots = RUNTIME[package]
    modules = imported_modules(*(REPO / root for root in roots), own=(package,))
    needed_keys: dict[str, set[str]] = {}
    needed_pip: dict[str, set[str]] = {}
    for module, files in modules.items():
        kind, name = requirement(module, ros_keys)
        (needed_keys if kind == "key" else needed_pip).setdefault(name, set()).update(files)

    declared = dependencies(manifest, "exec_depend", "depend", "buildtool_depend")
    pip = pip_requirements()
    where = manifest.relative_to(REPO)
    missing = {key: sorted(files)[:2] for key, files in needed_keys.items() if key not in declared}
    assert not missing, f"imported but not in {where}: {missing}"
    unused = sorted(set(declared) - set(needed_keys))
    assert not unused, f"{where} declares what nothing imports: {unused}"
    missing_pip = {name: sorted(files)[:2] for name, files in needed_pip.items() if name not in pip}
    assert not missing_pip, f"imported, no rosdep key, not in requirements-ros.txt: {missing_pip}"
    # What the test relies on: the modules the issue named are among the imports.
    if package == "harness_ros":
        assert {"rcl_interfaces", "unique_identifier_msgs", "rosidl_parser"} <= set(needed_keys)
        assert {"python3-jsonschema", "python3-tqdm"} <= set(needed_keys)
    else:  # the sim package depends on the harness and on the sim's interfaces
        assert {"harness_ros", "harness_sim_msgs"} <= set(needed_keys)


def test_test_imports_are_declared_exactly() -> None:
    ros_keys = ros_package_keys() | workspace_packages()
    runtime = dependencies(REPO / "package.xml", "exec_depend", "depend")
    test_deps = dependencies(REPO / "package.xml", "test_depend")
    pip = pip_requirements()
    needed: set[str] = set()
    # The simulated robots' tests live in test/ beside the harness's (one conftest, one run);
    # declaring harness_ros_sim a test_depend of harness_ros would make a dependency cycle
    # for colcon, so test/ may import it without one.
    for module in imported_modules(REPO / "test", own=("harness_ros", "harness_ros_sim")):
        kind, name = requirement(module, ros_keys)
        if kind == "pip":
            assert name in pip, f"test/ imports {module} ({name}): not in requirements-ros.txt"
        elif name not in runtime:
            needed.add(name)
    assert needed <= set(test_deps), f"test/ imports, not in test_depend: {sorted(needed - set(test_deps))}"
    assert set(test_deps) - needed == set(TEST_DEPS_WITHOUT_IMPORT), "test_depend nothing in test/ needs"
    assert "timeout" in (REPO / "pyproject.toml").read_text(encoding="utf-8")


# ---------------------------------------------------------------------- pip remainder
def test_pip_remainder_is_what_rosdep_cannot_provide() -> None:
    pip = pip_requirements()
    assert not [name for name in pip if name.startswith("ros-")], "ROS comes from the distribution, not pip"
    bounded = {
        key: el.get("version_gte")
        for key, el in dependencies(REPO / "package.xml", "exec_depend", "depend").items()
        if el.get("version_gte")
    }
    pip_name = {"python3-pydantic": "pydantic", "python3-jsonschema": "jsonschema"}
    assert set(bounded) == set(pip_name), "a version_gte key needs its pip line (and this map)"
    for key, minimum in bounded.items():
        name = pip_name[key]
        assert name in pip, f"{key} needs >= {minimum}: requirements-ros.txt must install {name}"
        assert f">={minimum}" in pip[name].split(","), f"{name}: {pip[name]!r} vs version_gte {minimum}"
    assert version(bounded["python3-pydantic"]) >= (2,), "the config model is pydantic v2"
    expected = set(PIP_ONLY.values()) | set(PIP_WITHOUT_IMPORT) | set(pip_name.values())
    assert set(pip) == expected


def test_pip_remainder_admits_the_versions_the_tests_ran_with() -> None:
    # requirements.txt/constraints.txt build the venv the suite runs in: the colcon
    # user's pip step must accept the same versions, or the tests say nothing about it.
    venv_names = {
        line.split("#", 1)[0].strip().lower()
        for line in (REPO / "requirements.txt").read_text(encoding="utf-8").splitlines()
    }
    pins = dict(
        line.lower().split("==", 1)
        for line in (REPO / "constraints.txt").read_text(encoding="utf-8").splitlines()
        if "==" in line and not line.startswith("#")
    )
    for name, spec in pip_requirements().items():
        assert name in venv_names, f"{name} is not in requirements.txt: the suite never runs with it"
        assert name in pins, f"{name} has no pin in constraints.txt"
        assert satisfies(pins[name], spec), f"{name}: tested {pins[name]} is outside {spec!r}"


def test_satisfies_reads_bounds() -> None:
    assert satisfies("1.106.12", ">=1.106,<1.107")
    assert not satisfies("1.107.0", ">=1.106,<1.107")
    assert not satisfies("1.10.14", ">=2.0,<3")


# ---------------------------------------------------------------------- docs
@pytest.mark.parametrize("distro", ["humble", "jazzy", "kilted"])
def test_robot_guide_gives_the_commands_for_each_distribution(distro: str) -> None:
    text = (REPO / "docs" / "robot.md").read_text(encoding="utf-8")
    start = text.index(f"<!-- install: {distro} -->")
    block = text[start : text.index("```\n", text.index("```bash", start) + 7)]
    assert f"source /opt/ros/{distro}/setup.bash" in block
    # rosdep and colcon stop at a package folder: the nested interface package is named.
    assert (
        f"rosdep install --from-paths src src/harness_ros/interfaces --ignore-src -y --rosdistro {distro}"
        in block
    )
    assert re.search(r"python3 -m pip install (--user )?-r src/harness_ros/requirements-ros\.txt", block)
    assert "colcon build --base-paths src src/harness_ros/interfaces --packages-up-to harness_ros" in block


@pytest.mark.parametrize("path", package_files(), ids=lambda p: str(p.relative_to(REPO)))
def test_package_xml_is_valid_for_catkin_pkg(path: Path) -> None:
    # catkin_pkg is the parser rosdep, colcon and bloom read package.xml with.
    parsing = pytest.importorskip("catkin_pkg.package", reason="catkin_pkg is not installed")
    package = parsing.parse_package(str(path))
    package.validate()
    assert package.package_format == 3
    if package.name == "harness_ros":
        assert package.get_build_type() == "ament_python"
        gte = {dep.name: dep.version_gte for dep in package.exec_depends if dep.version_gte}
        assert gte == {"python3-pydantic": "2.0", "python3-jsonschema": "4.18"}
