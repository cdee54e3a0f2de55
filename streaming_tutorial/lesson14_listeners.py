"""Watching running queries from inside the process: a StreamingQueryListener that prints one
line per micro-batch, flags what needs a look, and keeps every event it received.

    listener = ProgressPrinter(trigger_ms=2000, watch={"sensor_stats"})
    spark.streams.addListener(listener)       # before start(): it sees onQueryStarted too
    ...
    listener.wait_for(lambda: listener.terminated, timeout=60)   # events arrive asynchronously

What it receives (pyspark 4.2):

- ``onQueryStarted``: synchronously, before ``start()`` returns;
- ``onQueryProgress``: after each micro-batch that ran (with or without new rows), on the
  listener bus thread, a little after the batch;
- ``onQueryIdle``: instead of a progress event while there is no new data, at most once per
  ``spark.sql.streaming.noDataProgressEventInterval`` (the idle report still lands in
  ``query.recentProgress``, see teaching/progress.py);
- ``onQueryTerminated``: the query's id and, if it failed, the error text (with its Java trace).

A progress carries its figures as JSON (``event.progress.json``); a Kafka source's
``metrics`` are strings ("35") and its offsets JSON text ('{"topic": {"0": 120}}').
``batch_line`` parses them into a :class:`BatchLine`; ``plot_progress`` draws a run.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from pyspark.sql.streaming import StreamingQueryListener

from common import paths
from teaching.narration import first_line, print_table

GROWING_BATCHES = (
    3  # a consumer lag bigger than this many micro-batches ago, and still growing: flagged
)
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
    return json.loads(text_or_dict) if isinstance(text_or_dict, str) else dict(text_or_dict)


def batch_line(
    progress: dict, *, trigger_ms: int | None = None, lags_before: Sequence[int] = ()
) -> BatchLine:
    """Parse one progress report (a dict, e.g. ``json.loads(event.progress.json)``) into a BatchLine.

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
    """True when the lag keeps growing: it is bigger than ``batches`` micro-batches ago and grew in the
    last one (needs batches + 1 values). A producer's pace is uneven: one flat batch does not hide a trend."""
    recent = list(lags)[-(batches + 1) :]
    return len(recent) == batches + 1 and recent[0] < recent[-1] and recent[-2] < recent[-1]


def format_line(line: BatchLine) -> tuple:
    """The cells of one table row (see COLUMNS)."""
    mark = (
        (line.watermark or "")[11:19]
        if line.watermark and not line.watermark.startswith("1970")
        else "-"
    )
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


def format_columns(cells: tuple, widths: Sequence[int] = (12, 5, 5, 6, 7, 8, 10, 9, 5)) -> str:
    """One line of the live table: fixed widths, so lines printed one at a time line up."""
    fixed = "  ".join(str(cell).ljust(width) for cell, width in zip(cells, widths))
    return ("  " + fixed + "  " + "  ".join(str(cell) for cell in cells[len(widths) :])).rstrip()


@dataclass
class Terminated:
    """What onQueryTerminated received: the query's name (from its start event), the error text and class."""

    query: str
    exception: str | None
    error_class: str | None


