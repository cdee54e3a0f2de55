"""Event times as text: the one format the course's JSON records, lessons and tests use.

Every time is UTC with milliseconds and a ``Z`` (2025-01-15T10:30:00.000Z), so files
and outputs read the same on every machine, whatever its time zone.
"""

from __future__ import annotations

from datetime import datetime, timezone


def iso(moment: datetime) -> str:
    """A time as the JSON files carry it: 2025-01-15T10:30:00.000Z (converted to UTC)."""
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def parse_iso(text: str) -> datetime:
    """The time an ISO-8601 text names (``iso``'s output, or a --base-time); no zone means UTC.

    Raises ValueError for text that is not ISO-8601.
    """
    value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return value if value.tzinfo else value.replace(tzinfo=timezone.utc)
