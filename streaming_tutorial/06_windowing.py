"""06 · Windows on event time: tumbling, sliding and session windows.

What you'll learn
  - ``window(event_time, "10 seconds")`` puts every event in exactly one tumbling window,
    chosen by the time written in the event, not the time it arrived. Windows start
    inclusive and end exclusive: an event at 10:30:10 belongs to [10:30:10, 10:30:20).
  - ``window(event_time, "20 seconds", "10 seconds")`` slides: every event lands in
    size / slide = 2 overlapping windows.
  - ``session_window(event_time, "5 seconds")`` grows a session per key while events keep
    coming less than 5 s apart; a late event that fills a gap merges two sessions.
  - Output modes: tumbling and sliding windows work in update mode (only the windows a
    batch changed are sent). Session windows refuse update mode: complete mode resends
    every session each batch; append mode with a watermark sends each session once, when
    the watermark has reached its end.

Run
  python streaming_tutorial/06_windowing.py                    # the scenario, then the live part
  python streaming_tutorial/06_windowing.py --available-now    # live part: the files there, once
  The live part reads data/sensor_readings: the files already there once, or, when the
  folder is empty, what the sensor simulator it starts writes in --duration seconds. To
  watch new files arrive, start the simulator first in a second terminal:
    python data_generators/generate_sensor_data.py                 # terminal 1
    python streaming_tutorial/06_windowing.py                      # terminal 2

Practise
  python course.py exercises check 06.1   Sessions that close (build)
  python course.py exercises check 06.2   Sliding averages per sensor (build)
  python course.py exercises check 06.3   A reading that arrives late (predict)

What you'll see
  The scenario is the same on every machine; the live part differs. Tumbling windows:
  Batch 1 reads: r7 r8 r9
    tumbling  [10:30:00, 10:30:10)  5 readings, avg 20.0: r1 r2 r3 r8 r9
              [10:30:20, 10:30:30)  1 reading, avg 23.0: r7
  ...
  Session windows, complete mode (after batch 1: SENSOR-1's two sessions merged):
  Batch 1 reads: r7 r8 r9
    sessions  SENSOR-0 [10:30:02, 10:30:15)  3 readings, avg 21.0: r1 r3 r4
              SENSOR-1 [10:30:03, 10:30:17)  4 readings, avg 19.63: r2 r5 r8 r9
              SENSOR-0 [10:30:19, 10:30:26)  2 readings, avg 22.75: r6 r7
  A session window in update mode fails:
    [STREAMING_OUTPUT_MODE.UNSUPPORTED_OPERATION] Invalid streaming output mode: update. ...
  ...
  Append mode with a watermark (10:30:17 in batch 3, 10:30:30 in batch 4):
  Batch 3 reads: r11
    closed sessions  SENSOR-0 [10:30:02, 10:30:15)  3 readings, avg 21.0: r1 r3 r4   [watermark ...
                     SENSOR-1 [10:30:03, 10:30:17)  4 readings, avg 19.63: r2 r5 r8 r9
  Batch 4 reads: nothing new (the watermark moved, so Spark runs one more batch)
    closed sessions  SENSOR-0 [10:30:19, 10:30:26)  2 readings, avg 22.75: r6 r7   [watermark ...
  ...
  The live query read 120 lines in 1 micro-batch; lines quarantined (with their reason) in
  output/06_windowing/quarantine: none. ...
"""

from pathlib import Path

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery

from common import parsing, paths
from common.schemas import SENSOR_SCHEMA
from infra import cli, simulators
from infra.runner import banner, checkpoint_root, lesson_session, run_lesson, run_queries, say
from teaching import demos, narration, progress

LESSON = "06_windowing"
TUMBLING_SIZE = "10 seconds"  # one window per 10 s of event time
SLIDING_SIZE = "20 seconds"  # 20 s windows ...
SLIDING_STEP = "10 seconds"  # ... a new one every 10 s
SESSION_GAP = "5 seconds"  # a session ends after 5 s without a reading from its sensor
# Append mode sends a session once the watermark (latest event time - 10 s) reaches its end.
SESSION_WATERMARK = "10 seconds"
LIVE_TRIGGER = "5 seconds"  # one live micro-batch every 5 s
DEFAULT_DURATION = 15  # seconds of the live part; the scenario takes a few seconds more
SIMULATOR = ("sensors", "generate_sensor_data.py", [])
QUARANTINE_DIR = paths.output_for(LESSON, "quarantine")  # live lines that are not valid readings

