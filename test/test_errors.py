"""The package's error tree: every exception class of harness_ros derives from HarnessError.

Each class whose bases look like an exception (a name ending in Error/Exception, or a
builtin exception) is found in the source, wherever it is defined (``ast``: nested ones
too), then loaded to check what it really derives from. ``EXEMPT`` names the few that are
control flow inside one module, never seen by a caller.
"""

from __future__ import annotations

import ast
import builtins
import importlib
import re
from pathlib import Path

import pytest

from harness_ros import errors
from harness_ros.errors import HarnessError

REPO = Path(__file__).resolve().parents[1]
PACKAGES = (REPO / "harness_ros", REPO / "sim" / "harness_ros_sim")
"""The harness and its simulated robots: both raise the one error tree."""

EXEMPT = {
    "harness_ros/skills/session.py:_RefusedError": (
        "control flow inside SkillSession: every raise is caught there and becomes a failure envelope"
    ),
    "harness_ros/evaluation/model_evaluator.py:_RepeatedKeyError": (
        "control flow inside the verdict parser: raised by json.loads' object hook, caught at its "
        "one call and turned into the verdict's reason (a ValueError, as json.loads' own errors)"
    ),
    "sim/harness_ros_sim/learning_eval/scenarios.py:_UnwantedChallengeError": (
        "stops a scenario rehearsal early; caught in the same module, which then rejects the scenario"
    ),
}
"""``file:class`` -> why it is not a HarnessError."""

_BUILTIN_EXCEPTIONS = {
    name
    for name in dir(builtins)
    if isinstance(getattr(builtins, name), type) and issubclass(getattr(builtins, name), BaseException)
}


def _base_name(base: ast.expr) -> str:
    if isinstance(base, ast.Attribute):
        return base.attr
    return base.id if isinstance(base, ast.Name) else ""


def _looks_like_exception(node: ast.ClassDef) -> bool:
    names = [_base_name(base) for base in node.bases]
    return any(name in _BUILTIN_EXCEPTIONS or name.endswith(("Error", "Exception")) for name in names)


def exception_classes() -> list[tuple[str, str, int, bool]]:
    """(file, class name, line, defined at module level) for every exception-like class."""
    found = []
    for path in sorted(path for package in PACKAGES for path in package.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        top = {id(node) for node in tree.body}
        rel = path.relative_to(REPO).as_posix()
        found += [
            (rel, node.name, node.lineno, id(node) in top)
            for node in ast.walk(tree)
            if isinstance(node, ast.ClassDef) and _looks_like_exception(node)
        ]
    return found


def _module(file: str) -> str:
    parts = list(Path(file).with_suffix("").parts)
    if parts[0] == "sim":  # sim/harness_ros_sim/...: the sim package's folder is not a module
        parts = parts[1:]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def test_every_exception_class_derives_from_harness_error() -> None:
    wrong = []
    for file, name, line, top_level in exception_classes():
        key = f"{file}:{name}"
        if key in EXEMPT:
            continue
        if not top_level:
            wrong.append(
                f"{file}:{line} {name} is defined inside a function or class: define it in errors.py"
            )
            continue
        cls = getattr(importlib.import_module(_module(file)), name)
        if not issubclass(cls, HarnessError):
            bases = ", ".join(base.__name__ for base in cls.__mro__[1:-1])
            wrong.append(f"{file}:{line} {name} derives from {bases}, not HarnessError")
        elif issubclass(cls, ValueError):
            wrong.append(f"{file}:{line} {name} is a ValueError too: state why in EXEMPT, or drop it")
    assert not wrong, "exception classes outside the error tree:\n" + "\n".join(wrong)


def test_public_errors_are_defined_in_errors_py_and_drawn_in_its_tree() -> None:
    found = exception_classes()
    public = [(file, name) for file, name, _, _ in found if not name.startswith("_")]
    elsewhere = [f"{file}: {name}" for file, name in public if file != "harness_ros/errors.py"]
    assert not elsewhere, "public exception classes not defined in harness_ros/errors.py: " + ", ".join(
        elsewhere
    )
    tree = errors.__doc__ or ""
    defined = {name for file, name in public}
    assert defined == set(errors.__all__), "errors.__all__ and the classes of errors.py differ"
    missing = [name for name in sorted(defined) if not re.search(rf"(^|[ ─]){name}(\s|$)", tree, re.M)]
    assert not missing, f"classes not drawn in the tree of errors.py's docstring: {missing}"


def test_exempt_entries_still_exist() -> None:
    keys = {f"{file}:{name}" for file, name, _, _ in exception_classes()}
    assert not set(EXEMPT) - keys, f"EXEMPT names classes that are gone: {sorted(set(EXEMPT) - keys)}"


@pytest.mark.parametrize("name", sorted(errors.__all__))
def test_the_old_import_paths_still_work(name: str) -> None:
    # Classes moved into errors.py stay importable from the module that defined them before.
    old = {
        "BindingError": "harness_ros.tools.binding",
        "FieldError": "harness_ros.ros.interfaces",
        "ReportError": "harness_ros.report.run",
        "LocalModelError": "harness_ros.local_model.install",
        "ClientMessageError": "harness_ros.task_api",
        "FrameDecodeError": "harness_ros.observation.pipeline",
        "AmbiguousPublisherError": "harness_ros.ros.publisher_trust",
        "YamlTooLarge": "harness_ros.yaml_safe",
        "ConsoleRefusal": "harness_ros.console.contracts",
    }
    cls = getattr(errors, name)
    assert issubclass(cls, HarnessError)
    if name in old:
        assert getattr(importlib.import_module(old[name]), name) is cls
