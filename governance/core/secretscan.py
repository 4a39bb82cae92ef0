"""The secret scan: detect-secrets' high-confidence plugins over each part a
capsule carries (the packet, its context, every read), line by line.

The detector is the optional ``secrets`` extra (detect-secrets, Apache-2.0).
Only each plugin's ``analyze_string`` is called, on one line at a time, as
detect-secrets' own scan calls it: no settings are read or changed, no
filter runs (so an inline ``pragma: allowlist secret`` in a source waives
nothing: a waiver is a reviewed, committed entry of
``policies/secret-waivers.yml``), and nothing is verified (no plugin's
``verify`` is called: nothing is sent anywhere). A hit is its line and the
plugin's type, never the matched text, so no report can echo the secret.

The plugins are chosen for precision: each matches a vendor's fixed prefix
or a key block's header, so prose, hashes and identifiers do not trigger it.
docs/secrets.md lists them and those left out, and why.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from governance.core.secret_waivers import SECRET_WAIVERS_PATH, SecretWaiver, read_secret_waivers
from governance.errors import SOURCE_SECRET, SourceError

if TYPE_CHECKING:
    from governance.core.builder import Built
    from governance.core.cache import BlobCache
    from governance.core.repository import Source
    from governance.core.snapshot import Snapshot

DISTRIBUTION = "detect-secrets"
EXTRA = "secrets"

# (module of detect_secrets.plugins, class): key blocks, cloud keys, service tokens.
PLUGINS = (
    ("private_key", "PrivateKeyDetector"),
    ("aws", "AWSKeyDetector"),
    ("azure_storage_key", "AzureStorageKeyDetector"),
    ("github_token", "GitHubTokenDetector"),
    ("gitlab_token", "GitLabTokenDetector"),
    ("slack", "SlackDetector"),
    ("stripe", "StripeDetector"),
    ("sendgrid", "SendGridDetector"),
    ("twilio", "TwilioKeyDetector"),
    ("mailchimp", "MailchimpDetector"),
    ("square_oauth", "SquareOAuthDetector"),
    ("pypi_token", "PypiTokenDetector"),
    ("npm", "NpmDetector"),
    ("openai", "OpenAIDetector"),
    ("discord", "DiscordBotTokenDetector"),
)


@dataclass(frozen=True)
class Hit:
    """A line that holds a secret: its 1-based line in the file, and what the
    plugin calls it (its ``secret_type``). Never the secret itself."""

    line: int
    kind: str


@dataclass(frozen=True)
class Detector:
    """The detector of this process: its plugins, or why there are none."""

    version: str | None
    plugins: tuple[Any, ...]
    unavailable: str | None = None
    # Per plugin: whether a scan of the whole text at once finds something
    # wherever a line alone would (``whole_text_safe``).
    whole: tuple[bool, ...] = ()

    @property
    def available(self) -> bool:
        return self.unavailable is None

    def status(self) -> dict[str, Any]:
        """What ``--json`` says of the scan: scanned or not, by what, and why not."""
        return {
            "scanned": self.available,
            "detector": DISTRIBUTION,
            "version": self.version,
            "plugins": [type(plugin).__name__ for plugin in self.plugins],
            "unavailable": self.unavailable,
        }

    def scan(self, text: str, first_line: int = 1) -> tuple[Hit, ...]:
        """Every (line, kind) of ``text`` a plugin reports, in line order; lines
        end at ``\\r\\n``, ``\\r`` or ``\\n`` as a capsule's ``lines`` count them,
        and ``text``'s first line is the file's ``first_line``."""
        lines: list[str] | None = None
        found: list[Hit] = []
        for plugin, whole in zip(
            self.plugins, self.whole or [False] * len(self.plugins), strict=True
        ):
            # Line by line only where the whole text holds a match (most
            # texts hold none): some ten times faster, and the same lines.
            if whole and next(iter(plugin.analyze_string(text)), None) is None:
                continue
            if lines is None:
                lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
            for number, line in enumerate(lines, first_line):
                if line and next(iter(plugin.analyze_string(line)), None) is not None:
                    found.append(Hit(number, str(plugin.secret_type)))
        found.sort(key=lambda hit: hit.line)
        return tuple(found)


@functools.cache
def detector() -> Detector:
    """This process's detector, loaded once (detect-secrets costs some 40 ms
    to import: it loads requests); unavailable, with the reason, without the
    extra or when it lacks one of the plugins."""
    import importlib  # noqa: PLC0415 (defers importlib.metadata)
    import importlib.metadata  # noqa: PLC0415 (as above)

    missing = f"the {EXTRA} extra is not installed (pip install 'git-capsule[{EXTRA}]')"
    try:
        version: str | None = importlib.metadata.version(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        version = None
    plugins = []
    for module, name in PLUGINS:
        try:
            found = getattr(importlib.import_module(f"detect_secrets.plugins.{module}"), name)
        except ImportError as exc:
            if version is None:
                return Detector(None, (), missing)
            return Detector(
                version,
                (),
                f"{DISTRIBUTION} {version} cannot be imported ({exc}): install the {EXTRA} "
                f"extra again (pip install 'git-capsule[{EXTRA}]')",
            )
        except AttributeError:
            return Detector(version, (), f"{DISTRIBUTION} {version} has no plugin {name}")
        plugins.append(found())
    return Detector(version, tuple(plugins), whole=tuple(whole_text_safe(p) for p in plugins))


# What makes a regular expression's match depend on the text around it: anchors,
# word boundaries, lookarounds. Without them, a substring a line alone matches
# is matched in the whole text too (or an earlier match overlaps it).
_CONTEXT = ("^", "$", "\\A", "\\Z", "\\z", "\\b", "\\B", "(?=", "(?!", "(?<")


def whole_text_safe(plugin: Any) -> bool:
    """True when ``plugin`` finds something in a text wherever it finds
    something in one of its lines: it uses detect-secrets' own regex scan
    (``RegexBasedDetector.analyze_string``, unchanged) and no pattern of its
    ``denylist`` looks at the text around a match. Else it is run line by line."""
    from detect_secrets.plugins.base import RegexBasedDetector  # noqa: PLC0415 (the extra)

    if type(plugin).analyze_string is not RegexBasedDetector.analyze_string:
        return False
    return all(not any(mark in regex.pattern for mark in _CONTEXT) for regex in plugin.denylist)


def part_hits(
    snapshot: Snapshot, source: Source, key: str, text: Callable[[], str], first_line: int
) -> tuple[Hit, ...]:
    """``detector().scan`` of a part of ``source`` that ``key`` names (its
    locator, or ``WHOLE``), once per blob while the snapshot's cache holds it:
    the part's text is a function of the blob and the key alone."""
    found = detector()
    return snapshot.memo(
        f"secrets:{key}",
        source,
        lambda: found.scan(text(), first_line),
        weight=lambda hits: 64 + 64 * len(hits),
    )


