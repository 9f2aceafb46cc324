"""The time of a decision or an audit line, as text, without ``datetime``.

Why: a cache-hit admission states when it decided (the Agent Tool decision's ``decided_at``, the audit
line's ``time``) and compares nothing else in time unless the policy has waivers or a root age limit;
importing ``datetime`` for that one string was a measurable part of its start-up
(docs/adr/0001-start-up.md). Times stay epoch seconds (``time.time_ns``) until they are shown.
"""

from __future__ import annotations

import time


def utc_text(ns: int | None = None) -> str:
    """``ns`` nanoseconds since the epoch (now when None) as ``datetime.isoformat`` writes that instant
    in UTC: ``2026-11-27T02:14:26.169456+00:00``, the fraction left out when it is zero (RFC 3339)."""
    seconds, micros = divmod((time.time_ns() if ns is None else ns) // 1000, 1_000_000)
    text = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds))
    return f"{text}.{micros:06d}+00:00" if micros else f"{text}+00:00"


__all__ = ["utc_text"]
