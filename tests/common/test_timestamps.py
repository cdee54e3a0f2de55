"""common.timestamps: one text form for event times, UTC whatever the machine's zone."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from common.timestamps import iso, parse_iso

KOLKATA = timezone(timedelta(hours=5, minutes=30))


def test_iso_writes_utc_with_milliseconds_and_a_z():
    assert iso(datetime(2025, 1, 15, 10, 30, tzinfo=timezone.utc)) == "2025-01-15T10:30:00.000Z"
    assert (
        iso(datetime(2025, 1, 15, 16, 0, 5, 123456, tzinfo=KOLKATA)) == "2025-01-15T10:30:05.123Z"
    )


def test_parse_iso_reads_what_iso_writes_and_takes_a_time_without_a_zone_as_utc():
    moment = datetime(2025, 1, 15, 10, 30, 5, 123000, tzinfo=timezone.utc)

    assert parse_iso(iso(moment)) == moment
    assert parse_iso("2025-01-15T10:30:00") == datetime(2025, 1, 15, 10, 30, tzinfo=timezone.utc)
    assert parse_iso("2025-01-15T16:00:00+05:30") == datetime(
        2025, 1, 15, 10, 30, tzinfo=timezone.utc
    )
    with pytest.raises(ValueError):
        parse_iso("yesterday")
