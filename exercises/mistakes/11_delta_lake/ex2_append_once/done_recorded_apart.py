"""A known mistake: the data written, then the batch id recorded as done in a second write;
stopped between the two, the batch runs again and writes its data twice."""

from pathlib import Path

from pyspark.sql import DataFrame

from common import paths  # noqa: F401  (paths.uri(table): the address Spark gets for a path)
from common.batch_ids import query_id  # noqa: F401  (the query's id, the same after a restart)


def write_events_once(batch: DataFrame, batch_id: int, table: Path) -> None:
    """Append the micro-batch to the Delta table ``table``, once per batch of this query: the
    same batch id again must add nothing."""
    markers = table.parent / f"_{table.name}_appended"
    marker = markers / f"{query_id(batch)}-{batch_id}"
    if marker.exists():
        return  # appended before
    batch.write.format("delta").mode("append").save(paths.uri(table))
    markers.mkdir(parents=True, exist_ok=True)
    marker.touch()