@dataclass(frozen=True)
class Finding:
    """A hit in one part of a capsule: the part (a read's locator, or the
    packet's or context's path), the file and blob it is in, the file's line."""

    part: str
    path: str
    blob: str
    line: int
    kind: str

    def to_json(self) -> dict[str, object]:
        return {
            "part": self.part,
            "path": self.path,
            "blob": self.blob,
            "line": self.line,
            "kind": self.kind,
        }


# The key of a part included whole (a locator names a read).
WHOLE = "whole"

# A refusal names at most this many lines in its message (all are in its details).
SHOWN = 5


def refusal(findings: list[Finding], where: str) -> SourceError:
    """``source_secret`` for the unwaived ``findings`` of one part: its
    locator, the file, every line and what each holds, never the secret."""
    first = findings[0]
    kinds: dict[int, list[str]] = {}
    for finding in findings:
        kinds.setdefault(finding.line, [])
        if finding.kind not in kinds[finding.line]:
            kinds[finding.line].append(finding.kind)
    shown = [f"line {line} ({', '.join(found)})" for line, found in list(kinds.items())[:SHOWN]]
    more = len(kinds) - len(shown)
    if more:
        shown.append(f"{more:,} more line{'s' if more > 1 else ''}")
    listed = shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + f" and {shown[-1]}"
    return SourceError(
        f"{first.part}: {listed} of {first.path} {where}: {DISTRIBUTION} reports "
        f"{'a secret' if len(findings) == 1 else 'secrets'}, which a capsule never carries to a "
        f"model; remove {'it' if len(findings) == 1 else 'each'} from the file and revoke it, "
        f"or waive a reviewed false positive in {SECRET_WAIVERS_PATH} by its blob "
        f"({first.blob}) and line",
        code=SOURCE_SECRET,
        locator=first.part,
        path=first.path,
        blob=first.blob,
        line=first.line,
        lines=list(kinds),
        findings=[{"line": f.line, "kind": f.kind} for f in findings],
    )


