"""14.2: the learner predicts the reports a watermarked windowed count leaves in recentProgress.

The run starts the pristine file's query on its SCENARIO (one file per micro-batch, the default
trigger) with a listener of the check's own, and waits (bounded) until Spark calls onQueryIdle
for it: Spark adds the idle report to recentProgress before it posts that event, so every report
up to it is there. The reports up to and including the first idle one become the Observation,
one Batch per report (one row: the five values the learner predicts). The wait judges nothing.

The mistakes are rules a learner may follow instead of Spark's, worked out here from the
scenario (``model``); a prediction whose column is exactly a wrong rule's answer names it.
"""

import json
import threading
from pathlib import Path

from pyspark.sql.streaming import StreamingQueryListener

from common import paths
from common.schemas import SENSOR_SCHEMA
from practice import catalog
from practice.observe import Batch, Observation, watermark_shown
from practice.scenarios import reading, seconds
from practice.spec import Exercise, Mistake, Scenario
from teaching.microbatch import write_batches

PRISTINE = catalog.load_module(
    catalog.EXERCISES_DIR / "14_monitoring" / "ex2_progress_reports" / catalog.STUB, "pristine"
)
COLUMNS = ["batchId", "numInputRows", "watermark", "numRowsTotal", "numRowsDroppedByWatermark"]
BATCH_ID, ROWS, WATERMARK, STATE_ROWS, DROPPED = range(len(COLUMNS))
WINDOW_SECONDS = 10  # the pristine file's WINDOW
DELAY_SECONDS = 5  # its WATERMARK_DELAY
IDLE_TIMEOUT_SECONDS = 60  # the idle report comes 0.1 s (settings) after the last batch
# The query reports idle after 0.1 s without new data, not Spark's default 10 s. Each query
# reads this when it starts.
SETTINGS = {"spark.sql.streaming.noDataProgressEventInterval": "100ms"}


def to_readings(scenario: list) -> list:
    """(reading_id, sensor, 'HH:MM:SS') triples as readings, file by file."""
    return [
        [reading(reading_id, sensor, time) for reading_id, sensor, time in batch]
        for batch in scenario
    ]


class IdleQueries(StreamingQueryListener):
    """The check's own listener: the ids of the queries Spark has reported idle."""

    def __init__(self) -> None:
        self.idle: set[str] = set()
        self.changed = threading.Condition()

    def onQueryStarted(self, event) -> None:
        pass

    def onQueryProgress(self, event) -> None:
        pass

    def onQueryIdle(self, event) -> None:
        with self.changed:
            self.idle.add(str(event.id))
            self.changed.notify_all()

    def onQueryTerminated(self, event) -> None:
        pass

    def wait_for(self, query_id: str, timeout: float) -> bool:
        with self.changed:
            return self.changed.wait_for(lambda: query_id in self.idle, timeout)


def as_row(report: dict) -> tuple:
    operator = (report.get("stateOperators") or [{}])[0]
    return (
        report["batchId"],
        report["numInputRows"],
        watermark_shown((report.get("eventTime") or {}).get("watermark")),
        operator.get("numRowsTotal"),
        operator.get("numRowsDroppedByWatermark"),
    )


def run(spark, exercise, module, scenario, workdir: Path) -> Observation:
    """The pristine file's query until it reports idle; its reports up to the first idle one."""
    query_module = catalog.load_module(catalog.pristine(exercise), "pristine")
    if workdir.exists():
        paths.remove_tree(workdir, allow_outside=True)
    folder = workdir / "input"
    folder.mkdir(parents=True)
    write_batches(folder, scenario.batches)
    idle = IdleQueries()
    spark.streams.addListener(idle)
    query = None
    try:
        readings = query_module.read_readings(spark, folder)
        counts = query_module.build_window_counts(readings)
        query = query_module.start_window_counts(counts, workdir / "checkpoint")
        if not idle.wait_for(str(query.id), IDLE_TIMEOUT_SECONDS):
            failure = query.exception()  # a query that failed: its error, not a timeout
            if failure is not None:
                raise failure
            raise TimeoutError(f"the query did not report idle within {IDLE_TIMEOUT_SECONDS} s")
        progress = [json.loads(report.json) for report in query.recentProgress]
    finally:
        if query is not None and query.isActive:
            query.stop()
        spark.streams.removeListener(idle)
    reports = []
    for report in progress:
        reports.append(report)
        if "addBatch" not in report["durationMs"]:
            break  # the first idle report: later ones only repeat it
    return Observation(COLUMNS, [Batch([as_row(report)]) for report in reports])


def reports_of(observation: Observation) -> list:
    return [batch.rows[0] for batch in observation.batches]


# --- Rules a learner may follow instead of Spark's ------------------------------------------


def time_of_day(second: int | None) -> str | None:
    if second is None:
        return None
    return f"{second // 3600:02d}:{second // 60 % 60:02d}:{second % 60:02d}"


