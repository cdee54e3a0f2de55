"""Check of 14.1: the learner's StreamingQueryListener on a real query, and on a second one.

The run adds the learner's BatchRecorder to the session (``spark.streams.addListener``), then a
listener of the check's own, and starts two queries at once: the windowed count the learner's
listener watches (sensor_counts) and a plain query it must leave out (other_readings). Both end
by themselves (availableNow). Spark calls the listeners of a session one after the other, in the
order they were added, on one thread (the listener bus): once the check's own listener has
received both queries' onQueryTerminated, the learner's has received every event before them.
That wait is bounded, and it judges nothing: the records are compared afterwards. Both
listeners are removed before the run returns.

The Observation has one Batch per micro-batch id; its rows are the learner's records with that
batch_id (one, when right). Spark's own state operators per batch (from the query's
recentProgress) are a fact, the same in every run, that the mistakes' ``when`` reads.
"""

import dataclasses
import json
import threading
from pathlib import Path

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQueryListener

from common import paths
from common.schemas import SENSOR_SCHEMA
from practice.checking import NotStarted
from practice.observe import Batch, Observation, plain, scenario_files, sort_rows
from practice.scenarios import reading
from practice.spec import Exercise, Mistake, Scenario
from teaching.microbatch import stream_batches, write_batches

QUERY_NAME = "sensor_counts"  # the query the learner's listener records
OTHER_NAME = "other_readings"  # the query it must leave out
QUERY_TIMEOUT_SECONDS = 120  # a scenario of a few small batches ends far sooner
EVENTS_TIMEOUT_SECONDS = 60  # the listener bus delivers the last events within a second or so
COLUMNS = ["batch_id", "input_rows", "watermark", "state_rows", "dropped", "flags"]
OPERATORS_FACT = "Spark's state operators per batch (operatorName, numRowsTotal, dropped)"
CALLBACKS = ("onQueryStarted", "onQueryProgress", "onQueryIdle", "onQueryTerminated")
# The other query's input: two files (its batches 0 and 1, as the watched query's), no watermark.
OTHER_BATCHES = [
    [reading(900 + n, "OTHER", "09:00:00") for n in range(4)],
    [reading(910 + n, "OTHER", "09:00:05") for n in range(6)],
]


def build_sensor_counts(readings: DataFrame) -> DataFrame:
    """The watched query: two stateful operators, so the progress lists two."""
    return (
        readings.withWatermark("event_time", "10 seconds")
        .dropDuplicatesWithinWatermark(["reading_id"])
        .groupBy(F.window("event_time", "10 seconds"), "sensor_id")
        .count()
    )


def start(df: DataFrame, name: str, checkpoint: Path):
    """The query into nothing (noop): only its progress matters; it ends once its files are
    read."""
    return (
        df.writeStream.format("noop")
        .outputMode("append")
        .queryName(name)
        .option("checkpointLocation", paths.uri(checkpoint))
        .trigger(availableNow=True)
        .start()
    )


class CallbackErrors:
    """The first exception a callback of the learner's listener raised. Spark only logs what a
    listener raises and goes on; the check reports it as the learner's error instead."""

    def __init__(self, listener) -> None:
        self.error: BaseException | None = None
        for name in CALLBACKS:
            # JStreamingQueryListener calls listener.<name>(event): an instance attribute wins.
            setattr(listener, name, self.guarded(getattr(listener, name)))

    def guarded(self, callback):
        def call(event):
            try:
                callback(event)
            except Exception as error:
                if self.error is None:
                    self.error = error

        return call


class LastEvents(StreamingQueryListener):
    """The check's own listener, added after the learner's: which queries have terminated."""

    def __init__(self) -> None:
        self.terminated: set[str] = set()
        self.changed = threading.Condition()

    def onQueryStarted(self, event) -> None:
        pass

    def onQueryProgress(self, event) -> None:
        pass

    def onQueryTerminated(self, event) -> None:
        with self.changed:
            self.terminated.add(str(event.id))
            self.changed.notify_all()

    def wait_for(self, ids: set[str], timeout: float) -> bool:
        with self.changed:
            return self.changed.wait_for(lambda: ids <= self.terminated, timeout)


