"""The time of a decision or an audit line, as text, without ``datetime``.

Why: a cache-hit admission states when it decided (the Agent Tool decision's ``decided_at``, the audit
line's ``time``) and compares nothing else in time unless the policy has waivers or a root age limit;
importing ``datetime`` for that one string was a measurable part of its start-up
(docs/adr/0001-start-up.md). Times stay epoch seconds (``time.time_ns``) until they are shown.
"""

from __future__ import annotations

import re
import time
from typing import TYPE_CHECKING

from atip_trust._base.lazy import lazy_import

if TYPE_CHECKING:
    import datetime
else:
    datetime = lazy_import("datetime")  # only when a signed time or a waiver's expiry is parsed

#: RFC 3339 §5.6 ``date-time``, ASCII digits only, ``T`` between date and time (as Go's ``time.Time``
#: reads JSON, which slsa-verifier uses): ``2026-01-02T03:04:05Z``, ``...05.123+02:00``.
_RFC3339 = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,9})?([Zz]|[+-][0-9]{2}:[0-9]{2})")
#: The years a signed time may name: none before the Unix epoch, none past 2999. Outside it, arithmetic
#: with an age (a ``maxAge`` added, a skew subtracted) would overflow ``datetime`` at year 1 or 9999.
SANE_YEARS = (1970, 2999)


def utc_text(ns: int | None = None) -> str:
    """``ns`` nanoseconds since the epoch (now when None) as ``datetime.isoformat`` writes that instant
    in UTC: ``2026-11-27T02:14:26.169456+00:00``, the fraction left out when it is zero (RFC 3339)."""
    seconds, micros = divmod((time.time_ns() if ns is None else ns) // 1000, 1_000_000)
    text = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds))
    return f"{text}.{micros:06d}+00:00" if micros else f"{text}+00:00"


def parse_rfc3339(text: str) -> datetime.datetime:
    """An RFC 3339 date-time with its offset, within ``SANE_YEARS``; ``ValueError`` naming what is wrong
    (the caller words it as its own error)."""
    if not isinstance(text, str) or not _RFC3339.fullmatch(text):
        raise ValueError(f"expected an RFC 3339 date-time such as 2026-01-02T03:04:05Z, got {text!r:.60}")
    year = int(text[:4])
    if not SANE_YEARS[0] <= year <= SANE_YEARS[1]:
        raise ValueError(f"year {year} is outside {SANE_YEARS[0]}..{SANE_YEARS[1]}: {text!r:.60}")
    fixed = text[:-1] + "+00:00" if text[-1] in "Zz" else text
    fraction = re.search(r"\.([0-9]+)", fixed)
    if fraction is not None and len(fraction.group(1)) > 6:  # datetime keeps microseconds
        fixed = fixed.replace(fraction.group(0), "." + fraction.group(1)[:6], 1)
    parsed = datetime.datetime.fromisoformat(fixed.replace("t", "T", 1) if "t" in fixed[:11] else fixed)
    return parsed.astimezone(datetime.timezone.utc)


__all__ = ["SANE_YEARS", "parse_rfc3339", "utc_text"]
