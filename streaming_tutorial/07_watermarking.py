"""07 · Watermarks: how late may an event be, and when is a window final?

What you'll learn
  - ``withWatermark("event_time", "10 seconds")``: after each micro-batch Spark sets the
    watermark to (latest event time seen) - 10 s; the NEXT batch uses it.
  - In append mode a window is printed once, in the batch whose watermark reaches its end;
    then its state is dropped. A later event for that window is dropped as too late, and
    only then: an event older than the watermark whose window is still open gets in.
  - Without a watermark the state of a windowed aggregation only grows; with one, old
    windows leave it (``stateOperators[].numRowsTotal`` in the query's progress).
  - How to read ``numRowsDroppedByWatermark`` and ``eventTime.watermark`` in the progress.

Run
  python streaming_tutorial/07_watermarking.py                 # scenario, then 15 s live
  python streaming_tutorial/07_watermarking.py --duration 90   # long enough to drop late rows
  No simulator needed: the scenario is built in, the live part uses the rate source with
  synthetic delays. The picture goes to output/07_watermarking/late_events.png.

What you'll see
  The scenario is the same on every machine; the live part differs.
  batch  events in (id@second)  windows emitted [from,to) ids  dropped  watermark after
  -----  ---------------------  -----------------------------  -------  ---------------
  0      r1@03 r2@07 r3@12      -                              -        10:30:02
  1      r4@01 r5@24            -                              -        10:30:14
  2      r6@08 r7@31            [00,10) r1 r2 r4 r6            -        10:30:21
  3      r8@09 r9@13            [10,20) r3 r9                  r8       10:30:21
  4      r10@19 r11@26 r12@55   -                              r10      10:30:45
  5      (no new data)          [20,30) r5 r11                 -        10:30:45
                                [30,40) r7
  Spark's own count (numRowsDroppedByWatermark): 2 rows dropped; readings missing ...
  ...
  batch  state rows without watermark  state rows with watermark
  -----  ----------------------------  -------------------------
  0      1                             1
  1      2                             2
  2      3                             3
  3      4                             3
  4      5                             3
  5      6                             3
  6      -                             2
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from common import cli, paths
from common.config import BASE_EVENT_TIME
from common.microbatch import Run, collect_batches, stream_batches, write_batches
from common.runner import await_queries, banner, checkpoint_root, lesson_session, run_lesson, say
from common.schemas import SENSOR_SCHEMA
from common.timestamps import iso

LESSON = "07_watermarking"
WINDOW_SECONDS = 10  # tumbling windows of 10 s of event time
LATENESS_SECONDS = 10  # withWatermark delay: how far behind the latest event we still wait
# The scenario, as (reading_id, seconds after 10:30:00), one list per micro-batch, in
# arrival order. r4, r6 and r9 are behind the latest event but still get in; r8 and r10
# arrive after their window was closed. r12 moves the watermark so the last windows close.
SCENARIO = [
    [(1, 3), (2, 7), (3, 12)],
    [(4, 1), (5, 24)],
    [(6, 8), (7, 31)],
    [(8, 9), (9, 13)],
    [(10, 19), (11, 26), (12, 55)],
]
STEADY_BATCHES = 6  # the state comparison: one new 10 s window per batch, in order
PLOT_FILE = "late_events.png"
# The live part, as in the seeds: the rate source with a synthetic delay of 0-30 s.
LIVE_ROWS_PER_SECOND = 5
LIVE_MAX_DELAY_SECONDS = 30
LIVE_WINDOW = "30 seconds"
LIVE_LATENESS = "20 seconds"
LIVE_TRIGGER = "5 seconds"
DEFAULT_DURATION = 15  # seconds of the live part; the scenarios take a few seconds more


def main(argv: list[str] | None = None) -> None:
    args = cli.lesson_parser(__doc__, duration=DEFAULT_DURATION, simulator=False).parse_args(argv)
    checkpoints = checkpoint_root(LESSON, args)
    with lesson_session(LESSON, args) as spark:
        banner(f"1. Late events: watermark {LATENESS_SECONDS} s, windows {WINDOW_SECONDS} s, append mode")
        say("""Twelve readings arrive in five micro-batches. Times are seconds after
            10:30:00: 'r6@08' is reading 6, taken at 10:30:08, and [00,10) is the window
            from 10:30:00 to 10:30:10. Each row below is one micro-batch.""")
        reports = run_scenario(spark, paths.output_for(LESSON, "scenario_input"), checkpoints / "scenario")
        print_scenario(reports)
        say("""Read it row by row. The watermark after a batch is the latest event time
            so far minus 10 s; the next batch prints (and forgets) every window ending at
            or before it: batch 2 closes [10:30:00, 10:30:10) because 10:30:14 >= 10:30:10.
            r4@01 and r6@08 were far behind the latest event, yet their window was still
            open, so they count. r8@09 arrives after its window was closed: dropped.
            r9@13 is older than the watermark in force (10:30:14), yet its window
            [10:30:10, 10:30:20) was still open, so it counts: Spark drops an event only when
            its window's end is at or below the watermark of an earlier batch, that is,
            when its window was already closed.
            r12's window [10:30:50, 10:31:00) stays open: append mode waits for more data.""")
        counted, missing = sum(r.spark_dropped for r in reports), sum(len(r.dropped) for r in reports)
        print(f"Spark's own count (numRowsDroppedByWatermark): {counted} rows dropped; "
              f"readings missing from every window: {missing}.")

        banner("2. The picture")
        picture = plot_scenario(reports, paths.output_for(LESSON, PLOT_FILE))
        print(f"Saved {paths.display(picture)}: event time against arrival order, the watermark, "
              "the closed windows and the dropped readings.")

        banner("3. State with and without a watermark (same input, update mode)")
        without, with_mark = compare_state(spark, paths.output_for(LESSON, "steady_input"), checkpoints)
        print_state_comparison(without, with_mark)
        say("""Without a watermark Spark must keep every window forever: an event may still
            arrive for any of them. With one it removes the windows the watermark has passed,
            so the state stays at three windows here (the newest ones, within 10 s of
            lateness), however long the stream runs.""")

        banner(f"4. Live: rate source, delays up to {LIVE_MAX_DELAY_SECONDS} s, watermark {LIVE_LATENESS}, "
               f"windows of {LIVE_WINDOW}")
        say(f"""Update mode, so you see windows as they fill: in append mode a window would
            print only once the latest event time is {LIVE_LATENESS} past its end. max_delay
            is the longest delay of a reading in the window.""")
        run_live(spark, args)