def as_row(record) -> tuple:
    """A record (a BatchFacts, or a tuple of its fields) as a row of plain values; the flags
    as a sorted tuple."""
    if dataclasses.is_dataclass(record) and not isinstance(record, type):
        values = [getattr(record, field.name) for field in dataclasses.fields(record)]
    elif isinstance(record, (tuple, list)):
        values = list(record)
    else:
        raise TypeError(
            f"self.records holds a {type(record).__name__}: append BatchFacts(...) to it"
        )
    if values and isinstance(values[-1], (list, tuple)):
        values[-1] = tuple(sorted(values[-1]))
    return tuple(plain(value) for value in values)


def operators_per_batch(progress: list[dict]) -> list[list]:
    """For each micro-batch that ran, Spark's [operatorName, numRowsTotal, dropped] per state
    operator, in the order the report lists them."""
    return [
        [
            [op["operatorName"], op["numRowsTotal"], op["numRowsDroppedByWatermark"]]
            for op in report.get("stateOperators", [])
        ]
        for report in progress
        if "addBatch" in report["durationMs"]
    ]


def run(spark, exercise, module, scenario, workdir: Path) -> Observation:
    """Both queries with the learner's listener on the session; its records, batch by batch."""
    if workdir.exists():
        paths.remove_tree(workdir, allow_outside=True)
    (workdir / "input").mkdir(parents=True)
    (workdir / "other").mkdir(parents=True)
    scenario_files(workdir / "input", scenario.batches, scenario)
    write_batches(workdir / "other", OTHER_BATCHES)
    try:
        listener = module.BatchRecorder(QUERY_NAME)
    except NotImplementedError as error:
        raise NotStarted() from error
    errors = CallbackErrors(listener)
    last_events = LastEvents()
    spark.streams.addListener(listener)
    # Added second: Spark calls it after the learner's listener for every event.
    spark.streams.addListener(last_events)
    queries = []
    try:
        other = stream_batches(spark, workdir / "other", SENSOR_SCHEMA).select("reading_id")
        queries.append(start(other, OTHER_NAME, workdir / "other-checkpoint"))
        readings = stream_batches(spark, workdir / "input", SENSOR_SCHEMA)
        queries.append(start(build_sensor_counts(readings), QUERY_NAME, workdir / "checkpoint"))
        for query in queries:
            if not query.awaitTermination(QUERY_TIMEOUT_SECONDS):
                raise TimeoutError(f"the query did not end within {QUERY_TIMEOUT_SECONDS} s")
        ids = {str(query.id) for query in queries}
        if not last_events.wait_for(ids, EVENTS_TIMEOUT_SECONDS):
            raise TimeoutError(
                f"the queries' last events did not reach the listeners within "
                f"{EVENTS_TIMEOUT_SECONDS} s: a callback of your listener may be blocking "
                "(Spark calls every listener's callbacks one at a time, on one thread)"
            )
    finally:
        for query in queries:
            if query.isActive:
                query.stop()
        spark.streams.removeListener(listener)
        spark.streams.removeListener(last_events)
    if isinstance(errors.error, NotImplementedError):
        raise NotStarted() from errors.error
    if errors.error is not None:
        raise errors.error
    progress = [json.loads(report.json) for report in queries[-1].recentProgress]
    operators = operators_per_batch(progress)
    rows = [as_row(record) for record in list(listener.records)]
    if any(not isinstance(row[0], int) for row in rows if row):
        raise TypeError("a record's batch_id is not a number: it is the progress's batchId")
    count = max([len(operators)] + [row[0] + 1 for row in rows if row])
    batches = [
        Batch(sort_rows([row for row in rows if row and row[0] == number]))
        for number in range(count)
    ]
    return Observation(COLUMNS, batches, facts={OPERATORS_FACT: operators})


# --- What the mistakes look like -------------------------------------------------------------

BATCH_ID, INPUT_ROWS, WATERMARK, STATE_ROWS, DROPPED, FLAGS = range(len(COLUMNS))


def expected_record(batch: Batch) -> tuple | None:
    return batch.rows[0] if len(batch.rows) == 1 else None


def pairs(mine: Observation, wanted: Observation) -> list[tuple]:
    """(expected record, the learner's one record) for each batch where the learner has one."""
    return [
        (expected_record(want), got.rows[0])
        for want, got in zip(wanted.batches, mine.batches, strict=False)
        if len(got.rows) == 1 and expected_record(want) and len(got.rows[0]) == len(COLUMNS)
    ]


