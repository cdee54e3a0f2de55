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
    batch changed are printed). Session windows do NOT support update mode: use complete
    mode (this lesson) or append mode with a watermark (lesson 07).

Run
  python streaming_tutorial/06_windowing.py                    # scenario, then 15 s live
  python streaming_tutorial/06_windowing.py --available-now    # live part: files already there
  The live part reads data/sensor_readings and starts the sensor simulator for the run
  when it is not running. To run the simulator yourself:
    python data_generators/generate_sensor_data.py                 # terminal 1
    python streaming_tutorial/06_windowing.py --no-simulator       # terminal 2

What you'll see
  The scenario is the same on every machine; the live part differs. Tumbling windows:
  Batch 1 (brought r7 r8 r9):
  +-------------------+-------------------+--------+--------+---------------+
  |window_start       |window_end         |readings|avg_temp|reading_ids    |
  +-------------------+-------------------+--------+--------+---------------+
  |2025-01-15 10:30:00|2025-01-15 10:30:10|5       |20.0    |[1, 2, 3, 8, 9]|
  |2025-01-15 10:30:20|2025-01-15 10:30:30|1       |23.0    |[7]            |
  +-------------------+-------------------+--------+--------+---------------+
  Session windows in update mode fail with:
    [STREAMING_OUTPUT_MODE.UNSUPPORTED_OPERATION] Invalid streaming output mode: update. ...
  Batch 1 (brought r7 r8 r9):
  +-------------------+-------------------+---------+--------+--------+------------+
  |session_start      |session_end        |sensor_id|readings|avg_temp|reading_ids |
  +-------------------+-------------------+---------+--------+--------+------------+
  |2025-01-15 10:30:02|2025-01-15 10:30:15|SENSOR-0 |3       |21.0    |[1, 3, 4]   |
  |2025-01-15 10:30:03|2025-01-15 10:30:17|SENSOR-1 |4       |19.63   |[2, 5, 8, 9]|
  |2025-01-15 10:30:19|2025-01-15 10:30:26|SENSOR-0 |2       |22.75   |[6, 7]      |
  +-------------------+-------------------+---------+--------+--------+------------+
  ...