def build_window_counts(readings: DataFrame, lateness_seconds: int | None = LATENESS_SECONDS) -> DataFrame:
    """Readings per 10 s window of event time; with a watermark unless ``lateness_seconds`` is None."""
    if lateness_seconds is not None:
        # The watermark must be set on the event-time column BEFORE the aggregation.
        readings = readings.withWatermark("event_time", f"{lateness_seconds} seconds")
    return (
        readings.groupBy(F.window("event_time", f"{WINDOW_SECONDS} seconds"))
        .agg(F.count("*").alias("readings"), F.array_sort(F.collect_list("reading_id")).alias("reading_ids"))
        .select(F.col("window.start").alias("window_start"), F.col("window.end").alias("window_end"),
                "readings", "reading_ids")
    )


def build_delayed_readings(rate: DataFrame) -> DataFrame:
    """Rate rows as sensor readings whose event time lags their arrival by 0-30 s."""
    return (
        rate.withColumn("sensor_id", F.concat(F.lit("SENSOR-"), (F.col("value") % 3).cast("string")))
        .withColumn("temperature", F.round(20 + F.col("value") % 3 * 1.5 + F.rand(7), 1))
        .withColumn("delay_seconds", (F.rand(42) * LIVE_MAX_DELAY_SECONDS).cast("int"))
        # event_time = when it was measured; the rate source's timestamp = when it arrived.
        .withColumn("event_time", F.col("timestamp") - F.make_interval(secs=F.col("delay_seconds")))
    )