def another_querys_records(mine, wanted) -> bool:
    """A batch id with more records than one: the other query's batches were kept too."""
    return any(
        len(got.rows) > len(want.rows)
        for want, got in zip(wanted.batches, mine.batches, strict=False)
    )


def epoch_kept(mine, wanted) -> bool:
    """A batch that had no watermark yet recorded with one (the epoch Spark reports)."""
    return any(
        want[WATERMARK] is None and got[WATERMARK] is not None for want, got in pairs(mine, wanted)
    )


def a_rate_for_rows(mine, wanted) -> bool:
    """input_rows recorded as a float that is not the batch's row count: a rate."""
    return any(
        isinstance(got[INPUT_ROWS], float) and got[INPUT_ROWS] != want[INPUT_ROWS]
        for want, got in pairs(mine, wanted)
    )


def first_operator_only(mine, wanted) -> bool:
    """state_rows (and dropped) of the first state operator alone, where Spark lists two."""
    operators = mine.facts.get(OPERATORS_FACT) or []
    found = pairs(mine, wanted)
    if not found or not any(len(ops) > 1 for ops in operators):
        return False
    first = {
        number: ops[0] for number, ops in enumerate(operators) if ops
    }  # batch id -> [name, rows, dropped]
    return all(
        got[BATCH_ID] in first and got[STATE_ROWS] == first[got[BATCH_ID]][1] for want, got in found
    ) and any(got[STATE_ROWS] != want[STATE_ROWS] for want, got in found)


def no_record_without_rows(mine, wanted) -> bool:
    """Every batch that read rows has its record; those that read none have none."""
    empty = [
        number
        for number, want in enumerate(wanted.batches)
        if expected_record(want) and expected_record(want)[INPUT_ROWS] == 0
    ]
    if not empty:
        return False
    missing = [
        number
        for number, want in enumerate(wanted.batches)
        if want.rows and (number >= len(mine.batches) or not mine.batches[number].rows)
    ]
    return missing == empty


def batches_with_rows_missing(mine, wanted) -> bool:
    """A micro-batch that read rows has no record (and no batch id has two)."""
    if another_querys_records(mine, wanted):
        return False
    return any(
        expected_record(want)
        and expected_record(want)[INPUT_ROWS] > 0
        and (number >= len(mine.batches) or not mine.batches[number].rows)
        for number, want in enumerate(wanted.batches)
    )


