"""A known mistake: the one log file opened with "w": a replay is harmless, but each batch wipes
the alerts of the batches before it."""

from pathlib import Path

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

ALERT_THRESHOLD = 500.0


def write_alerts(batch: DataFrame, batch_id: int, folder: Path) -> int:
    amount = F.round(F.col("price") * F.col("quantity"), 2)
    alerts = batch.filter((F.col("event_type") == "purchase") & (amount >= ALERT_THRESHOLD)).select(
        "event_id", "user_id", amount.alias("amount")
    )
    lines = [row[0] for row in alerts.select(F.to_json(F.struct("*"))).collect()]
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "alerts.jsonl", "w", encoding="utf-8") as log:
        log.writelines(line + "\n" for line in lines)
    return len(lines)