def build_live_windows(readings: DataFrame) -> DataFrame:
    return (
        readings.withWatermark("event_time", LIVE_LATENESS)
        .groupBy(F.window("event_time", LIVE_WINDOW), "sensor_id")
        .agg(F.round(F.avg("temperature"), 2).alias("avg_temp"), F.count("*").alias("readings"),
             F.max("delay_seconds").alias("max_delay"))
        .select(F.col("window.start").alias("window_start"), F.col("window.end").alias("window_end"),
                "sensor_id", "avg_temp", "readings", "max_delay")
    )


@dataclass
class BatchReport:
    """What one micro-batch of the scenario did, from Spark's output and progress."""

    batch_id: int
    arrived: list[dict]  # the readings of this batch, in arrival order
    watermark: datetime | None  # in force during the batch: closes windows ending at or before it
    watermark_after: datetime | None  # latest event time so far minus the lateness
    emitted: list  # the windows this batch printed (final, in append mode)
    dropped: list[int]  # reading ids of this batch that no window ever counted
    spark_dropped: int  # numRowsDroppedByWatermark, Spark's own count


def scenario_batches() -> list[list[dict]]:
    """SCENARIO as records of SENSOR_SCHEMA, one list per micro-batch."""
    return [[reading(reading_id, second) for reading_id, second in batch] for batch in SCENARIO]


def reading(reading_id: int, second: float, sensor: str = "SENSOR-0", temperature: float = 21.0) -> dict:
    return {
        "reading_id": reading_id,
        "sensor_id": sensor,
        "temperature": temperature,
        "humidity": 50.0,
        "event_time": iso(BASE_EVENT_TIME + timedelta(seconds=second)),
    }


def run_scenario(spark, input_folder: Path, checkpoint: Path) -> list[BatchReport]:
    """Replay the scenario from the start (fresh input and checkpoint) and report each batch."""
    write_batches(fresh_folder(input_folder), scenario_batches())
    run = collect_batches(
        build_window_counts(stream_batches(spark, input_folder, SENSOR_SCHEMA)),
        fresh_folder(checkpoint),
        sort_key=lambda row: row.window_start,
    )
    return summarise_scenario(scenario_batches(), run)


def summarise_scenario(batches: list[list[dict]], run: Run) -> list[BatchReport]:
    """Per batch: the watermark Spark reported, the windows it emitted, the readings it dropped."""
    progress = {p["batchId"]: p for p in run.progress}
    counted = {reading_id for batch in run.batches for row in batch.rows for reading_id in row.reading_ids}
    reports, latest = [], None
    for batch in run.batches:
        report = progress.get(batch.batch_id, {})
        event_time = report.get("eventTime", {})
        if "max" in event_time:
            seen = parse_time(event_time["max"])
            latest = seen if latest is None else max(latest, seen)
        watermark = parse_time(event_time.get("watermark"))
        candidates = [w for w in (watermark, latest and latest - timedelta(seconds=LATENESS_SECONDS)) if w]
        arrived = batches[batch.batch_id] if batch.batch_id < len(batches) else []
        reports.append(
            BatchReport(
                batch_id=batch.batch_id,
                arrived=arrived,
                watermark=watermark,
                watermark_after=max(candidates) if candidates else None,
                emitted=batch.rows,
                dropped=[],
                spark_dropped=sum(op.get("numRowsDroppedByWatermark", 0) for op in report.get("stateOperators", [])),
            )
        )
    # A reading no emitted window counts was dropped, unless its window is still open
    # (its end is after the final watermark: append mode has not printed it yet).
    final = reports[-1].watermark_after if reports else None
    for report in reports:
        report.dropped = [
            r["reading_id"]
            for r in report.arrived
            if r["reading_id"] not in counted and final is not None and window_end(r) <= final
        ]
    return reports


