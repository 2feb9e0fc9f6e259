"""YAML for configuration files, with limits: ``yaml.safe_load`` builds no objects but expands aliases, so a
few hundred bytes of nested aliases (the "billion laughs") make a structure of billions of entries that
everything after the load (validation, the manifest's JSON) walks in full: minutes and gigabytes.

``load_limited`` refuses a document larger than ``MAX_BYTES``, and one whose nodes, counted with every
alias expanded, exceed ``MAX_NODES``, before anything is constructed. A config of this project has tens
of nodes; the limits leave room for hand-written files a thousand times larger.

>>> load_limited("methods: [ar, pld]\\nlimit: 2\\n")
{'methods': ['ar', 'pld'], 'limit': 2}
>>> bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\\n" + "".join(
...     f"{c}: &{c} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\\n" for p, c in zip("abcdefg", "bcdefgh"))
>>> load_limited(bomb)
Traceback (most recent call last):
...
specbench.files.safe_yaml.YamlLimitError: aliases expand the document to more than 100000 nodes (a "billion laughs"?)
"""
from __future__ import annotations

from typing import Any

import yaml

MAX_BYTES = 1 << 20
MAX_NODES = 100_000


class YamlLimitError(ValueError):
    """The document is larger than the limits allow."""


def _expanded_size(root: yaml.Node) -> int:
    """Nodes under ``root`` with aliases expanded (a shared node counts each time it is used), stopping as
    soon as the count passes ``MAX_NODES``; computed once per distinct node, so it never expands anything."""
    sizes: dict[int, int] = {}
    on_path: set[int] = set()

    def size(node: yaml.Node) -> int:
        key = id(node)
        if key in sizes:
            return sizes[key]
        if key in on_path:
            raise YamlLimitError("a recursive alias (a node that contains itself)")
        on_path.add(key)
        total = 1
        if isinstance(node, yaml.SequenceNode):
            children: list[yaml.Node] = list(node.value)
        elif isinstance(node, yaml.MappingNode):
            children = [n for pair in node.value for n in pair]
        else:
            children = []
        for child in children:
            total += size(child)
            if total > MAX_NODES:
                raise YamlLimitError(f"aliases expand the document to more than {MAX_NODES} nodes (a \"billion laughs\"?)")
        on_path.discard(key)
        sizes[key] = total
        return total

    return size(root)


def load_limited(text: str) -> Any:
    """``yaml.safe_load(text)`` within ``MAX_BYTES`` and ``MAX_NODES`` (``YamlLimitError`` otherwise; syntax
    errors stay ``yaml.YAMLError``)."""
    if len(text.encode("utf-8", "surrogatepass")) > MAX_BYTES:
        raise YamlLimitError(f"larger than {MAX_BYTES // 1024} KiB; a configuration is a few hundred bytes")
    loader = yaml.SafeLoader(text)
    try:  # (the composer and the size walk both recurse: a document nested thousands deep stops them)
        node = loader.get_single_node()
        if node is None:
            return None
        _expanded_size(node)
        return loader.construct_document(node)
    except RecursionError:
        raise YamlLimitError("nested too deeply") from None
    finally:
        loader.dispose()
