"""Lesson 14's companion: a progress report as one line of a table a person reads, the flags
that say what needs a look, and a picture of a run.

The lesson's listener (``ProgressPrinter`` in 14_monitoring.py) hands each report here::

    line = batch_line(json.loads(event.progress.json), trigger_ms=2000, lags_before=[0, 20])
    print(format_columns(format_line(line)))

A progress carries its figures as JSON (``event.progress.json``); a Kafka source's
``metrics`` are strings ("35") and its offsets JSON text ('{"topic": {"0": 120}}').
``batch_line`` parses them into a :class:`BatchLine`; ``plot_progress`` draws a run.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from common import paths
from teaching import plots

# A consumer lag bigger than this many micro-batches ago, and still growing: flagged.
GROWING_BATCHES = 3
COLUMNS = (
    "query",
    "batch",
    "rows",
    "in/s",
    "done/s",
    "batch ms",
    "state rows",
    "watermark",
    "lag",
    "flags",
)
# The widths of the live table's columns but the last (flags): lines printed one at a time
# line up under the header.
WIDTHS = (12, 5, 5, 6, 7, 8, 10, 9, 5)


@dataclass(frozen=True)
class BatchLine:
    """What one micro-batch's progress says, in the units a person reads."""

    query: str
    batch_id: int
    rows: int  # numInputRows
    input_per_second: float  # how fast rows arrived since the batch before
    processed_per_second: float  # how fast this batch worked through its rows
    batch_ms: int  # durationMs.triggerExecution: the whole micro-batch
    state_rows: int | None  # stateOperators[].numRowsTotal, summed; None for a stateless query
    watermark: str | None  # eventTime.watermark ('' when the query has none)
    lag: int | None  # Kafka: sources[].metrics.maxOffsetsBehindLatest (a string in the report)
    flags: tuple[str, ...] = ()


def kafka_lag(source: dict) -> int | None:
    """The messages the partition furthest behind still had to read after this batch, or None
    for a source that is not Kafka. The metrics are strings: '35', avg '17.5'."""
    metric = (source.get("metrics") or {}).get("maxOffsetsBehindLatest")
    return None if metric is None else int(float(metric))


def offsets(text_or_dict) -> dict[str, dict[str, int]]:
    """A Kafka source's startOffset/endOffset/latestOffset: {topic: {partition: offset}}.
    The listener's SourceProgress holds JSON text; a parsed progress JSON holds the object."""
    if text_or_dict is None:
        return {}
    if isinstance(text_or_dict, str):
        return json.loads(text_or_dict)
    return dict(text_or_dict)


def batch_line(
    progress: dict, *, trigger_ms: int | None = None, lags_before: Sequence[int] = ()
) -> BatchLine:
    """One progress report (a dict, e.g. ``json.loads(event.progress.json)``) as a BatchLine.

    ``trigger_ms``: flag a batch that took longer than the trigger interval (the next one starts
    late: the query falls behind). ``lags_before``: this query's earlier lags, oldest first, to
    flag a lag that keeps growing (``lag_growing``).
    """
    operators = progress.get("stateOperators") or []
    lags = [lag for lag in map(kafka_lag, progress.get("sources") or []) if lag is not None]
    line = BatchLine(
        query=progress.get("name") or str(progress.get("id", ""))[:8],
        batch_id=progress["batchId"],
        rows=progress["numInputRows"],
        input_per_second=float(progress.get("inputRowsPerSecond") or 0.0),
        processed_per_second=float(progress.get("processedRowsPerSecond") or 0.0),
        batch_ms=int(progress["durationMs"].get("triggerExecution", 0)),
        state_rows=sum(op["numRowsTotal"] for op in operators) if operators else None,
        watermark=(progress.get("eventTime") or {}).get("watermark", ""),
        lag=max(lags) if lags else None,
    )
    flags = []
    if trigger_ms is not None and line.batch_ms > trigger_ms:
        flags.append(f"SLOW: {line.batch_ms} ms > trigger {trigger_ms} ms")
    if line.lag is not None and lag_growing([*lags_before, line.lag]):
        flags.append(f"LAG GROWING for {GROWING_BATCHES} batches")
    return BatchLine(**{**line.__dict__, "flags": tuple(flags)})


