"""YAML for packets and policy: PyYAML's safe loader, refusing duplicate keys
(a repeated ``required_reads:`` must not silently replace the first), anchors
and aliases (a few hundred bytes of nested aliases expand to gigabytes), and
integers that are not plain decimal (YAML 1.1 reads ``3:20`` as 200)."""

from __future__ import annotations

import re
from typing import Any

import yaml

from governance.core.canonical import has_surrogate
from governance.core.schema import clip
from governance.errors import MalformedInput

_DECIMAL = re.compile(r"-?(?:0|[1-9][0-9]*)")


class _StrictLoader(yaml.SafeLoader):
    def compose_node(self, parent: Any, index: Any) -> Any:
        # Refused while composing, before any node is built: packets and
        # policies are small hand-written files that never need to share one.
        event: Any = self.peek_event()  # type: ignore[no-untyped-call]
        if isinstance(event, yaml.AliasEvent):
            problem = "aliases (*name) are not allowed"
        elif getattr(event, "anchor", None) is not None:
            problem = "anchors (&name) and aliases are not allowed"
        else:
            return super().compose_node(parent, index)
        raise yaml.composer.ComposerError(None, None, problem, event.start_mark)


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
                None, None, f"duplicate key {clip(repr(key), 80)}", key_node.start_mark
            )
        seen.add(key)
    return loader.construct_mapping(node)


def _refuse_float(loader: _StrictLoader, node: yaml.ScalarNode) -> Any:
    # No packet or policy value is fractional; 12000.0 must not pass as an integer.
    raise yaml.constructor.ConstructorError(
        None, None, f"floats are not allowed ({node.value})", node.start_mark
    )


def _decimal_int(loader: _StrictLoader, node: yaml.ScalarNode) -> int:
    # YAML 1.1 also reads 0x2000, 0o17, 017, 1_000, +5 and 3:20 (base 60) as integers.
    if not isinstance(node.value, str) or not _DECIMAL.fullmatch(node.value):
        raise yaml.constructor.ConstructorError(
            None,
            None,
            f"integers must be plain decimal digits ({clip(str(node.value), 40)})",
            node.start_mark,
        )
    return int(node.value)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
_StrictLoader.add_constructor("tag:yaml.org,2002:float", _refuse_float)
_StrictLoader.add_constructor("tag:yaml.org,2002:int", _decimal_int)


def load_yaml(text: str, *, path: str, code: str) -> Any:
    try:
        value = yaml.load(text, Loader=_StrictLoader)  # a SafeLoader subclass
    except yaml.YAMLError as exc:
        # The problem may quote input; the marks (line, column, a short snippet) stay whole.
        for part in ("context", "problem", "note"):
            if isinstance(getattr(exc, part, None), str):
                setattr(exc, part, clip(getattr(exc, part), 160))
        raise MalformedInput(f"{path}: not valid YAML: {exc}", code=code, path=path) from None
    except RecursionError:
        raise MalformedInput(f"{path}: nested too deeply", code=code, path=path) from None
    if has_surrogate(value):
        raise MalformedInput(
            f"{path}: a string holds a lone surrogate escape (not UTF-8)", code=code, path=path
        )
    return value
