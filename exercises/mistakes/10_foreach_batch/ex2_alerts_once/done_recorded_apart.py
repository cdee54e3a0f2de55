"""A known mistake: the data written, then the batch id recorded as done in a second write;
stopped between the two, the batch runs again and writes its data twice."""

from pathlib import Path

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from infra import files  # noqa: F401  (files.write_atomically: a file appears whole or not at all)

ALERT_THRESHOLD = 500.0  # an alert for a purchase worth at least this much

DONE_FILE = "_done_batches.txt"  # the batch ids whose alerts are in the log


def write_alerts(batch: DataFrame, batch_id: int, folder: Path) -> int:
    """Write the batch's alerts as JSON lines into ``folder``; return how many there were."""
    amount = F.round(F.col("price") * F.col("quantity"), 2)
    alerts = batch.filter((F.col("event_type") == "purchase") & (amount >= ALERT_THRESHOLD)).select(
        "event_id", "user_id", amount.alias("amount")
    )
    lines = [row[0] for row in alerts.select(F.to_json(F.struct("*"))).collect()]
    folder.mkdir(parents=True, exist_ok=True)
    done_file = folder / DONE_FILE
    done = set(done_file.read_text(encoding="utf-8").split()) if done_file.exists() else set()
    if str(batch_id) in done:
        return len(lines)  # a replay: written before
    # One log of alerts: each batch adds its lines at the end.
    with open(folder / "alerts.jsonl", "a", encoding="utf-8") as log:
        log.writelines(line + "\n" for line in lines)
    # Then note the batch as written.
    with open(done_file, "a", encoding="utf-8") as log:
        log.write(f"{batch_id}\n")
    return len(lines)