"""

from __future__ import annotations

import shutil
from datetime import timedelta
from pathlib import Path

from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from common import cli, paths
from common.config import BASE_EVENT_TIME
from common.microbatch import collect_batches, stream_batches, write_batches
from common.runner import await_queries, banner, checkpoint_root, lesson_session, run_lesson, say
from common.schemas import SENSOR_SCHEMA
from common.simulators import simulator_for_lesson
from common.timestamps import iso

LESSON = "06_windowing"
TUMBLING_SIZE = "10 seconds"  # one window per 10 s of event time
SLIDING_SIZE, SLIDING_STEP = "20 seconds", "10 seconds"  # 20 s windows, a new one every 10 s
SESSION_GAP = "5 seconds"  # a session ends after 5 s without a reading from its sensor
LIVE_TRIGGER = "5 seconds"  # one live micro-batch every 5 s
DEFAULT_DURATION = 15  # seconds of the live part; the scenario takes a few seconds more


# The scenario: nine readings from two sensors, arriving in two micro-batches, as
# (reading_id, sensor_id, seconds after 10:30:00, temperature). Batch 1 brings two readings
# of SENSOR-1 that happened early: event time, not arrival, decides their windows, and r9
# bridges the gap between SENSOR-1's two sessions.
SCENARIO = [
    [
        (1, "SENSOR-0", 2, 20.0),
        (2, "SENSOR-1", 5, 19.0),
        (3, "SENSOR-0", 6, 21.0),
        (4, "SENSOR-0", 10, 22.0),  # exactly on a boundary: opens [10:30:10, 10:30:20)
        (5, "SENSOR-1", 12, 19.5),
        (6, "SENSOR-0", 19, 22.5),
    ],
    [
        (7, "SENSOR-0", 21, 23.0),
        (8, "SENSOR-1", 3, 18.5),  # happened first, arrives last
        (9, "SENSOR-1", 8, 21.5),  # 3 s after r2 and 4 s before r5: one session now
    ],
]


def main(argv: list[str] | None = None) -> None:
    parser = cli.lesson_parser(__doc__, duration=DEFAULT_DURATION, available_now=True)
    args = parser.parse_args(argv)
    checkpoints = checkpoint_root(LESSON, args)
    with lesson_session(LESSON, args) as spark:
        banner("The scenario: nine readings in two micro-batches")
        say("""Event times are 10:30:SS on 2025-01-15. Batch 1 brings two readings of
            SENSOR-1 that happened before most of batch 0: watch where they land.""")
        print("  batch  reading  sensor    event time")
        for number, batch in enumerate(scenario_batches()):
            for record in batch:
                print(f"  {number:<5}  r{record['reading_id']:<7} {record['sensor_id']:<9} {record['event_time'][11:19]}")
        readings = scenario_stream(spark, checkpoints)

        banner(f"1. Tumbling windows of {TUMBLING_SIZE} (update mode: changed windows only)")
        show_batches(spark, build_tumbling_windows(readings), checkpoints / "scenario_tumbling", "update")
        say("""r4 at 10:30:10 opened [10:30:10, 10:30:20): a window includes its start and
            excludes its end. In batch 1, r8 and r9 updated the 10:30:00 window although
            they arrived after r4-r6: windows follow event time, not arrival time.""")

        banner(f"2. Sliding windows of {SLIDING_SIZE}, every {SLIDING_STEP}")
        show_batches(spark, build_sliding_windows(readings), checkpoints / "scenario_sliding", "update")
        say("""Each reading appears in two windows (20 s / 10 s = 2): a moving total that
            is refreshed every 10 s. Expect size/slide times as many rows as tumbling.""")

        banner(f"3. Session windows: gap {SESSION_GAP}, per sensor (complete mode)")
        sessions = build_sessions(readings)
        explain_session_update_failure(sessions)
        show_batches(spark, sessions, checkpoints / "scenario_sessions", "complete")
        say("""After batch 0 SENSOR-1 had two sessions ([10:30:05, 10:30:10) and
            [10:30:12, 10:30:17)); r9 at 10:30:08 came within 5 s of both, so batch 1
            merged them into one. A merge changes rows printed earlier, which update mode
            cannot express. Complete mode reprints every session (state grows forever);
            append mode with a watermark prints each session once, when it is closed.""")

        banner(f"4. Live: tumbling windows per sensor on {paths.display(paths.SENSOR_DIR)}")
        run_live_windows(spark, args, checkpoints)


def build_tumbling_windows(readings: DataFrame, *keys: str) -> DataFrame:
    """Readings per tumbling window of event time (and per ``keys``, e.g. "sensor_id")."""
    # window() assigns each row to [start, start + size) by its event_time column:
    # arrival order plays no part.
    return summarise(readings.groupBy(F.window("event_time", TUMBLING_SIZE), *keys), keys, "window")


def build_sliding_windows(readings: DataFrame, *keys: str) -> DataFrame:
    """Readings per sliding window: each row is counted in every window that covers it."""
    return summarise(
        readings.groupBy(F.window("event_time", SLIDING_SIZE, SLIDING_STEP), *keys), keys, "window"
    )


def build_sessions(readings: DataFrame) -> DataFrame:
    """Sessions of activity per sensor: a session closes after SESSION_GAP without readings."""
    # A session window needs a key besides itself in a streaming query: here the sensor.
    grouped = readings.groupBy(F.session_window("event_time", SESSION_GAP), "sensor_id")
    return summarise(grouped, ("sensor_id",), "session_window", prefix="session")


def summarise(grouped, keys, window_column: str, prefix: str = "window") -> DataFrame:
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


def explain_session_update_failure(sessions: DataFrame) -> str:
    """Start the session query in update mode, show Spark's refusal; returns its message."""
    try:
        query = sessions.writeStream.outputMode("update").format("noop").start()
    except AnalysisException as error:
        message = str(error).splitlines()[0]
        print(f"Session windows in update mode fail with:\n  {message}")
        return message
    query.stop()
    raise AssertionError("update mode unexpectedly accepted a session window aggregation")