class ProgressPrinter(StreamingQueryListener):
    """Prints a header when a watched query starts, one line per micro-batch it runs, a line when
    it goes idle or ends; keeps every event (``lines``, ``idle``, ``terminated``).

    ``watch``: the query names to print (None: all); events of the others are kept, not printed.
    The callbacks run on Spark's listener thread: they only parse, print and append.
    """

    def __init__(
        self,
        *,
        trigger_ms: int | None = None,
        watch: set[str] | None = None,
        out: Callable[[str], None] = lambda text: print(text, flush=True),
    ) -> None:
        self.trigger_ms, self.watch, self.out = trigger_ms, watch, out
        self.names: dict[str, str] = {}  # query id -> name
        self.lines: list[BatchLine] = []
        self.idle: list[tuple[str, str]] = []  # (query, timestamp)
        self.terminated: list[Terminated] = []
        self._changed = threading.Condition()

    def _shown(self, name: str) -> bool:
        return self.watch is None or name in self.watch

    def onQueryStarted(self, event) -> None:
        with self._changed:
            self.names[str(event.id)] = event.name or str(event.id)[:8]
        if self._shown(self.names[str(event.id)]):
            self.out(
                f"[listener] onQueryStarted: {event.name} at {event.timestamp}\n"
                + format_columns(COLUMNS)
            )

    def onQueryProgress(self, event) -> None:
        progress = json.loads(event.progress.json)  # the report as Spark writes it: plain JSON
        with self._changed:
            before = [
                line.lag
                for line in self.lines
                if line.query == progress.get("name") and line.lag is not None
            ]
            line = batch_line(progress, trigger_ms=self.trigger_ms, lags_before=before)
            self.lines.append(line)
            self._changed.notify_all()
        if self._shown(line.query):
            self.out(format_columns(format_line(line)))

    def onQueryIdle(self, event) -> None:
        name = self.names.get(str(event.id), str(event.id)[:8])
        with self._changed:
            self.idle.append((name, event.timestamp))
            self._changed.notify_all()
        if self._shown(name):
            self.out(
                f"[listener] onQueryIdle: {name} found no new data (trigger at {event.timestamp})"
            )

    def onQueryTerminated(self, event) -> None:
        name = self.names.get(str(event.id), str(event.id)[:8])
        with self._changed:
            self.terminated.append(Terminated(name, event.exception, event.errorClassOnException))
            self._changed.notify_all()
        if self._shown(name):
            self.out(
                f"[listener] onQueryTerminated: {name}"
                + (" failed" if event.exception else " stopped")
            )

    def wait_for(self, condition: Callable[[], object], timeout: float) -> bool:
        """Wait until ``condition()`` is true (checked whenever an event arrives), at most ``timeout`` s."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while not condition():
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._changed.wait(left)
        return True

    def print_terminated(self, query: str, timeout: float = 30.0) -> None:
        """Print what onQueryTerminated received for ``query`` (waiting at most ``timeout`` s for it):
        the error's first line and its error class."""
        if not self.wait_for(
            lambda: any(ended.query == query for ended in self.terminated), timeout
        ):
            print(
                f"onQueryTerminated for {query} has not arrived within {timeout:g} s.", flush=True
            )
        for ended in (ended for ended in self.terminated if ended.query == query):
            error = first_line(ended.exception) if ended.exception else "None (stopped, not failed)"
            print(
                f"onQueryTerminated received: exception {error}\n  errorClassOnException {ended.error_class}",
                flush=True,
            )

    def batches_of(self, query: str) -> list[BatchLine]:
        with self._changed:
            return [line for line in self.lines if line.query == query]


def print_lines(lines: Sequence[BatchLine]) -> None:
    """The recorded lines again, as one table."""
    print_table(COLUMNS, [format_line(line) for line in lines])


def plot_progress(
    lines: Sequence[BatchLine], target: Path, *, title: str, trigger_ms: int | None = None
) -> Path:
    """Save a PNG of a run (900 x 700 pixels): batch duration against the trigger interval, input
    and processed rows per second, and the Kafka lag when there is one, per micro-batch."""
    import matplotlib

    matplotlib.use("Agg")  # no display needed: write a PNG file
    import matplotlib.pyplot as plt

    has_lag = any(line.lag is not None for line in lines)
    figure, axes = plt.subplots(3 if has_lag else 2, 1, figsize=(9, 7), dpi=100, sharex=True)
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
    target.parent.mkdir(parents=True, exist_ok=True)
    figure.tight_layout()
    figure.savefig(target)
    plt.close(figure)
    return target


def save_progress_picture(
    listener: ProgressPrinter, query: str, target: Path, trigger_ms: int | None = None
) -> None:
    """Draw what ``listener`` recorded of ``query`` (``plot_progress``) and say where the PNG is."""
    lines = listener.batches_of(query)
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
        f"Saved {paths.display(saved)}: batch duration, rows per second and Kafka lag per micro-batch.",
        flush=True,
    )
