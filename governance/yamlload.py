"""YAML for packets and policy: PyYAML's safe loader, refusing duplicate keys
(a repeated ``required_reads:`` must not silently replace the first)."""

from __future__ import annotations

from typing import Any

import yaml

from governance.canonical import has_lone_surrogate
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


def load_yaml(text: str, *, path: str, code: str) -> Any:
    try:
        data = yaml.load(text, Loader=_StrictLoader)  # a SafeLoader subclass
    except yaml.YAMLError as exc:
        raise MalformedInput(f"{path}: not valid YAML: {exc}", code=code, path=path) from None
    # PyYAML decodes an escaped surrogate ("\ud800") into a lone surrogate:
    # not a character, and nothing downstream can encode it.
    if has_lone_surrogate(data):
        raise MalformedInput(
            f"{path}: not valid YAML: an escape names a lone surrogate (\\uD800-\\uDFFF), "
            "which is not a character",
            code=code,
            path=path,
        )
    return data