def scenario_batches() -> list[list[dict]]:
    """SCENARIO as records of SENSOR_SCHEMA, one list per micro-batch."""
    return [[reading(*values) for values in batch] for batch in SCENARIO]


def reading(reading_id: int, sensor: str, second: float, temperature: float) -> dict:
    """One sensor reading ``second`` seconds after the course's fixed base time (10:30:00)."""
    return {
        "reading_id": reading_id,
        "sensor_id": sensor,
        "temperature": temperature,
        "humidity": 50.0,
        "event_time": iso(BASE_EVENT_TIME + timedelta(seconds=second)),
    }


def scenario_stream(spark, checkpoints: Path) -> DataFrame:
    """The scenario as a stream: one file per micro-batch, written afresh on every run."""
    folder = paths.output_for(LESSON, "scenario_input")
    # The scenario always replays from the start: old input and checkpoints would make
    # the file source skip everything as "already processed".
    for stale in (folder, *(checkpoints / f"scenario_{name}" for name in ("tumbling", "sliding", "sessions"))):
        shutil.rmtree(stale, ignore_errors=True)
    write_batches(folder, scenario_batches())
    return stream_batches(spark, folder, SENSOR_SCHEMA)


def show_batches(spark, windows: DataFrame, checkpoint: Path, output_mode: str):
    """Run ``windows`` over the scenario and print what each micro-batch emitted."""
    order = [column for column in windows.columns if column.endswith("_start")] + (
        ["sensor_id"] if "sensor_id" in windows.columns else []
    )
    run = collect_batches(windows, checkpoint, output_mode=output_mode, sort_key=lambda row: [row[c] for c in order])
    for batch in run.batches:
        arrived = scenario_batches()[batch.batch_id] if batch.batch_id < len(SCENARIO) else []
        ids = " ".join(f"r{record['reading_id']}" for record in arrived) or "nothing new"
        print(f"Batch {batch.batch_id} (brought {ids}):")
        spark.createDataFrame(batch.rows, windows.schema).show(truncate=False)
    return run


def run_live_windows(spark, args, checkpoints: Path) -> None:
    """Tumbling windows per sensor over the sensor files, for the lesson's duration."""
    paths.ensure_dirs(paths.SENSOR_DIR)
    readings = spark.readStream.schema(SENSOR_SCHEMA).json(str(paths.SENSOR_DIR))
    windows = build_tumbling_windows(readings, "sensor_id").drop("reading_ids")
    writer = (
        windows.writeStream.outputMode("update")
        .format("console")
        .option("truncate", False)
        .option("checkpointLocation", str(checkpoints / "live_tumbling"))
        .queryName("live_tumbling_windows")
    )
    if args.available_now:
        say("--available-now: windows over the files already there, then stop.")
        query = writer.trigger(availableNow=True).start()
        await_queries([query], args.duration)
    else:
        with simulator_for_lesson("sensors", "generate_sensor_data.py", [], enabled=not args.no_simulator):
            query = writer.trigger(processingTime=LIVE_TRIGGER).start()
            await_queries([query], args.duration)
    rows = sum(progress["numInputRows"] for progress in query.recentProgress)
    say(f"The live query read {rows} readings in {len(query.recentProgress)} micro-batches. Its "
        "checkpoint remembers the files and the windows: run the lesson again to continue, "
        "or add --reset to start over.")


if __name__ == "__main__":
    run_lesson(main)
