"""Reading a query's progress reports (``query.recentProgress``, ``query.lastProgress``).

A query reports progress after every micro-batch it runs, and also while it waits: with no
new input it reports an idle progress every ``spark.sql.streaming.noDataProgressEventInterval``
(10 s by default). An idle report carries the batch id of the *next* batch, no ``addBatch``
time, no input rows, and each state operator's ``numRowsTotal`` as the last batch left it (in
Spark 4.2 its ``numRowsUpdated``, ``numRowsRemoved`` and ``numRowsDroppedByWatermark`` are 0),
so counting every report counts batches more than once, and ``lastProgress`` after a run is
often no batch at all.
"""

from __future__ import annotations

import statistics
from itertools import pairwise
from typing import Sequence

from common.timestamps import parse_iso


def batches_run(progress: Sequence[dict]) -> list[dict]:
    """Reports of the micro-batches that ran (with or without new rows), idle reports left out."""
    return [report for report in progress if "addBatch" in report["durationMs"]]


def rows_read(progress: Sequence[dict]) -> int:
    """The input rows of every micro-batch in ``progress``."""
    return sum(report["numInputRows"] for report in progress)


def read_in_batches(progress: Sequence[dict], unit: str = "rows") -> str:
    """'read 25 rows in 3 micro-batches': what a query did, for the learner."""
    batches = batches_run(progress)
    return (
        f"read {rows_read(batches)} {unit} in {len(batches)} "
        f"micro-batch{'es' * (len(batches) != 1)}"
    )


def state_totals(progress: Sequence[dict]) -> tuple[int, int, int] | None:
    """(micro-batches run, rows the state store keeps after the last, rows removed over all of
    them) for a query with one stateful operator; None if no batch ran."""
    operators = [
        batch["stateOperators"][0] for batch in batches_run(progress) if batch.get("stateOperators")
    ]
    if not operators:
        return None
    return (
        len(operators),
        operators[-1]["numRowsTotal"],
        sum(op["numRowsRemoved"] for op in operators),
    )


def seconds_between_batches(progress: Sequence[dict]) -> float | None:
    """The median time from the start of one micro-batch that ran to the start of the next (each
    report's ``timestamp``): a query's first batch, slow on a cold JVM, does not skew it. None
    with fewer than two batches."""
    starts = [parse_iso(report["timestamp"]).timestamp() for report in batches_run(progress)]
    return statistics.median(b - a for a, b in pairwise(starts)) if len(starts) > 1 else None


def describe_batches(progress: Sequence[dict]) -> tuple[int, str, str]:
    """(micro-batches that ran, their input rows as '10+10+5', median seconds from one start to
    the next as '2.0 s' or '-'): what a trigger did, as cells of a table."""
    batches = batches_run(progress)
    every = seconds_between_batches(batches)
    return (
        len(batches),
        "+".join(str(batch["numInputRows"]) for batch in batches) or "-",
        f"{every:.1f} s" if every is not None else "-",
    )
