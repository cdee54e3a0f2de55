import time
from pathlib import Path
from urllib.parse import urlparse

from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery

from common import parsing, paths
from common.schemas import ECOMMERCE_EVENT_SCHEMA
from practice.observe import Batch, Observation, sort_rows, trigger_of
from practice.scenarios import at, shop_event
from practice.sinks import reimported
from practice.spec import Exercise, Mistake, Scenario
from practice.writes import WriteCounter, counting_writes
from teaching.microbatch import write_batches

COLUMNS = ["folder", "partition / reason", "event_id / line"]
TRIGGER = {"availableNow": True}


def line(text: str) -> str:
    """A line of a scenario's file that is no JSON record: kept as it is."""
    return text


def read_lines(spark, folder: Path, files_per_trigger: int = 1):
    """Lesson 04's read_events: the lines as text, ``files_per_trigger`` files per micro-batch,
    parsed."""
    lines = (
        spark.readStream.format("text")
        .option("maxFilesPerTrigger", files_per_trigger)
        .load(paths.uri(folder))
        .withColumn("source_file", F.col("_metadata.file_name"))
    )
    return parsing.parse_json(lines, ECOMMERCE_EVENT_SCHEMA)


def start_and_finish(spark, module, lines, workdir: Path) -> tuple[list, bool]:
    """Call the learner's start_sinks, then let every query it started read all there is: the
    ids of the queries it started, and whether each runs with the trigger it was given
    (availableNow, which stops it once it has read what was there)."""
    from practice.checking import NotStarted

    before = {query.id for query in spark.streams.active}
    try:
        queries = module.start_sinks(
            lines,
            workdir / "events",
            workdir / "quarantine",
            workdir / "checkpoints",
            dict(TRIGGER),
        )
        if not isinstance(queries, (list, tuple)) or not all(
            isinstance(query, StreamingQuery) for query in queries
        ):
            raise TypeError(f"start_sinks must return the queries it started, not {queries!r}")
        for query in queries:
            # Waits until the query has read every file (also without availableNow).
            query.processAllAvailable()
        triggered = [trigger_of(query) == "AvailableNowTrigger" for query in queries]
        for query, available_now in zip(queries, triggered, strict=True):
            if available_now:
                query.awaitTermination()  # it stops by itself: it has read every file
    except NotImplementedError as error:
        raise NotStarted() from error
    finally:
        for query in spark.streams.active:
            if query.id not in before:
                query.stop()
    for query in queries:
        if query.exception():
            raise query.exception()
    return [str(query.id) for query in queries], all(triggered)


class CrashInsideSink(Exception):
    """Raised right after a sink's first write of the restart: where a crash could stop it.

    An Exception (not a BaseException): pyspark's foreachBatch and py4j pass an Exception back
    to the JVM, which fails the query as a crash would; anything else would leave the JVM
    waiting for the callback."""


def crash_after_first_write(number: int) -> None:
    """The counter's ``on_write``: stop the sink after its first write, once."""
    if number == 1:
        raise CrashInsideSink(
            "stopped by the check right after your sink's first write of this batch, as a "
            "crash there would stop it"
        )


def restart_with_a_crash(spark, module, lines, workdir: Path) -> tuple[list, bool, bool]:
    """The restart, with a crash inside any sink of the learner's that writes from Python.

    A file sink writes from the JVM and commits a batch's files at once in its own log: no
    Python write, no crash. A foreachBatch function's writes are counted (practice.writes):
    the first one, under the workdir, is followed by a crash. Then the query restarts as a new
    process would, from a fresh import of the learner's file (a set of batch ids kept in memory
    is empty again). Two writes that say "done" together (the data, then a marker; or the
    marker first) leave the batch written twice, or not at all. Returns the query ids, whether
    each ran with its trigger, and whether the crash happened."""
    counter = WriteCounter(workdir, crash_after_first_write)
    try:
        with counting_writes(counter):
            ids, stopped = start_and_finish(spark, module, lines, workdir)
        return ids, stopped, False
    except Exception:
        if counter.count == 0:
            raise  # the learner's own failure, not the crash
    ids, stopped = start_and_finish(spark, reimported(module), lines, workdir)
    return ids, stopped, True


def partition_of(file_uri: str, folder: Path) -> str:
    """The folder a data file is in, under the sink's folder: 'date=2025-01-15', or '.'."""
    parent = Path(urlparse(file_uri).path).parent
    return str(parent.relative_to(folder.resolve())) if parent != folder.resolve() else "."


