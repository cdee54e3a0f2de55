"""Exercise 04.1 · One stream, two sinks — a reference solution."""

from pathlib import Path

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery

from common import parsing, paths
from common.schemas import ECOMMERCE_EVENT_SCHEMA


def start_sinks(
    lines: DataFrame, events_dir: Path, quarantine_dir: Path, checkpoints: Path, trigger: dict
) -> list[StreamingQuery]:
    """Two queries on one stream: the good events to Parquet, one folder per date; the bad
    lines to JSON. Each resumes where it stopped."""
    # Each writeStream ... start() is a query of its own, reading the input at its own pace.
    # A checkpoint belongs to exactly one query: each gets its own folder, the same on every
    # run, so a restart resumes after the last batch that query committed.
    events = (
        build_events(lines)
        .writeStream.format("parquet")
        # Append is the only mode a file sink supports; partitionBy makes one folder per date.
        .outputMode("append")
        .partitionBy("date")
        .option("path", paths.uri(events_dir))
        .option("checkpointLocation", paths.uri(checkpoints / "events"))
        .trigger(**trigger)
        .start()
    )
    quarantine = (
        build_quarantine(lines)
        .writeStream.format("json")
        .outputMode("append")
        .option("path", paths.uri(quarantine_dir))
        .option("checkpointLocation", paths.uri(checkpoints / "quarantine"))
        .trigger(**trigger)
        .start()
    )
    return [events, quarantine]


def build_events(lines: DataFrame) -> DataFrame:
    """The good events plus the date they happened on (the Parquet partition column)."""
    good = parsing.valid_records(lines, ECOMMERCE_EVENT_SCHEMA)
    return good.withColumn("date", F.to_date("timestamp"))


def build_quarantine(lines: DataFrame) -> DataFrame:
    """The lines that are not valid events: their file, the reason and the raw text."""
    return parsing.quarantined(lines, "source_file")