# The scenario: eleven readings from two sensors in four micro-batches, as (reading_id,
# sensor_id, seconds after 10:30:00, temperature). r4 at 10:30:10 is exactly on a window
# boundary. Batch 1 brings r8 and r9 of SENSOR-1, which happened early: event time, not
# arrival, decides their windows, and r9 bridges the gap between SENSOR-1's two sessions.
# Batches 2 and 3 move event time on, so the watermark passes the first sessions' ends.
SCENARIO = [
    [
        (1, "SENSOR-0", 2, 20.0),
        (2, "SENSOR-1", 5, 19.0),
        (3, "SENSOR-0", 6, 21.0),
        (4, "SENSOR-0", 10, 22.0),
        (5, "SENSOR-1", 12, 19.5),
        (6, "SENSOR-0", 19, 22.5),
    ],
    [(7, "SENSOR-0", 21, 23.0), (8, "SENSOR-1", 3, 18.5), (9, "SENSOR-1", 8, 21.5)],
    [(10, "SENSOR-1", 27, 20.0)],
    [(11, "SENSOR-0", 40, 22.0)],
]


def read_readings(spark, folder: Path) -> DataFrame:
    """Each line of the sensor files, parsed, with its quarantine_reason (null for a good
    reading) and the file it came from (``source_file``)."""
    # The file source refuses a folder that does not exist, even one the simulator fills later.
    folder.mkdir(parents=True, exist_ok=True)
    lines = (
        # Text, not json(): a line that is not a reading keeps its text, to be quarantined
        # with a reason, instead of becoming a row of nulls. (No checkpointLocation here: it
        # is an option of writeStream, which Spark silently ignores on a reader.)
        spark.readStream.format("text")
        .load(paths.uri(folder))
        # _metadata is the hidden per-file column of file sources: which file a line came from.
        .withColumn("source_file", F.col("_metadata.file_name"))
    )
    # parse_json (taught in lesson 03): the reading's fields, and why a line cannot be used.
    return parsing.parse_json(lines, SENSOR_SCHEMA)


def build_tumbling_windows(readings: DataFrame, *keys: str) -> DataFrame:
    """Readings per tumbling window of event time (and per ``keys``, e.g. "sensor_id")."""
    # window() assigns each row to [start, start + size) by its event_time column:
    # arrival order plays no part.
    grouped = readings.groupBy(F.window("event_time", TUMBLING_SIZE), *keys)
    return to_window_rows(grouped, keys, "window")


def build_sliding_windows(readings: DataFrame, *keys: str) -> DataFrame:
    """Readings per sliding window: each row is counted in every window that covers it."""
    # A third argument, the slide: a new window starts every SLIDING_STEP.
    grouped = readings.groupBy(F.window("event_time", SLIDING_SIZE, SLIDING_STEP), *keys)
    return to_window_rows(grouped, keys, "window")


def build_sessions(readings: DataFrame) -> DataFrame:
    """Sessions of activity per sensor: a session closes after SESSION_GAP without readings."""
    # A streaming session window needs a key besides itself (here the sensor): a global
    # one fails when the query runs.
    grouped = readings.groupBy(F.session_window("event_time", SESSION_GAP), "sensor_id")
    return to_window_rows(grouped, ("sensor_id",), "session_window", prefix="session")


def build_closed_sessions(readings: DataFrame) -> DataFrame:
    """The same sessions, each final once the watermark has reached its end (for append mode)."""
    # The watermark closes sessions: one whose end it has reached can no longer grow or merge
    # (a reading for it that comes later is dropped as too late, or starts a new session), so
    # append sends it, once, and drops it from the state.
    return build_sessions(readings.withWatermark("event_time", SESSION_WATERMARK))


