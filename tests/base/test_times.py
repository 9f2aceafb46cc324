"""A decision's ``decided_at`` and an audit line's ``time`` are written without datetime
(_base/times.py, docs/adr/0001-start-up.md): the text must be exactly what ``datetime.isoformat`` gives
for that instant in UTC, or consumers parsing either would see two formats."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import pytest

from atip_trust._base.times import utc_text


@pytest.mark.parametrize("ns", [0, 1_000, 999_999_999, 1_700_000_000_000_000_000, 1_700_000_000_123_456_789,
                                4_102_444_799_999_999_000,
                                # named, not numbered: pytest-xdist's workers must collect the same ids
                                pytest.param(time.time_ns(), id="now")])
def test_a_decision_time_reads_as_datetime_writes_it(ns: int) -> None:
    when = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=ns // 1000)  # exact, no float
    assert utc_text(ns) == when.isoformat()
    assert datetime.fromisoformat(utc_text(ns)) == when


def test_now_is_now() -> None:
    before = datetime.now(UTC).replace(microsecond=0)
    stamp = datetime.fromisoformat(utc_text())
    assert before <= stamp <= datetime.now(UTC)
