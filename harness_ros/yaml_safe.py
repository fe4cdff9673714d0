"""YAML from users, loaded within a budget: no alias bomb keeps the harness busy.

``yaml.safe_load`` builds an alias once and shares it, so a 472-byte file of nested
aliases (the "billion laughs": nine lists of nine references to the list before) loads
at once, and then everything that walks the result (validation, ``config params``,
merge keys, a dump) walks a billion items, for minutes. ``safe_load`` here composes the
document, counts the nodes it stands for with every alias expanded (each anchored node
counted once and remembered, so the count itself is quick), and refuses a document over
``MAX_NODES`` or with an alias to itself, before anything is constructed. The refusal is a
``yaml.YAMLError`` (``YamlTooLarge``), so each caller's existing error names its file.

The budget is far above any real file: the largest YAML in this project (a tool preset)
is about 600 nodes.
"""

from __future__ import annotations

from typing import Any

import yaml

from harness_ros.errors import YamlTooLarge  # defined in the error tree; imported from here too

__all__ = ["MAX_NODES", "YamlTooLarge", "safe_load"]

MAX_NODES = 100_000
"""Most nodes (scalars, lists, mappings) a document may stand for, aliases expanded."""


def _expanded_size(root: yaml.Node, limit: int) -> int:
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()

    def size(node: yaml.Node) -> int:
        key = id(node)
        known = sizes.get(key)
        if known is not None:
            return known
        if key in open_nodes:
            raise YamlTooLarge("an alias refers to the node that holds it (a recursive alias)")
        open_nodes.add(key)
        total = 1
        if isinstance(node, yaml.SequenceNode):
            for child in node.value:
                total += size(child)
                if total > limit:
                    break
        elif isinstance(node, yaml.MappingNode):
            for name, value in node.value:
                total += size(name) + size(value)
                if total > limit:
                    break
        open_nodes.discard(key)
        if total > limit:
            raise YamlTooLarge(
                f"the document stands for more than {limit:,} values once its aliases (*name) are "
                "expanded: refused (nested aliases that multiply, a 'billion laughs'); write the "
                "values out or use fewer aliases"
            )
        sizes[key] = total
        return total

    return size(root)


def safe_load(text: str | bytes, *, max_nodes: int = MAX_NODES) -> Any:
    """``yaml.safe_load(text)``, refusing a document whose aliases expand past ``max_nodes``
    (``YamlTooLarge``, a ``yaml.YAMLError``). Deep nesting raises ``RecursionError`` as
    ``yaml.safe_load`` does."""
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _expanded_size(node, max_nodes)
        return loader.construct_document(node)
    finally:
        loader.dispose()
