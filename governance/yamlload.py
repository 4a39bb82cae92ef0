"""YAML for packets and policy: PyYAML's safe loader, refusing duplicate keys
(a repeated ``required_reads:`` must not silently replace the first)."""

from __future__ import annotations

from typing import Any

import yaml

from governance.errors import MalformedInput


class _StrictLoader(yaml.SafeLoader):
    pass


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    loader.flatten_mapping(node)
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r}", key_node.start_mark
            )
        seen.add(key)
    return loader.construct_mapping(node)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def _characters_only(value: Any) -> bool:
    # PyYAML decodes an escaped surrogate ("\ud800") into a lone surrogate:
    # not a character, and nothing downstream can encode it. Anchors can make
    # the data recursive: visit each container once.
    stack, seen = [value], set()
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if not item.isascii() and any("\ud800" <= c <= "\udfff" for c in item):
                return False
        elif isinstance(item, dict | list) and id(item) not in seen:
            seen.add(id(item))
            stack.extend(item.items() if isinstance(item, dict) else item)
        elif isinstance(item, tuple):
            stack.extend(item)
    return True


def load_yaml(text: str, *, path: str, code: str) -> Any:
    try:
        data = yaml.load(text, Loader=_StrictLoader)  # a SafeLoader subclass
    except yaml.YAMLError as exc:
        raise MalformedInput(f"{path}: not valid YAML: {exc}", code=code, path=path) from None
    if not _characters_only(data):
        raise MalformedInput(
            f"{path}: not valid YAML: an escape names a lone surrogate (\\uD800-\\uDFFF), "
            "which is not a character",
            code=code,
            path=path,
        )
    return data
