"""Another right answer: both queries started in one loop, the path and the checkpoint given
with options(...), append being the writer's default mode."""

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
    queries = []
    for frame, file_format, folder, name, partitions in [
        (build_events(lines), "parquet", events_dir, "events", ["date"]),
        (build_quarantine(lines), "json", quarantine_dir, "quarantine", []),
    ]:
        writer = frame.writeStream.format(file_format).options(
            path=paths.uri(folder), checkpointLocation=paths.uri(checkpoints / name)
        )
        if partitions:
            writer = writer.partitionBy(*partitions)
        queries.append(writer.trigger(**trigger).start())
    return queries


def build_events(lines: DataFrame) -> DataFrame:
    """The good events plus the date they happened on (the Parquet partition column)."""
    good = parsing.valid_records(lines, ECOMMERCE_EVENT_SCHEMA)
    return good.withColumn("date", F.to_date("timestamp"))


def build_quarantine(lines: DataFrame) -> DataFrame:
    """The lines that are not valid events: their file, the reason and the raw text."""
    return parsing.quarantined(lines, "source_file")
