"""Exercise 04.1 · One stream, two sinks (build) — practises lesson 04, several sinks per stream.

The shop's event files hold good events, and lines that are no usable event. Write the
function that starts two queries on the same stream of parsed lines:
  - the good events (build_events below), appended to Parquet files in events_dir, one folder
    per date (the date column: date=2025-01-15/...);
  - the lines that are no usable event (build_quarantine below), appended to JSON files in
    quarantine_dir, with their reason.
Give each query what it needs to resume where it stopped, under the folder checkpoints. Start
each with .trigger(**trigger) and return the started queries.

The check runs your function on the first files, lets both queries finish, then runs it
again (a restart) once one more file has landed: the restart must add that file's rows, and
only those. After each run it reads both folders back as batch DataFrames, and compares:
  folder                "events" or "quarantine"
  partition / reason    an event's partition folder (date=...), or a line's reason
  event_id / line       the event's id, or the line itself

Input: lines of text, parsed as in lessons 03 and 04 (common.parsing.parse_json with
common.schemas.ECOMMERCE_EVENT_SCHEMA): the event's fields and quarantine_reason (null for a
good event), plus value (the line) and source_file.

The check takes about 10 seconds (measured on 2 cores).

Check it:  python course.py exercises check 04.1
Stuck?     python course.py exercises hint 04.1
"""

from pathlib import Path

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery

from common import parsing, paths  # noqa: F401  (paths.uri(folder): a folder as Spark wants it)
from common.schemas import ECOMMERCE_EVENT_SCHEMA


def start_sinks(
    lines: DataFrame, events_dir: Path, quarantine_dir: Path, checkpoints: Path, trigger: dict
) -> list[StreamingQuery]:
    """Two queries on one stream: the good events to Parquet, one folder per date; the bad
    lines to JSON. Each resumes where it stopped."""
    raise NotImplementedError("TODO: start the two queries")


def build_events(lines: DataFrame) -> DataFrame:
    """The good events plus the date they happened on (the Parquet partition column)."""
    good = parsing.valid_records(lines, ECOMMERCE_EVENT_SCHEMA)
    return good.withColumn("date", F.to_date("timestamp"))


def build_quarantine(lines: DataFrame) -> DataFrame:
    """The lines that are not valid events: their file, the reason and the raw text."""
    return parsing.quarantined(lines, "source_file")