def lag_growing(lags: Sequence[int], batches: int = GROWING_BATCHES) -> bool:
    """True when the lag keeps growing: it is bigger than ``batches`` micro-batches ago and grew
    in the last one (needs batches + 1 values). A producer's pace is uneven: one flat batch
    does not hide a trend."""
    recent = list(lags)[-(batches + 1) :]
    return len(recent) == batches + 1 and recent[0] < recent[-1] and recent[-2] < recent[-1]


def format_line(line: BatchLine) -> tuple:
    """The cells of one table row (see COLUMNS)."""
    if line.watermark and not line.watermark.startswith("1970"):
        mark = line.watermark[11:19]  # the time of day: '2025-01-15T10:31:05.000Z' -> 10:31:05
    else:
        mark = "-"  # no watermark yet (the epoch), or none at all
    return (
        line.query,
        line.batch_id,
        line.rows,
        f"{line.input_per_second:.1f}",
        f"{line.processed_per_second:.1f}",
        line.batch_ms,
        "-" if line.state_rows is None else line.state_rows,
        mark,
        "-" if line.lag is None else line.lag,
        "; ".join(line.flags),
    )


def format_columns(cells: tuple, widths: Sequence[int] = WIDTHS) -> str:
    """One line of the live table: fixed widths, so lines printed one at a time line up; the
    cells after the last width (the flags) as they are."""
    # zip stops at the last width: the cells after it come next, unpadded.
    fixed = "  ".join(str(cell).ljust(width) for cell, width in zip(cells, widths, strict=False))
    rest = "  ".join(str(cell) for cell in cells[len(widths) :])
    return ("  " + fixed + "  " + rest).rstrip()


def plot_progress(
    lines: Sequence[BatchLine], target: Path, *, title: str, trigger_ms: int | None = None
) -> Path:
    """Save a PNG of a run (900 x 700 pixels): batch duration against the trigger interval, input
    and processed rows per second, and the Kafka lag when there is one, per micro-batch."""
    has_lag = any(line.lag is not None for line in lines)
    figure, axes = plots.new_figure(3 if has_lag else 2, 1, figsize=(9, 7), dpi=100, sharex=True)
    ids = [line.batch_id for line in lines]
    slow = [
        "tab:red" if trigger_ms is not None and line.batch_ms > trigger_ms else "tab:blue"
        for line in lines
    ]
    axes[0].bar(ids, [line.batch_ms for line in lines], color=slow)
    if trigger_ms is not None:
        axes[0].axhline(
            trigger_ms,
            color="tab:orange",
            linestyle="dashed",
            label=f"trigger interval ({trigger_ms} ms)",
        )
        axes[0].legend(loc="upper right", fontsize=8)
    axes[0].set_ylabel("batch duration (ms)")
    axes[1].plot(
        ids, [line.input_per_second for line in lines], marker="o", label="input rows/s (arriving)"
    )
    axes[1].plot(
        ids, [line.processed_per_second for line in lines], marker="x", label="processed rows/s"
    )
    axes[1].set_ylabel("rows per second")
    axes[1].legend(loc="upper right", fontsize=8)
    if has_lag:
        axes[2].plot(ids, [line.lag for line in lines], marker="o", color="tab:purple")
        axes[2].set_ylabel("Kafka lag (messages)")
    for axis in axes:
        axis.grid(color="lightgray", linewidth=0.6)
    axes[-1].set_xlabel("micro-batch")
    axes[0].set_title(title)
    return plots.save_figure(figure, target)


def save_progress_picture(
    lines: Sequence[BatchLine], query: str, target: Path, trigger_ms: int | None = None
) -> None:
    """Draw the lines a listener recorded of ``query`` (``plot_progress``) and say where the
    PNG is."""
    if not lines:
        print(f"No micro-batch of {query} ran: no picture this time.", flush=True)
        return
    saved = plot_progress(
        lines,
        target,
        trigger_ms=trigger_ms,
        title=f"{query}: one point per micro-batch (from the listener)",
    )
    print(
        f"Saved {paths.display(saved)}: batch duration, rows per second and Kafka lag per "
        "micro-batch.",
        flush=True,
    )
