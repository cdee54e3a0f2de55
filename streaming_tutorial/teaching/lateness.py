"""Late data, shown: the two watermarks of each micro-batch, as a table and as a picture.

Since Spark 3.4 a stateful operator drops late input rows with the watermark of the
batch *before* (so chained stateful operators agree on what is late), while it closes
windows, evicts state and fires timeouts with the batch's *own* watermark (the one the
query progress reports as ``eventTime.watermark``). A row older than the current
watermark can therefore still get in.

- ``late_row_watermarks(run)``, ``watermark_table(...)``: the two watermarks per batch
  of a replayed run (``teaching.demos.replay``), as rows for ``narration.print_table``.
- ``show_window_lateness(...)``: a replayed windowed count over labelled records, shown
  batch by batch (what each batch read, its two watermarks, the windows it emitted, the
  records it dropped) and drawn as a PNG (``plot_arrivals``).
- ``dropped_by_watermark``, ``state_rows``, ``describe_progress``: read from a query's
  progress.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Callable, Sequence

from common import paths
from common.config import BASE_EVENT_TIME
from common.timestamps import iso, parse_iso
from teaching import plots
from teaching.demos import records_as_text, short_time
from teaching.microbatch import Run
from teaching.narration import print_table
from teaching.progress import batches_run, read_in_batches

# How each fate of a record is drawn: marker, colour, legend label.
STYLES = {
    "counted": ("o", "tab:blue", "counted"),
    "dropped": ("x", "tab:red", "dropped as too late"),
    "waiting": ("^", "tab:gray", "window still open"),
}
LATE_ROWS_LABEL = "watermark that drops late rows (the previous batch's)"
CLOSING_LABEL = "watermark that closes windows (this batch's)"
TOO_LATE_LABEL = "too late: its window was closed before this batch"


def late_row_watermarks(run: Run) -> dict[int, str | None]:
    """The watermark each micro-batch of ``run`` dropped late rows with: the previous batch's
    (batch 0: none)."""
    marks = {p["batchId"]: p.get("eventTime", {}).get("watermark") for p in run.progress}
    return {batch.batch_id: marks.get(batch.batch_id - 1) for batch in run.batches}


def watermark_table(
    batches: Sequence[Sequence[dict]],
    run: Run,
    *,
    describe_input: Callable[[Sequence[dict]], str] = records_as_text,
    describe_row: Callable = str,
    describe_dropped: Callable[[Sequence[dict]], str] | None = None,
) -> list[tuple]:
    """Rows for ``narration.print_table``, one per micro-batch of a replayed ``run``: what it read,
    the watermark it dropped late rows with (the previous batch's), the one it closed state
    with (its own), the rows its sink got (one line each) and, with ``describe_dropped``,
    which of its input records were dropped as late."""
    late = late_row_watermarks(run)
    table = []
    for batch in run.batches:
        records = batches[batch.batch_id] if batch.batch_id < len(batches) else []
        lines = [describe_row(row) for row in batch.rows] or ["-"]
        row = (
            str(batch.batch_id),
            describe_input(records) if records else "(no new data)",
            short_time(late[batch.batch_id]) or "-",
            short_time(batch.watermark) or "-",
            lines[0],
        )
        dropped = (describe_dropped(records) or "-",) if describe_dropped else ()
        table.append(row + dropped)
        table.extend(("", "", "", "", line) + ("",) * len(dropped) for line in lines[1:])
    return table


def seconds_after(moment: datetime | str | None, base: datetime = BASE_EVENT_TIME) -> float | None:
    """How a scenario names a time: seconds after ``base`` (10:30:00 on the course's day).

    ``moment`` is a time Spark returned (a naive datetime in the process's zone) or an ISO
    text (a watermark of the query progress). None, and the epoch (Spark's "no watermark
    yet"), give None.
    """
    if moment is None:
        return None
    moment = parse_iso(moment) if isinstance(moment, str) else moment.astimezone(timezone.utc)
    return None if moment.timestamp() == 0 else (moment - base).total_seconds()


def iso_after(seconds: float, base: datetime = BASE_EVENT_TIME) -> str:
    """The reverse of ``seconds_after``: 12 -> '2025-01-15T10:30:12.000Z', as the simulators
    write times."""
    return iso(base + timedelta(seconds=seconds))


def dropped_by_watermark(progress: Sequence[dict]) -> int:
    """Rows the stateful operators dropped as too late (numRowsDroppedByWatermark), over
    ``progress``."""
    return sum(
        op.get("numRowsDroppedByWatermark", 0)
        for p in progress
        for op in p.get("stateOperators", [])
    )


def state_rows(progress: Sequence[dict]) -> dict[int, int]:
    """Rows in the state store after each micro-batch (numRowsTotal of every stateful operator)."""
    return {
        p["batchId"]: sum(op["numRowsTotal"] for op in p["stateOperators"])
        for p in batches_run(progress)
        if p.get("stateOperators")
    }


def print_state_rows(progress_by_label: dict[str, Sequence[dict]]) -> None:
    """A table of the state rows after each micro-batch, one column per query ('state rows
    <label>')."""
    rows = {label: state_rows(progress) for label, progress in progress_by_label.items()}
    batches = sorted({batch for by_batch in rows.values() for batch in by_batch})
    print_table(
        ("batch", *(f"state rows {label}" for label in rows)),
        [(batch, *(by_batch.get(batch, "-") for by_batch in rows.values())) for batch in batches],
    )


def describe_progress(progress: Sequence[dict]) -> str:
    """One sentence on a query's run: rows read, micro-batches, rows dropped as late, last
    watermark."""
    progress = batches_run(progress)
    mark = short_time(progress[-1].get("eventTime", {}).get("watermark")) if progress else ""
    return (
        f"{read_in_batches(progress)} and "
        f"dropped {dropped_by_watermark(progress)} as too late; "
        + (
            f"its watermark ended at {mark}."
            if mark
            else "its watermark never moved from its start."
        )
    )


def show_window_lateness(
    run: Run,
    scenario: Sequence[Sequence[tuple[int, float]]],
    *,
    window_seconds: int,
    ids: str,
    picture: Path,
    title: str,
) -> dict[str, str]:
    """Show a replayed windowed count over a scenario of (id, seconds after 10:30:00) records.

    ``run``'s rows must have ``window_start``, ``window_end`` and the list of ids they counted
    (the column ``ids``). Prints one table row per micro-batch (what it read as 'r6@08',
    its two watermarks, the windows it emitted as '[00,10) r1 r2', the records it dropped)
    and Spark's own count of dropped rows, and saves the picture. Returns each record's
    fate by label ('r6'): counted, dropped (its window was closed by the end) or waiting.
    """
    counted = {f"r{i}" for row in run.rows() for i in row[ids]}
    final = seconds_after(run.batches[-1].watermark) if run.batches else None
    fates: dict[str, str] = {}
    for batch in scenario:
        for i, second in batch:
            window_end = (second // window_seconds + 1) * window_seconds
            if f"r{i}" in counted:
                fates[f"r{i}"] = "counted"
            elif final is not None and window_end <= final:
                fates[f"r{i}"] = "dropped"  # its window was closed: it can never be counted
            else:
                fates[f"r{i}"] = "waiting"
    labelled = [[(f"r{i}", second) for i, second in batch] for batch in scenario]
    print_table(
        (
            "batch",
            "reads (id@second)",
            "drops late rows",
            "closes windows",
            "windows emitted [from,to) ids",
            "dropped",
        ),
        watermark_table(
            labelled,
            run,
            describe_input=lambda batch: " ".join(
                f"{label}@{second:02.0f}" for label, second in batch
            ),
            describe_row=lambda row: (
                f"[{seconds_after(row.window_start):02.0f},{seconds_after(row.window_end):02.0f}) "
                + " ".join(f"r{i}" for i in row[ids])
            ),
            describe_dropped=lambda batch: " ".join(
                label for label, _ in batch if fates[label] == "dropped"
            ),
        ),
    )
    missing = sum(fate == "dropped" for fate in fates.values())
    print(
        f"Spark's own count (numRowsDroppedByWatermark): {dropped_by_watermark(run.progress)} "
        f"rows dropped; records missing from every window: {missing}.",
        flush=True,
    )
    batches = replay_pictures(
        labelled, run, fates, too_late_below=lambda mark: mark // window_seconds * window_seconds
    )
    top = (
        max(second for batch in scenario for _, second in batch) // window_seconds + 1
    ) * window_seconds
    saved = plot_arrivals(
        batches,
        picture,
        title=title,
        ylabel="event time (seconds after 10:30:00)",
        ylim=(-5, top),
        yticks=range(0, int(top) + 1, window_seconds),
    )
    print(
        f"Saved {paths.display(saved)}: event time against arrival order, both watermarks of "
        "each batch, the closed windows and the dropped records.",
        flush=True,
    )
    return fates


@dataclass
class Arrival:
    """One record in the picture: its label, its event time (the y value) and its fate (a key
    of STYLES)."""

    label: str
    event_time: float
    status: str


@dataclass
class BatchPicture:
    """One micro-batch in the picture: the records it read, in arrival order, and its
    watermarks (y values)."""

    batch_id: int
    arrivals: list[Arrival] = field(default_factory=list)
    late_rows_watermark: float | None = None
    closing_watermark: float | None = None
    too_late_below: float | None = None  # event times below this were dropped in this batch


def replay_pictures(
    points: Sequence[Sequence[tuple[str, float]]],
    run: Run,
    fates: dict[str, str],
    *,
    too_late_below: Callable[[float], float] | None = None,
) -> list[BatchPicture]:
    """A replayed ``run`` as pictures, one per micro-batch: the (label, event time) ``points`` of
    its input, each with its fate (a key of STYLES), and the two watermarks it ran with, in
    seconds after 10:30:00. ``too_late_below(late-row watermark)``: where the too-late band ends.
    """
    late = late_row_watermarks(run)
    pictures = []
    for batch in run.batches:
        arrived = points[batch.batch_id] if batch.batch_id < len(points) else []
        late_mark = seconds_after(late[batch.batch_id])
        band = too_late_below(late_mark) if too_late_below and late_mark is not None else None
        pictures.append(
            BatchPicture(
                batch.batch_id,
                [Arrival(label, y, fates[label]) for label, y in arrived],
                late_mark,
                seconds_after(batch.watermark),
                band,
            )
        )
    return pictures


def plot_arrivals(
    batches: Sequence[BatchPicture],
    target: Path,
    *,
    title: str,
    ylabel: str,
    ylim: tuple[float, float],
    yticks: Sequence[float] = (),
) -> Path:
    """Save the picture of ``batches`` at ``target``, a 900 x 550 PNG, and return its path.

    Each record is a point (event time against arrival order); each batch that read
    something gets its two watermarks as lines labelled with their values, and the band of
    event times that were already too late in it. A batch that read nothing gets no column.
    """
    figure, axes = plots.new_figure(figsize=(9, 5.5), dpi=100)
    bottom = ylim[0]  # where the batch labels go
    position = 0  # the arrival order of the last record drawn
    for batch in (batch for batch in batches if batch.arrivals):
        first = position + 1
        for arrival in batch.arrivals:
            position += 1
            marker, colour, label = STYLES[arrival.status]
            axes.scatter(
                [position],
                [arrival.event_time],
                marker=marker,
                color=colour,
                s=70,
                label=label,
                zorder=3,
            )
            axes.annotate(
                arrival.label,
                (position, arrival.event_time),
                textcoords="offset points",
                xytext=(6, 4),
                fontsize=8,
            )
        # The batch's column: from just before its first record to just after its last.
        left = first - 0.4
        right = position + 0.4
        if batch.too_late_below is not None:
            axes.fill_between(
                [left, right],
                bottom,
                batch.too_late_below,
                color="tab:red",
                alpha=0.08,
                label=TOO_LATE_LABEL,
            )
        # The late-row watermark wide and underneath, so it shows where both are equal; each is
        # labelled with its value inside the batch's column: the late-row one at the left, below
        # the line, the closing one at the right, above it.
        if batch.late_rows_watermark is not None:
            axes.hlines(
                batch.late_rows_watermark,
                left,
                right,
                colors="tab:orange",
                linestyles="dotted",
                linewidth=3,
                label=LATE_ROWS_LABEL,
            )
            axes.annotate(
                f"{batch.late_rows_watermark:g}",
                (left, batch.late_rows_watermark),
                textcoords="offset points",
                xytext=(0, -9),
                fontsize=7,
                color="tab:orange",
            )
        if batch.closing_watermark is not None:
            axes.hlines(
                batch.closing_watermark,
                left,
                right,
                colors="tab:green",
                linestyles="dashed",
                linewidth=1.5,
                label=CLOSING_LABEL,
            )
            axes.annotate(
                f"{batch.closing_watermark:g}",
                (right, batch.closing_watermark),
                ha="right",
                textcoords="offset points",
                xytext=(0, 3),
                fontsize=7,
                color="tab:green",
            )
        axes.axvline(position + 0.5, color="lightgray", linewidth=0.8)
        axes.text(
            (first + position) / 2,
            bottom + 1,
            f"batch {batch.batch_id}",
            ha="center",
            fontsize=8,
            color="dimgray",
        )
    handles, labels = axes.get_legend_handles_labels()
    by_label = dict(zip(labels, handles, strict=True))
    order = [label for *_, label in STYLES.values()] + [
        LATE_ROWS_LABEL,
        CLOSING_LABEL,
        TOO_LATE_LABEL,
    ]
    shown = [label for label in order if label in by_label]
    axes.legend([by_label[label] for label in shown], shown, loc="upper left", fontsize=8)
    axes.set_yticks(list(yticks))
    axes.grid(axis="y", color="lightgray", linewidth=0.6)
    axes.set_ylim(*ylim)
    axes.set_xlabel("arrival order")
    axes.set_ylabel(ylabel)
    axes.set_title(title)
    return plots.save_figure(figure, target)
