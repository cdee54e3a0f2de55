"""A known mistake: a plain append, so a batch that runs again is appended again."""

from pathlib import Path

from pyspark.sql import DataFrame

from common import paths


def write_events_once(batch: DataFrame, batch_id: int, table: Path) -> None:
    batch.write.format("delta").mode("append").save(paths.uri(table))
