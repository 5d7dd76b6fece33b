"""The bounds of every answer read from outside (tracker, shortlinks, provider bodies), in one place.

Why: an answer is input we do not control. Past these bounds a value is no longer data but a bug or
an attack, and it must be refused with an error that names the bound, before a parser spends
quadratic time on it, recurses off the stack, or (ijson's C parser, on an integer longer than
Python's 4,300-digit limit) corrupts the process. Every reader takes its limits from here
(docs/architecture.md, "Bounds of an answer").
"""

from __future__ import annotations

TRACKER_BODY_BYTES = 32 * 1024 * 1024
"""A tracker answer: a day's range is a few thousand small items (about 2 MB at 10,000 tokens)."""
PROVIDER_BODY_BYTES = 5 * 1024 * 1024
"""A provider answer: the largest real ones (an Apify dataset, a urlscan result) are a few hundred KB."""
MAX_NUMBER_CHARS = 100
"""A JSON number's characters: a count, an id or a timestamp takes at most 20, a float 25. Far below
the 4,300 digits past which Python refuses to make an int (and ijson's C parser fails)."""
MAX_EXPONENT_DIGITS = 4
"""A number's exponent digits: a finite float needs 3 (1e308). More would make `Decimal` itself
refuse the number inside the streaming parser; 1e999 still reads, and is refused as not finite."""
MAX_DEPTH = 64
"""Arrays and objects open at once: real answers nest 15 deep at most. The parsers recurse once per
level (Python's limit is 1,000 frames), so 10^5 brackets would end in a RecursionError."""
MAX_STRING_BYTES = 1024 * 1024
"""A JSON string's bytes as sent (escapes included): a description or a data: image URL fits; a
string as large as the whole body cap does not."""
MAX_LOCATION_CHARS = 8 * 1024
"""A redirect's Location header: browsers and servers keep URLs under 8 KB."""
MAX_PAGE_TAGS = 5_000
"""Tags of an HTML page (a t.me preview has about 120). An HTML5 parser's work grows with the square
of the nesting (lexbor: 5,000 nested elements in 0.06 s, 100,000 in about 100 s), and a page's tags
bound its nesting."""


class OutOfBounds(ValueError):
    """An answer goes past one of the bounds above; the message names the bound, never the answer's
    content. Each client maps it to its own error (a TrackerError, a provider's UPSTREAM)."""


class OverLimit(OutOfBounds):
    """A count past its limit (the message names the limit's value)."""

    def __init__(self, what: str, limit: int, unit: str) -> None:
        super().__init__(f"{what} over the limit of {limit:,} {unit}")
        self.what = what
        self.limit = limit


class NotFinite(OutOfBounds):
    """A number that is not a finite float (NaN, Infinity, or one like 1e999 that overflows)."""

    def __init__(self) -> None:
        super().__init__("a number that is not finite (NaN, Infinity or beyond a float's range)")


class NotUtf8(OutOfBounds):
    """Bytes that are not UTF-8 (JSON's only encoding between systems): refused before a parser
    decodes them, as ijson's C parser would inside its own callbacks."""

    def __init__(self) -> None:
        super().__init__("text that is not UTF-8")


def check_page(body: bytes) -> None:
    """OverLimit when an HTML page has more tags than MAX_PAGE_TAGS (counted as its `<`s, before
    any parser reads it)."""
    if body.count(b"<") > MAX_PAGE_TAGS:
        raise OverLimit("a page's tags", MAX_PAGE_TAGS, "tags")
