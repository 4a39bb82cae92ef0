"""Generate ``governance/core/validators.py`` from the shipped JSON Schemas.

Usage::

    python scripts/generate_validators.py          # rewrite the module
    python scripts/generate_validators.py --check  # exit 1 if it is out of date

Importing jsonschema (with referencing, attrs and rpds) costs about 75 ms, more
than the rest of a build. The generated module answers one question without
it: is this document valid? ``True`` is exact. It is only ever answered for
plain JSON data (dicts with string keys, lists, strings, ints, bools, None; no
floats, where JSON Schema's number equality differs from Python's); anything
else, and every document that is not valid, goes to jsonschema, which stays
the reference and words the rejection. So the generated code can never accept
what jsonschema rejects; tests/test_validators.py checks that differentially.

Only the keywords the shipped schemas use are supported; any other keyword
stops the generator with an error rather than being ignored.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SCHEMAS = ROOT / "governance" / "core" / "schemas"
TARGET = ROOT / "governance" / "core" / "validators.py"

# Annotations only: they change no instance's validity.
_IGNORED = frozenset({"$schema", "$id", "title", "description", "$comment", "$defs"})
_SUPPORTED = frozenset(
    {
        "$ref",
        "type",
        "const",
        "enum",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "prefixItems",
        "minItems",
        "maxItems",
        "uniqueItems",
        "minLength",
        "maxLength",
        "pattern",
        "minimum",
        "maximum",
        "allOf",
        "anyOf",
        "oneOf",
        "not",
        "if",
        "then",
        "else",
    }
)

_NOT_TYPE = {
    "object": "type(x) is not dict",
    "array": "type(x) is not list",
    "string": "type(x) is not str",
    "integer": "type(x) is not int",
    "number": "type(x) is not int",
    "boolean": "type(x) is not bool",
    "null": "x is not None",
}

_TYPE_TESTS = {
    "object": "type(x) is dict",
    "array": "type(x) is list",
    "string": "type(x) is str",
    "integer": "type(x) is int",
    # No floats reach a generated validator: a number is an int here.
    "number": "type(x) is int",
    "boolean": "type(x) is bool",
    "null": "x is None",
}


class _Generator:
    def __init__(self, name: str, schema: dict[str, Any]) -> None:
        self.name = name
        self.root = schema
        self.prefix = "_" + name.replace("-", "_")
        self.functions: list[str] = []
        self.constants: list[str] = []
        self.by_id: dict[int, str] = {}
        self.refs: dict[str, str] = {}
        self.counter = 0

    def _new_name(self) -> str:
        self.counter += 1
        return f"{self.prefix}_{self.counter}"

    def _constant(self, value: str) -> str:
        name = f"{self._new_name()}_c".upper()
        self.constants.append(f"{name} = {value}")
        return name

    def _ref(self, ref: str) -> str:
        if not ref.startswith("#/$defs/") or "/" in ref[len("#/$defs/") :]:
            raise SystemExit(f"{self.name}: unsupported $ref {ref!r}")
        if self.refs.get(ref) == "":
            raise SystemExit(f"{self.name}: recursive $ref {ref!r} is not supported")
        if ref not in self.refs:
            self.refs[ref] = ""  # reserved: a recursive reference resolves to the same function
            self.refs[ref] = self.function(self.root["$defs"][ref[len("#/$defs/") :]])
        return self.refs[ref]

    def function(self, schema: Any) -> str:
        """The name of a function ``(x) -> bool`` that is True iff ``x`` is valid."""
        if schema is True:
            return "_always"
        if schema is False:
            return "_never"
        if not isinstance(schema, dict):
            raise SystemExit(f"{self.name}: a schema must be an object or a boolean")
        unknown = set(schema) - _SUPPORTED - _IGNORED
        if unknown:
            raise SystemExit(f"{self.name}: unsupported keywords {sorted(unknown)}")
        if not set(schema) - _IGNORED:
            return "_always"
        if set(schema) - _IGNORED == {"$ref"}:
            return self._ref(schema["$ref"])
        name = self._new_name()
        body = self._body(schema)
        lines = [
            f"def {name}(x: Any) -> bool:",
            *(f"    {line}" for line in body),
            "    return True",
        ]
        self.functions.append("\n".join(lines))
        return name

    def _body(self, s: dict[str, Any]) -> list[str]:
        out: list[str] = []
        if "$ref" in s:
            out.append(f"if not {self._ref(s['$ref'])}(x):")
            out.append("    return False")
        types = s.get("type", [])
        types = types if isinstance(types, list) else [types]
        # With one declared type, what follows needs no guard of its own.
        known = types[0] if len(types) == 1 else None
        if len(types) == 1:
            out.append(f"if {_NOT_TYPE[types[0]]}:")
            out.append("    return False")
        elif types:
            test = " or ".join(_TYPE_TESTS[t] for t in types)
            out.append(f"if not ({test}):")
            out.append("    return False")
        if "const" in s:
            out.append(f"if not _same(x, {json_literal(s['const'])}):")
            out.append("    return False")
        if "enum" in s:
            options = self._constant(json_literal(s["enum"]))
            out.append(f"if not any(_same(x, option) for option in {options}):")
            out.append("    return False")
        out.extend(self._guarded("object", known, self._object(s)))
        out.extend(self._guarded("array", known, self._array(s)))
        out.extend(self._guarded("string", known, self._string(s)))
        if "minimum" in s:
            out.append(f"if type(x) is int and x < {int(s['minimum'])}:")
            out.append("    return False")
        if "maximum" in s:
            out.append(f"if type(x) is int and x > {int(s['maximum'])}:")
            out.append("    return False")
        for sub in s.get("allOf", ()):
            out.append(f"if not {self.function(sub)}(x):")
            out.append("    return False")
        if "anyOf" in s:
            names = ", ".join(self.function(sub) for sub in s["anyOf"])
            out.append(f"if not any(check(x) for check in ({names},)):")
            out.append("    return False")
        if "oneOf" in s:
            names = ", ".join(self.function(sub) for sub in s["oneOf"])
            out.append(f"if sum(1 for check in ({names},) if check(x)) != 1:")
            out.append("    return False")
        if "not" in s:
            out.append(f"if {self.function(s['not'])}(x):")
            out.append("    return False")
        if "if" in s:
            condition = self.function(s["if"])
            then = self.function(s.get("then", True))
            otherwise = self.function(s.get("else", True))
            out.append(f"if not ({then}(x) if {condition}(x) else {otherwise}(x)):")
            out.append("    return False")
        return out

    @staticmethod
    def _guarded(kind: str, known: str | None, lines: list[str]) -> list[str]:
        """``lines`` apply to instances of ``kind`` only: under a guard, unless
        the schema's one declared type already is that kind (or excludes it)."""
        if not lines:
            return []
        if known == kind:
            return lines
        if known is not None:
            return []
        return [f"if {_TYPE_TESTS[kind]}:", *[f"    {line}" for line in lines]]

    def _object(self, s: dict[str, Any]) -> list[str]:
        out: list[str] = []
        keys = ("properties", "required", "additionalProperties")
        if not any(k in s for k in keys):
            return out
        if s.get("required"):
            required = self._constant(f"frozenset({json_literal(sorted(s['required']))})")
            out.append(f"if not {required} <= x.keys():")
            out.append("    return False")
        properties: dict[str, Any] = s.get("properties", {})
        checks = {key: self.function(sub) for key, sub in properties.items()}
        extra = s.get("additionalProperties", True)
        extra_check = None if extra is True else self.function(extra)
        if not checks and extra_check:
            out.append("for value in x.values():")
            out.append(f"    if not {extra_check}(value):")
            out.append("        return False")
        elif checks:
            table = self._constant(
                "{" + ", ".join(f"{json_literal(k)}: {v}" for k, v in checks.items()) + "}"
            )
            out.append("for key, value in x.items():")
            out.append(f"    check = {table}.get(key)")
            if extra_check is None:
                out.append("    if check is not None and not check(value):")
                out.append("        return False")
            else:
                out.append(f"    if not (check or {extra_check})(value):")
                out.append("        return False")
        return out

    def _array(self, s: dict[str, Any]) -> list[str]:
        out: list[str] = []
        keys = ("items", "prefixItems", "minItems", "maxItems", "uniqueItems")
        if not any(k in s for k in keys):
            return out
        if "minItems" in s:
            out.append(f"if len(x) < {int(s['minItems'])}:")
            out.append("    return False")
        if "maxItems" in s:
            out.append(f"if len(x) > {int(s['maxItems'])}:")
            out.append("    return False")
        prefix = [self.function(sub) for sub in s.get("prefixItems", ())]
        if prefix:
            names = ", ".join(prefix)
            out.append(f"for check, item in zip(({names},), x, strict=False):")
            out.append("    if not check(item):")
            out.append("        return False")
        if "items" in s:
            rest = self.function(s["items"])
            out.append(f"for item in x[{len(prefix)}:]:" if prefix else "for item in x:")
            out.append(f"    if not {rest}(item):")
            out.append("        return False")
        if s.get("uniqueItems"):
            out.append("if not _unique(x):")
            out.append("    return False")
        return out

    def _string(self, s: dict[str, Any]) -> list[str]:
        out: list[str] = []
        keys = ("minLength", "maxLength", "pattern")
        if not any(k in s for k in keys):
            return out
        if "minLength" in s:
            out.append(f"if len(x) < {int(s['minLength'])}:")
            out.append("    return False")
        if "maxLength" in s:
            out.append(f"if len(x) > {int(s['maxLength'])}:")
            out.append("    return False")
        if "pattern" in s:
            pattern = self._constant(f"re.compile({s['pattern']!r})")
            # jsonschema matches a pattern with re.search, unanchored: so do we.
            out.append(f"if {pattern}.search(x) is None:")
            out.append("    return False")
        return out


