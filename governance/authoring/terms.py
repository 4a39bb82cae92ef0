"""Terms of a text for retrieval: NFC, casefold, runs of letters and digits,
and a versioned stop-word list."""

from __future__ import annotations

import re
import unicodedata

# Part of what ``capsule suggest`` prints: a change to this list changes
# suggestions, so it changes the version too.
STOPWORDS_VERSION = "en-1"

# Function words of English that carry no topic: articles, pronouns,
# auxiliaries, prepositions, conjunctions, and a few words every goal uses
# ("make", "want", "use") that would otherwise match every section.
_STOPWORDS = """
    a about above after again against all also am an and any are as at be
    because been before being below between both but by can cannot could did
    do does doing done down during each either else ever every few for from
    further had has have having he her here hers herself him himself his how
    i if in into is it its itself just let lets like made make makes many may
    me might more most much must my myself need needs no nor not now of off
    on once one only or other our ours ourselves out over own per please same
    shall she should so some such than that the their theirs them themselves
    then there these they this those through thus to too under until up upon
    us use used uses using very via want wants was we were what when where
    whether which while who whom whose why will with within without would yet
    you your yours yourself yourselves s t
"""
STOPWORDS = frozenset(_STOPWORDS.split())

# Letters and digits (Unicode), never the underscore \w also matches.
RUN = re.compile(r"[^\W_]+")


def normalise(text: str) -> str:
    return unicodedata.normalize("NFC", text).casefold()


def tokens(text: str) -> list[str]:
    """Every run of letters and digits of ``text``, normalised, stop words included
    (phrases are matched on this sequence)."""
    return RUN.findall(normalise(text))


def content_terms(text: str) -> list[str]:
    """The tokens of ``text`` that are not stop words, in order, repeats kept; a
    single letter or digit is never one (``8-read`` is about reads)."""
    return [term for term in tokens(text) if len(term) > 1 and term not in STOPWORDS]