def read_sinks(spark, workdir: Path) -> list:
    """Both sinks' folders, read back as batch DataFrames: only committed files count."""
    rows = []
    events_dir = workdir / "events"
    if any(events_dir.rglob("*.parquet")):
        events = spark.read.parquet(paths.uri(events_dir)).select(
            "event_id", F.col("_metadata.file_path").alias("file")
        )
        rows += [
            ("events", partition_of(row.file, events_dir), row.event_id) for row in events.collect()
        ]
    quarantine_dir = workdir / "quarantine"
    if any(quarantine_dir.rglob("*.json")):
        bad = spark.read.schema(parsing.QUARANTINE_SCHEMA).json(paths.uri(quarantine_dir))
        rows += [("quarantine", row.reason, row.raw_line) for row in bad.collect()]
    return sort_rows(rows)


def run_and_restart(spark, exercise, module, scenario, workdir: Path) -> Observation:
    """Every file but the last, one run; then the last file, and a second run (the restart) on
    the same folders and checkpoints. One Batch per run: both folders' rows after it.

    The restart also crashes once inside a sink that writes from Python (a foreachBatch
    function), right after its first write, and starts again (restart_with_a_crash).

    A restart must resume, not start over. A query started over on a new checkpoint would read
    every file again, and its file sink's own log (which skips a batch id it has written) could
    hide that when the batches fell as before; so the restart reads two files per trigger
    (other batch boundaries), and the fact compares the queries' ids, which a query keeps in its
    checkpoint. Two queries on one checkpoint folder get the same id (the folder's): the
    other fact."""
    if workdir.exists():
        paths.remove_tree(workdir, allow_outside=True)
    batches = scenario.batches
    first_mtime = time.time() - len(batches) - 60
    runs = []
    ids = []
    stopped = []
    crashed = False
    for restart, files, per_trigger in (
        (False, range(len(batches) - 1), 1),
        (True, [len(batches) - 1], 2),
    ):
        for number in files:
            write_batches(
                workdir / "input", [batches[number]], first_number=number, first_mtime=first_mtime
            )
        lines = read_lines(spark, workdir / "input", per_trigger)
        if restart:
            run_ids, run_stopped, crashed = restart_with_a_crash(spark, module, lines, workdir)
        else:
            run_ids, run_stopped = start_and_finish(spark, module, lines, workdir)
        ids.append(run_ids)
        stopped.append(run_stopped)
        runs.append(Batch(read_sinks(spark, workdir)))
    facts = {
        RESUMED: set(ids[0]) == set(ids[1]),
        OWN_IDS: all(len(set(run)) == len(run) for run in ids),
        STOPPED: all(stopped),
    }
    if crashed:
        # Not compared (the solution's file sinks never write from Python): for the hint.
        facts[CRASHED] = True
    return Observation(COLUMNS, runs, facts=facts)


RESUMED = "the restart resumed each query (the same query ids)"
OWN_IDS = "each query has an id of its own (a checkpoint of its own)"
STOPPED = "each query runs with the trigger it was given (.trigger(**trigger))"
CRASHED = "the check stopped a sink of yours right after its first write of the restart"


def started_over(mine, wanted) -> bool:
    """The restarted queries have new ids: they did not resume from the first run's
    checkpoints."""
    return mine.facts.get(RESUMED) is False


def share_an_id(mine, wanted) -> bool:
    """Two queries of a run have the same id: they were started on one checkpoint folder."""
    return mine.facts.get(OWN_IDS) is False


def ignores_trigger(mine, wanted) -> bool:
    """A query runs with another trigger than the one the check gave (availableNow)."""
    return mine.facts.get(STOPPED) is False


def damaged_by_the_crash(mine, wanted) -> bool:
    """The check stopped the learner's sink inside a batch, and the restart's rows differ from
    the solution's (the run before the crash was right)."""
    return (
        mine.facts.get(CRASHED) is True
        and mine.batches[:1] == wanted.batches[:1]
        and mine.batches[-1:] != wanted.batches[-1:]
    )


def not_partitioned(mine, wanted):
    return any(row[0] == "events" and row[1] == "." for batch in mine.batches for row in batch.rows)