def to_window_rows(grouped, keys, window_column: str, prefix: str = "window") -> DataFrame:
    """The same three measures for every kind of window, with start and end as columns."""
    return grouped.agg(
        F.count("*").alias("readings"),
        F.round(F.avg("temperature"), 2).alias("avg_temp"),
        # Sorted ids show exactly which readings a window holds.
        F.array_sort(F.collect_list("reading_id")).alias("reading_ids"),
    ).select(
        F.col(f"{window_column}.start").alias(f"{prefix}_start"),
        F.col(f"{window_column}.end").alias(f"{prefix}_end"),
        *keys,
        "readings",
        "avg_temp",
        "reading_ids",
    )


def start_noop(stream: DataFrame, mode: str) -> StreamingQuery:
    """Start ``stream`` into the noop sink (it discards every row): enough to ask Spark whether
    it accepts the output ``mode``."""
    return (
        stream.writeStream.outputMode(mode)
        # Spark checks the output mode against the query when it starts, whatever the sink.
        .format("noop")
        .start()
    )


def build_live_windows(lines: DataFrame) -> DataFrame:
    """Tumbling windows per sensor over the good readings (lines that are not readings are
    left out)."""
    readings = parsing.valid_records(lines, SENSOR_SCHEMA)
    # The ids made the scenario's windows readable; live windows hold too many to print.
    return build_tumbling_windows(readings, "sensor_id").drop("reading_ids")


def start_live_windows(windows: DataFrame, checkpoint: Path, trigger: dict) -> StreamingQuery:
    """The live windows on the console, each printed again whenever a batch changes it."""
    return (
        windows.writeStream.outputMode("update")
        .format("console")
        .option("truncate", False)
        # The windows resume next run: the checkpoint keeps the files read and the open windows.
        .option("checkpointLocation", paths.uri(checkpoint))
        .queryName("live_tumbling_windows")
        .trigger(**trigger)
        .start()
    )


def start_quarantine(
    bad: DataFrame, folder: Path, checkpoint: Path, trigger: dict
) -> StreamingQuery:
    """The lines that are not readings, appended to JSON files in ``folder`` with their reason."""
    # A file sink with its own checkpoint: kept, never lost, and a restart adds only the bad
    # lines it has not written yet.
    return (
        bad.writeStream.format("json")
        .outputMode("append")
        .option("path", paths.uri(folder))
        .option("checkpointLocation", paths.uri(checkpoint))
        .queryName("live_quarantine")
        .trigger(**trigger)
        .start()
    )


def start_scenario(spark, workdir: Path) -> dict:
    """Show the scenario, then run each kind of window over it; returns what each sent, batch
    by batch."""
    banner("The scenario: eleven readings in four micro-batches")
    narration.print_table(
        ("batch", "reading", "sensor", "event time"),
        [
            (number, f"r{reading[0]}", reading[1], f"10:30:{reading[2]:02d}")
            for number, batch in enumerate(SCENARIO)
            for reading in batch
        ],
    )

    def by_start(row) -> tuple:
        return tuple(row)[:3]  # the window's start and end, then the sensor (or the count)

    readings = [
        [
            {
                "reading_id": reading_id,
                "sensor_id": sensor,
                "temperature": temperature,
                "humidity": 50.0,
                "event_time": f"{demos.SCENARIO_DAY}T10:30:{second:02d}Z",
            }
            for reading_id, sensor, second, temperature in batch
        ]
        for batch in SCENARIO
    ]
    # A fresh start on every run (input and checkpoints under output/): the tables never change.
    return demos.replay(
        spark,
        readings,
        SENSOR_SCHEMA,
        {
            "tumbling": demos.Output(build_tumbling_windows, "update", by_start),
            "sliding": demos.Output(build_sliding_windows, "update", by_start),
            "sessions": demos.Output(build_sessions, "complete", by_start),
            "closed sessions": demos.Output(build_closed_sessions, "append", by_start),
        },
        workdir,
        describe_rows=str,
        show=False,
    )


def print_scenario_output(runs: dict, label: str, title: str) -> None:
    """A section: what one output of the scenario sent, batch by batch, one line per window."""
    banner(title)
    demos.print_replay(
        SCENARIO,
        {label: runs[label]},
        describe_input=lambda batch: " ".join(f"r{reading[0]}" for reading in batch),
        describe_rows=lambda rows: "\n".join(map(describe_window, rows)),
    )


