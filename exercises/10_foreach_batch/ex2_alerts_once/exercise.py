"""Exercise 10.2 · Alerts sent twice (fix) — practises lesson 10, idempotent foreachBatch writes.

``write_alerts`` is the foreachBatch function of a query over shop events: it writes each
purchase worth ALERT_THRESHOLD or more (price x quantity) as a JSON line into the folder
``folder``, where an alerting job reads every line of every file. On a first run it is right.
But after a crash and a restart, some alerts are in the folder twice: a restart duplicates rows.
Find out why, and make it write each alert once, however often Spark runs a batch.

The check runs ``write_alerts`` in a real query for each micro-batch, runs batch 1 a second time
(what Spark does when it crashed after the sink wrote the batch but before it recorded the batch
as done; the retry comes from a fresh import of your file, as in a restarted process), stops
batch 2 inside your function right after one of its writes (a file written, renamed or removed)
and runs it again, and after each batch reads every line of every file in ``folder`` (names that
start with "." or "_" excepted, as Spark's readers skip them).

Expected keys of each line (the alerts, in any order):
  event_id   the purchase
  user_id    who bought
  amount     price x quantity, rounded to 2 places
The check shows each alert with ``lines``: how many lines of the folder hold it (1 is right).

Input: micro-batches of shop events with common.schemas.ECOMMERCE_EVENT_SCHEMA (event_id,
user_id, event_type, product_id, product_name, category, price, quantity, timestamp).

The check takes about 5 seconds (measured on 2 cores).

Check it:  python course.py exercises check 10.2
Stuck?     python course.py exercises hint 10.2
"""

from pathlib import Path

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from infra import files  # noqa: F401  (files.write_atomically: a file appears whole or not at all)

ALERT_THRESHOLD = 500.0  # an alert for a purchase worth at least this much


def write_alerts(batch: DataFrame, batch_id: int, folder: Path) -> int:
    """Write the batch's alerts as JSON lines into ``folder``; return how many there were."""
    amount = F.round(F.col("price") * F.col("quantity"), 2)
    alerts = batch.filter((F.col("event_type") == "purchase") & (amount >= ALERT_THRESHOLD)).select(
        "event_id", "user_id", amount.alias("amount")
    )
    lines = [row[0] for row in alerts.select(F.to_json(F.struct("*"))).collect()]
    folder.mkdir(parents=True, exist_ok=True)
    # One log of alerts: each batch adds its lines at the end.
    with open(folder / "alerts.jsonl", "a", encoding="utf-8") as log:
        log.writelines(line + "\n" for line in lines)
    return len(lines)
