"""A known mistake: the data appended, then a "done" marker for the batch id written after it.

It survives a kill after the sink returns (the marker is there, the replay skips the batch), but
not one between the two writes: the replay finds no marker and appends the rows again.
"""

from pathlib import Path

from pyspark.sql import DataFrame


def write_batch(batch_df: DataFrame, batch_id: int, target: str) -> None:
    """Append the batch, then mark its batch id done; skip a batch id already marked."""
    marker = Path(target) / "_done" / f"batch-{batch_id}"
    if marker.exists():
        return
    batch_df.write.mode("append").parquet(str(Path(target) / "records"))
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text("done\n")