def describe_window(row) -> str:
    """'SENSOR-1 [10:30:03, 10:30:17)  4 readings, avg 19.63: r2 r5 r8 r9'."""
    sensor = f"{row.sensor_id} " if "sensor_id" in row.__fields__ else ""
    readings = f"{row.readings} reading{'s' * (row.readings > 1)}"
    ids = " ".join(f"r{reading_id}" for reading_id in row.reading_ids)
    return f"{sensor}[{row[0]:%H:%M:%S}, {row[1]:%H:%M:%S})  {readings}, avg {row.avg_temp}: {ids}"


def main(argv: list[str] | None = None) -> None:
    args = cli.lesson_parser(__doc__, duration=DEFAULT_DURATION, available_now=True).parse_args(
        argv
    )
    with lesson_session(LESSON, args) as spark:
        runs = start_scenario(spark, paths.output_for(LESSON, "scenario"))

        print_scenario_output(
            runs, "tumbling", f"1. Tumbling windows of {TUMBLING_SIZE}, update mode"
        )
        say("""r4 at 10:30:10 opened [10:30:10, 10:30:20): a window includes its start and
            excludes its end. In batch 1, r8 and r9 updated the 10:30:00 window although they
            arrived after r4-r6: windows follow event time, not arrival time.""")

        print_scenario_output(
            runs, "sliding", f"2. Sliding windows of {SLIDING_SIZE}, every {SLIDING_STEP}"
        )
        say("""Each reading appears in two windows (20 s / 10 s = 2): a moving total that is
            refreshed every 10 s. Expect size/slide times as many rows as tumbling.""")

        print_scenario_output(
            runs, "sessions", f"3. Session windows: gap {SESSION_GAP}, per sensor, complete mode"
        )
        lines = read_readings(spark, paths.SENSOR_DIR)
        demos.show_refusal(
            lambda: start_noop(
                build_sessions(parsing.valid_records(lines, SENSOR_SCHEMA)), "update"
            ),
            "A session window in update mode",
        )
        say("""After batch 0 SENSOR-1 had two sessions, [10:30:05, 10:30:10) and [10:30:12,
            10:30:17); r9 at 10:30:08 came within 5 s of both, so batch 1 merged them into
            one. A merge changes rows sent before, which update mode cannot express, so Spark
            refuses it (even with a watermark). Complete mode resends every session, every
            batch, and keeps them all in its state forever.""")

        print_scenario_output(
            runs, "closed sessions", "4. Session windows, a watermark, append mode: each once"
        )
        say("""Append sends a session only when the watermark (latest event time seen minus
            10 s) has reached its end: then no reading can extend or merge it any more. Batch 3
            ran with the watermark at 10:30:17 and sent SENSOR-0's and SENSOR-1's first
            sessions; the empty batch 4, with 10:30:30, sent [10:30:19, 10:30:26). The last
            two sessions are still open when the input ends: a later reading would close them.
            Each session is sent once, and Spark forgets it then: its state stays small.
            Lesson 07 shows what the watermark does to readings that come too late.""")

        banner(f"5. Live: tumbling windows per sensor on {paths.display(paths.SENSOR_DIR)}")
        with simulators.file_input_for_lesson(*SIMULATOR, paths.SENSOR_DIR, args) as files:
            checkpoints = checkpoint_root(LESSON, args)
            trigger = files.trigger(LIVE_TRIGGER)
            windows = start_live_windows(
                build_live_windows(lines), checkpoints / "live_tumbling", trigger
            )
            # The lines that are not readings, with their reason (lesson 03's quarantine).
            quarantine = start_quarantine(
                parsing.quarantined(lines, "source_file"),
                QUARANTINE_DIR,
                checkpoints / "quarantine",
                trigger,
            )
            run_queries([windows, quarantine], args, until=files.done)
        read = progress.read_in_batches(windows.recentProgress, "lines")
        quarantine_summary = parsing.quarantine_summary(spark, QUARANTINE_DIR)
        say(f"""The live query {read}; lines quarantined (with their reason) in
            {paths.display(QUARANTINE_DIR)}: {quarantine_summary}.
            Its checkpoint remembers the files and the windows: run the lesson again to go on.""")


if __name__ == "__main__":
    run_lesson(main)
