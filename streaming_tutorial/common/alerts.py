"""Micro-batches kept as files named after their batch id, and alerts written once per alert.

A ``foreachBatch`` sink is at-least-once: after a crash Spark runs the last micro-batch
again, with the same id and the same input. Everything here is keyed by that id, so a
replay changes nothing:

- ``write_batch_file``: a batch's rows as JSON lines in ``batch-<id>.json``, written
  atomically; a replay rewrites the same file with the same lines.
- ``read_batch_files``: every row of every batch file, each with its ``batch_id``, in order.
- ``write_alerts_once``: alerts to ``<kind>-batch-<id>.json`` files, or to a Kafka topic
  with a marker file per batch id sent (a replay finds the marker and sends nothing).
- ``find_revenue_drops``: the rule "a category whose revenue in a window drops well below
  its recent average", a pure function of closed windows.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterable, Sequence

from .files import json_lines, write_atomically

BATCH_FILE = "batch-{batch_id:06d}.json"


def write_batch_file(folder: Path, batch_id: int, rows: Sequence[dict], prefix: str = "") -> Path | None:
    """Write ``rows`` (each given its ``batch_id``) to ``folder/<prefix>batch-<id>.json``; None for no rows."""
    if not rows:
        return None
    return write_atomically(folder, prefix + BATCH_FILE.format(batch_id=batch_id),
                            json_lines({"batch_id": batch_id, **row} for row in rows))


def read_batch_files(folder: Path, prefix: str = "", before: int | None = None) -> list[dict]:
    """Every row of the batch files in ``folder`` (those of batches before ``before`` only, if given),
    in batch order."""
    rows = []
    for path in sorted(folder.glob(f"{prefix}batch-*.json")) if folder.is_dir() else []:
        for line in path.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            if before is None or row["batch_id"] < before:
                rows.append(row)
    return sorted(rows, key=lambda row: row["batch_id"])  # stable: the order within a batch is kept


def latest_per_key(rows: Iterable[dict], *key: str) -> list[dict]:
    """The last row of each key, in batch order: what an update-mode query's rows add up to."""
    latest = {}
    for row in sorted(rows, key=lambda row: row["batch_id"]):
        latest[tuple(row[name] for name in key)] = row
    return [latest[found] for found in sorted(latest)]


def find_revenue_drops(closed: Sequence[dict], history: Sequence[dict], *, ratio: float,
                       recent: int) -> list[dict]:
    """Alerts for categories whose revenue in a closed window is below ``ratio`` x their recent average.

    ``closed``: the windows this batch closed, ``history``: those closed before, as rows with
    ``window_start``, ``category`` and ``revenue``. The recent average of a category is its mean
    revenue over the ``recent`` windows of the shop just before (a window in which the category
    sold nothing counts 0), so a category that sold nothing at all in a window can drop too.
    Windows with fewer than ``recent`` windows before them are not judged.
    """
    revenue = {(row["window_start"], row["category"]): row["revenue"] for row in [*history, *closed]}
    windows = sorted({start for start, _ in revenue})
    categories = sorted({category for _, category in revenue})
    alerts = []
    for start in sorted({row["window_start"] for row in closed}):
        before = windows[:windows.index(start)][-recent:]
        if len(before) < recent:
            continue
        for category in categories:
            average = round(sum(revenue.get((window, category), 0.0) for window in before) / recent, 2)
            now = revenue.get((start, category), 0.0)
            if average > 0 and now < ratio * average:
                alerts.append({"alert_id": f"drop:{category}:{start}", "kind": "revenue drop", "category": category,
                               "window_start": start, "revenue": now, "recent_average": average})
    return alerts


def describe_alert(alert: dict) -> str:
    """One line for the learner: what happened, when."""
    if alert["kind"] == "revenue drop":
        return (f"{alert['window_start'][11:16]} revenue drop: {alert['category']} {alert['revenue']:.2f} "
                f"(recent average {alert['recent_average']:.2f})")
    return (f"{alert['timestamp'][11:19]} large purchase: {alert['user_id']} {alert['product_name']} "
            f"x{alert['quantity']} = {alert['amount']:.2f}")


def write_alerts_once(alerts: Sequence[dict], batch_id: int, kind: str, folder: Path,
                      kafka: tuple[str, str] | None = None) -> int:
    """Write a batch's alerts once: to ``folder/<kind>-batch-<id>.json``, or to Kafka (bootstrap, topic).

    Files: a replayed batch rewrites its file with the same lines. Kafka cannot take a message
    back, so a marker file ``folder/sent/<kind>-<id>`` records each batch sent (and how many), after Kafka
    acknowledged it; a replay finds it and sends nothing. (A crash between the send and the
    marker still sends twice: every alert carries its ``alert_id`` as key, for consumers to
    drop repeats. Exactly-once into Kafka needs Kafka transactions.) Returns the alerts written.
    """
    if kafka is None:
        write_batch_file(folder, batch_id, alerts, prefix=f"{kind}-")
        return len(alerts)
    marker = folder / "sent" / f"{kind}-{batch_id}"
    if marker.exists() or not alerts:
        return 0
    from kafka import KafkaProducer

    bootstrap, topic = kafka
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
    try:
        for alert in alerts:
            producer.send(topic, key=alert["alert_id"].encode(), value=json.dumps(alert).encode())
        producer.flush()
    finally:
        producer.close()
    write_atomically(marker.parent, marker.name, str(len(alerts)))
    return len(alerts)


def sent_to_kafka(folder: Path) -> int:
    """How many alerts ``write_alerts_once`` sent to Kafka from ``folder`` (its marker files say)."""
    return sum(int(marker.read_text() or 0) for marker in (folder / "sent").glob("*-*"))


def read_alerts(folder: Path) -> list[dict]:
    """Every alert written to files in ``folder`` (of every kind), by event time: a large purchase's, a
    revenue drop's window start."""
    return sorted(read_batch_files(folder, "*-"), key=lambda alert: (alert.get("timestamp") or alert["window_start"],
                                                                     alert["alert_id"]))
