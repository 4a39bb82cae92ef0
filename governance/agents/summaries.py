"""The text an MCP tool answers beside its structured content: one printable
line per item for the model (``build`` answers with the capsule itself, its
exact JSON or its Markdown view)."""

from __future__ import annotations

import json
from typing import Any

from governance.agents.render import render_markdown
from governance.core.reader import CapsuleFile
from governance.core.words import plural
from governance.output import printable


def packets_text(value: dict[str, Any]) -> str:
    lines = [f"{plural(len(value['packets']), 'packet')} at {value['at'][:12]}"]
    lines += [printable(f"{p['id']}  {p['path']}") for p in value["packets"]]
    return "\n".join(lines)


def build_text(value: dict[str, Any]) -> str:
    """The capsule's exact JSON, or (``text: markdown``) its Markdown view."""
    if value["text"] == "json":
        return str(value["capsule_json"])
    data = value["capsule_json"].encode("utf-8")
    view = render_markdown(CapsuleFile(data=data, document=json.loads(data)))
    if value["record"] is not None:
        record = value["record"]
        view += printable(f"\n(record {record['path']}: {record['status']})") + "\n"
    return view


def verify_text(value: dict[str, Any]) -> str:
    lines = [
        printable(f"{p['status']:<9} {p['locator']}  {p['code']}: {p['message']}")
        for p in value["parts"]
    ]
    drifted = sum(p["status"] != "unchanged" for p in value["parts"])
    verdict = "all parts unchanged" if value["ok"] else f"{plural(drifted, 'part')} not unchanged"
    lines.append(
        f"{value['capsule']['id']} built at {value['capsule']['commit'][:12]}, verified at "
        f"{value['at'][:12]}: {verdict}"
    )
    return "\n".join(lines + signature_lines(value["signature"]))


def signature_lines(signature: dict[str, Any] | None) -> list[str]:
    """``signature: signed by alice@example.org (record ...)``; none without signers."""
    if signature is None:
        return []
    if signature["status"] == "signed":
        said = f"signed by {signature['principal']}"
    elif signature["code"] is not None:
        said = f"not checked: {signature['code']}: {signature['message']}"
    else:
        said = f"{signature['status']}: {signature['message']}"
    return [printable(f"signature: {said} (record {signature['record']})")]


def status_text(value: dict[str, Any]) -> str:
    """``capsule status``'s lines, then its summary."""
    from governance.history.status import row_lines, summary  # noqa: PLC0415 (defers pygit2)

    lines = [line for row in value["records"] for line in row_lines(row)]
    lines.append(printable(summary(value)))
    return "\n".join(lines)


def replay_text(value: dict[str, Any]) -> str:
    ref = value["capsule"]
    if value["identical"]:
        lines = [
            printable(f"identical: {ref['id']} at {ref['commit'][:12]} rebuilds byte for byte")
        ]
    else:
        lines = [printable(f"different: {ref['id']} at {ref['commit'][:12]}, these fields differ:")]
        lines += [printable(f"  {d['path']}") for d in value["differences"]]
    return "\n".join(lines + signature_lines(value["signature"]))


def check_text(value: dict[str, Any]) -> str:
    failures = [f for p in value["packets"] for f in p["failures"]]
    lines = [
        printable(f"{f['path']}: {f['locator']}: {f['code']}: {f['message']}") for f in failures
    ]
    lines += [
        printable(
            f"{p['path']}: dependency {d['id']}: its newest record {d['record']['path']} is "
            f"{d['record']['status']} at HEAD"
        )
        for p in value["packets"]
        for d in p["dependencies"]
        if d["record"] is not None and not d["record"]["current"]
    ]
    ok = sum(p["ok"] for p in value["packets"])
    lines.append(
        f"{ok} of {plural(len(value['packets']), 'packet')} would build at {value['at'][:12]}"
    )
    return "\n".join(lines)


def outline_text(value: dict[str, Any]) -> str:
    lines = [
        printable(f"{value['path']} at {value['commit'][:12]}: {plural(value['lines'], 'line')}")
    ]
    for h in value["headings"]:
        where = h["locator"]
        lines.append(
            printable(
                f"{'  ' * h['depth']}{'#' * h['level']} {h['text']}  lines "
                f"{h['lines'][0]}-{h['lines'][1]}, ~{h['estimated_tokens']} tokens  -> {where}"
            )
        )
    return "\n".join(lines)


def suggest_text(value: dict[str, Any]) -> str:
    reads = value["reads"]
    lines = ["required_reads:" + ("" if reads else " []")]
    for read in reads:
        first, last = read["lines"]
        lines.append(
            printable(
                f"  - {json.dumps(read['locator'], ensure_ascii=False)}  # lines {first}-{last}, "
                f"~{read['estimated_tokens']} tokens; covers {', '.join(read['facets'])}"
            )
        )
    unresolved = value["coverage"]["unresolved"]
    if unresolved:
        gaps = ", ".join(f"{u['facet']} ({u['gap']})" for u in unresolved)
        lines.append(printable(f"coverage: incomplete; unresolved: {gaps}"))
    else:
        lines.append(
            "coverage: complete, "
            + (
                f"all {len(value['facets'])} facets"
                if len(value["facets"]) != 1
                else "its one facet"
            )
            + " covered"
        )
    return "\n".join(lines)


def audit_text(value: dict[str, Any]) -> str:
    """A line per record version that is not identical, and per unused waiver,
    then the counts as ``capsule audit`` says them."""
    lines = []
    for row in value["results"]:
        if row["result"] == "identical":
            continue
        if row["result"] == "drift":
            detail = "differs in " + ", ".join(d["path"] for d in row["differences"])
        else:
            detail = f"{row['code']}: {row['message'].splitlines()[0] if row['message'] else ''}"
        lines.append(printable(f"{row['result']:<9} {row['path']}  {detail}"))
    lines += [
        printable(
            f"error     policies/audit-waivers.yml  {w['code']}: waiver {w['index']} "
            f"(blob {w['blob'][:12]}) matches no record version"
        )
        for w in value["waivers"]
        if w["code"] is not None
    ]
    counts = value["counts"]
    where = value["range"]
    tip = f" at {where['tip'][:12]}" if where["tip"] else " (no commits)"
    lines.append(
        printable(
            f"audited {plural(counts['records'], 'record version')} "
            f"({plural(counts['blobs'], 'distinct blob')}) in {plural(counts['commits'], 'commit')}"
            f" of {where['spec']}{tip}: {counts['identical']} identical, {counts['drift']} drift, "
            f"{counts['error']} error"
            + (f", {counts['waived']} waived" if counts["waived"] else "")
            + (
                f", {plural(counts['waivers_unused'], 'unused waiver')}"
                if counts["waivers_unused"]
                else ""
            )
        )
    )
    return "\n".join(lines)
