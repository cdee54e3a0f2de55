"""A known mistake: the events go through foreachBatch, which appends a batch's Parquet files,
then writes a 'done' marker and skips a batch whose marker exists. A crash between the two
leaves the rows without their marker: the replayed batch appends them again."""

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

    def write_events(batch: DataFrame, batch_id: int) -> None:
        marker = events_dir / "_done" / f"batch_{batch_id}"
        if marker.exists():  # written before a restart: do not write it twice
            return
        batch.write.mode("append").partitionBy("date").parquet(paths.uri(events_dir))
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.touch()

    events = (
        build_events(lines)
        .writeStream.foreachBatch(write_events)
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