EXERCISE = Exercise(
    title="A listener's log of every batch",
    kind="build",
    practises="a StreamingQueryListener: a record per micro-batch of one query, from its report",
    function="BatchRecorder",
    schemas=SENSOR_SCHEMA,
    run=run,
    check_watermark=False,
    check_dropped=False,
    why=(
        "Spark calls onQueryProgress once for every micro-batch that ran, including the batch "
        "that reads nothing and only moves the watermark, with that batch's own report: "
        "recording each event as it comes is the one way to see every batch (lastProgress, "
        "read later, holds only the latest). A listener hears every query of the session, "
        "so it keeps its own by name (or by the id onQueryStarted gives). The report's "
        "watermark is the epoch until one exists, and stateOperators has one entry per "
        "stateful operator: the state a query keeps is their sum."
    ),
    hints=[
        "Which events reach a listener: only your query's, or every query's of the session? "
        "And what does one progress report describe: the whole run, or the micro-batch that "
        "just ended, even one that read no rows?",
        "lesson 14, `ProgressPrinter.onQueryProgress` parses event.progress.json, and "
        "lesson 14, `batch_line` turns a report into one line: report['name'], "
        "report['batchId'], report['numInputRows'], report['eventTime'].get('watermark'), and "
        "stateOperators summed over every operator.",
        "lesson 14, `ProgressPrinter` keeps every query's events and `_shown` picks the ones "
        "to print by the query's name: here keep only one query's. lesson 14, `format_line` "
        "leaves out a watermark that starts with 1970 (none yet). Whether the input grew is a "
        "comparison with the record kept before this one.",
    ],
    scenarios=[
        # Batch 0 has no watermark yet (Spark reports the epoch). Batch 1 reads more rows than
        # batch 0 (INPUT GREW) and repeats r2 (the deduplication drops it as a copy, not as
        # late). Batch 3 reads as many rows as batch 2 (no flag) and its r7 (10:29:58) is
        # behind the watermark: the deduplication drops it, the aggregation never sees it.
        # Batch 4's watermark stays 10:30:14 (batch 3 brought nothing later than 10:30:24);
        # batch 5 reads nothing: it moves the watermark, and the state lets go of what it
        # passed.
        Scenario(
            [
                [reading(1, "S1", "10:30:01"), reading(2, "S2", "10:30:04")],
                [
                    reading(3, "S1", "10:30:12"),
                    reading(4, "S2", "10:30:06"),
                    reading(2, "S2", "10:30:04"),
                ],
                [reading(5, "S1", "10:30:24"), reading(6, "S2", "10:30:15")],
                [reading(7, "S2", "10:29:58"), reading(8, "S1", "10:30:20")],
                [reading(9, "S1", "10:30:41")],
            ]
        ),
        # Other sensors and times, read scrambled (three shuffle partitions: each operator's
        # state is spread over three stores). Batch 1 reads an empty file: a batch with new
        # input and no rows; batch 2 grows from it, and its copy of r22 comes after the
        # watermark passed it (dropped as late, not as a copy). Two late rows in batch 4,
        # which reads more than batch 3 and as many as batch 2; a trailing batch without data.
        Scenario(
            [
                [
                    reading(21, "T1", "11:00:03"),
                    reading(22, "T2", "11:00:05"),
                    reading(23, "T1", "11:00:18"),
                ],
                [],
                [
                    reading(24, "T2", "11:00:21"),
                    reading(25, "T1", "11:00:12"),
                    reading(22, "T2", "11:00:05"),
                ],
                [reading(26, "T1", "11:00:33"), reading(27, "T2", "11:00:25")],
                [
                    reading(28, "T2", "11:00:02"),
                    reading(29, "T1", "11:00:09"),
                    reading(30, "T2", "11:00:31"),
                ],
                [reading(31, "T1", "11:00:52"), reading(32, "T2", "11:00:50")],
            ],
            hidden=True,
        ),
    ],
    mistakes=[
        Mistake(
            "every_query",
            "Your listener handled the progress of another query: a batch id has more than one "
            "record, or a callback failed on a report without a watermark. A listener gets the "
            "events of every query of the session, and the check runs a second one, "
            f"{OTHER_NAME}, meanwhile. Keep only the reports whose name is self.query_name "
            "(or whose id onQueryStarted gave you for that name).",
            error=r"^'(watermark|eventTime)'$",
            when=another_querys_records,
        ),
        Mistake(
            "epoch_watermark",
            "A batch that ran before there was any watermark has one in your record. Until the "
            "first watermark, Spark reports the epoch, 1970-01-01T00:00:00.000Z: record None "
            "for it.",
            when=epoch_kept,
        ),
        Mistake(
            "rows_per_second",
            "input_rows holds a float that is not the number of rows the batch read (batch 0 "
            "reads rows, yet yours says otherwise). numInputRows is that count; "
            "inputRowsPerSecond and processedRowsPerSecond are rates (and inputRowsPerSecond "
            "is 0.0 in the first batch: there is no trigger before it to measure from).",
            when=a_rate_for_rows,
        ),
        Mistake(
            "first_operator",
            "state_rows are those of the first entry of stateOperators alone. This query has "
            "two stateful operators (the aggregation and the deduplication), and the progress "
            "lists one entry for each: the state it keeps, and the rows it drops as late, are "
            "their sums.",
            when=first_operator_only,
        ),
        Mistake(
            "skips_empty_batches",
            "The micro-batches that read no rows have no record. Spark runs them (an empty "
            "file is new input; after the last file, a batch without data moves the watermark "
            "and closes windows) and calls onQueryProgress after each, like any other: record "
            "them too.",
            when=no_record_without_rows,
        ),
        Mistake(
            "only_the_last_report",
            "Micro-batches that read rows have no record. Each batch's report comes once, in "
            "the onQueryProgress Spark calls after that batch: what keeps only the latest "
            "report (query.lastProgress read after the run, a variable written over at each "
            "event, a record made when the query ends) loses the batches before it. Append a "
            "record in every onQueryProgress of your query.",
            when=batches_with_rows_missing,
        ),
    ],
)