def json_literal(value: Any) -> str:
    """``value`` as a Python literal (JSON's null, true and false spelled for Python)."""
    if isinstance(value, float):
        raise SystemExit("floats in a schema are not supported")
    return repr(value)


_PRELUDE = '''\
"""Validators generated from the shipped JSON Schemas: is a document valid,
without importing jsonschema. Generated by scripts/generate_validators.py; do
not edit (tests/test_validators.py regenerates this file and compares).

``is_valid(name, document)`` is True only when the document is valid under the
schema ``name``; False means "ask jsonschema", which words every rejection."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

def _always(x: Any) -> bool:
    return True


def _never(x: Any) -> bool:
    return False


def _same(x: Any, y: Any) -> bool:
    # JSON equality without floats: a bool is never equal to an int.
    if type(x) is not type(y):
        return False
    if type(x) is list:
        return len(x) == len(y) and all(_same(a, b) for a, b in zip(x, y, strict=True))
    if type(x) is dict:
        return x.keys() == y.keys() and all(_same(x[k], y[k]) for k in x)
    return bool(x == y)


def _key(x: Any) -> Any:
    if type(x) is list:
        return ("list", tuple(_key(item) for item in x))
    if type(x) is dict:
        return ("dict", tuple(sorted((k, _key(v)) for k, v in x.items())))
    return (type(x).__name__, x)


def _unique(items: list[Any]) -> bool:
    return len({_key(item) for item in items}) == len(items)


def _plain(x: Any, depth: int = 0) -> bool:
    # Only plain JSON data is answered here; anything else goes to jsonschema.
    if depth > 64:
        return False
    kind = type(x)
    if kind is dict:
        return all(type(k) is str and _plain(v, depth + 1) for k, v in x.items())
    if kind is list:
        return all(_plain(item, depth + 1) for item in x)
    return kind is str or kind is int or kind is bool or x is None
'''


