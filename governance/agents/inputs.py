"""The MCP tools' input models: closed (no property but the declared ones),
strict (``"yes"`` is not a boolean, ``"3"`` not an integer) and every
parameter described, with the JSON Schema a host lists for each (part of the
``mcp`` extra: pydantic comes with the SDK)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field
from pydantic.json_schema import SkipJsonSchema

# An optional argument: absent (or null) means "not given". The schema shows
# the type alone, so a host's form or a model never sees `anyOf` with null.
Text = str | SkipJsonSchema[None]
Count = Annotated[int, Field(ge=1)] | SkipJsonSchema[None]
Globs = list[str] | SkipJsonSchema[None]

AT = (
    "the commit to read: HEAD (the default), a full commit id or a unique hex prefix "
    "(at least 4); branch and tag names are refused, so an answer names one snapshot"
)
PACKET = (
    "a packet: its id as capsule_list_packets returns it (GC-003), or its path "
    "(packets/GC-003/packet.yml)"
)


class _Input(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class ListPacketsIn(_Input):
    pass


class OutlineIn(_Input):
    path: str = Field(
        description="a Markdown file tracked at `at`, as a repository path (docs/design.md)"
    )
    at: str = Field("HEAD", description=AT)


class SuggestIn(_Input):
    goal: str = Field(
        description="the work to find reading for, in words (what a packet's objective would say)"
    )
    at: str = Field("HEAD", description=AT)
    paths: Globs = Field(
        None,
        description="git pathspecs choosing the candidate files instead of every tracked "
        "Markdown file outside packets/, as `git ls-files -- PATHSPEC` at the top would: a "
        "folder names what is under it, '*' matches across '/', ':(glob)' gives '**', "
        "':(exclude)' or ':!' leaves out, ':(icase)' and ':(literal)' as in git; one that "
        "matches no file is pathspec_no_match",
    )
    max_reads: Count = Field(None, description="propose at most this many reads")
    budget: Count = Field(
        None, description="the draft capsule's target tokens (default: the policy's target)"
    )


class BuildIn(_Input):
    packet: str = Field(description=PACKET)
    at: str = Field(
        "HEAD",
        description=AT + "; at HEAD every source must also be clean in the work tree",
    )
    render: bool = Field(
        False,
        description="true: the text is the capsule's Markdown view for a model to read; "
        "false (the default): the capsule's exact JSON. structuredContent.capsule_json holds "
        "the exact JSON either way",
    )
    exact_tokens: bool = Field(
        False,
        description="true: also count the capsule's o200k_base tokens exactly (loads a "
        "tokenizer once, about 0.2 s); the estimate in estimated_tokens is always given",
    )


class BuildRecordIn(BuildIn):
    record: bool = Field(
        False,
        description="true: also write the capsule as the packet's record, "
        "packets/<ID>/capsules/<first 12 hex of the commit>.json (never over different bytes)",
    )


CAPSULE = (
    "the capsule's exact JSON text, as capsule_build returns it (structuredContent.capsule_json); "
    "give this or path"
)


class VerifyIn(_Input):
    capsule: Text = Field(None, description=CAPSULE)
    path: Text = Field(
        None, description="a capsule file of the work tree (repository path); give this or capsule"
    )
    at: str = Field("HEAD", description=AT)


class StatusIn(_Input):
    all: bool = Field(
        False,
        description="true: every record committed at HEAD; false (the default): the newest "
        "record of each packet",
    )


class ReplayIn(_Input):
    capsule: Text = Field(None, description=CAPSULE)
    path: Text = Field(
        None,
        description="a capsule file of the work tree, such as a committed record "
        "(packets/GC-003/capsules/<commit>.json); give this or capsule",
    )


class CheckIn(_Input):
    packets: Globs = Field(None, description="the packets to check: ids or paths; or set all")
    all: bool = Field(False, description="true: check every packet committed at HEAD")


class AuditIn(_Input):
    range: Text = Field(
        None,
        description="REV (every commit reachable from it; default HEAD) or A..B (the commits "
        "of B not in A, such as main..HEAD for a branch's records); each end HEAD, a commit id, "
        "a unique hex prefix, or a branch or tag name",
    )
    paths: Globs = Field(
        None, description="globs naming where records live (default packets/*/capsules/*.json)"
    )


def input_schema(model: type[BaseModel]) -> dict[str, Any]:
    """``model``'s JSON Schema as a host lists it: the model's own, without the
    titles pydantic derives from field names and the null defaults of optional
    arguments (a null is no string)."""
    schema = model.model_json_schema()
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        prop.pop("title", None)
        if prop.get("default", ...) is None:
            del prop["default"]
    return schema
