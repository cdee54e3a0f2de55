"""Lesson 17's files and Kafka plumbing: micro-batches kept as files named after their query and
batch id, and alerts written once.

A ``foreachBatch`` sink is at-least-once: after a crash Spark runs the last micro-batch
again, with the same id and the same input. Everything here is keyed by the query's id
(``common.batch_ids.query_id(batch)``: the same after a restart from the checkpoint, a new one
with a new checkpoint) and the batch id, so a replay changes nothing, and a query started
over (its batch ids from 0 again) neither overwrites nor mixes with the files of the one
before. Lesson 17's foreachBatch functions call:

- ``write_batch_file``: a batch's rows as JSON lines in ``<query id>-batch-<id>.json``,
  written atomically; a replay rewrites the same file with the same lines.
- ``read_batch_files``: every row of one query's batch files, each with its ``batch_id``, in
  order.
- ``write_alerts_once``: alerts to ``<kind>-<query id>-batch-<id>.json`` files (a replay
  rewrites the same file; a query started over writes its alerts again, to files of its new
  id, and ``read_alerts`` keeps one per alert id), or to a Kafka topic with a marker file per
  batch sent that lists its alert ids: an alert already sent (a replay, or a query started
  over) is not sent again, unless a crash came between the send and the marker.
- ``find_revenue_drops``: the rule "a category whose revenue in a window drops well below
  its recent average", a pure function of closed windows.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterable, Sequence

from infra.files import json_lines, write_atomically

BATCH_FILE = "{query}-batch-{batch_id:06d}.json"


def write_batch_file(
    folder: Path, query: str, batch_id: int, rows: Sequence[dict], prefix: str = ""
) -> Path | None:
    """Write ``rows`` (each given its ``batch_id``) to ``folder/<prefix><query>-batch-<id>.json``;
    None for no rows."""
    if not rows:
        return None
    return write_atomically(
        folder,
        prefix + BATCH_FILE.format(query=query, batch_id=batch_id),
        json_lines({"batch_id": batch_id, **row} for row in rows),
    )


def read_batch_files(
    folder: Path, query: str, prefix: str = "", before: int | None = None
) -> list[dict]:
    """Every row of ``query``'s batch files in ``folder`` (those of batches before ``before``
    only, if given), in batch order. ``query`` may be a pattern: ``"*"`` reads the files of every
    query."""
    rows = []
    for path in sorted(folder.glob(f"{prefix}{query}-batch-*.json")) if folder.is_dir() else []:
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


def find_revenue_drops(
    closed: Sequence[dict], history: Sequence[dict], *, ratio: float, recent: int
) -> list[dict]:
    """Alerts for categories whose revenue in a closed window is below ``ratio`` x their recent
    average.

    ``closed``: the windows this batch closed, ``history``: those closed before, as rows with
    ``window_start``, ``category`` and ``revenue``. The recent average of a category is its mean
    revenue over the ``recent`` windows of the shop just before (a window in which the category
    sold nothing counts 0), so a category that sold nothing at all in a window can drop too.
    Windows with fewer than ``recent`` windows before them are not judged.
    """
    revenue = {
        (row["window_start"], row["category"]): row["revenue"] for row in [*history, *closed]
    }
    windows = sorted({start for start, _ in revenue})
    categories = sorted({category for _, category in revenue})
    alerts = []
    for start in sorted({row["window_start"] for row in closed}):
        before = windows[: windows.index(start)][-recent:]
        if len(before) < recent:
            continue
        for category in categories:
            average = round(
                sum(revenue.get((window, category), 0.0) for window in before) / recent, 2
            )
            now = revenue.get((start, category), 0.0)
            if average > 0 and now < ratio * average:
                alerts.append(
                    {
                        "alert_id": f"drop:{category}:{start}",
                        "kind": "revenue drop",
                        "category": category,
                        "window_start": start,
                        "revenue": now,
                        "recent_average": average,
                    }
                )
    return alerts


def describe_alert(alert: dict) -> str:
    """One line for the learner: what happened, when."""
    if alert["kind"] == "revenue drop":
        return (
            f"{alert['window_start'][11:16]} revenue drop: {alert['category']} "
            f"{alert['revenue']:.2f} (recent average {alert['recent_average']:.2f})"
        )
    # A product may have no name (the schema allows it): to_json then leaves the key out.
    product = alert.get("product_name") or alert.get("product_id") or "a product"
    return (
        f"{alert['timestamp'][11:19]} large purchase: {alert['user_id']} {product} "
        f"x{alert['quantity']} = {alert['amount']:.2f}"
    )


def write_alerts_once(
    alerts: Sequence[dict],
    query: str,
    batch_id: int,
    kind: str,
    folder: Path,
    kafka: tuple[str, str] | None = None,
) -> int:
    """Write a batch's alerts once: to ``folder/<kind>-<query>-batch-<id>.json``, or to Kafka
    (``kafka``: bootstrap, topic).

    Files: a replayed batch rewrites its file with the same lines; a query started over (a new
    query id) writes its alerts again, to new files, and ``read_alerts`` keeps one of each.
    Kafka cannot take a message back, so a marker file ``folder/sent/<kind>-<query>-<id>``
    lists the alert ids of each batch sent, after Kafka acknowledged them; an alert listed in
    any marker is not sent again. (A crash between the send and the marker still sends twice:
    every alert carries its ``alert_id`` as key, for consumers to drop repeats. Exactly-once
    into Kafka needs Kafka transactions.)
    Returns the alerts written or sent.
    """
    if kafka is None:
        write_batch_file(folder, query, batch_id, alerts, prefix=f"{kind}-")
        return len(alerts)
    sent = sent_to_kafka(folder)
    new = [alert for alert in alerts if alert["alert_id"] not in sent]
    if not new:
        return 0
    from kafka import KafkaProducer

    from infra.kafka import client_options

    bootstrap, topic = kafka
    producer = KafkaProducer(**client_options(bootstrap), acks="all")
    try:
        for alert in new:
            producer.send(topic, key=alert["alert_id"].encode(), value=json.dumps(alert).encode())
        producer.flush()
    finally:
        producer.close()
    write_atomically(
        folder / "sent",
        f"{kind}-{query}-{batch_id}",
        "".join(f"{alert['alert_id']}\n" for alert in new),
    )
    return len(new)


def sent_to_kafka(folder: Path) -> set[str]:
    """The ids of the alerts ``write_alerts_once`` sent to Kafka from ``folder`` (its marker files
    list them)."""
    return {
        line for marker in (folder / "sent").glob("*-*") for line in marker.read_text().splitlines()
    }


def read_alerts(folder: Path) -> list[dict]:
    """Every alert written to files in ``folder`` (of every kind and query) once, by event time:
    a large purchase's, a revenue drop's window start. A query started over writes its alerts
    again: the same ids."""
    unique = {alert["alert_id"]: alert for alert in read_batch_files(folder, "*", "*-")}
    return sorted(
        unique.values(),
        key=lambda alert: (alert.get("timestamp") or alert["window_start"], alert["alert_id"]),
    )
