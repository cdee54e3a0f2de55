"""Exercise 10.2 · Alerts sent twice — a reference solution.

The log file that every batch added to is gone: each batch id writes a file of its own,
batch-<id>.json, whole or not at all, as lesson 10's write_lines does. A batch that Spark runs
again has the same id and the same rows, so it replaces its own file with the same lines:
nothing doubles, and no other batch's alerts are touched.
"""

from pathlib import Path

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from infra import files

ALERT_THRESHOLD = 500.0  # an alert for a purchase worth at least this much


def write_alerts(batch: DataFrame, batch_id: int, folder: Path) -> int:
    """Write the batch's alerts as JSON lines into ``folder``; return how many there were."""
    amount = F.round(F.col("price") * F.col("quantity"), 2)
    alerts = batch.filter((F.col("event_type") == "purchase") & (amount >= ALERT_THRESHOLD)).select(
        "event_id", "user_id", amount.alias("amount")
    )
    lines = [row[0] for row in alerts.select(F.to_json(F.struct("*"))).collect()]
    if lines:
        # Named after the batch id: a replay of this batch writes this file again, with the
        # same lines. Written elsewhere, then renamed: a reader never sees half a file.
        text = "".join(line + "\n" for line in lines)
        files.write_atomically(folder, f"batch-{batch_id:06d}.json", text)
    return len(lines)
