"""Check of 11.2: the learner's foreachBatch function in two real queries into one Delta table.

The first query reads all micro-batches of the scenario but the last, and writes batch 1 twice
in a row, as Spark does after a crash between the sink's write and the batch's commit. A second
query, with a new checkpoint (so a new query id, and batch ids from 0 again), reads the last
micro-batch. The table is read after each batch; how many rows the retry and the second query
added are facts the check compares.
"""

from pathlib import Path

from delta.tables import DeltaTable

from common import paths
from common.schemas import ECOMMERCE_EVENT_SCHEMA
from practice.observe import Observation, plain, scenario_files
from practice.scenarios import shop_event
from practice.sinks import (
    Retry,
    SinkRun,
    Snapshot,
    copies_added,
    reimported,
    rows_with_copies,
    run_query,
    start_afresh,
)
from practice.spec import Exercise, Mistake, Scenario

RETRIED_BATCH = 1  # the first query's batch the check writes twice
# Each query's batch 0 is stopped between two of the sink's writes, then run again.
CRASHED_BATCH = 0
RETRY = Retry(
    RETRIED_BATCH,
    f"rows the retry of batch {RETRIED_BATCH} added",
    copies_added,
    crashed_batch=CRASHED_BATCH,
)
SECOND_QUERY_ADDED = "rows the second query (new checkpoint) added"
KEYS = ["event_id", "user_id", "event_type"]  # what the check shows of each row
COLUMNS = [*KEYS, "copies"]  # each event with the number of rows that hold it


def event(event_id: str, user: str, kind: str, time_of_day: str) -> dict:
    return shop_event(event_id, user, kind, time_of_day)


def read_table(spark, table: Path) -> list:
    """One row per event of the Delta table, with its number of copies; [] before it exists."""
    if not DeltaTable.isDeltaTable(spark, paths.uri(table)):
        return []
    frame = spark.read.format("delta").load(paths.uri(table)).select(*KEYS)
    return rows_with_copies([plain(tuple(row)) for row in frame.collect()])


def run(spark, exercise, module, scenario, workdir: Path) -> Observation:
    """The scenario through the learner's sink, in two queries: the table after each batch."""
    start_afresh(workdir)
    first = scenario_files(workdir / "input" / "first", scenario.batches[:-1], scenario)
    second = scenario_files(workdir / "input" / "second", scenario.batches[-1:], scenario)
    schema = exercise.schema_of("input")
    table = workdir / "events"

    def write_with(learner):
        def write(batch, batch_id: int) -> None:
            learner.write_events_once(batch, batch_id, table)

        return write

    def read_target() -> Snapshot:
        return Snapshot(COLUMNS, read_table(spark, table))

    sink_run = SinkRun(
        write_with(module),
        read_target,
        RETRY,
        rewrite=lambda: write_with(reimported(module)),
        target=table,
    )
    run_query(spark, first, schema, workdir / "checkpoint-first", sink_run.sink)
    if not sink_run.failures:
        before = sink_run.snapshots[-1].rows if sink_run.snapshots else []
        run_query(spark, second, schema, workdir / "checkpoint-second", sink_run.sink)
        if not sink_run.failures:
            after = sink_run.snapshots[-1].rows
            sink_run.facts[SECOND_QUERY_ADDED] = copies_added(before, after)
    return sink_run.observation()


def second_query_skipped(mine, wanted) -> bool:
    """The second query's batch added nothing to the table, where it should have added rows."""
    return mine.facts.get(SECOND_QUERY_ADDED, 0) == 0 < wanted.facts.get(SECOND_QUERY_ADDED, 0)


def sent_twice_kept_once(mine, wanted) -> bool:
    """An event the source sent twice (two rows expected) is in the learner's table once."""
    if not mine.batches or not wanted.batches:
        return False
    copies = {row[:-1]: row[-1] for row in mine.batches[-1].rows}
    return any(row[-1] > 1 and copies.get(row[:-1]) == 1 for row in wanted.batches[-1].rows)


