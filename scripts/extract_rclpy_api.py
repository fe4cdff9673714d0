#!/usr/bin/env python3
"""Extract the Python API surface of one rclpy release from its source, as JSON.

    extract_rclpy_api.py SOURCE --distro NAME --release VERSION [--out FILE]

SOURCE is an rclpy source tree: a checkout of github.com/ros2/rclpy (the package is read
from ``rclpy/rclpy``, message info from ``rclpy/src/rclpy/subscription.cpp``) or an
installed ``rclpy`` package folder (a wheel: message info from the ``MessageInfo``
TypedDict of ``subscription.py``). Nothing is imported: every file is read with ``ast``.

What it records (test/test_rclpy_api_surface.py compares the code's rclpy uses with it):

- ``modules``: each module (``rclpy.node``...) with its top-level names, its functions'
  parameters, and its classes: bases (resolved to ``module.Class`` where they are
  rclpy's), and members (methods with their parameters, properties, class attributes,
  and the ``self.x`` attributes set in methods);
- ``message_info_keys``: the keys of the message info a ``(msg, info)`` callback gets;
- ``init_returns_context_manager``: whether ``rclpy.init()`` returns a value (rclpy 7.4+);
- ``subscription_callback_with_info``: whether the executor passes ``(msg, info)``
  (``Subscription.CallbackType``, rclpy 3.4+).

test/data/rclpy_api/README.md says which commands and releases produced the files there.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
from pathlib import Path
from typing import Any


def _package_root(source: Path) -> Path:
    for candidate in (source / "rclpy" / "rclpy", source / "rclpy", source):
        if (candidate / "__init__.py").is_file() and (candidate / "node.py").is_file():
            return candidate
    raise SystemExit(
        f"error: {source}: no rclpy package (rclpy/rclpy/__init__.py or __init__.py with node.py)"
    )


def _params(function: ast.FunctionDef | ast.AsyncFunctionDef) -> dict[str, Any]:
    args = function.args
    positional = [a.arg for a in [*args.posonlyargs, *args.args]]
    return {
        "params": positional + [a.arg for a in args.kwonlyargs],
        "required_positional": len(positional) - len(args.defaults),
        "varargs": args.vararg is not None,
        "varkw": args.kwarg is not None,
    }


def _decorators(function: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    names = set()
    for decorator in function.decorator_list:
        if isinstance(decorator, ast.Name):
            names.add(decorator.id)
        elif isinstance(decorator, ast.Attribute):
            names.add(decorator.attr)
    return names


def _targets(node: ast.stmt) -> list[ast.expr]:
    if isinstance(node, ast.Assign):
        return list(node.targets)
    if isinstance(node, (ast.AnnAssign, ast.AugAssign)):
        return [node.target]
    return []


def _class(cls: ast.ClassDef, imports: dict[str, str], module: str) -> dict[str, Any]:
    members: dict[str, Any] = {}
    for item in cls.body:
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
            decorators = _decorators(item)
            if "property" in decorators or "getter" in decorators:
                members[item.name] = "property"
            elif "setter" in decorators or "deleter" in decorators:
                members.setdefault(item.name, "property")
            else:
                members[item.name] = _params(item)
            for sub in ast.walk(item):  # instance attributes: self.x = ...
                for target in _targets(sub) if isinstance(sub, ast.stmt) else []:
                    for element in target.elts if isinstance(target, ast.Tuple) else [target]:
                        if (
                            isinstance(element, ast.Attribute)
                            and isinstance(element.value, ast.Name)
                            and element.value.id == "self"
                        ):
                            members.setdefault(element.attr, "attribute")
        elif isinstance(item, ast.ClassDef):
            members[item.name] = "class"
        else:
            for target in _targets(item):
                if isinstance(target, ast.Name):
                    members[target.id] = "attribute"
    bases = []
    for base in cls.bases:
        text = ast.unparse(base).split("[")[0]
        head, _, rest = text.partition(".")
        if head in imports:
            bases.append(imports[head] + (f".{rest}" if rest else ""))
        elif head in _top_level_classes(module):
            bases.append(f"{module}.{text}")
        else:
            bases.append(text)
    public = {name: kind for name, kind in members.items() if not name.startswith("_") or name in _DUNDERS}
    return {"bases": bases, "members": dict(sorted(public.items()))}


_DUNDERS = frozenset({"__init__", "__enter__", "__exit__", "__call__", "__await__", "__iter__"})
"""The private members kept: the dunders code reaches through syntax (calls, with, await)."""


_CLASSES: dict[str, set[str]] = {}


def _top_level_classes(module: str) -> set[str]:
    return _CLASSES.get(module, set())


def _module(path: Path, module: str) -> dict[str, Any]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    imports: dict[str, str] = {}
    names: set[str] = set()
    functions: dict[str, Any] = {}
    classes: dict[str, Any] = {}
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    body: list[ast.stmt] = []
    for node in tree.body:  # module-level names, also under if/try (TYPE_CHECKING, fallbacks)
        if isinstance(node, (ast.If, ast.Try)):
            body.extend(node.body)
            body.extend(getattr(node, "orelse", []))
            for handler in getattr(node, "handlers", []):
                body.extend(handler.body)
        else:
            body.append(node)
    _CLASSES[module] = {n.name for n in body if isinstance(n, ast.ClassDef)}
    for node in body:
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parent, base] if base else parent)
            for alias in node.names:
                names.add(alias.asname or alias.name)
                imports[alias.asname or alias.name] = f"{base}.{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                names.add(alias.asname or alias.name.split(".")[0])
                imports[alias.asname or alias.name.split(".")[0]] = (
                    alias.name if alias.asname else alias.name.split(".")[0]
                )
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names.add(node.name)
            functions[node.name] = _params(node)
            returns = [sub for sub in ast.walk(node) if isinstance(sub, ast.Return) and sub.value is not None]
            if (node.returns is not None and ast.unparse(node.returns) != "None") or returns:
                functions[node.name]["returns_value"] = True
        elif isinstance(node, ast.ClassDef):
            names.add(node.name)
            classes[node.name] = _class(node, imports, module)
        else:
            for target in _targets(node):
                for element in target.elts if isinstance(target, ast.Tuple) else [target]:
                    if isinstance(element, ast.Name):
                        names.add(element.id)
    return {
        "names": sorted(n for n in names if not n.startswith("__") or n == "__all__"),
        "functions": dict(sorted(functions.items())),
        "classes": dict(sorted(classes.items())),
    }


def _message_info_keys(source: Path, root: Path, modules: dict[str, Any]) -> tuple[list[str], str]:
    for cpp in (
        source / "rclpy" / "src" / "rclpy" / "subscription.cpp",
        source / "src" / "rclpy" / "subscription.cpp",
    ):
        if cpp.is_file():
            text = cpp.read_text(encoding="utf-8")
            return sorted(set(re.findall(r'"(\w+)"_a\s*=', text))), "src/rclpy/subscription.cpp"
    typed = modules.get("rclpy.subscription", {}).get("classes", {}).get("MessageInfo")
    if typed is None:
        raise SystemExit(
            f"error: {root}: no subscription.cpp and no MessageInfo TypedDict in subscription.py"
        )
    return sorted(typed["members"]), "rclpy/subscription.py MessageInfo"


def extract(source: Path, distro: str, release: str) -> dict[str, Any]:
    root = _package_root(source)
    modules: dict[str, Any] = {}
    files = sorted(p for p in root.rglob("*.py") if "test" not in p.relative_to(root).parts)
    # classes first, so that a base class in the same module resolves
    for path in files:
        relative = path.relative_to(root).with_suffix("")
        parts = ["rclpy", *relative.parts]
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = _module(path, ".".join(parts))
    keys, keys_from = _message_info_keys(source, root, modules)
    subscription = modules["rclpy.subscription"]["classes"]["Subscription"]["members"]
    return {
        "distro": distro,
        "rclpy": release,
        "message_info_keys": keys,
        "message_info_keys_from": keys_from,
        "init_returns_context_manager": bool(modules["rclpy"]["functions"]["init"].get("returns_value")),
        "subscription_callback_with_info": "CallbackType" in subscription,
        "modules": dict(sorted(modules.items())),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("source", type=Path, help="rclpy checkout, or an installed rclpy package folder")
    parser.add_argument("--distro", required=True, help="ROS 2 distribution (humble, jazzy, kilted)")
    parser.add_argument("--release", required=True, help="the rclpy release read (a tag, e.g. 3.3.15)")
    parser.add_argument("--out", type=Path, help="write here (default: stdout)")
    args = parser.parse_args(argv)
    text = json.dumps(extract(args.source, args.distro, args.release), indent=1, sort_keys=False) + "\n"
    if args.out is None:
        sys.stdout.write(text)
    else:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
