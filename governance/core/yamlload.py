"""YAML for packets and policy: PyYAML's safe loader, refusing duplicate keys
(a repeated ``required_reads:`` must not silently replace the first)."""

from __future__ import annotations

from typing import Any

import yaml

from governance.core.canonical import has_surrogate
from governance.errors import MalformedInput


class _StrictLoader(yaml.SafeLoader):
    pass


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    loader.flatten_mapping(node)
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node)
        if not isinstance(key, str | int | bool) and key is not None:
            raise yaml.constructor.ConstructorError(
                None, None, "mapping keys must be plain scalars", key_node.start_mark
            )
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r}", key_node.start_mark
            )
        seen.add(key)
    return loader.construct_mapping(node)


def _refuse_float(loader: _StrictLoader, node: yaml.ScalarNode) -> Any:
    # No packet or policy value is fractional; 12000.0 must not pass as an integer.
    raise yaml.constructor.ConstructorError(
        None, None, f"floats are not allowed ({node.value})", node.start_mark
    )


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
_StrictLoader.add_constructor("tag:yaml.org,2002:float", _refuse_float)


def _has_cycle(value: Any) -> bool:
    # YAML aliases can make a structure contain itself; nothing downstream
    # (schema validation, canonical JSON) can walk that.
    on_path: set[int] = set()
    finished: set[int] = set()
    stack: list[tuple[Any, bool]] = [(value, False)]
    while stack:
        item, leaving = stack.pop()
        if leaving:
            on_path.discard(id(item))
            finished.add(id(item))
            continue
        if not isinstance(item, dict | list):
            continue
        if id(item) in on_path:
            return True
        if id(item) in finished:
            continue
        on_path.add(id(item))
        stack.append((item, True))
        children = list(item.values()) if isinstance(item, dict) else item
        stack.extend((child, False) for child in children)
    return False


def load_yaml(text: str, *, path: str, code: str) -> Any:
    try:
        value = yaml.load(text, Loader=_StrictLoader)  # a SafeLoader subclass
    except yaml.YAMLError as exc:
        raise MalformedInput(f"{path}: not valid YAML: {exc}", code=code, path=path) from None
    except RecursionError:
        raise MalformedInput(f"{path}: nested too deeply", code=code, path=path) from None
    if _has_cycle(value):
        raise MalformedInput(
            f"{path}: an alias refers to a mapping or list that contains it", code=code, path=path
        )
    if has_surrogate(value):
        raise MalformedInput(
            f"{path}: a string holds a lone surrogate escape (not UTF-8)", code=code, path=path
        )
    return value
