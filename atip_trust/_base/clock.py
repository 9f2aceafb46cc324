"""The ``datetime`` types, without executing the pure-Python ``datetime`` module.

On CPython ``datetime.py`` first defines the whole pure-Python implementation (plus ``math``) and then
replaces it with the C module's classes (``from _datetime import *``): ~1.5 ms of every start-up that
reads a waiver's expiry or stamps a decision (README "Verdict cache"). The classes imported here are
those very C classes (``clock.datetime is datetime.datetime``), so values mix freely with anyone's
``datetime``; another interpreter without ``_datetime`` gets the ordinary module.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing's constant without importing typing at run time (README "Verdict cache")
if TYPE_CHECKING:
    from datetime import UTC, datetime, timedelta, timezone
else:
    try:
        from _datetime import datetime, timedelta, timezone
    except ImportError:  # not CPython
        from datetime import datetime, timedelta, timezone
    UTC = timezone.utc

__all__ = ["UTC", "datetime", "timedelta", "timezone"]