def render() -> str:
    parts = [_PRELUDE]
    entries: list[str] = []
    for path in sorted(SCHEMAS.glob("*.schema.json")):
        name = path.name[: -len(".schema.json")]
        schema = json.loads(path.read_text(encoding="utf-8"))
        generator = _Generator(name, schema)
        root = generator.function(schema)
        parts.append(f"\n# --- {name} ({path.name})\n")
        parts.extend(f"\n\n{function}\n" for function in generator.functions)
        parts.append("\n\n")
        parts.extend(f"{constant}\n" for constant in generator.constants)
        entries.append(f"    {name!r}: {root},")
    parts.append("\n\nVALIDATORS: dict[str, Callable[[Any], bool]] = {\n")
    parts.append("\n".join(entries) + "\n}\n")
    parts.append(
        '''

def is_valid(name: str, document: Any) -> bool:
    """True only when ``document`` is plain JSON data valid under schema ``name``."""
    check = VALIDATORS.get(name)
    return check is not None and _plain(document) and check(document)
'''
    )
    return _formatted("".join(parts))


def _formatted(source: str) -> str:
    # ruff (pinned in the test extra) lays the module out as the linters expect,
    # so regenerating is byte-stable wherever the test tools are installed.
    done = subprocess.run(
        [sys.executable, "-m", "ruff", "format", "--stdin-filename", str(TARGET), "-"],
        input=source,
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )
    if done.returncode != 0:
        raise SystemExit(f"ruff format failed: {done.stderr.strip()}")
    return done.stdout


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the module is stale")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        if TARGET.read_text(encoding="utf-8") != text:
            print(f"{TARGET.relative_to(ROOT)} is stale: run {__file__}", file=sys.stderr)
            return 1
        return 0
    TARGET.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
