"""A known mistake: the batch id marked "done" first, then the data appended.

Killed between the two writes, the replay finds the marker and skips the batch: its rows are
lost.
"""

from pathlib import Path

from pyspark.sql import DataFrame


def write_batch(batch_df: DataFrame, batch_id: int, target: str) -> None:
    """Mark the batch id done, then append the batch; skip a batch id already marked."""
    marker = Path(target) / "_done" / f"batch-{batch_id}"
    if marker.exists():
        return
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text("done\n")
    batch_df.write.mode("append").parquet(str(Path(target) / "records"))
