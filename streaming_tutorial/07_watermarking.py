"""07 · Watermarks: how late may an event be, and when is a window final?

What you'll learn
  - ``withWatermark("event_time", "10 seconds")``: after each micro-batch Spark sets the
    watermark to (latest event time seen) - 10 s, for the batches that follow.
  - Each batch uses two watermarks: the previous batch's drops late rows (a row whose
    window ended at or before it), its own closes windows. In append mode a window is
    printed once, in the batch whose watermark reaches its end; then its state is dropped.
  - An event older than the watermark whose window is still open gets in.
  - Without a watermark the state of a windowed aggregation only grows; with one, old
    windows leave it (``stateOperators[].numRowsTotal`` in the query's progress).

Run
  python streaming_tutorial/07_watermarking.py                 # scenario, then 15 s live
  python streaming_tutorial/07_watermarking.py --duration 90   # long enough to drop late rows
  No simulator needed: the scenario is built in, the live part uses the rate source with
  synthetic delays. The picture goes to output/07_watermarking/late_events.png.

Practise
  python course.py exercises check 07.1   Late readings left out (build)
  python course.py exercises check 07.2   Which readings are too late? (predict)
  python course.py exercises check 07.3   State that grows forever (fix)

What you'll see
  The scenario and the state table are the same on every machine; the live part differs.
    batch  reads (id@second)     drops late rows  closes windows  windows emitted [from,to) ids  ...
    0      r1@03 r2@07 r3@12     -                -               -                              -
    1      r4@01 r5@24           -                10:30:02        -                              -
    2      r6@08 r7@31           10:30:02         10:30:14        [00,10) r1 r2 r4 r6            -
    3      r8@09 r9@13           10:30:14         10:30:21        [10,20) r3 r9                  r8
    4      r10@19 r11@26 r12@55  10:30:21         10:30:21        -                              r10
    5      (no new data)         10:30:21         10:30:45        [20,30) r5 r11                 -
                                                                  [30,40) r7
  Spark's own count (numRowsDroppedByWatermark): 2 rows dropped; records missing from every ...
  ...
    batch  state rows without watermark  state rows with watermark
    0      1                             1
    ...
    5      6                             3
    6      -                             2
  ...
  The live query read 50 rows in 4 micro-batches and dropped 0 as too
  late; its watermark ended at 05:59:04. ...
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery

from common import paths
from common.schemas import SENSOR_SCHEMA
from infra import cli
from infra.runner import banner, finish, lesson_session, pick_trigger, run_lesson, run_queries, say
from teaching import demos, lateness
from teaching.microbatch import stream_batches, write_batches

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
# The state comparison: six batches, each opening one new 10 s window (two readings, in order).
STEADY = [[(10 * n + 1, 10 * n + 2), (10 * n + 2, 10 * n + 6)] for n in range(6)]
# The live part: the rate source, each reading delayed by 0-30 s.
LIVE_ROWS_PER_SECOND = 5
LIVE_MAX_DELAY_SECONDS = 30
LIVE_WINDOW = "30 seconds"
LIVE_LATENESS = "20 seconds"
LIVE_TRIGGER = "5 seconds"
PLOT_TITLE = (
    f"Watermark = latest event time - {LATENESS_SECONDS} s; {WINDOW_SECONDS} s windows, append mode"
)
DEFAULT_DURATION = 15  # seconds of the live part; the scenarios take a few seconds more


def to_readings(batches: list[list[tuple[int, float]]]) -> list[list[dict]]:
    """(reading_id, seconds after 10:30:00) pairs as readings of SENSOR-0, batch by batch."""
    return [
        [
            {
                "reading_id": rid,
                "sensor_id": "SENSOR-0",
                "temperature": 21.0,
                "humidity": 50.0,
                "event_time": lateness.iso_after(second),
            }
            for rid, second in batch
        ]
        for batch in batches
    ]


def build_window_counts(
    readings: DataFrame, lateness_seconds: int | None = LATENESS_SECONDS
) -> DataFrame:
    """Readings per 10 s window of event time; with a watermark unless ``lateness_seconds`` is
    None."""
    if lateness_seconds is not None:
        # The watermark must be set on the event-time column BEFORE the aggregation.
        readings = readings.withWatermark("event_time", f"{lateness_seconds} seconds")
    return (
        readings.groupBy(F.window("event_time", f"{WINDOW_SECONDS} seconds"))
        .agg(
            F.count("*").alias("readings"),
            F.array_sort(F.collect_list("reading_id")).alias("reading_ids"),
        )
        .select(
            F.col("window.start").alias("window_start"),
            F.col("window.end").alias("window_end"),
            "readings",
            "reading_ids",
        )
    )


def start_state_probes(spark, workdir) -> dict:
    """The same windowed count over STEADY, without and with a watermark, into sinks that
    discard the rows: only the state each keeps matters here. Input and checkpoints start
    afresh each run."""
    if workdir.exists():
        paths.remove_tree(workdir)
    # One file per micro-batch (the scenario replay's reader): six batches, the same each run.
    readings = stream_batches(
        spark, write_batches(workdir / "input", to_readings(STEADY)), SENSOR_SCHEMA
    )
    without_watermark = start_state_probe(
        build_window_counts(readings, None), "without watermark", workdir
    )
    with_watermark = start_state_probe(
        build_window_counts(readings, LATENESS_SECONDS), "with watermark", workdir
    )
    return {"without watermark": without_watermark, "with watermark": with_watermark}


def start_state_probe(counts: DataFrame, label: str, workdir) -> StreamingQuery:
    """Start ``counts`` into the noop sink, which discards every row; its progress still
    reports the state the query keeps."""
    name = label.replace(" ", "_")
    return (
        counts.writeStream.format("noop")
        # Update mode: append mode refuses an aggregation without a watermark.
        .outputMode("update")
        .option("checkpointLocation", paths.uri(workdir / name))
        .queryName(f"state_{name}")
        # Read the six files there, then stop.
        .trigger(availableNow=True)
        .start()
    )


def read_rate(spark) -> DataFrame:
    """LIVE_ROWS_PER_SECOND rows a second: (timestamp, value)."""
    return (
        # The rate source makes rows out of nothing: a timestamp (when it was made) and a
        # counter. No files, no broker: enough to watch a watermark move.
        spark.readStream.format("rate")
        # A steady pace, so the live part shows the same picture on every machine.
        .option("rowsPerSecond", LIVE_ROWS_PER_SECOND)
        .load()
    )


def build_delayed_readings(rate: DataFrame) -> DataFrame:
    """Rate rows as sensor readings whose event time lags their arrival by 0-30 s."""
    return (
        rate.withColumn(
            "sensor_id", F.concat(F.lit("SENSOR-"), (F.col("value") % 3).cast("string"))
        )
        .withColumn("temperature", F.round(20 + F.col("value") % 3 * 1.5 + F.rand(7), 1))
        .withColumn("delay_seconds", (F.rand(42) * LIVE_MAX_DELAY_SECONDS).cast("int"))
        # event_time = when it was measured; the rate source's timestamp = when it arrived.
        .withColumn("event_time", F.col("timestamp") - F.make_interval(secs=F.col("delay_seconds")))
    )


def build_live_windows(readings: DataFrame) -> DataFrame:
    """Average temperature per sensor per 30 s window, waiting 20 s for late readings."""
    return (
        readings.withWatermark("event_time", LIVE_LATENESS)
        .groupBy(F.window("event_time", LIVE_WINDOW), "sensor_id")
        .agg(
            F.round(F.avg("temperature"), 2).alias("avg_temp"),
            F.count("*").alias("readings"),
            F.max("delay_seconds").alias("max_delay"),
        )
        .select(
            F.col("window.start").alias("window_start"),
            F.col("window.end").alias("window_end"),
            "sensor_id",
            "avg_temp",
            "readings",
            "max_delay",
        )
    )


def start_live(windows: DataFrame, trigger: dict) -> StreamingQuery:
    """The live windows on the console, each printed again whenever a batch changes it."""
    # No checkpoint, on purpose: the rate source counts its rows from the time its checkpoint
    # was created, so a restart an hour later would emit an hour of rows at once.
    return (
        windows.writeStream.outputMode("update")
        .format("console")
        .option("truncate", False)
        .trigger(**trigger)
        .queryName("live_watermark")
        .start()
    )


def main(argv: list[str] | None = None) -> None:
    args = cli.lesson_parser(__doc__, duration=DEFAULT_DURATION, simulator=False).parse_args(argv)
    with lesson_session(LESSON, args) as spark:
        banner(
            f"1. Late events: watermark {LATENESS_SECONDS} s, windows {WINDOW_SECONDS} s, "
            "append mode"
        )
        say("""Twelve readings arrive in five micro-batches. Times are seconds after 10:30:00:
            'r6@08' is reading 6, taken at 10:30:08, and [00,10) is the window from 10:30:00 to
            10:30:10. Each row below is one micro-batch, with the two watermarks it ran with.""")
        windows = demos.Output(
            build_window_counts, "append", sort_key=lambda window: window.window_start
        )
        run = demos.replay(
            spark,
            to_readings(SCENARIO),
            SENSOR_SCHEMA,
            {"windows": windows},
            paths.output_for(LESSON, "scenario"),
            describe_rows=str,
            show=False,
        )["windows"]
        lateness.show_window_lateness(
            run,
            SCENARIO,
            window_seconds=WINDOW_SECONDS,
            ids="reading_ids",
            picture=paths.output_for(LESSON, "late_events.png"),
            title=PLOT_TITLE,
        )
        say("""After each batch the watermark moves to the latest event time so far minus 10 s. The
            next batch runs with two watermarks: it drops a row whose window ended at or before the
            previous batch's watermark ("drops late rows"), and it prints and forgets every window
            ending at or before its own ("closes windows"). Batch 2 closes [10:30:00, 10:30:10)
            with 10:30:14. r4@01 and r6@08 were far behind the latest event, yet their window was
            still open, so they count. In batch 3, r8@09 is dropped: its window ended at 10:30:10,
            before 10:30:14, the previous batch's watermark. r9@13 is older than that same
            10:30:14, yet its window [10:30:10, 10:30:20) ends after it, so it gets in; batch 3's
            own watermark, 10:30:21, then closes that window in the same batch, r9 included. r12's
            window [10:30:50, 10:31:00) stays open: append mode waits for more data. The picture
            shows the same: a dotted line for the watermark that drops late rows, a dashed one for
            the watermark that closes windows.""")

        banner("2. State with and without a watermark (same input, update mode)")
        probes = start_state_probes(spark, paths.output_for(LESSON, "state"))
        finish(list(probes.values()))  # availableNow: each reads the six files, then ends
        lateness.print_state_rows({label: query.recentProgress for label, query in probes.items()})
        say("""Without a watermark Spark must keep every window forever: an event may still arrive
            for any of them. With one it removes the windows the watermark has passed, so the state
            stays at three windows here (the newest ones, within 10 s of lateness), however long
            the stream runs.""")

        banner(
            f"3. Live: rate source, delays up to {LIVE_MAX_DELAY_SECONDS} s, "
            f"watermark {LIVE_LATENESS}, windows of {LIVE_WINDOW}"
        )
        say(f"""Update mode, so you see windows as they fill: in append mode a window would print
            only once the latest event time is {LIVE_LATENESS} past its end. max_delay is the
            longest delay of a reading in the window.""")
        rate = read_rate(spark)
        live_windows = build_live_windows(build_delayed_readings(rate))
        live = start_live(live_windows, pick_trigger(args, LIVE_TRIGGER))
        run_queries([live], args)
        ran = lateness.describe_progress(live.recentProgress)
        say(f"""The live query {ran} Run with --duration 90 to see the watermark pass the first
            windows and late rows dropped.""")


if __name__ == "__main__":
    run_lesson(main)