EXERCISE = Exercise(
    title="One stream, two sinks",
    kind="build",
    practises="several queries on one stream: a file sink each, a checkpoint each, a restart",
    function="start_sinks",
    schemas=ECOMMERCE_EVENT_SCHEMA,
    run=run_and_restart,
    check_dropped=False,
    why=(
        "Each writeStream ... start() is a query of its own: it reads the source at its own "
        "pace and logs, in its own checkpoint, which files each batch read and which batches "
        "it committed. On a restart each query resumes after its last committed batch, so the "
        "new file's rows are added once, and only they. The file sink keeps a log of its own, "
        "_spark_metadata, of the files each committed batch wrote: a batch read of the folder "
        "follows it and never sees the files of a batch that did not finish."
    ),
    hints=[
        "Each stream you start is a query of its own. What does a restarted query need in order "
        "to know which files it has read and which batches it has written? Can two queries share "
        "that?",
        "lesson 04, `start_parquet`: a file sink written out one call per line: the format, "
        "append mode, the partition column, the path and the checkpoint. lesson 04, "
        "`start_quarantine` is its JSON twin.",
        "lesson 04, `start_sinks`: each durable sink gets a checkpoint folder of its own under "
        "one root. Here: build_events(lines) into events_dir, one folder per date, and "
        "build_quarantine(lines) into quarantine_dir, each with .trigger(**trigger) and its own "
        "folder under checkpoints (paths.uri gives Spark a folder's address); return both started "
        "queries.",
    ],
    scenarios=[
        # Run 1 reads two files: E1-E3 good, a line cut off, one with no user_id, an empty
        # line. The restart brings a third file: E4 on the next day (a second partition), E5,
        # and a negative price. It must add those rows only.
        Scenario(
            [
                [
                    shop_event("E1", "U1", "view", "10:30:00"),
                    line('{"event_id": "E9", "user_id": "U2", "event_type": "vi'),
                    shop_event("E2", "U2", "cart", "10:30:05"),
                ],
                [
                    shop_event("E3", "U1", "purchase", "10:30:20", price=25.0),
                    line(
                        '{"event_id": "E8", "event_type": "view", "timestamp": "'
                        + at("10:30:21")
                        + '"}'
                    ),
                    line(""),
                ],
                [
                    {
                        **shop_event("E4", "U3", "view", "00:00:00"),
                        "timestamp": "2025-01-16T00:00:05Z",
                    },
                    line(
                        '{"event_id": "E7", "user_id": "U1", "event_type": "cart", "price": -5, '
                        '"timestamp": "2025-01-15T10:31:05Z"}'
                    ),
                    shop_event("E5", "U2", "purchase", "10:31:00", price=12.0),
                ],
            ]
        ),
        # Other ids; three files before the restart, good and bad lines in another order.
        Scenario(
            [
                [line("hello"), shop_event("A-1", "U7", "view", "09:00:00")],
                [
                    {
                        **shop_event("A-2", "U8", "cart", "00:00:00"),
                        "timestamp": "2025-01-14T23:59:59Z",
                    },
                ],
                [line('[{"event_id": "A-9"}]'), shop_event("A-3", "U7", "view", "09:00:30")],
                [shop_event("A-4", "U8", "purchase", "09:01:00"), line('{"event_id": "A-5"}')],
            ],
            hidden=True,
        ),
    ],
    mistakes=[
        Mistake(
            "checkpoint_per_run",
            "The restart did not resume: the queries it started have new ids, so their "
            "checkpoints were not the first run's (a new folder each run, a temporary one, a "
            "name with the time in it, or a folder emptied at every start). A query's "
            "checkpoint must be the same folder on every run, kept: that is how it knows what "
            "it has read and written.",
            when=started_over,
        ),
        Mistake(
            "no_checkpoint",
            "A file sink without a checkpoint: Spark refuses to start it, since a restart "
            "could not know which files it has read. Give each query "
            ".option('checkpointLocation', ...), a folder of its own under checkpoints.",
            error=r"checkpointLocation must be specified",
        ),
        Mistake(
            "shared_checkpoint",
            "Both queries have the same checkpoint: a checkpoint belongs to one query. Two "
            "queries on one folder take each other's batches for their own (one of them "
            "writes nothing, or Spark finds the folder not empty). Give each its own folder "
            "(checkpoints / 'events', checkpoints / 'quarantine'), the same on every run.",
            error=r"CHECKPOINT_LOCATION_NOT_EMPTY|same id|already active|concurrent",
            when=share_an_id,
        ),
        Mistake(
            "not_partitioned",
            "The events are not in one folder per date: the file sink writes partition folders "
            "(date=2025-01-15/) only when told .partitionBy('date').",
            when=not_partitioned,
        ),
        Mistake(
            "done_marker_after_append",
            "After the restart, the folders hold other rows than a run without a crash: the "
            "check stopped your sink right after its first write of the restart's batch, as a "
            "crash there would, then started the query again from a fresh import of your file. "
            "Spark runs that batch again. A sink that writes its data and a 'done' mark in two "
            "steps is not atomic: data first, then the mark, and the batch is written twice; "
            "the mark first, and it is never written. Spark's file sink "
            "(writeStream.format('parquet')) records a batch's files in its own log at once, "
            "and skips a batch it has logged: use it, or make the write itself idempotent.",
            when=damaged_by_the_crash,
        ),
        Mistake(
            "ignores_trigger",
            "A query runs with another trigger than the one it was given. The check passes "
            "availableNow, which reads what is there and stops; without .trigger(**trigger) a "
            "query runs on the default trigger, a micro-batch after another, until someone "
            "stops it. Start each query with .trigger(**trigger).",
            when=ignores_trigger,
        ),
    ],
)
