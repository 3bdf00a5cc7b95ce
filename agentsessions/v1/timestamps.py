"""Timestamps as the reference's proto3 JSON writes them: RFC 3339 in UTC, ``...Z``, with
0, 3, 6 or 9 fraction digits, between years 1 and 9999 (``google.protobuf.Timestamp``).

Every timestamp an Event holds is in this canonical form (its hash depends on the text);
:func:`normalize_timestamp` turns any RFC 3339 text (an offset, any fraction length) into
it, and :func:`parse_timestamp` gives the (seconds, nanos) pair the text stands for.
"""

from __future__ import annotations

import re
from datetime import date, datetime

from agentsessions.errors import InvalidArgumentError

MIN_TIMESTAMP_SECONDS = -62135596800  # 0001-01-01T00:00:00Z
MAX_TIMESTAMP_SECONDS = 253402300799  # 9999-12-31T23:59:59Z
_EPOCH_ORDINAL = date(1970, 1, 1).toordinal()
_RFC3339 = re.compile(
    r"(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?:\.(\d{1,9}))?(?:Z|([+-])(\d\d):(\d\d))",
    re.ASCII,
)


def _fraction(nanos: int) -> str:
    if nanos == 0:
        return ""
    if nanos % 1_000_000 == 0:
        return f".{nanos // 1_000_000:03d}"
    if nanos % 1000 == 0:
        return f".{nanos // 1000:06d}"
    return f".{nanos:09d}"


def timestamp_from_parts(seconds: int, nanos: int = 0) -> str:
    """Canonical RFC 3339 text of a ``google.protobuf.Timestamp`` (seconds, nanos)."""
    if not (MIN_TIMESTAMP_SECONDS <= seconds <= MAX_TIMESTAMP_SECONDS and 0 <= nanos < 10**9):
        raise InvalidArgumentError(f"timestamp ({seconds}s, {nanos}ns) is outside 0001..9999")
    days, rem = divmod(seconds, 86400)
    d = date.fromordinal(_EPOCH_ORDINAL + days)
    hh, rem = divmod(rem, 3600)
    mm, ss = divmod(rem, 60)
    return f"{d.year:04d}-{d.month:02d}-{d.day:02d}T{hh:02d}:{mm:02d}:{ss:02d}{_fraction(nanos)}Z"


def format_timestamp(when: datetime) -> str:
    """Canonical proto3-JSON Timestamp of an aware datetime (UTC, "Z", 0/3/6/9 digits)."""
    offset = when.utcoffset() if isinstance(when, datetime) else None
    if offset is None:
        raise InvalidArgumentError("timestamps need an aware datetime (for example UTC)")
    try:
        naive = when.replace(tzinfo=None) - offset
    except OverflowError:
        raise InvalidArgumentError(f"timestamp outside 0001..9999 UTC: {when!r}") from None
    days = naive.toordinal() - _EPOCH_ORDINAL
    seconds = days * 86400 + naive.hour * 3600 + naive.minute * 60 + naive.second
    return timestamp_from_parts(seconds, naive.microsecond * 1000)


def format_timestamp_ns(ns: int) -> str:
    """Canonical Timestamp of nanoseconds since the Unix epoch (as ``time.time_ns()``)."""
    seconds, nanos = divmod(ns, 10**9)
    return timestamp_from_parts(seconds, nanos)


def parse_timestamp(text: str) -> tuple[int, int]:
    """Parse RFC 3339 (``Z`` or an offset, 0-9 fraction digits) into (seconds, nanos) UTC.

    Accepts what proto3-JSON parsers accept; raises InvalidArgumentError otherwise.
    """
    m = _RFC3339.fullmatch(text) if isinstance(text, str) else None
    if m is None:
        raise InvalidArgumentError(f"not an RFC 3339 timestamp: {text!r}")
    y, mo, d, hh, mi, ss, frac, sign, oh, om = m.groups()
    try:
        day = date(int(y), int(mo), int(d)).toordinal() - _EPOCH_ORDINAL
    except ValueError:
        raise InvalidArgumentError(f"not a calendar date: {text!r}") from None
    if int(hh) > 23 or int(mi) > 59 or int(ss) > 59 or (sign and (int(oh) > 23 or int(om) > 59)):
        raise InvalidArgumentError(f"time of day out of range: {text!r}")
    seconds = day * 86400 + int(hh) * 3600 + int(mi) * 60 + int(ss)
    if sign:
        seconds -= (1 if sign == "+" else -1) * (int(oh) * 3600 + int(om) * 60)
    if not MIN_TIMESTAMP_SECONDS <= seconds <= MAX_TIMESTAMP_SECONDS:
        raise InvalidArgumentError(f"timestamp outside 0001-01-01..9999-12-31 UTC: {text!r}")
    return seconds, int((frac or "").ljust(9, "0"))


def normalize_timestamp(text: str) -> str:
    """The canonical form of any RFC 3339 timestamp text (see :func:`parse_timestamp`)."""
    return timestamp_from_parts(*parse_timestamp(text))
