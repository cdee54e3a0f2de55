"""Another right answer: DataStreamWriter.start(path, format, outputMode, partitionBy, queryName,
**options) sets the same things as the chained calls: two file sinks in append mode, the events
partitioned by date, each with its own checkpoint folder that is the same on every run (named
differently from the hint's, which does not matter)."""

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
    queries = []
    for name, frame, fmt, folder, partition in (
        ("events", build_events(lines), "parquet", events_dir, "date"),
        ("quarantine", build_quarantine(lines), "json", quarantine_dir, None),
    ):
        queries.append(
            frame.writeStream.trigger(**trigger).start(
                path=paths.uri(folder),
                format=fmt,
                outputMode="append",
                partitionBy=partition,
                checkpointLocation=paths.uri(checkpoints / f"{name}_sink"),
            )
        )
    return queries


def build_events(lines: DataFrame) -> DataFrame:
    """The good events plus the date they happened on (the Parquet partition column)."""
    good = parsing.valid_records(lines, ECOMMERCE_EVENT_SCHEMA)
    return good.withColumn("date", F.to_date("timestamp"))


def build_quarantine(lines: DataFrame) -> DataFrame:
    """The lines that are not valid events: their file, the reason and the raw text."""
    return parsing.quarantined(lines, "source_file")