def window_end(record: dict) -> datetime:
    moment = parse_time(record["event_time"])
    offset = (moment - datetime(1970, 1, 1, tzinfo=timezone.utc)).total_seconds() % WINDOW_SECONDS
    return moment - timedelta(seconds=offset) + timedelta(seconds=WINDOW_SECONDS)


def parse_time(text: str | None) -> datetime | None:
    """An ISO time from the query progress; the 'no watermark yet' value (epoch 0) is None."""
    if not text:
        return None
    moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return None if moment.timestamp() == 0 else moment


def print_scenario(reports: list[BatchReport]) -> None:
    header = ("batch", "events in (id@second)", "windows emitted [from,to) ids", "dropped", "watermark after")
    rows = []
    for report in reports:
        events = " ".join(f"r{r['reading_id']}@{r['event_time'][17:19]}" for r in report.arrived) or "(no new data)"
        windows = [
            f"[{offset(w.window_start):02d},{offset(w.window_end):02d}) " + " ".join(f"r{i}" for i in w.reading_ids)
            for w in report.emitted
        ] or ["-"]
        dropped = " ".join(f"r{i}" for i in report.dropped) or "-"
        after = f"{report.watermark_after:%H:%M:%S}" if report.watermark_after else "-"
        rows.append((str(report.batch_id), events, windows[0], dropped, after))
        rows.extend(("", "", extra, "", "") for extra in windows[1:])
    print_table(header, rows)


def offset(moment: datetime) -> int:
    """Seconds after 10:30:00, the scenario's base time: how the tables name times."""
    # Spark returns timestamps as naive datetimes in the machine's local time zone.
    return int((moment.astimezone(timezone.utc) - BASE_EVENT_TIME).total_seconds())


def print_table(header: tuple, rows: list[tuple]) -> None:
    widths = [max(len(str(cell)) for cell in column) for column in zip(header, *rows)]
    for line in (header, tuple("-" * width for width in widths), *rows):
        print("  ".join(str(cell).ljust(width) for cell, width in zip(line, widths)).rstrip())


def plot_scenario(reports: list[BatchReport], target: Path) -> Path:
    """Event time against arrival order: accepted, dropped and still-open readings, the watermark."""
    import matplotlib

    matplotlib.use("Agg")  # no display needed: write a PNG file
    import matplotlib.pyplot as plt

    def seconds(moment: datetime) -> float:
        return (moment - BASE_EVENT_TIME).total_seconds()

    figure, axes = plt.subplots(figsize=(9, 5.5), dpi=100)
    dropped = {i for report in reports for i in report.dropped}
    counted = {i for report in reports for window in report.emitted for i in window.reading_ids}
    position, closed_until = 0, None
    for report in reports:
        if not report.arrived:
            continue
        first = position + 1
        for record in report.arrived:
            position += 1
            y = seconds(parse_time(record["event_time"]))
            rid = record["reading_id"]
            style = ("x", "tab:red", "dropped") if rid in dropped else (
                ("o", "tab:blue", "counted") if rid in counted else ("^", "tab:gray", "window still open"))
            axes.scatter([position], [y], marker=style[0], color=style[1], s=70, label=style[2], zorder=3)
            axes.annotate(f"r{rid}", (position, y), textcoords="offset points", xytext=(6, 4), fontsize=8)
        last = position
        if report.watermark is not None:
            axes.hlines(seconds(report.watermark), first - 0.4, last + 0.4, colors="tab:green",
                        linestyles="dashed", label="watermark in force")
        if closed_until is not None:
            axes.fill_between([first - 0.4, last + 0.4], -5, closed_until, color="tab:red", alpha=0.08,
                              label="windows already closed: too late")
        if report.watermark is not None:  # windows ending at or before it are closed from now on
            closed_until = seconds(report.watermark) // WINDOW_SECONDS * WINDOW_SECONDS
        axes.axvline(last + 0.5, color="lightgray", linewidth=0.8)
        axes.text((first + last) / 2, -4, f"batch {report.batch_id}", ha="center", fontsize=8, color="dimgray")
    handles, labels = axes.get_legend_handles_labels()
    unique = dict(zip(labels, handles))
    axes.legend(unique.values(), unique.keys(), loc="upper left", fontsize=8)
    axes.set_yticks(range(0, 61, WINDOW_SECONDS))
    axes.grid(axis="y", color="lightgray", linewidth=0.6)
    axes.set_ylim(-5, 60)
    axes.set_xlabel("arrival order")
    axes.set_ylabel("event time (seconds after 10:30:00)")
    axes.set_title(f"Watermark = latest event time - {LATENESS_SECONDS} s; {WINDOW_SECONDS} s windows, append mode")
    target.parent.mkdir(parents=True, exist_ok=True)
    figure.tight_layout()
    figure.savefig(target)
    plt.close(figure)
    return target