def model(
    *, watermark_with_own_rows=False, windows_kept=False, dropped_with_own_watermark=False
) -> list:
    """The reports as a rule works them out: Spark's rules by default, another one where a flag
    says so. Each tuple as COLUMNS; then the batch without data (if the watermark moves after
    the last file) and the idle report."""
    latest = None  # the latest event time of the batches so far
    previous = None  # the previous batch's own watermark
    state: set = set()  # (window start, sensor)
    reports = []
    own = None
    for number, batch in enumerate(PRISTINE.SCENARIO):
        own = None if latest is None else latest - DELAY_SECONDS
        times = [seconds(time) for _, _, time in batch]
        latest = max(times + ([latest] if latest is not None else []))
        shown = latest - DELAY_SECONDS if watermark_with_own_rows else own
        late_mark = own if dropped_with_own_watermark else previous
        dropped = 0
        for (_, sensor, _), second in zip(batch, times, strict=True):
            start = second - second % WINDOW_SECONDS
            if late_mark is not None and start + WINDOW_SECONDS <= late_mark:
                dropped += 1
            else:
                state.add((start, sensor))
        if own is not None and not windows_kept:
            state = {key for key in state if key[0] + WINDOW_SECONDS > own}
        reports.append((number, len(batch), time_of_day(shown), len(state), dropped))
        previous = own
    number = len(PRISTINE.SCENARIO)
    following = latest - DELAY_SECONDS
    if own is None or following > own:
        own = following
        if not windows_kept:
            state = {key for key in state if key[0] + WINDOW_SECONDS > own}
        reports.append((number, 0, time_of_day(own), len(state), 0))
        number += 1
    reports.append((number, 0, time_of_day(own), len(state), 0))
    return reports


def shaped(guess) -> bool:
    return isinstance(guess, list) and all(
        isinstance(item, tuple) and len(item) == len(COLUMNS) for item in guess
    )


def column(reports: list, index: int, count: int) -> list:
    return [report[index] for report in reports[:count]]


def follows(index: int, **rule):
    """A Mistake's ``when``: the guess's column ``index``, over the batches that read a file, is
    the rule's and not Spark's."""

    def when(guess, actual) -> bool:
        files = len(PRISTINE.SCENARIO)
        if not shaped(guess) or len(guess) < files:
            return False
        wrong = column(model(**rule), index, files)
        return column(guess, index, files) == wrong and wrong != column(actual, index, files)

    return when


def one_batch_id_twice(guess, actual) -> bool:
    ids = [report[BATCH_ID] for report in guess] if shaped(guess) else []
    return len(ids) != len(set(ids))


def one_report_short(guess, actual) -> bool:
    return shaped(guess) and len(guess) == len(actual) - 1


EXERCISE = Exercise(
    title="What the progress says",
    kind="predict",
    practises="progress reports: one per micro-batch that ran, its watermark and state, then idle",
    function="build_window_counts",
    schemas=SENSOR_SCHEMA,
    run=run,
    settings=SETTINGS,
    predicted=reports_of,
    why=(
        "A query adds a report to recentProgress after every micro-batch that ran, and "
        "lastProgress is simply the newest. Each report shows the watermark the batch ran "
        "with, set from the batches before it (the epoch until the first), and the state as "
        "the batch left it: a window leaves in the batch whose watermark reaches its end. "
        "After the last file the moved watermark still closes windows, in one batch without "
        "data; then, with nothing to do, Spark adds an idle report: the next batch's id, no "
        "input, the state as it is. So lastProgress after a run is often no batch at all."
    ),
    hints=[
        "Which watermark does a report show: one that counts the batch's own rows, or the one "
        "set from the batches before it? When does a window leave the state in append mode? "
        "And once every file is read: does anything still run, and what does the query "
        "report while it waits?",
        "lesson 14, `ProgressPrinter`: its docstring (a report after each micro-batch that ran, "
        "with or without new rows; the idle report lands in recentProgress) and lesson 14, "
        "`describe_progress` (lastProgress may be an idle report); teaching/progress.py says "
        "what an idle report carries. Lesson 07 says which watermark drops a late row and "
        "which closes a window.",
        "Work file by file: the latest event time before it (its watermark is that minus 5 s, "
        "None before any); put each reading's (window, sensor) in state unless the window "
        "ended at or before the PREVIOUS batch's watermark (then it is dropped); then take out "
        "the windows that end at or before this batch's own watermark. After the last file, "
        "ask whether the next watermark would be later than the last batch's: then one more "
        "batch runs, with no rows. Last, the idle report.",
    ],
    # A predict exercise needs no hidden scenario: the query and its input are in the file.
    scenarios=[Scenario(to_readings(PRISTINE.SCENARIO))],
    mistakes=[
        Mistake(
            "idle_report_same_batch",
            "Two of your reports have the same batchId. Each micro-batch that runs has its own "
            "id, and an idle report carries the id of the NEXT micro-batch, the one that has "
            "not run yet.",
            when=one_batch_id_twice,
        ),
        Mistake(
            "report_missing",
            "You have one report fewer than recentProgress. After the last file Spark adds "
            "two: a micro-batch without data (the next watermark is later than the last "
            "batch's, so Spark runs a batch to close the windows it passes), then, with "
            "nothing left to do, an idle report. One of them is missing.",
            when=one_report_short,
        ),
        Mistake(
            "watermark_with_own_rows",
            "Your watermarks count each batch's own readings. A batch runs with the watermark "
            "set after the batches before it (their latest event time minus 5 s); batch 0 has "
            "none yet (None).",
            when=follows(WATERMARK, watermark_with_own_rows=True),
        ),
        Mistake(
            "windows_never_leave",
            "Your numRowsTotal only grows. In append mode a window leaves the state in the "
            "batch whose own watermark reaches its end (that batch sends it); numRowsTotal "
            "counts what is left after the batch.",
            when=follows(STATE_ROWS, windows_kept=True),
        ),
        Mistake(
            "dropped_with_own_watermark",
            "You dropped a reading with its batch's own watermark. A late reading is judged by "
            "the PREVIOUS batch's watermark (lesson 07): a reading whose window is still open "
            "then gets in, even if its batch's own watermark closes the window right after.",
            when=follows(DROPPED, dropped_with_own_watermark=True),
        ),
    ],
)