# The cache's key of a text's hits, numbered from its first line.
TEXT = "secrets-text"


def text_hits(found: Detector, cache: BlobCache, text: str, first_line: int) -> tuple[Hit, ...]:
    """``found.scan(text, first_line)``, each text scanned once while ``cache``
    holds it: a part's hits are a function of its text alone, which its first
    line only numbers. Audit's records mostly carry a text an earlier record
    carried from another blob (a commit changes one section of a file, and
    the file's other sections keep their text in the new blob), so the text,
    not the blob, is the key."""
    hits = cache.get(
        (TEXT, text),
        lambda: found.scan(text),
        # The text is the key; each hit, a few words.
        weight=lambda hits: len(text) + 64 * len(hits),
    )
    if first_line == 1 or not hits:
        return hits
    return tuple(Hit(hit.line + first_line - 1, hit.kind) for hit in hits)


def built_findings(built: Built, cache: BlobCache) -> tuple[Finding, ...]:
    """What the scan finds today in every part of ``built`` (a record's
    rebuild, byte for byte the record), before any waiver: audit's view of a
    record whose bytes are history. Shares ``cache`` with the builds; each
    part's text is scanned once (``text_hits``)."""
    found = detector()
    if not found.available:
        return ()
    out: list[Finding] = []

    for whole in built.files:
        path, blob = whole.source.path, whole.source.blob_id
        for hit in text_hits(found, cache, whole.text, 1):
            out.append(Finding(path, path, blob, hit.line, hit.kind))
    for excerpt in built.excerpts:
        for hit in text_hits(found, cache, excerpt.text, excerpt.first_line):
            out.append(Finding(excerpt.locator, excerpt.path, excerpt.blob_id, hit.line, hit.kind))
    return tuple(out)


class Scan:
    """The secret scan of one build: the detector, the snapshot's waivers,
    and the hits each part had that a waiver accepted."""

    def __init__(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot
        self.detector = detector()
        # Read (and validated) whether or not anything is found.
        self.waivers = read_secret_waivers(snapshot)
        self.waived: list[tuple[Finding, SecretWaiver]] = []

    def check(
        self,
        part: str,
        source: Source,
        key: str,
        text: Callable[[], str],
        first_line: int = 1,
    ) -> SourceError | None:
        """``source_secret`` when a line of the part that ``key`` names holds
        a secret no waiver accepts; None when it holds none."""
        if not self.detector.available:
            return None
        hits = part_hits(self.snapshot, source, key, text, first_line)
        refused = []
        for hit in hits:
            finding = Finding(part, source.path, source.blob_id, hit.line, hit.kind)
            waiver = self.waivers.find(source.path, source.blob_id, hit.line)
            if waiver is None:
                refused.append(finding)
            else:
                self.waived.append((finding, waiver))
        return refusal(refused, self.snapshot.where) if refused else None

    def status(self) -> dict[str, Any]:
        """``Detector.status`` and the hits waived, with each waiver's reason."""
        return {
            **self.detector.status(),
            "waived": [
                {**finding.to_json(), "waiver": waiver.index, "reason": waiver.reason}
                for finding, waiver in self.waived
            ],
        }