EXERCISE = Exercise(
    title="Exactly once into Delta",
    kind="build",
    practises="an exactly-once Delta append from foreachBatch: txnAppId (query id), txnVersion",
    function="write_events_once",
    schemas=ECOMMERCE_EVENT_SCHEMA,
    run=run,
    check_dropped=False,
    why=(
        "A plain batch write in foreachBatch has no memory of batches: a replay appends its "
        "rows again. With txnAppId and txnVersion, Delta records the pair in the same commit "
        "as the data and skips a write whose txnVersion is not higher than the one recorded "
        "for that app id: the check and the append are one atomic step. The app id is the "
        "query's id, which the checkpoint keeps across restarts; a new checkpoint is a new "
        "query whose batch ids start from 0 again, and under a fixed app id all its early "
        "batches would be skipped."
    ),
    hints=[
        "A replayed batch brings the same batch id and the same rows. What could the table itself "
        "remember, in the same commit as the rows, so that the next write of that batch id is "
        "skipped? And what happens to the batch ids when a new checkpoint starts a new query?",
        "lesson 10, `write_delta_once`: two writer options make Delta keep, per app id, the "
        "highest batch id committed, and skip a write whose batch id is not higher. lesson 16, "
        "`write_events` does the same in its sink.",
        "lesson 10, `write_batch`: its comment says why the app id is the query's id "
        "(query_id(batch), from common.batch_ids) and not the table's name or a fixed string: a "
        "new checkpoint starts its batch ids from 0 again.",
    ],
    scenarios=[
        # The first query: batches 0 and 1 (1 written twice). The second query (a new
        # checkpoint): the last micro-batch, its batch 0.
        Scenario(
            [
                [event("E-1", "U-1", "view", "10:30:00"), event("E-2", "U-2", "cart", "10:30:02")],
                [event("E-3", "U-1", "purchase", "10:30:05")],
                [event("E-4", "U-3", "view", "10:30:09"), event("E-5", "U-2", "view", "10:30:11")],
            ]
        ),
        # Other ids; batch 1 (written twice) holds two events.
        Scenario(
            [
                [event("X-9", "B", "cart", "09:00:00")],
                [event("X-2", "A", "view", "09:00:03"), event("X-7", "B", "purchase", "09:00:04")],
                # X-2 again: the source sent it twice, in two batches; both rows are appended.
                [event("X-5", "C", "view", "09:00:08"), event("X-2", "A", "view", "09:00:03")],
            ],
            hidden=True,
        ),
    ],
    mistakes=[
        Mistake(
            "no_txn_options",
            "Batch 1, run again (as after a crash before its commit; here from a fresh import of "
            "your file, as a restarted process has it), was appended again: nothing told the "
            "write it had committed that batch. The writer options .option('txnAppId', "
            "query_id(batch)).option('txnVersion', batch_id) make the table's log remember it; "
            "a set of batch ids kept in Python memory is empty in a restarted process.",
            when=RETRY.changed_target,
        ),
        Mistake(
            "fixed_app_id",
            "A fixed txnAppId: the second query (a new checkpoint) numbers its batches from 0 "
            "again, so Delta took them for replays of the first query's and skipped them. Use "
            "the query's id, which changes with the checkpoint: query_id(batch).",
            when=second_query_skipped,
        ),
        Mistake(
            "dedups_events",
            "An event the source sent twice, in two batches, is in your table once: your sink "
            "removed it as a duplicate (by its event_id, against the table or the batch). "
            "Exactly once here means each batch once; a row the source itself repeated is a row "
            "like any other. Dropping the source's duplicates is a job of its own (lesson 15).",
            when=sent_twice_kept_once,
        ),
        Mistake(
            "done_recorded_apart",
            "Batch 0 was stopped inside your sink, right after one of its writes, and run "
            "again, as after a crash there: it came out different from a batch written once "
            "(rows twice, or missing). A sink that writes its data, then in a second write what "
            "says the batch is done (a marker file, a list of batch ids, another table), leaves "
            "one without the other when it stops between the two. Make the one commit that holds "
            "the data record the batch: txnAppId and txnVersion on the append.",
            when=RETRY.damaged_by_crash,
        ),
    ],
)