def steady_batches(count: int = STEADY_BATCHES) -> list[list[dict]]:
    """In-order readings: batch n holds two readings of window [10:30:n0, 10:30:n0+10)."""
    return [[reading(10 * n + 1, 10 * n + 2), reading(10 * n + 2, 10 * n + 6)] for n in range(count)]


def compare_state(spark, input_folder: Path, checkpoints: Path) -> tuple[Run, Run]:
    """The same input and query, once without and once with a watermark."""
    folder = write_batches(fresh_folder(input_folder), steady_batches())
    runs = []
    for name, lateness in (("state_without_watermark", None), ("state_with_watermark", LATENESS_SECONDS)):
        stream = stream_batches(spark, folder, SENSOR_SCHEMA)
        runs.append(collect_batches(build_window_counts(stream, lateness), fresh_folder(checkpoints / name),
                                    output_mode="update"))
    return runs[0], runs[1]


def state_rows(run: Run) -> dict[int, int]:
    """Rows in the aggregation's state after each batch (numRowsTotal of the query progress)."""
    return {p["batchId"]: sum(op["numRowsTotal"] for op in p["stateOperators"]) for p in run.progress}


def print_state_comparison(without: Run, with_mark: Run) -> None:
    plain, marked = state_rows(without), state_rows(with_mark)
    rows = [(str(b), str(plain.get(b, "-")), str(marked.get(b, "-"))) for b in sorted(set(plain) | set(marked))]
    print_table(("batch", "state rows without watermark", "state rows with watermark"), rows)


def run_live(spark, args) -> None:
    rate = (
        spark.readStream.format("rate")
        .option("rowsPerSecond", LIVE_ROWS_PER_SECOND)
        .load()
    )
    # No checkpoint here, on purpose: the rate source counts its rows from the time its
    # checkpoint was created, so a restart an hour later would emit an hour of rows at once.
    query = (
        build_live_windows(build_delayed_readings(rate))
        .writeStream.outputMode("update")
        .format("console")
        .option("truncate", False)
        .trigger(processingTime=LIVE_TRIGGER)
        .queryName("live_watermark")
        .start()
    )
    await_queries([query], args.duration)
    progress = query.recentProgress
    late = sum(op.get("numRowsDroppedByWatermark", 0) for p in progress for op in p.get("stateOperators", []))
    mark = progress[-1].get("eventTime", {}).get("watermark") if progress else None
    say(f"""The live query read {sum(p['numInputRows'] for p in progress)} rows in {len(progress)}
        micro-batches and dropped {late} as too late; its watermark ended at {mark}. Run with
        --duration 90 to see the watermark pass the first windows and late rows dropped.""")


def fresh_folder(folder: Path) -> Path:
    """An empty folder: the scenarios always replay from the start."""
    shutil.rmtree(folder, ignore_errors=True)
    return folder


if __name__ == "__main__":
    run_lesson(main)
