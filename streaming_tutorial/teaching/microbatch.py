"""Run a streaming query on finite, hand-made input and get each micro-batch back.

Used by the tests (exact rows, no clock) and by lessons that walk through a
deterministic scenario (which events a watermark drops, when a window closes).

Each inner list of ``batches`` becomes one JSON file; the file source reads one
file per trigger (``maxFilesPerTrigger=1``) and ``availableNow`` stops the query
when all files are read. So batch N of the query sees exactly file N.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

from common import paths, storage
from infra.files import json_lines, write_atomically


@dataclass
class BatchResult:
    batch_id: int
    rows: list  # pyspark Rows the sink received in this batch
    watermark: str | None = None  # the event-time watermark used by this batch, if any


@dataclass
class Run:
    batches: list[BatchResult] = field(default_factory=list)
    progress: list[dict] = field(default_factory=list)  # query.recentProgress, one dict per batch

    def rows(self) -> list:
        """Every row of every batch, in order."""
        return [row for batch in self.batches for row in batch.rows]


def write_batches(
    folder: Path,
    batches: Sequence[Sequence[dict | str]],
    *,
    first_number: int = 0,
    first_mtime: float | None = None,
    name: str = "batch",
) -> Path:
    """Write one JSON Lines file per batch, in order, numbered on from ``first_number``
    (``<name>-0000.json``...). A record is a dict (one JSON line) or a str, written as it is (a
    line that is not valid JSON, say).

    The file source orders new files by modification time, not by name, and files
    written within the same clock tick tie; so each file gets its own mtime,
    ``first_mtime`` plus its number: one second apart, in batch order. Calls that go on
    numbering with the same ``first_mtime`` write files newer than the earlier ones.
    """
    if first_mtime is None:
        first_mtime = time.time() - first_number - len(batches) - 60
    for number, records in enumerate(batches, start=first_number):
        text = "".join(
            record + "\n" if isinstance(record, str) else json_lines([record]) for record in records
        )
        path = write_atomically(folder, f"{name}-{number:04d}.json", text)
        os.utime(path, (first_mtime + number, first_mtime + number))
    return folder


def stream_batches(spark, folder: Path, schema):
    """A streaming DataFrame over ``folder`` that reads one file per micro-batch."""
    storage.require_local_input(
        "This scenario", folder
    )  # Python writes its batches (write_batches)
    return spark.readStream.schema(schema).option("maxFilesPerTrigger", 1).json(paths.uri(folder))


def collect_batches(
    streaming_df,
    checkpoint: Path,
    *,
    output_mode: str = "append",
    sort_key: Callable | None = None,
    timeout: float = 120,
) -> Run:
    """Run ``streaming_df`` with availableNow and return what the sink got in each batch.

    ``foreachBatch`` runs on the driver, so collecting each batch is exact and cheap
    for the small inputs this is meant for. Empty batches (no new data, but the
    watermark moved, so e.g. append-mode windows were finalised) are kept too.
    """
    query, run = start_collecting(
        streaming_df,
        checkpoint,
        output_mode=output_mode,
        sort_key=sort_key,
        trigger={"availableNow": True},
    )
    try:
        finished = query.awaitTermination(timeout)
    finally:
        if query.isActive:
            query.stop()
    if not finished:
        raise TimeoutError(f"the query did not finish its input within {timeout} s")
    return finish_run(query, run)


def start_collecting(
    streaming_df,
    checkpoint: Path,
    *,
    output_mode: str = "append",
    sort_key: Callable | None = None,
    trigger: dict | None = None,
) -> tuple:
    """Start ``streaming_df`` into a foreachBatch sink that keeps each batch's rows: (query, Run).

    Without ``trigger`` the query runs a batch as soon as there is new input; drive it
    with ``processAllAvailable()`` (see ``demos.replay``'s ``edits``), stop it, then
    call :func:`finish_run`.
    """
    run = Run()
    lock = threading.Lock()

    def keep(batch_df, batch_id: int) -> None:
        rows = batch_df.collect()
        with lock:
            run.batches.append(
                BatchResult(batch_id, sorted(rows, key=sort_key) if sort_key else rows)
            )

    writer = (
        streaming_df.writeStream.outputMode(output_mode)
        .foreachBatch(keep)
        .option("checkpointLocation", paths.uri(checkpoint))
    )
    if trigger:
        writer = writer.trigger(**trigger)
    return writer.start(), run


def finish_run(query, run: Run) -> Run:
    """Add the stopped ``query``'s progress to ``run``: batches sorted, each with its watermark."""
    run.progress = [dict(progress) for progress in query.recentProgress]
    marks = {p["batchId"]: p.get("eventTime", {}).get("watermark") for p in run.progress}
    run.batches.sort(key=lambda batch: batch.batch_id)
    for batch in run.batches:
        batch.watermark = marks.get(batch.batch_id)
    return run
