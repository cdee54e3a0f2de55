"""A known mistake: a file per run with a fresh name (a uuid): a replayed batch adds a second
file with the same alerts."""

import uuid
from pathlib import Path

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from infra import files

ALERT_THRESHOLD = 500.0


def write_alerts(batch: DataFrame, batch_id: int, folder: Path) -> int:
    amount = F.round(F.col("price") * F.col("quantity"), 2)
    alerts = batch.filter((F.col("event_type") == "purchase") & (amount >= ALERT_THRESHOLD)).select(
        "event_id", "user_id", amount.alias("amount")
    )
    lines = [row[0] for row in alerts.select(F.to_json(F.struct("*"))).collect()]
    if lines:
        text = "".join(line + "\n" for line in lines)
        files.write_atomically(folder, f"alerts-{uuid.uuid4().hex}.json", text)
    return len(lines)
